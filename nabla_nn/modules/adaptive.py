"""Adaptive softmax (PyTorch's `torch.nn.modules.adaptive`): AdaptiveLogSoftmaxWithLoss.

PyTorch's forward selects each cluster's rows with `target_mask.nonzero()` and runs a cluster's
projection only on them, so its shapes depend on the targets' values. nabla's graphs are
static-shaped, so here every cluster's log-probabilities are computed for all rows and each
row's own is picked with `where` masks: the outputs, the loss and the gradients (a row's
gradient reaches only its own cluster's weights) equal PyTorch's, at the cost of evaluating
every cluster for every row.
"""

from __future__ import annotations

import itertools
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .. import functional as F
from ..module import Module
from .container import ModuleList, Sequential
from .linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation for large output spaces (Grave et al., "Efficient softmax
    approximation for GPUs", https://arxiv.org/abs/1609.04309), as `torch.nn.AdaptiveLogSoftmaxWithLoss`.

    Classes, sorted by decreasing frequency, are split by `cutoffs` into a shortlist
    [0, cutoffs[0]) scored by `head` together with one entry per cluster, and clusters
    [cutoffs[i], cutoffs[i + 1]) (the last ending at n_classes) scored by `tail[i]`, a
    projection to in_features // div_value ** (i + 1) features followed by the class scores.
    A class in cluster i has log-probability head[cluster i] + tail_i[class].

    Args:
        in_features: number of features of each input.
        n_classes: number of classes.
        cutoffs: increasing ints in [1, n_classes - 1], e.g. [10, 100, 1000].
        div_value: divides in_features for each further cluster's projection (default 4.0).
        head_bias: give `head` a bias (default False).
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    `forward(input, target)` returns a namedtuple `(output, loss)`: `output` (N,) (or () for an
    unbatched (in_features,) input and () target) holds each target's log-probability, `loss`
    the mean negative log-likelihood. Targets must lie in [0, n_classes - 1]: a realized target
    is checked (RuntimeError, as PyTorch); a pending (lazy) one cannot be, and out-of-range rows
    give NaN there. Every cluster is evaluated for every row (static shapes; see the module
    docstring), where PyTorch evaluates only the clusters a batch's targets use.

    Example:
        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 40], div_value=2.0)
        >>> out = asm(nb.randn(8, 16), nb.tensor([0, 5, 12, 39, 40, 99, 3, 20]))
        >>> out.output.shape, out.loss.shape
        ((8,), ())
        >>> asm.log_prob(nb.randn(8, 16)).shape, asm.predict(nb.randn(8, 16)).shape
        ((8, 100), (8,))
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            (cutoffs != sorted(cutoffs))
            or (min(cutoffs) <= 0)
            or (max(cutoffs) > (n_classes - 1))
            or (len(set(cutoffs)) != len(cutoffs))
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, "
                "where each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(self.in_features, hsz, bias=False, device=device, dtype=dtype),
                    Linear(hsz, osz, bias=False, device=device, dtype=dtype),
                )
            )

    def reset_parameters(self) -> None:
        """Re-draw every weight as at construction (PyTorch's Linear initialization)."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _checked_targets(self, target: Tensor) -> bool:
        """Raise PyTorch's RuntimeError for targets outside [0, n_classes - 1] when their values
        are known (a realized tensor); True if they were checked."""
        impl = target._impl
        if not impl.is_realized or impl.batch_dims:
            return False
        data = target.numpy()
        if data.size and (data.min() < 0 or data.max() >= self.n_classes):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], "
                f"but values in range [{data.min()}, {data.max()}] were found. "
            )
        return True

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """(output, loss): each target's log-probability and their mean negative log-likelihood.

        Args:
            input_: (N, in_features), or (in_features,) with a 0-d target.
            target_: (N,) or () integer class indices in [0, n_classes - 1].
        """
        if not isinstance(target_, Tensor) or not _dt.is_integer(target_.dtype):
            got = target_.dtype.name if isinstance(target_, Tensor) else type(target_).__name__
            raise TypeError(f"AdaptiveLogSoftmaxWithLoss: target must be an integer tensor, got {got}")
        targ_dim = target_.ndim
        if targ_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size {tuple(input_.shape)}"
                )
        elif targ_dim == 0:
            if input_.ndim != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size {tuple(input_.shape)}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        is_batched = targ_dim > 0
        input = input_ if is_batched else nb.unsqueeze(input_, 0)
        target = target_ if is_batched else nb.unsqueeze(target_, 0)
        checked = self._checked_targets(target)
        target = nb.cast(target, nb.int64)

        # the head's entry of each row: its class in the shortlist, else its cluster's entry
        gather_inds = nb.clamp(target, 0, self.shortlist_size - 1)
        output = None
        for i, (low, high) in enumerate(itertools.pairwise(self.cutoffs)):
            in_cluster = nb.logical_and(nb.greater_equal(target, low), nb.less(target, high))
            gather_inds = nb.where(in_cluster, self.shortlist_size + i, gather_inds)
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            relative = nb.unsqueeze(nb.clamp(target - low, 0, high - low - 1), 1)
            local = nb.squeeze(nb.take_along_axis(cluster_logprob, relative, 1), 1)
            picked = nb.where(in_cluster, local, nb.zeros((), dtype=local.dtype))
            output = picked if output is None else output + picked
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + nb.squeeze(nb.take_along_axis(head_logprob, nb.unsqueeze(gather_inds, 1), 1), 1)
        if not checked:  # lazy targets: out-of-range rows give NaN (PyTorch raises)
            valid = nb.logical_and(nb.greater_equal(target, 0), nb.less(target, self.n_classes))
            output = nb.where(valid, output, nb.full((), np.nan, dtype=output.dtype))
        loss = nb.mean(-output)
        if not is_batched:
            output = nb.squeeze(output, 0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """(N, n_classes) log-probabilities from the input and the head's output."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            entry = self.shortlist_size + i
            parts.append(cluster_logprob + head_logprob[:, entry : entry + 1])
        return nb.concatenate(parts, axis=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all n_classes classes.

        Args:
            input: (N, in_features) (or (in_features,), giving (n_classes,)).

        Returns:
            (N, n_classes) log-probabilities.

        Example:
            >>> nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).log_prob(nb.randn(3, 8)).exp().sum(1)  # ~1
        """
        x = self._batched(input)
        out = self._get_full_log_prob(x, self.head(x))
        return out if input.ndim == 2 else nb.squeeze(out, 0)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each row: `log_prob(input).argmax(1)`.

        PyTorch skips the clusters when the head's best entry is a shortlist class for every
        row; here the full distribution is computed and the head's class kept where it wins
        (static shapes), which picks the same classes.

        Args:
            input: (N, in_features) (or (in_features,), giving a 0-d result).

        Returns:
            (N,) int64 class indices.
        """
        x = self._batched(input)
        head_output = self.head(x)
        output = nb.argmax(head_output, axis=1)
        full = nb.argmax(self._get_full_log_prob(x, head_output), axis=1)
        out = nb.where(nb.less(output, self.shortlist_size), output, full)
        return out if input.ndim == 2 else nb.squeeze(out, 0)

    def _batched(self, input: Tensor) -> Tensor:
        if input.ndim not in (1, 2) or input.shape[-1] != self.in_features:
            raise self.input_error(input.shape, f"(N, {self.in_features}) or ({self.in_features},)")
        return input if input.ndim == 2 else nb.unsqueeze(input, 0)
