"""Normalization layers (PyTorch's `batchnorm`, `instancenorm` and `normalization` modules):
BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm and the
legacy CrossMapLRN2d.

BatchNorm's running statistics are buffers updated in place in training mode, and the
cumulative-average momentum (momentum=None) is computed from the `num_batches_tracked`
buffer as a tensor, so a training step's graph is the same at every step.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..functional._checks import check_float
from ..module import Module
from .linear import _float_dtype, empty_parameter, realized_buffer

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "CrossMapLRN2d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "LocalResponseNorm",
    "RMSNorm",
    "SyncBatchNorm",
]


class _NormBase(Module):
    """Parameters (weight, bias) and running-stat buffers shared by BatchNorm and InstanceNorm."""

    _version = 2  # PyTorch's: version 2 state_dicts have num_batches_tracked (saved in `_metadata`)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, got {num_features!r}")
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        # bias=False (keyword-only, as PyTorch): an affine weight without a bias
        self.register_parameter("weight", empty_parameter((num_features,), dtype, device) if affine else None)
        self.register_parameter("bias", empty_parameter((num_features,), dtype, device) if affine and bias else None)
        if track_running_stats:
            dt = _float_dtype(dtype)
            self.register_buffer("running_mean", realized_buffer(np.zeros(num_features, np.float32), dt, device))
            self.register_buffer("running_var", realized_buffer(np.ones(num_features, np.float32), dt, device))
            self.register_buffer("num_batches_tracked", realized_buffer(np.array(0, np.int64), device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """running_mean = 0, running_var = 1, num_batches_tracked = 0."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            count = self.num_batches_tracked
            count.data = realized_buffer(np.array(0, np.int64), device=count.device)

    def reset_parameters(self) -> None:
        """Reset the running stats; weight = 1, bias = 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _state_dict_defaults(self, prefix: str, state_dict: Mapping[str, Any], local_metadata: Mapping) -> dict:
        """Entries `load_state_dict` adds when `state_dict` lacks them: PyTorch's
        `_NormBase._load_from_state_dict` lets a state_dict from before num_batches_tracked
        existed (no version, as nabla's and plain dicts, or version < 2) keep this module's own
        counter instead of failing on a missing key."""
        key = prefix + "num_batches_tracked"
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            return {key: self.num_batches_tracked.data}
        return {}

    def _momentum(self) -> float | Tensor:
        """The running-stat update factor; bumps num_batches_tracked in training mode.

        momentum=None is the cumulative average 1 / num_batches_tracked, computed in the graph
        from the (bumped) counter, so the step keeps one structure and never reads a value.
        """
        factor: float | Tensor = 0.0 if self.momentum is None else float(self.momentum)
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = nb.reciprocal(nb.cast(self.num_batches_tracked, self.running_mean.dtype))
        return factor

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def _check_input(self, input: Tensor) -> None:
        if input.ndim != 4 or input.shape[1] != self.num_features:
            raise self.input_error(input.shape, f"(N, {self.num_features}, H, W)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        factor = self._momentum()
        # Batch statistics in training mode, or in eval mode when there are no running stats.
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if use_running else None,
            self.running_var if use_running else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input, per channel C.

    Training mode normalizes with the batch's mean and (biased) variance and updates the
    running stats with the unbiased variance: `running = (1 - momentum) * running + momentum *
    batch`; eval mode normalizes with the running stats.

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight (ones) and bias (zeros) (default True).
        track_running_stats: keep running_mean/running_var/num_batches_tracked buffers; without
            them batch statistics are used in eval mode too (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> bn = nn.BatchNorm1d(100)
        >>> bn(nb.randn(20, 100)).shape
        (20, 100)
    """

    def _check_input(self, input: Tensor) -> None:
        if input.ndim not in (2, 3) or input.shape[1] != self.num_features:
            c = self.num_features
            raise self.input_error(input.shape, f"(N, {c}) or (N, {c}, L)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input, per channel C (see BatchNorm1d).

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.BatchNorm2d(16)(nb.randn(8, 16, 5, 5)).shape
        (8, 16, 5, 5)
    """


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input, per channel C (see BatchNorm1d).

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.BatchNorm3d(16)(nb.randn(4, 16, 3, 5, 5)).shape
        (4, 16, 3, 5, 5)
    """

    def _check_input(self, input: Tensor) -> None:
        if input.ndim != 5 or input.shape[1] != self.num_features:
            raise self.input_error(input.shape, f"(N, {self.num_features}, D, H, W)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, *) input whose statistics cover the whole batch, also
    when the batch is split over devices (PyTorch's SyncBatchNorm for data parallelism).

    nabla's SPMD layer already computes BatchNorm's statistics over the global batch: on a
    batch sharded over a mesh the sums become all-reduces. So this is BatchNorm for any rank
    from 2 up; `convert_sync_batchnorm` swaps it in for a model's BatchNorm layers, as in
    PyTorch, keeping their parameters, buffers and mode.

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).
        process_group: PyTorch's communicator; nabla's is the mesh the batch is laid out on,
            so only None is accepted.

    Example:
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)))
        >>> type(model[1]).__name__
        'SyncBatchNorm'
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        _no_process_group(process_group)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input(self, input: Tensor) -> None:
        if input.ndim < 2 or input.shape[1] != self.num_features:
            raise self.input_error(input.shape, f"(N, {self.num_features}, *)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """`module` with every BatchNorm1d/2d/3d in it replaced by a SyncBatchNorm holding the
        same parameters, buffers and training mode (`module` itself if it is one).

        Args:
            module: a model, or a single BatchNorm layer.
            process_group: only None (see the class).
        """
        _no_process_group(process_group)
        out = module
        if isinstance(module, BatchNorm1d | BatchNorm2d | BatchNorm3d):
            out = cls(
                module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                bias=module.bias is not None,
            )  # fmt: skip
            for name in ("weight", "bias"):
                if module._parameters.get(name) is not None:
                    out._parameters[name] = module._parameters[name]
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                if module._buffers.get(name) is not None:
                    out._buffers[name] = module._buffers[name]
            out.train(module.training)
        for name, child in list(module.named_children()):
            converted = cls.convert_sync_batchnorm(child, process_group)
            if converted is not child:
                out.add_module(name, converted)
        return out


def _no_process_group(process_group: Any) -> None:
    if process_group is not None:
        raise ValueError(
            "SyncBatchNorm: process_group must be None: the statistics cover the batch over the mesh it is laid "
            f"out on, got {process_group!r}"
        )


class _InstanceNorm(_NormBase):
    _n = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        n, c = self._n, self.num_features
        # As PyTorch: without affine parameters or running stats any channel count works.
        strict = self.affine or self.track_running_stats
        if input.ndim not in (n + 1, n + 2) or (strict and input.shape[-n - 1] != c):
            dims = {1: "L", 2: "H, W", 3: "D, H, W"}[n]
            raise self.input_error(input.shape, f"(N, {c}, {dims}) or ({c}, {dims})")
        unbatched = input.ndim == n + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or (C, L): each sample's channel is normalized over L.

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default False).
        track_running_stats: keep running stats and use them in eval mode (default False).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.InstanceNorm1d(100)(nb.randn(20, 100, 40)).shape
        (20, 100, 40)
    """

    _n = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or (C, H, W), per sample and channel.

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default False).
        track_running_stats: keep running stats and use them in eval mode (default False).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.InstanceNorm2d(100)(nb.randn(20, 100, 35, 45)).shape
        (20, 100, 35, 45)
    """

    _n = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W), per sample and channel.

    Args:
        num_features: C.
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default False).
        track_running_stats: keep running stats and use them in eval mode (default False).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.InstanceNorm3d(4)(nb.randn(2, 4, 3, 5, 5)).shape
        (2, 4, 3, 5, 5)
    """

    _n = 3


