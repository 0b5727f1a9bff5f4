"""Lazy modules (PyTorch's `torch.nn.modules.lazy` and the `Lazy*` layers): the input size of a
layer (`in_features`, `in_channels`, `num_features`) is read from its first input.

Until that first call a lazy module holds `UninitializedParameter`s / `UninitializedBuffer`s,
placeholders whose shape cannot be read. The first forward (a "dry run") materializes them in
place, fills them with the regular layer's default initialization, and turns the module into
that regular class (`cls_to_become`: a `LazyLinear` becomes a `Linear`), as in PyTorch:

    model = nn.Sequential(nn.LazyLinear(64), nn.ReLU(), nn.LazyLinear(10))
    model(nb.zeros(1, 784))                       # dry run: shapes inferred, weights initialized
    opt = optim.Adam(model.parameters(), lr=1e-3)  # only now: the parameters have shapes

Create optimizers after the dry run, as PyTorch requires: before it the parameters have no
shape (reading one raises, naming the dry run). nabla's optimizers build their state at their
first step and the placeholders are materialized in place (the same objects), so an optimizer
created earlier also works once the dry run has happened, but code meant to run on PyTorch too
should not rely on it. Convert dtypes (`model.to(nb.float64)`) before the dry run or after it:
a placeholder keeps the dtype it is given.

`load_state_dict(sd)` with initialized values materializes the placeholders to the loaded
shapes first (PyTorch's `_lazy_load_hook`), whether it is called on the lazy module itself or
on a model containing it (`nn.Sequential(nn.LazyLinear(4)).load_state_dict(sd)`): before
checking anything, `Module.load_state_dict` calls `_materialize_from_state_dict(prefix,
state_dict)` on every submodule that defines it. A lazy module whose keys are not in `sd`
stays uninitialized. As in PyTorch, the module keeps its lazy class until its first forward
(which keeps the loaded values and makes it `cls_to_become`), but unlike PyTorch it also sets
the inferred size attribute from the loaded shapes at once (PyTorch leaves it 0), and a failed
load (a shape, dtype or strict key error anywhere in the model) leaves every lazy module
uninitialized, as it was.

Unlike PyTorch, every module sets its size attribute from the first input even when it has
nothing to materialize (`affine=False, track_running_stats=False` norms), because nabla's
BatchNorm checks the channel count of its input, and the lazy instance norms read the channel
count of an unbatched (C, L) / (C, H, W) input from its dim 0 (PyTorch reads dim 1 there).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nabla import Tensor

from ..module import Module
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear, realized_buffer
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LazyModuleMixin",
    "UninitializedBuffer",
    "UninitializedParameter",
]


def _loaded_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a state_dict value (a nabla Tensor, a NumPy array, a torch tensor), or None
    for a placeholder (an uninitialized module's state_dict, ours or PyTorch's, whose shape
    raises) or something without one."""
    if is_lazy(value):
        return None
    try:
        shape = getattr(value, "shape", None)
    except RuntimeError:  # torch's UninitializedParameter
        return None
    return None if shape is None else tuple(int(s) for s in shape)


