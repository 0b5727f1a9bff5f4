"""torch.autograd's functions on nabla tensors: `nabla.autograd.grad(outputs, inputs, ...)`
returns gradients (a gradient penalty takes `create_graph=True`), `nabla.autograd.backward`
accumulates them into `.grad` as `Tensor.backward` does. The JAX-style transforms
(`nabla.grad(fn)`, `vjp`, ...) differentiate functions instead.

Example:
    >>> x = nabla.tensor([1.0, 2.0], requires_grad=True)
    >>> (g,) = nabla.autograd.grad((x**3).sum(), x, create_graph=True)
    >>> nabla.autograd.grad(g.sum(), x)[0].tolist()
    [6.0, 12.0]
"""

from __future__ import annotations

from typing import Any

from ..core.autograd import tensor_grad
from ..core.autograd.engine import as_tensor_list, tensors_backward
from ..core.common import dtypes as _dt
from ..core.common.context import (
    anomaly_enabled,
    decorated,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_anomaly_enabled,
    set_grad_enabled,
)
from ..core.tensor import Tensor
from ..ops import broadcast_shapes as _broadcast_shapes
from ..ops import detach, grad_hook, zeros_like
from ..ops.view import sum_to_shape
from ..transforms.vmap import vmap
from . import forward_ad, functional
from .gradcheck import (  # (the attribute is the function, as torch's; the module stays importable)
    gradcheck,
    gradgradcheck,
)

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "is_anomaly_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """torch.autograd.grad (see `tensor_grad` for the arguments). `only_inputs` is ignored, as
    in torch. With `is_grads_batched=True` each `grad_outputs` entry has a leading batch dim
    and the backward is vmapped over it, as torch's: one vector-Jacobian product per row."""
    kwargs = {"create_graph": create_graph, "allow_unused": allow_unused, "materialize_grads": materialize_grads}
    if not is_grads_batched:
        return tensor_grad(outputs, inputs, grad_outputs, retain_graph, **kwargs)
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs (each with a leading batch dim)")
    cotangents = as_tensor_list(grad_outputs)
    single = not isinstance(outputs, list | tuple)

    def one(*rows: Any) -> tuple:
        return tensor_grad(outputs, inputs, rows[0] if single else list(rows), True, **kwargs)

    return vmap(one)(*cotangents)  # (each row's backward keeps the trace: the graph is retained)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """torch.autograd.backward: one backward from every tensor in `tensors`, each seeded with
    its `grad_tensors` entry (ones for a scalar); hooks see the summed gradients."""
    outs = as_tensor_list(tensors)
    cots = [None] * len(outs) if grad_tensors is None else as_tensor_list(grad_tensors)
    tensors_backward(outs, cots, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


class FunctionCtx:
    """The `ctx` of an `autograd.Function`: what `forward` leaves for `backward`."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple = ()
        self._materialize_grads = True
        self._non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """False: an output without a gradient reaches `backward` as None, not zeros."""
        self._materialize_grads = bool(value)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Accepted for torch's API (nabla's in-place ops record themselves)."""


class Function:
    """torch.autograd.Function: a differentiable operation written as two static methods,
    `forward(ctx, *args)` (run without recording) and `backward(ctx, *grad_outputs)` (one
    gradient, or None, per forward argument); call it with `MyFn.apply(*args)`. torch's newer
    style, `forward(*args)` plus `setup_context(ctx, inputs, output)`, works too.

    Example:
        >>> class StraightThroughRound(nabla.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x.round()
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g
        >>> x = nabla.tensor([0.3, 1.7], requires_grad=True)
        >>> StraightThroughRound.apply(x).sum().backward()
        >>> x.grad.tolist()
        [1.0, 1.0]
    """

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("autograd.Function: define a static forward(ctx, *args)")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("autograd.Function: define a static backward(ctx, *grad_outputs)")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        """torch's newer style: defined by a subclass, `forward` then takes no ctx."""

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, Tensor) and a._impl.tangent for a in args):
            raise NotImplementedError(f"{cls.__name__}: forward mode (jvp) through an autograd.Function")
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        separate = cls.setup_context is not Function.setup_context  # torch's newer style
        with no_grad():
            out = cls.forward(*args, **kwargs) if separate else cls.forward(ctx, *args, **kwargs)
            if separate:
                cls.setup_context(ctx, args, out)
        inputs = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not inputs or not is_grad_enabled():
            return out
        outs = list(out) if isinstance(out, tuple) else [out]
        slots = [
            i
            for i, o in enumerate(outs)
            if isinstance(o, Tensor) and _dt.is_float(o.dtype) and id(o) not in ctx._non_differentiable
        ]
        for i, o in enumerate(outs):  # a non-differentiable output that is an input: a detached alias
            if isinstance(o, Tensor) and id(o) in ctx._non_differentiable and o.requires_grad:
                outs[i] = detach(o)
        if not slots:
            return out
        hooked = grad_hook([*inputs, *(outs[i] for i in slots)], _backward_of(cls, ctx, args, outs, slots))
        swapped = {}
        for i, h in zip(slots, hooked[len(inputs) :], strict=True):
            swapped[id(outs[i])] = h
            outs[i] = h
        # An output saved for backward (Exp's) is the hooked one: a double backward reaches it.
        ctx.saved_tensors = tuple(swapped.get(id(t), t) for t in ctx.saved_tensors)
        return tuple(outs) if isinstance(out, tuple) else outs[0]


