"""Gradient clipping (PyTorch's `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`).

Clipping is lazy: the total norm and the scaled gradients are promises, so they join the
optimizer step's graph (one evaluation per training step, no recompiles). The scale factor is
`clamp(max_norm / (total_norm + 1e-6), max=1)`, applied unconditionally as PyTorch does, so no
value has to be read in Python.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

import nabla as nb
from nabla import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
]

TensorOrTensors = Tensor | Iterable[Tensor]


def _as_list(tensors: TensorOrTensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _norm_type(norm_type: float | str) -> float:
    """A number, or a string `float` reads ("inf", "-inf", "2"), as PyTorch takes it."""
    try:
        return float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(f"norm_type must be a number or a string such as 'inf' or '-inf', got {norm_type!r}") from None


def get_total_norm(
    tensors: TensorOrTensors,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The norm of all `tensors` together, as if concatenated into one vector (a lazy scalar).

    Args:
        tensors: a tensor or an iterable of tensors (typically gradients).
        norm_type: the p of the p-norm; `inf` (or "inf") for the max-abs norm.
        error_if_nonfinite: raise RuntimeError if the norm is nan or inf. This needs the
            value, so it evaluates the norm (and everything pending) right away.
        foreach: accepted for PyTorch compatibility; ignored.

    Example:
        >>> total = get_total_norm([p.grad for p in model.parameters()])
    """
    tensors = _as_list(tensors)
    p = _norm_type(norm_type)
    if not tensors:
        return nb.tensor(0.0)
    with nb.no_grad():
        norms = [nb.norm(t, p) if t.numel() else nb.zeros((), dtype=t.dtype) for t in tensors]
        dtype = norms[0].dtype
        for n in norms[1:]:
            dtype = nb.promote_types(dtype, n.dtype)
        total = nb.norm(nb.stack([n.to(dtype) for n in norms]), p)
    if error_if_nonfinite:
        value = total.item()
        if not math.isfinite(value):
            raise RuntimeError(
                f"The total norm of order {p} for gradients from `parameters` is non-finite ({value}), so it "
                "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                "anyway, set `error_if_nonfinite=False`"
            )
    return total


def clip_grads_with_norm_(
    parameters: TensorOrTensors, max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale the gradients of `parameters` by `min(1, max_norm / (total_norm + 1e-6))`, in place.

    Args:
        parameters: a tensor or an iterable of tensors whose `.grad` is scaled.
        max_norm: the largest allowed total norm.
        total_norm: the total norm of the gradients (from `get_total_norm`).
        foreach: accepted for PyTorch compatibility; ignored.

    Example:
        >>> grads = [p.grad for p in model.parameters()]
        >>> clip_grads_with_norm_(model.parameters(), 1.0, get_total_norm(grads))
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with nb.no_grad():
        coef = nb.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef if coef.dtype == g.dtype else coef.to(g.dtype))


def clip_grad_norm_(
    parameters: TensorOrTensors,
    max_norm: float,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of `parameters` in place so their total norm is at most `max_norm`.

    Args:
        parameters: a tensor or an iterable of tensors whose `.grad` is clipped.
        max_norm: the largest allowed total norm.
        norm_type: the p of the p-norm (default 2); `inf` (or "inf") for the max-abs norm.
        error_if_nonfinite: raise RuntimeError if the total norm is nan or inf. Checking needs
            the value, so this evaluates the norm right away (the backward pass with it)
            instead of in the optimizer step's graph.
        foreach: accepted for PyTorch compatibility; ignored.

    Returns:
        The total norm of the gradients before clipping (a lazy scalar tensor).

    Example:
        >>> loss.backward()
        >>> clip_grad_norm_(model.parameters(), max_norm=1.0)
        >>> opt.step()
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(
    parameters: TensorOrTensors,
    max_norm: float,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated name of `clip_grad_norm_` (as in PyTorch, it warns)."""
    warnings.warn(
        "`nabla_nn.utils.clip_grad_norm` is now deprecated in favor of `nabla_nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp the gradients of `parameters` to `[-clip_value, clip_value]`, in place.

    Args:
        parameters: a tensor or an iterable of tensors whose `.grad` is clamped.
        clip_value: the bound (a nonnegative number).
        foreach: accepted for PyTorch compatibility; ignored.

    Example:
        >>> clip_grad_value_(model.parameters(), clip_value=0.5)
    """
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"clip_value must be nonnegative, got {clip_value}")
    with nb.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All `parameters` flattened and concatenated into one vector.

    Args:
        parameters: an iterable of tensors (e.g. `model.parameters()`).

    Example:
        >>> vec = parameters_to_vector(model.parameters())
    """
    params = _as_list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return nb.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of `vec` into `parameters` (their `.data`), in order.

    Args:
        vec: a 1-D tensor with as many elements as all parameters together.
        parameters: an iterable of tensors (e.g. `model.parameters()`).

    Example:
        >>> vector_to_parameters(parameters_to_vector(model.parameters()) * 0.5, model.parameters())
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected vec to be a Tensor, but got: {type(vec).__name__}")
    params = _as_list(parameters)
    total = int(np.sum([p.numel() for p in params]))
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(f"vec must be a 1-D tensor of {total} elements (all parameters), got shape {vec.shape}")
    offset = 0
    for p in params:
        n = p.numel()
        p.data = vec[offset : offset + n].reshape(p.shape)
        offset += n