class LazyModuleMixin:
    """Mixin for modules whose tensors get their shapes from the first input (PyTorch's).

    A subclass lists the regular class second (`class LazyLinear(LazyModuleMixin, Linear)`),
    sets `cls_to_become`, creates placeholders in `__init__` and implements
    `initialize_parameters(*args, **kwargs)` (materialize, then `reset_parameters()`),
    `_infer_from_loaded()` (set the size attribute from materialized tensors) and
    `_expected_shapes()`. `Module.load_state_dict` calls `_materialize_from_state_dict` on it
    (directly or through a parent), so loading initialized values materializes it:

        >>> lazy = nn.LazyLinear(3)
        >>> _ = nn.Sequential(lazy).load_state_dict({f"0.{k}": v for k, v in nn.Linear(5, 3).state_dict().items()})
        >>> lazy.in_features, lazy.weight.shape
        (5, (3, 5))
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Registered after the base __init__: while it is absent, reset_parameters does nothing,
        # so building the base class's placeholder tensors draws no random numbers.
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def reset_parameters(self) -> None:
        """The regular class's initialization, once every tensor has its shape."""
        if "_initialize_hook" in self.__dict__ and not self.has_uninitialized_params():
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize the placeholders from the first input (each lazy class implements it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module is still a placeholder."""
        tensors = itertools.chain(self._parameters.values(), self._buffers.values())  # type: ignore[attr-defined]
        return any(is_lazy(t) for t in tensors)

    def _infer_parameters(self, module: Module, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: initialize from this input, then become `cls_to_become`."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _materialize_from_state_dict(
        self, prefix: str, state_dict: Mapping[str, Any]
    ) -> tuple[list[Callable[[], None]], list[str]]:
        """`Module.load_state_dict`'s first step (PyTorch's `_lazy_load_hook`): materialize the
        placeholders `state_dict` has initialized values for (keys `prefix + name`) to those
        values' shapes and, once none is left, set the size attribute from them.

        Returns the undo steps (the caller runs them, last first, if the load fails) and the
        problems found (loaded shapes that fit no such module); keys absent from `state_dict`
        leave their placeholders as they are.
        """
        undo: list[Callable[[], None]] = []
        stores = itertools.chain(self._parameters.items(), self._buffers.items())  # type: ignore[attr-defined]
        try:
            for name, tensor in list(stores):
                shape = _loaded_shape(state_dict.get(prefix + name)) if is_lazy(tensor) else None
                if shape is None:
                    continue
                undo.append(_restorer(tensor))
                tensor.materialize(shape)
            if not undo or self.has_uninitialized_params():
                return undo, []
            saved = dict(self.__dict__)
            undo.append(lambda: _restore_attributes(self, saved))
            self._infer_from_loaded()
            return undo, self._check_loaded(prefix)
        except Exception:
            for step in reversed(undo):
                step()
            raise

    def _infer_from_loaded(self) -> None:
        """Set the size attribute from materialized tensors (each lazy class implements it)."""
        raise NotImplementedError(f"_infer_from_loaded is not implemented for {type(self).__name__}")

    def _expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Each tensor's shape for the current size attribute (each lazy class implements it)."""
        raise NotImplementedError(f"_expected_shapes is not implemented for {type(self).__name__}")

    def _check_loaded(self, prefix: str) -> list[str]:
        """The loaded shapes that disagree with each other or the constructor's arguments (a
        (3, 5) weight with a (4,) bias fits no LazyLinear(3)), as load_state_dict problems."""
        stores = {**self._parameters, **self._buffers}  # type: ignore[attr-defined]
        problems = []
        for name, shape in self._expected_shapes().items():
            tensor = stores.get(name)
            if tensor is not None and tuple(tensor.shape) != shape:
                problems.append(
                    f"{prefix}{name}: shape {tuple(tensor.shape)} in the state_dict, expected {shape} for "
                    f"{self._get_name()}({self.extra_repr()})"
                )
        return problems


def _restorer(tensor: Tensor) -> Callable[[], None]:
    """An undo step that makes a materialized placeholder a placeholder again."""
    cls, impl = type(tensor), tensor._impl

    def restore() -> None:
        tensor.data = Tensor(impl)
        tensor.__class__ = cls

    return restore


def _restore_attributes(module: Module, saved: dict) -> None:
    for key, value in saved.items():
        object.__setattr__(module, key, value)


