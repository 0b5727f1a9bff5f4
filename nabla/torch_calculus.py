"""torch's numerical calculus on sampled values: `nabla.gradient` (central differences, edge
orders 1 and 2, uniform or coordinate spacing), `trapezoid`/`trapz` and `cumulative_trapezoid`.
Composites of public ops, as torch_functions.py's; `tests/test_torch_functions.py` checks them
against torch and NumPy.
"""

from __future__ import annotations

from typing import Any

from . import ops
from .core.common import dtypes as _dt
from .core.tensor import Tensor
from .ops.linalg import _as_tensor
from .ops.view import normalize_axis

__all__ = ["cumulative_trapezoid", "gradient", "trapezoid", "trapz"]


# -- integration ---------------------------------------------------------------------------------
def _spacing(y: Tensor, x: Any, dx: Any, d: int, op: str) -> Any:
    """The widths of the n - 1 intervals along dim d: from sample points x (1-D, or y's shape),
    else the constant dx (1 by default)."""
    if x is None:
        return 1.0 if dx is None else dx
    xt = _as_tensor(x, op, "x")
    if xt.ndim == 1:
        return ops.reshape(xt.diff(1, 0), (max(y.shape[d] - 1, 0),) + (1,) * (y.ndim - d - 1))
    return xt.diff(1, d)


def _trapezoids(op: str, y: Any, x: Any, dx: Any, dim: int) -> tuple[Tensor, int]:
    """The area of each of the n - 1 trapezoids along `dim`, and that dim."""
    yt = _as_tensor(y, op, "y")
    d = normalize_axis(dim, yt.ndim, op, "dim")
    k = max(yt.shape[d] - 1, 0)
    mids = ops.mul(ops.add(yt.narrow(d, min(1, yt.shape[d]), k), yt.narrow(d, 0, k)), 0.5)  # empty: no areas
    return ops.mul(mids, _spacing(yt, x, dx, d, op)), d


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """torch.trapezoid: the trapezoidal rule over `dim`, with sample points `x` or spacing `dx`."""
    areas, d = _trapezoids("trapezoid", y, x, dx, dim)
    return ops.sum(areas, d)


trapz = trapezoid


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """torch.cumulative_trapezoid: the running trapezoidal integral over `dim` (one shorter)."""
    areas, d = _trapezoids("cumulative_trapezoid", y, x, dx, dim)
    return ops.cumsum(areas, d)


# -- numerical gradient ---------------------------------------------------------------------------
def _sample(t: Tensor, d: int, k: int) -> Tensor:
    """t's k-th entry along dim d (k < 0 counts from the end), kept as a dim of size 1."""
    return t.narrow(d, k % t.shape[d], 1)


def _on_axis(c: Tensor, d: int, ndim: int) -> Tensor:
    """A 1-D tensor of coefficients shaped to broadcast along dim d of an ndim-D tensor."""
    return ops.reshape(c, tuple(-1 if k == d else 1 for k in range(ndim)))