def _shape_tuple(normalized_shape: Any, cls: str) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s > 0 for s in shape):
        raise ValueError(f"{cls}: normalized_shape must be positive ints, got {normalized_shape!r}")
    return tuple(int(s) for s in shape)


def _check_trailing(module: Module, input: Tensor, shape: tuple[int, ...]) -> None:
    if input.ndim < len(shape) or tuple(input.shape[input.ndim - len(shape) :]) != shape:
        raise module.input_error(input.shape, f"(*, {', '.join(str(s) for s in shape)})")


class LayerNorm(Module):
    """Layer normalization over the last `len(normalized_shape)` dims of each sample.

    Args:
        normalized_shape: the trailing shape to normalize over (int or tuple).
        eps: added to the variance for stability (default 1e-5).
        elementwise_affine: learn a weight (ones) and bias (zeros) of `normalized_shape`.
        bias: learn the bias too (default True).

    Example:
        >>> nn.LayerNorm(10)(nb.randn(20, 5, 10)).shape
        (20, 5, 10)
    """

    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape, "LayerNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = empty_parameter(self.normalized_shape, dtype, device)
            if bias:
                self.bias = empty_parameter(self.normalized_shape, dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1, bias = 0."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing(self, input, self.normalized_shape)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """Root-mean-square normalization: `x / sqrt(mean(x^2) + eps) * weight` over trailing dims.

    Args:
        normalized_shape: the trailing shape to normalize over (int or tuple).
        eps: added to the mean square; None uses the dtype's machine epsilon, as PyTorch.
        elementwise_affine: learn a weight (ones) of `normalized_shape` (default True).

    Example:
        >>> nn.RMSNorm([2, 3])(nb.randn(2, 2, 3)).shape
        (2, 2, 3)
    """

    def __init__(
        self,
        normalized_shape: Any,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape, "RMSNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = empty_parameter(self.normalized_shape, dtype, device)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing(self, input, self.normalized_shape)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Group normalization: channels split into `num_groups` groups, each normalized per sample.

    Args:
        num_groups: number of groups (must divide num_channels).
        num_channels: C of the (N, C, *) input.
        eps: added to the variance for stability (default 1e-5).
        affine: learn a per-channel weight (ones) and bias (zeros) (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> nn.GroupNorm(3, 6)(nb.randn(20, 6, 10, 10)).shape
        (20, 6, 10, 10)
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        for arg, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"GroupNorm: {arg} must be a positive int, got {value!r}")
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels must be divisible by num_groups (num_channels={num_channels}, num_groups={num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.register_parameter("weight", empty_parameter((num_channels,), dtype, device) if affine else None)
        self.register_parameter("bias", empty_parameter((num_channels,), dtype, device) if affine and bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight = 1, bias = 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise self.input_error(input.shape, f"(N, {self.num_channels}, *)")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class LocalResponseNorm(Module):
    """Normalize each channel by the activity of its neighbouring channels:
    `x / (k + alpha / size * sum of x^2 over `size` neighbours) ** beta`.

    Args:
        size: number of neighbouring channels.
        alpha: multiplicative factor (default 1e-4).
        beta: exponent (default 0.75).
        k: additive factor (default 1).

    Example:
        >>> nn.LocalResponseNorm(2)(nb.randn(32, 5, 24, 24)).shape
        (32, 5, 24, 24)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 3:
            raise self.input_error(input.shape, "(N, C, *) with at least 3 dims")
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """PyTorch's legacy cross-channel local response normalization of (N, C, H, W):
    `x * (k + alpha / size * sum of x^2 over a window of channels) ** -beta`.

    The window is PyTorch's (ported from Lua Torch), which differs from `LocalResponseNorm`'s
    (that one averages over `size` channels padded size // 2 before, (size - 1) // 2 after): with
    p = int((size - 1) / 2 + 1), channel c sums channels [c - p + 1, c + p - 1] (clipped to
    [0, C)), plus channel 0 for every c >= p, as PyTorch's running sum never subtracts channel
    0. Forward values match PyTorch; the gradient is the exact derivative of that forward (by
    autodiff), where PyTorch's hand-written backward is not (it fails `gradcheck`, and raises for
    size=1).

    Args:
        size: the window size (a positive int; an even size sums size - 1 neighbours, as PyTorch).
        alpha: multiplicative factor (default 1e-4), divided by `size`.
        beta: exponent (default 0.75).
        k: additive factor (default 1).

    Example:
        >>> nn.CrossMapLRN2d(3, alpha=1e-3)(nb.randn(2, 8, 5, 5)).shape
        (2, 8, 5, 5)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {size!r}")
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise self.input_error(input.shape, "(N, C, H, W)")
        check_float(input, "CrossMapLRN2d")
        c = input.shape[1]
        half = int((self.size - 1) / 2 + 1) - 1  # channels summed on each side
        sq = input * input
        padded = nb.pad(sq, [0, 0, 0, 0, half, half])
        acc = padded[:, 0:c]
        for i in range(1, 2 * half + 1):
            acc = acc + padded[:, i : i + c]
        if c > half + 1:  # channel 0, left in every window from c = half + 1 on
            first = np.zeros((1, c, 1, 1), dtype=bool)
            first[:, half + 1 :] = True
            acc = acc + nb.where(nb.tensor(first), sq[:, 0:1], 0.0)
        scale = acc * (self.alpha / self.size) + self.k
        return input * nb.pow(scale, -self.beta)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