class LazyLinear(LazyModuleMixin, Linear):
    """A `Linear` whose `in_features` is read from the first input's last dimension.

    Its weight and bias are `UninitializedParameter`s until the first call, which gives them
    their shapes and Linear's default initialization and makes the module a `Linear`.

    Args:
        out_features: size of each output's last dimension.
        bias: whether to learn an additive bias.
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    Example:
        >>> m = nn.LazyLinear(30)
        >>> m(nb.randn(128, 20)).shape, type(m).__name__, m.in_features
        ((128, 30), 'Linear', 20)
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        if isinstance(out_features, bool) or not isinstance(out_features, int) or out_features < 0:
            raise ValueError(f"LazyLinear: out_features must be a non-negative int, got {out_features!r}")
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """in_features = input.shape[-1]; weight (out, in) and bias (out,), then Linear's init."""
        if not self.has_uninitialized_params():
            return
        if not isinstance(input, Tensor) or input.ndim < 1:
            raise self.input_error(getattr(input, "shape", ()), "(*, in_features): a tensor of at least 1 dimension")
        self.in_features = int(input.shape[-1])
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()

    def _infer_from_loaded(self) -> None:
        self.in_features = int(self.weight.shape[1])

    def _expected_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"weight": (self.out_features, self.in_features), "bias": (self.out_features,)}