def _backward_of(cls: type, ctx: FunctionCtx, args: tuple, outs: list, slots: list[int]) -> Any:
    """The grad_hook function: the outputs' cotangents to `cls.backward`, its gradients checked
    and handed to the inputs that require grad."""
    n_in = sum(ctx.needs_input_grad)

    def run(cotangents: list) -> list:
        grads_out: list = [None] * len(outs)
        for i, c in zip(slots, cotangents[n_in:], strict=True):
            grads_out[i] = c
        if ctx._materialize_grads:
            grads_out = [
                zeros_like(o) if g is None and isinstance(o, Tensor) else g
                for o, g in zip(outs, grads_out, strict=True)
            ]
        grads = cls.backward(ctx, *grads_out)
        grads = grads if isinstance(grads, tuple | list) else (grads,)
        if len(grads) < len(args) or any(g is not None for g in grads[len(args) :]):
            raise RuntimeError(
                f"function {cls.__name__}Backward returned an incorrect number of gradients "
                f"(expected {len(args)}, got {len(grads)})"
            )
        result = []
        for i, (a, g) in enumerate(zip(args, grads, strict=False)):
            if not ctx.needs_input_grad[i]:
                continue
            if g is not None and tuple(g.shape) != tuple(a.shape):
                try:  # torch sums a gradient of a broadcast shape down to the input's
                    if _broadcast_shapes(tuple(a.shape), tuple(g.shape)) != tuple(g.shape):
                        raise ValueError
                except ValueError:
                    raise RuntimeError(
                        f"function {cls.__name__}Backward returned an invalid gradient at index {i}: got shape "
                        f"{tuple(g.shape)}, expected shape compatible with {tuple(a.shape)}"
                    ) from None
                g = sum_to_shape(g, tuple(a.shape))
            result.append(g)
        return result + [None] * len(slots)

    return run


def once_differentiable(fn: Any) -> Any:
    """torch's decorator for a backward that is not itself differentiable: accepted as is."""
    return fn


def is_anomaly_enabled() -> bool:
    return anomaly_enabled()


class detect_anomaly:  # noqa: N801 (torch's name)
    """torch.autograd.detect_anomaly: inside it (a `with` block or a decorated function), a
    backward whose rule returns nan raises naming the op ("Function 'DivBackward0' returned nan
    values in its 0th output."). Each rule's result is computed at once: for debugging only.

    Args:
        check_nan: False turns the check off (the mode is then a no-op, as torch's).
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = bool(check_nan)
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(set_anomaly_enabled(self.check_nan))

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(self._previous.pop())

    def __call__(self, fn: Any) -> Any:
        return decorated(lambda: detect_anomaly(self.check_nan), fn)


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    """torch.autograd.set_detect_anomaly: turn anomaly detection on or off (a plain call)."""
    set_anomaly_enabled(bool(mode) and bool(check_nan))