def _gradient_uniform(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    n = f.shape[d]
    inner = ops.div(ops.sub(f.narrow(d, 2, n - 2), f.narrow(d, 0, n - 2)), 2.0 * h)
    f0, f1, g0, g1 = (_sample(f, d, k) for k in (0, 1, -1, -2))  # the first samples, and the last
    if edge_order == 1:
        first = ops.div(ops.sub(f1, f0), h)
        last = ops.div(ops.sub(g0, g1), h)
    else:
        f2, g2 = _sample(f, d, 2), _sample(f, d, -3)
        first = ops.div(ops.add(ops.add(ops.mul(f0, -1.5), ops.mul(f1, 2.0)), ops.mul(f2, -0.5)), h)
        last = ops.div(ops.add(ops.add(ops.mul(g2, 0.5), ops.mul(g1, -2.0)), ops.mul(g0, 1.5)), h)
    return ops.concatenate([first, inner, last], d)


def _gradient_coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    n = f.shape[d]
    dx = x.astype(f.dtype).diff()
    dx1, dx2 = dx.narrow(0, 0, n - 2), dx.narrow(0, 1, n - 2)
    total = ops.add(dx1, dx2)
    a = ops.neg(ops.div(dx2, ops.mul(dx1, total)))
    b = ops.div(ops.sub(dx2, dx1), ops.mul(dx1, dx2))
    c = ops.div(dx1, ops.mul(dx2, total))
    a, b, c = (_on_axis(w, d, f.ndim) for w in (a, b, c))
    inner = ops.add(
        ops.add(ops.mul(a, f.narrow(d, 0, n - 2)), ops.mul(b, f.narrow(d, 1, n - 2))), ops.mul(c, f.narrow(d, 2, n - 2))
    )

    def at(k: int) -> Tensor:
        return _sample(f, d, k)

    def step(k: int) -> Tensor:
        return _sample(dx, 0, k)

    if edge_order == 1:
        first = ops.div(ops.sub(at(1), at(0)), step(0))
        last = ops.div(ops.sub(at(-1), at(-2)), step(-1))
    else:
        h1, h2 = step(0), step(1)
        s12 = ops.add(h1, h2)
        first = ops.add(
            ops.add(ops.mul(at(0), ops.neg(ops.div(ops.add(ops.mul(h1, 2.0), h2), ops.mul(h1, s12)))),
                    ops.mul(at(1), ops.div(s12, ops.mul(h1, h2)))),
            ops.mul(at(2), ops.neg(ops.div(h1, ops.mul(h2, s12)))),
        )  # fmt: skip
        h1, h2 = step(-2), step(-1)
        s12 = ops.add(h1, h2)
        last = ops.add(
            ops.add(
                ops.mul(at(-3), ops.div(h2, ops.mul(h1, s12))), ops.mul(at(-2), ops.neg(ops.div(s12, ops.mul(h1, h2))))
            ),
            ops.mul(at(-1), ops.div(ops.add(ops.mul(h2, 2.0), h1), ops.mul(h2, s12))),
        )
    return ops.concatenate([first, inner, last], d)


def gradient(input: Any, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """torch.gradient: the derivative of sampled values along each of `dim` (all dims by
    default), by second-order central differences inside and one-sided differences of order
    `edge_order` (1 or 2) at the ends, as NumPy's `gradient`.

    Args:
        input: the samples; integers are taken as float32.
        spacing: a number (the step along every dim), one number per dim, or one 1-D tensor of
            coordinates per dim.
        dim: an int or a list of ints.
        edge_order: 1 or 2.

    Example:
        >>> nabla.gradient(nabla.tensor([1.0, 2.0, 4.0, 8.0]))[0].tolist()
        [1.0, 1.5, 3.0, 4.0]
    """
    f = _as_tensor(input, "gradient", "input")
    if not _dt.is_float(f.dtype):
        f = f.astype(_dt.DEFAULT_FLOAT)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    dims = list(range(f.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [normalize_axis(d, f.ndim, "gradient", "dim") for d in dims]
    if isinstance(spacing, Tensor) or not isinstance(spacing, list | tuple):
        spacing = [spacing] * len(dims)
    if len(spacing) != len(dims):
        raise ValueError(f"gradient: expected one spacing per dim ({len(dims)}), got {len(spacing)}")
    out = []
    for d, h in zip(dims, spacing, strict=True):
        if f.shape[d] < edge_order + 1:
            raise ValueError(
                f"gradient: dim {d} has {f.shape[d]} samples; edge_order={edge_order} needs at least {edge_order + 1}"
            )
        if isinstance(h, Tensor):
            if h.ndim != 1 or h.shape[0] != f.shape[d]:
                raise ValueError(f"gradient: coordinates for dim {d} must be 1-D of length {f.shape[d]}, got {h.shape}")
            out.append(_gradient_coordinates(f, d, h, edge_order))
        else:
            out.append(_gradient_uniform(f, d, float(h), edge_order))
    return tuple(out)