class _LazyConvBase(LazyModuleMixin):
    """Shared by the lazy convolutions: in_channels from the input's channel dim."""

    _n: int
    transposed: bool

    def _make_lazy(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.in_channels = 0
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def _get_in_channels(self, input: Any) -> int:
        n = self._n
        if not isinstance(input, Tensor) or input.ndim not in (n + 1, n + 2):
            dims = ", ".join(("C", *{1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}[n]))
            raise self.input_error(getattr(input, "shape", ()), f"(N, {dims}) or ({dims})")
        return int(input.shape[-n - 1])

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """in_channels from the input, then the weight (and bias) shapes and the regular init."""
        if not self.has_uninitialized_params():
            return
        in_channels = self._get_in_channels(input)
        if in_channels % self.groups != 0:
            raise ValueError(
                f"{type(self).__name__}: in_channels must be divisible by groups "
                f"(in_channels={in_channels} from the input, groups={self.groups})"
            )
        self.in_channels = in_channels
        g = self.groups
        lead = (in_channels, self.out_channels // g) if self.transposed else (self.out_channels, in_channels // g)
        self.weight.materialize((*lead, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()

    def _infer_from_loaded(self) -> None:
        w = self.weight.shape
        self.in_channels = int(w[0]) if self.transposed else int(w[1]) * self.groups

    def _expected_shapes(self) -> dict[str, tuple[int, ...]]:
        c_in, c_out, g = self.in_channels, self.out_channels, self.groups
        lead = (c_in, c_out // g) if self.transposed else (c_out, c_in // g)
        return {"weight": (*lead, *self.kernel_size), "bias": (c_out,)}


class _LazyConvMixin(_LazyConvBase):
    """The lazy Conv1d/2d/3d constructor (the regular one's arguments but in_channels)."""

    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        # in_channels=groups passes the base checks; the placeholders replace its tensors.
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTransposeMixin(_LazyConvBase):
    """The lazy ConvTranspose1d/2d/3d constructor (the regular one's arguments but in_channels)."""

    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        # in_channels=groups passes the base checks; the placeholders replace its tensors.
        super().__init__(
            groups, out_channels, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode
        )
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvMixin, Conv1d):
    """A `Conv1d` whose `in_channels` is read from the first input (dim 1, or 0 unbatched).

    Args:
        out_channels: channels of the output.
        kernel_size: int or (k,).
        stride: int or (s,) (default 1).
        padding: int, (p,), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Example:
        >>> m = nn.LazyConv1d(33, 3, stride=2)
        >>> m(nb.randn(20, 16, 50)).shape, type(m).__name__
        ((20, 33, 24), 'Conv1d')
    """

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvMixin, Conv2d):
    """A `Conv2d` whose `in_channels` is read from the first input (dim 1, or 0 unbatched).

    Args:
        out_channels: channels of the output.
        kernel_size: int or (kH, kW).
        stride: int or (sH, sW) (default 1).
        padding: int, (pH, pW), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Example:
        >>> m = nn.LazyConv2d(33, 3)
        >>> m(nb.randn(2, 16, 10, 10)).shape, m.weight.shape
        ((2, 33, 8, 8), (33, 16, 3, 3))
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvMixin, Conv3d):
    """A `Conv3d` whose `in_channels` is read from the first input (dim 1, or 0 unbatched).

    Args:
        out_channels: channels of the output.
        kernel_size: int or (kD, kH, kW).
        stride: int or (sD, sH, sW) (default 1).
        padding: int, (pD, pH, pW), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Example:
        >>> m = nn.LazyConv3d(33, 3)
        >>> m(nb.randn(2, 16, 5, 6, 6)).shape, m.weight.shape
        ((2, 33, 3, 4, 4), (33, 16, 3, 3, 3))
    """

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeMixin, ConvTranspose1d):
    """A `ConvTranspose1d` whose `in_channels` is read from the first input.

    Args:
        out_channels: channels of the output.
        kernel_size: int or (k,).
        stride: int or (s,) (default 1).
        padding: zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of the output (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).
        padding_mode: only "zeros".

    Example:
        >>> m = nn.LazyConvTranspose1d(33, 3, stride=2)
        >>> m(nb.randn(20, 16, 50)).shape, m.weight.shape
        ((20, 33, 101), (16, 33, 3))
    """

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeMixin, ConvTranspose2d):
    """A `ConvTranspose2d` whose `in_channels` is read from the first input.

    Args:
        out_channels: channels of the output.
        kernel_size: int or (kH, kW).
        stride: int or (sH, sW) (default 1).
        padding: zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of each output dim (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).
        padding_mode: only "zeros".

    Example:
        >>> m = nn.LazyConvTranspose2d(33, 3, stride=2)
        >>> m(nb.randn(2, 16, 5, 5)).shape
        (2, 33, 11, 11)
    """

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeMixin, ConvTranspose3d):
    """A `ConvTranspose3d` whose `in_channels` is read from the first input.

    Args:
        out_channels: channels of the output.
        kernel_size: int or (kD, kH, kW).
        stride: int or (sD, sH, sW) (default 1).
        padding: zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of each output dim (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).
        padding_mode: only "zeros".

    Example:
        >>> m = nn.LazyConvTranspose3d(33, 3, stride=2)
        >>> m(nb.randn(2, 16, 3, 5, 5)).shape
        (2, 33, 7, 11, 11)
    """

    cls_to_become = ConvTranspose3d


class _LazyNormMixin(LazyModuleMixin):
    """Shared by the lazy BatchNorm / InstanceNorm: num_features from the input's channel dim."""

    _dims: tuple[int, ...]  # the input ranks accepted
    _layout: str  # for errors: "(N, C) or (N, C, L)"

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        # The base norm built without tensors (num_features=1 passes its checks), then placeholders.
        super().__init__(1, eps, momentum, False, False)
        self.num_features = 0
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            # registered again so that the state_dict lists it last, as PyTorch's does
            self.register_buffer("num_batches_tracked", realized_buffer(np.array(0, np.int64), device=device))

    def _channels(self, input: Any) -> int:
        if not isinstance(input, Tensor) or input.ndim not in self._dims:
            raise self.input_error(getattr(input, "shape", ()), self._layout)
        return int(input.shape[self._channel_dim(input.ndim)])

    def _channel_dim(self, ndim: int) -> int:
        return 1

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """num_features from the input; weight, bias, running_mean, running_var of that size."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            return
        self.num_features = self._channels(input)
        for t in (self.weight, self.bias, self.running_mean, self.running_var):
            if is_lazy(t):
                t.materialize((self.num_features,))
        self.reset_parameters()

    def _infer_from_loaded(self) -> None:
        sized = [t for t in (self.weight, self.bias, self.running_mean, self.running_var) if t is not None]
        self.num_features = int(sized[0].shape[0])

    def _expected_shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: (self.num_features,) for name in ("weight", "bias", "running_mean", "running_var")}


class LazyBatchNorm1d(_LazyNormMixin, BatchNorm1d):
    """A `BatchNorm1d` whose `num_features` is read from the first input's dim 1.

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyBatchNorm1d()
        >>> m(nb.randn(20, 100)).shape, m.num_features
        ((20, 100), 100)
    """

    cls_to_become = BatchNorm1d
    _dims = (2, 3)
    _layout = "(N, C) or (N, C, L)"


class LazyBatchNorm2d(_LazyNormMixin, BatchNorm2d):
    """A `BatchNorm2d` whose `num_features` is read from the first input's dim 1.

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyBatchNorm2d()
        >>> m(nb.randn(8, 16, 5, 5)).shape, m.running_mean.shape
        ((8, 16, 5, 5), (16,))
    """

    cls_to_become = BatchNorm2d
    _dims = (4,)
    _layout = "(N, C, H, W)"


class LazyBatchNorm3d(_LazyNormMixin, BatchNorm3d):
    """A `BatchNorm3d` whose `num_features` is read from the first input's dim 1.

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1); None means a cumulative average.
        affine: learn a per-channel weight and bias (default True).
        track_running_stats: keep running-stat buffers (default True).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyBatchNorm3d()
        >>> m(nb.randn(8, 16, 3, 5, 5)).shape, m.running_mean.shape
        ((8, 16, 3, 5, 5), (16,))
    """

    cls_to_become = BatchNorm3d
    _dims = (5,)
    _layout = "(N, C, D, H, W)"


class LazyInstanceNorm1d(_LazyNormMixin, InstanceNorm1d):
    """An `InstanceNorm1d` whose `num_features` is read from the first input's channel dim
    (dim 1 of (N, C, L), dim 0 of an unbatched (C, L)).

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default True, as PyTorch's lazy
            instance norms, unlike InstanceNorm's False).
        track_running_stats: keep running stats and use them in eval mode (default True, as
            PyTorch's lazy instance norms).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyInstanceNorm1d()
        >>> m(nb.randn(20, 100, 40)).shape, m.weight.shape
        ((20, 100, 40), (100,))
    """

    cls_to_become = InstanceNorm1d
    _dims = (2, 3)
    _layout = "(N, C, L) or (C, L)"

    def _channel_dim(self, ndim: int) -> int:
        return ndim - 2


class LazyInstanceNorm2d(_LazyNormMixin, InstanceNorm2d):
    """An `InstanceNorm2d` whose `num_features` is read from the first input's channel dim
    (dim 1 of (N, C, H, W), dim 0 of an unbatched (C, H, W)).

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default True, as PyTorch's lazy
            instance norms, unlike InstanceNorm's False).
        track_running_stats: keep running stats and use them in eval mode (default True, as
            PyTorch's lazy instance norms).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
        >>> m(nb.randn(2, 3, 5, 5)).shape, type(m).__name__
        ((2, 3, 5, 5), 'InstanceNorm2d')
    """

    cls_to_become = InstanceNorm2d
    _dims = (3, 4)
    _layout = "(N, C, H, W) or (C, H, W)"

    def _channel_dim(self, ndim: int) -> int:
        return ndim - 3


class LazyInstanceNorm3d(_LazyNormMixin, InstanceNorm3d):
    """An `InstanceNorm3d` whose `num_features` is read from the first input's channel dim
    (dim 1 of (N, C, D, H, W), dim 0 of an unbatched (C, D, H, W)).

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: running-stat update factor (default 0.1).
        affine: learn a per-channel weight and bias (default True, as PyTorch's lazy
            instance norms, unlike InstanceNorm's False).
        track_running_stats: keep running stats and use them in eval mode (default True, as
            PyTorch's lazy instance norms).
        bias: with affine, learn the bias too (keyword-only, default True).

    Example:
        >>> m = nn.LazyInstanceNorm3d(affine=False, track_running_stats=False)
        >>> m(nb.randn(2, 3, 2, 5, 5)).shape, type(m).__name__
        ((2, 3, 2, 5, 5), 'InstanceNorm3d')
    """

    cls_to_become = InstanceNorm3d
    _dims = (4, 5)
    _layout = "(N, C, D, H, W) or (C, D, H, W)"

    def _channel_dim(self, ndim: int) -> int:
        return ndim - 4
