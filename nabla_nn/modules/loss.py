"""Loss layers (PyTorch's `torch.nn.modules.loss`). Each forwards to `nabla_nn.functional`;
class weights (`weight`, `pos_weight`) are buffers, as in PyTorch, so they move with
`state_dict` and `Module.to`."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from nabla import Tensor

from .. import functional as F
from ..module import Module
from .linear import Linear

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "LinearCrossEntropyLoss",
    "NLLLoss2d",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelSoftMarginLoss",
    "NLLLoss",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """PyTorch's deprecated (size_average, reduce) pair as a reduction string."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _buffer(value: Any, name: str) -> Tensor | None:
    """A realized tensor for a weight buffer (arrays and lists are converted)."""
    if value is None:
        return None
    if not isinstance(value, Tensor):
        value = Tensor.from_numpy(np.asarray(value, dtype=np.float32))
    if value.ndim == 0 and name == "weight":
        raise ValueError(f"{name} must be a 1-D tensor (one weight per class), got a scalar")
    return value.data if value.is_realized else value.realize().data


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction!r} is not a valid value for reduction (expected one of {_REDUCTIONS})")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(
        self,
        weight: Any = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", _buffer(weight, "weight"))


class L1Loss(_Loss):
    """Mean (or sum) absolute error |input - target|.

    Args:
        reduction: "mean" (default), "sum" or "none".
        size_average, reduce: deprecated; set `reduction` instead.

    Example:
        >>> nn.L1Loss()(nb.tensor([1.0, 2.0]), nb.tensor([0.0, 0.0])).item()
        1.5
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean (or sum) squared error (input - target)^2.

    Args:
        reduction: "mean" (default), "sum" or "none".
        size_average, reduce: deprecated; set `reduction` instead.

    Example:
        >>> nn.MSELoss()(nb.tensor([1.0, 2.0]), nb.tensor([0.0, 0.0])).item()
        2.5
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 * d^2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target).

    Args:
        reduction: "mean" (default), "sum" or "none".
        beta: where the loss switches from quadratic to linear (default 1).

    Example:
        >>> nn.SmoothL1Loss()(nb.tensor([0.5, 3.0]), nb.tensor([0.0, 0.0])).item()
        1.3125
    """

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss: beta must be non-negative, got {beta}")
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 * d^2 where |d| < delta, else delta * (|d| - 0.5 * delta) (d = input - target).

    Args:
        reduction: "mean" (default), "sum" or "none".
        delta: where the loss switches from quadratic to linear (default 1).

    Example:
        >>> nn.HuberLoss(delta=2.0)(nb.tensor([0.5, 3.0]), nb.tensor([0.0, 0.0])).item()
        2.0625
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        if delta <= 0:
            raise ValueError(f"HuberLoss: delta must be positive, got {delta}")
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


def _check_class_target(module: Module, input: Tensor, target: Tensor, probabilities: bool) -> None:
    """Class-index targets have the input's shape without the class dim (dim 1, or dim 0 for
    unbatched input); class-probability targets (cross entropy) have the input's shape."""
    if input.ndim == 0:
        raise module.input_error(input.shape, "(C,), (N, C) or (N, C, d1, ...) logits")
    index_shape = () if input.ndim == 1 else (input.shape[0], *input.shape[2:])
    ok = tuple(target.shape) == tuple(index_shape) or (probabilities and tuple(target.shape) == tuple(input.shape))
    if not ok:
        want = f"target {tuple(index_shape)} of class indices"
        if probabilities:
            want += f" or {tuple(input.shape)} of class probabilities"
        raise module.input_error((input.shape, target.shape), f"(input, target) with {want}")


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and class indices (or class probabilities):
    `nll_loss(log_softmax(input, dim=1), target)`.

    Args:
        weight: a per-class weight of shape (C,) (a buffer).
        ignore_index: class-index targets equal to this contribute nothing (default -100).
        reduction: "mean" (weighted mean over non-ignored targets, default), "sum" or "none".
        label_smoothing: mixes the target with the uniform distribution, in [0, 1].

    Shape:
        input (C,), (N, C) or (N, C, d1, ...); target (), (N,) or (N, d1, ...) integer class
        indices, or class probabilities of the input's shape.

    Example:
        >>> loss = nn.CrossEntropyLoss()
        >>> loss(nb.randn(3, 5, requires_grad=True), nb.tensor([1, 0, 4])).shape
        ()
    """

    def __init__(
        self,
        weight: Any = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        _check_class_target(self, input, target, probabilities=True)
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class indices given log-probabilities: `-input[n, target[n]]`.

    Args:
        weight: a per-class weight of shape (C,) (a buffer).
        ignore_index: targets equal to this contribute nothing (default -100).
        reduction: "mean" (weighted mean over non-ignored targets, default), "sum" or "none".

    Example:
        >>> logp = nn.LogSoftmax(dim=1)(nb.randn(3, 5))
        >>> nn.NLLLoss()(logp, nb.tensor([1, 0, 4])).shape
        ()
    """

    def __init__(
        self,
        weight: Any = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        _check_class_target(self, input, target, probabilities=False)
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy between probabilities and targets in [0, 1] (logs clamped at -100).

    Args:
        weight: a rescaling weight broadcast against the input (a buffer).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> nn.BCELoss()(nb.tensor([0.5]), nb.tensor([1.0])).item()  # -log(0.5)
        0.6931471824645996
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if tuple(input.shape) != tuple(target.shape):
            raise self.input_error((input.shape, target.shape), "input and target of the same shape")
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy in one numerically stable step.

    Args:
        weight: a rescaling weight broadcast against the input (a buffer).
        reduction: "mean" (default), "sum" or "none".
        pos_weight: a weight of positive examples, broadcast along the last dim (a buffer).

    Example:
        >>> nn.BCEWithLogitsLoss()(nb.tensor([0.0]), nb.tensor([1.0])).item()
        0.6931471824645996
    """

    def __init__(
        self,
        weight: Any = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Any = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", _buffer(weight, "weight"))
        self.register_buffer("pos_weight", _buffer(pos_weight, "pos_weight"))

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if tuple(input.shape) != tuple(target.shape):
            raise self.input_error((input.shape, target.shape), "input and target of the same shape")
        return F.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence `target * (log(target) - input)`, input in log space.

    Args:
        reduction: "mean" (over elements, default), "batchmean" (sum / batch size: the true
            KL divergence), "sum" or "none".
        log_target: the target is given in log space too.

    Example:
        >>> loss = nn.KLDivLoss(reduction="batchmean")
        >>> loss(nb.log_softmax(nb.randn(3, 5), dim=1), nb.softmax(nb.randn(3, 5), dim=1)).shape
        ()
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        batchmean = reduction == "batchmean" and size_average is None and reduce is None
        super().__init__(size_average, reduce, "mean" if batchmean else reduction)
        self.reduction = "batchmean" if batchmean else self.reduction
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.

    Args:
        margin: in [-1, 1], 0 to 0.5 suggested (default 0).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> x = nb.tensor([[1.0, 0.0]])
        >>> nn.CosineEmbeddingLoss()(x, x, nb.tensor([1.0])).item()
        0.0
    """

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + margin): target 1 means x1 should rank higher.

    Args:
        margin: the required gap (default 0).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> nn.MarginRankingLoss()(nb.tensor([1.0]), nb.tensor([2.0]), nb.tensor([1.0])).item()
        1.0
    """

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1 (x is e.g. a distance).

    Args:
        margin: the margin for target -1 (default 1).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> nn.HingeEmbeddingLoss()(nb.tensor([0.3, 0.3]), nb.tensor([1.0, -1.0])).item()
        0.5
    """

    def __init__(
        self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)) for targets in {1, -1}.

    Args:
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> round(nn.SoftMarginLoss()(nb.tensor([0.0]), nb.tensor([1.0])).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, averaged over the C classes of (N, C) input.

    Args:
        weight: a per-class weight of shape (C,) (a buffer).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> round(nn.MultiLabelSoftMarginLoss()(nb.tensor([[0.0, 0.0]]), nb.tensor([[1.0, 0.0]])).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm pairwise distance d.

    Args:
        margin: the required gap (default 1).
        p: the norm degree of the distance (default 2).
        eps: added inside the distance for stability (default 1e-6).
        swap: use min(d(a, n), d(p, n)) as the negative distance (distance swap).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> a = nb.randn(4, 8)
        >>> nn.TripletMarginLoss()(a, a, a + 10.0).item()
        0.0
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood: exp(input) - target * input with `log_input`, else
    input - target * log(input + eps).

    Args:
        log_input: the input is the log of the rate (default True).
        full: add Stirling's approximation term.
        eps: added to the rate before the log when log_input=False (default 1e-8).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> nn.PoissonNLLLoss()(nb.tensor([0.0]), nb.tensor([1.0])).item()
        1.0
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood 0.5 * (log(var) + (input - target)^2 / var).

    Args:
        full: include the constant 0.5 * log(2 pi).
        eps: lower bound of var (default 1e-6).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> nn.GaussianNLLLoss()(nb.tensor([0.0]), nb.tensor([0.0]), nb.tensor([1.0])).item()
        0.0
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of a learned linear map's logits: `F.linear_cross_entropy(input,
    self.linear.weight, target, ...)` (PyTorch's). For a K-dimensional loss the weight is stored
    flat, (C * d1 * ... * dK, in_features), and reshaped in `forward`, as PyTorch does.

    Args:
        in_features: size of each input sample.
        num_classes: C.
        out_features: (d1, ..., dK) for a K-dimensional loss (default ()).
        bias: whether the linear map has a bias (default False).
        reduction: "mean", "sum" or "none".
        weight: a per-class weight (C,).
        ignore_index: class-index targets equal to it contribute nothing (None: -100).
        label_smoothing: in [0, 1].
        options: PyTorch's chunking options: accepted and unused (see `F.linear_cross_entropy`).

    Example:
        >>> loss = nn.LinearCrossEntropyLoss(8, 10)
        >>> loss(nb.randn(4, 8), nb.tensor([1, 0, 9, 3])).shape, loss.linear.weight.shape
        ((), (10, 8))
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device: Any = None,
        dtype: Any = None,
        reduction: str = "mean",
        weight: Any = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: Any = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(self.out_features) * num_classes, bias, device, dtype)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        lin = self.linear
        weight = lin.weight.reshape((self.num_classes, *self.out_features, lin.in_features))
        bias = None if lin.bias is None else lin.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(
            input,
            weight,
            target,
            linear_bias=bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )


class NLLLoss2d(NLLLoss):
    """Deprecated in PyTorch (a FutureWarning at construction): `NLLLoss`, which takes the same
    (N, C, H, W) input.

    Example:
        >>> loss = nn.NLLLoss2d()  # FutureWarning: use nn.NLLLoss
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)
