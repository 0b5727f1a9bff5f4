"""Linear algebra: matmul (the primitive), and dot, outer, tensordot and einsum built on it;
linear (`x @ w.T + b`, PyTorch's layer) as a primitive of its own; cross and kron, composites of
elementwise and shape ops.

`einsum` is a composite of permute/reshape/broadcast/mul/sum/matmul, so its derivatives come
from those ops. Every two-operand contraction is routed through one (batched) matmul: batch
labels lead, the labels only the left operand keeps become rows, the right operand's become
columns and the contracted labels are the inner dimension. Operand lists longer than two are
contracted pairwise from the left.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.common.context import autocast_dtype
from ..core.sharding import OpShardingRule
from ..core.tensor.dispatch import OPS
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import reduction as _red
from . import unary as _un
from .base import AVal, Operation, public, shape_of, with_dtype
from .cast import autocast_operands, cast
from .creation import tensor
from .rearrange import moveaxis, roll
from .view import broadcast_shapes, broadcast_to, normalize_axis, permute, reshape, squeeze, transpose, unsqueeze

__all__ = [
    "addbmm",
    "addmm",
    "addmv",
    "addr",
    "baddbmm",
    "cross",
    "dot",
    "einsum",
    "ger",
    "inner",
    "kron",
    "linear",
    "matmul",
    "multi_dot",
    "mv",
    "outer",
    "tensordot",
    "vander",
    "vdot",
    "vecdot",
    "vector_norm",
    "matrix_norm",
]


class MatmulOp(Operation):
    """`x @ y` for operands of rank >= 2 with identical batch dimensions."""

    name = "matmul"
    sharding_rule = "... m k, ... k n -> ... m n"  # a sharded k leaves partial sums
    partial_ok = (0, 1)
    scales_partials = True

    def abstract_eval(self, x: AVal, y: AVal) -> AVal:
        return x[0][:-1] + (y[0][-1],), x[1]

    def kernel(self, x: Any, y: Any) -> Any:
        if x.rank <= 4:
            return ops.matmul(x, y)
        # MAX's batched matmul takes rank <= 4 (vmap adds batch dims): merge the batch dims.
        batch, (m, k), n = list(x.shape[:-2]), x.shape[-2:], y.shape[-1]
        out = ops.matmul(ops.reshape(x, [-1, m, k]), ops.reshape(y, [-1, k, n]))
        return ops.reshape(out, [*batch, m, n])

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.matmul(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [_matmul(g, transpose(y, -1, -2)), _matmul(transpose(x, -1, -2), g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        return [_bin.add(_matmul(tangents[0], y), _matmul(x, tangents[1]))]


_matmul = MatmulOp()


def _as_tensor(x: Any, op: str, arg: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray | list | tuple | int | float | bool | np.generic):
        return tensor(x)
    raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")


def _promoted(op: str, *xs: Tensor) -> list[Tensor]:
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = _dt.promote_types(dtype, x.dtype)
    return [cast(x, dtype) for x in xs]


def _sharded_lead(x: Tensor) -> bool:
    """Whether a leading (non-contracted) dim of x is split over a mesh: folding those into rows
    could need a gather (a sharded dim that is not the major one, an uneven split), so a
    sharded x keeps the batched matmul."""
    spec = x._impl.sharding
    return spec is not None and any(spec.dim_axes[:-1])


@public()
def matmul(x: Any, y: Any) -> Tensor:
    """Matrix product with NumPy semantics: 1-D operands are vectors, leading dims broadcast.
    Inside `nabla.autocast` float32 operands are cast to its dtype (library composites, such
    as the linalg routines, call `raw_matmul`, which is not).

    Example:
        >>> nabla.matmul(nabla.ones(8, 2, 3), nabla.ones(3, 4)).shape
        (8, 2, 4)
    """
    if autocast_dtype() is None:
        return raw_matmul(x, y)
    return raw_matmul(*autocast_operands(_as_tensor(x, "matmul", "x"), _as_tensor(y, "matmul", "y")))


def raw_matmul(x: Any, y: Any) -> Tensor:
    """`matmul` outside autocast's reach: for composites that keep their input precision."""
    x = _as_tensor(x, "matmul", "x")
    y = _as_tensor(y, "matmul", "y")
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul: operands must have rank >= 1, got shapes {x.shape} and {y.shape}")
    x, y = _promoted("matmul", x, y)
    if x.dtype == _dt.bool_:
        raise TypeError("matmul: bool operands are not supported")
    x_vec, y_vec = x.ndim == 1, y.ndim == 1
    if x_vec:
        x = reshape(x, (1,) + x.shape)
    if y_vec:
        y = reshape(y, y.shape + (1,))
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(
            f"matmul: contracting dimensions differ: x has shape {x.shape[1:] if x_vec else x.shape} "
            f"(last dim {x.shape[-1]}), y has shape {y.shape[:-1] if y_vec else y.shape} (dim -2 is {y.shape[-2]})"
        )
    if y.ndim == 2 and x.ndim > 2 and not _sharded_lead(x):
        # A batch times one matrix (a Linear on (B, S, D)): x's leading dims fold into its rows, so
        # it is one 2-D matmul and the matrix's gradient one more, not a broadcast matrix, a
        # batched matmul and a sum over the batch.
        lead = x.shape[:-1]
        out = _matmul(reshape(x, (math.prod(lead), x.shape[-1])), y)
        return reshape(out, lead if y_vec else lead + (y.shape[-1],))
    try:
        batch = broadcast_shapes(x.shape[:-2], y.shape[:-2], op="matmul")
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of x {x.shape} and y {y.shape} cannot be broadcast together"
        ) from None
    x = broadcast_to(x, batch + x.shape[-2:])
    y = broadcast_to(y, batch + y.shape[-2:])
    out = _matmul(x, y)
    if x_vec and y_vec:
        return reshape(out, batch)
    if x_vec:
        return reshape(out, batch + (out.shape[-1],))
    if y_vec:
        return reshape(out, batch + (out.shape[-2],))
    return out


class LinearOp(Operation):
    """`x @ w.T (+ b)` with x (..., k), w (n, k), b (n,): one op call for a layer that is six
    as matmul, transpose, reshapes and a broadcast add. x's leading dims fold into the rows of
    one 2-D matmul. `linear` records it for plain operands; vmap's batched weights take the
    composite."""

    name = "linear"
    scales_partials = True

    def abstract_eval(self, x: AVal, w: AVal, b: AVal | None = None) -> AVal:
        if len(w[0]) != 2 or x[0][-1:] != w[0][1:] or (b is not None and b[0] != w[0][:1]):
            raise TypeError(f"internal error: linear got x {x[0]}, w {w[0]}, b {b and b[0]}")
        return x[0][:-1] + w[0][:1], x[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        if len(in_shapes) == 3:  # a bias added on each device would be added once per partial sum
            return OpShardingRule.parse("... k, n k, n -> ... n", in_shapes, out_shapes, whole=("k",))
        return OpShardingRule.parse("... k, n k -> ... n", in_shapes, out_shapes, partial_ok=(0, 1))

    def kernel(self, x: Any, w: Any, b: Any = None) -> Any:
        shape = shape_of(x)
        rows = x if len(shape) == 2 else ops.reshape(x, [-1, shape[-1]])
        out = ops.matmul(rows, ops.transpose(w, 0, 1))
        if b is not None:
            out = out + b
        return out if len(shape) == 2 else ops.reshape(out, [*shape[:-1], shape_of(w)[0]])

    def numpy_kernel(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        out = np.matmul(x, w.T)
        return out if b is None else out + b

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, w = primals[:2]
        g = cotangents[0]
        lead = tuple(range(x.ndim - 1))
        grads = [raw_matmul(g, w) if x._impl.requires_grad else None]
        grads.append(_weight_grad(x, g, w.shape) if w._impl.requires_grad else None)
        if len(primals) == 3:
            grads.append((_red.sum(g, lead) if lead else g) if primals[2]._impl.requires_grad else None)
        return grads

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, w = primals[:2]
        return [_bin.add(linear(tangents[0], w), linear(x, *tangents[1:]))]


_linear = LinearOp()


def _weight_grad(x: Tensor, g: Tensor, w_shape: tuple) -> Tensor:
    """sum over x's leading dims of g^T x: one 2-D matmul on the folded rows, or, when a leading
    dim other than the first is split over a mesh (folding it would gather), a matmul batched
    over the outer dims and a sum.

    MAX's matmul reads no transposed left operand, so one of the (rows, features) operands is
    copied transposed: g, or, for a layer that widens (in_features < out_features), the
    narrower x and then the (weight-sized) result, `(x^T g)^T`. W3's step (qkv, MLP up and
    LM-head projections) took 0.6-2.4 ms less that way in three interleaved runs. Decided by
    the weight's shape alone, so a dynamic batch dim never changes the program."""
    n, k = w_shape
    if x.ndim > 2 and (_sharded_lead(x) or _sharded_lead(g)):
        return _red.sum(raw_matmul(transpose(g, -1, -2), x), tuple(range(x.ndim - 2)))
    if x.ndim != 2:
        x, g = reshape(x, (-1, k)), reshape(g, (-1, n))
    if k < n:
        return transpose(_matmul(transpose(x, 0, 1), g), 0, 1)
    return _matmul(transpose(g, 0, 1), x)


def _splits_k(t: Tensor) -> bool:
    spec = t._impl.sharding
    return spec is not None and bool(spec.dim_axes[-1])


def _linear_shape_error(x_shape: tuple, w_shape: tuple) -> str:
    if len(w_shape) not in (1, 2):
        return f"linear: weight must be 1-D or 2-D (out_features, in_features), got weight {w_shape}"
    if not x_shape:
        return "linear: the input must have at least 1 dimension (*, in_features), got a 0-d tensor"
    return (
        f"linear: the input's last dimension {x_shape[-1]} does not match in_features={w_shape[-1]} "
        f"(input shape {x_shape}, weight shape {w_shape})"
    )


@public()
def linear(x: Any, weight: Any, bias: Any = None) -> Tensor:
    """`x @ weight.T + bias` (PyTorch's `torch.nn.functional.linear`).

    Args:
        x: (..., in_features).
        weight: (out_features, in_features), or (in_features,) for one output (dropped dim).
        bias: optional, (out_features,) or anything that broadcasts with the output.

    Example:
        >>> nabla.linear(nabla.ones(8, 3), nabla.ones(4, 3), nabla.zeros(4)).shape
        (8, 4)
    """
    if not (isinstance(x, Tensor) and isinstance(weight, Tensor) and (bias is None or isinstance(bias, Tensor))):
        x, weight = _as_tensor(x, "linear", "x"), _as_tensor(weight, "linear", "weight")
        bias = None if bias is None else _as_tensor(bias, "linear", "bias")
    if autocast_dtype() is not None:  # inside nabla.autocast: in its lower precision
        x, weight, bias = autocast_operands(x, weight, bias)
    xi, wi = x._impl, weight._impl
    x_shape, w_shape = xi.logical_shape, wi.logical_shape
    if len(w_shape) not in (1, 2) or not x_shape or x_shape[-1] != w_shape[-1]:
        raise ValueError(_linear_shape_error(x_shape, w_shape))
    bi = None if bias is None else bias._impl
    if (  # the common case, as one fused op (the checks read impls directly: every Linear runs them)
        len(w_shape) == 2
        and xi.dtype is wi.dtype
        and xi.dtype is not _dt.bool_
        and not xi.batch_dims
        and not wi.batch_dims
        and (bi is None or (bi.logical_shape == w_shape[:1] and bi.dtype is xi.dtype and not bi.batch_dims))
        and not (bi is not None and (_splits_k(x) or _splits_k(weight)))  # row-parallel: partial sums + bias
    ):
        return _linear(x, weight) if bias is None else _linear(x, weight, bias)
    out = matmul(x, weight if weight.ndim == 1 else transpose(weight, 0, 1))
    return out if bias is None else _bin.add(out, bias)


@public()
def dot(x: Any, y: Any) -> Tensor:
    """Inner product of two 1-D tensors of the same length (torch.dot); a 0-d tensor.

    Example:
        >>> nabla.dot(nabla.tensor([1.0, 2.0]), nabla.tensor([3.0, 4.0])).item()
        11.0
    """
    x, y = _as_tensor(x, "dot", "x"), _as_tensor(y, "dot", "y")
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"dot: expected two 1-D tensors, got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"dot: x and y must have the same length, got shapes {x.shape} and {y.shape}")
    return raw_matmul(x, y)  # (not cast by autocast, as in torch)


@public()
def outer(x: Any, y: Any) -> Tensor:
    """Outer product of two 1-D tensors (torch.outer): `out[i, j] = x[i] * y[j]`.

    Example:
        >>> nabla.outer(nabla.ones(2), nabla.ones(3)).shape
        (2, 3)
    """
    x, y = _as_tensor(x, "outer", "x"), _as_tensor(y, "outer", "y")
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"outer: expected two 1-D tensors, got shapes {x.shape} and {y.shape}")
    return _bin.mul(reshape(x, (x.shape[0], 1)), reshape(y, (1, y.shape[0])))


ger = outer  # torch.ger: PyTorch's old name of outer


def _rank(x: Tensor, op: str, arg: str, ndim: int) -> None:
    if x.ndim != ndim:
        raise ValueError(f"{op}: {arg} must be {ndim}-D, got shape {x.shape}")


@public()
def mv(mat: Any, vec: Any) -> Tensor:
    """Matrix-vector product of a 2-D and a 1-D tensor (torch.mv).

    Example:
        >>> nabla.mv(nabla.ones(2, 3), nabla.ones(3)).numpy()
        array([3., 3.], dtype=float32)
    """
    mat, vec = _as_tensor(mat, "mv", "mat"), _as_tensor(vec, "mv", "vec")
    _rank(mat, "mv", "mat", 2)
    _rank(vec, "mv", "vec", 1)
    if mat.shape[1] != vec.shape[0]:
        raise ValueError(f"mv: mat {mat.shape} and vec {vec.shape} do not match: vec needs {mat.shape[1]} entries")
    return raw_matmul(mat, vec)  # (not cast by autocast, as in torch)


@public()
def inner(x: Any, y: Any) -> Tensor:
    """Sum of products over the last dims (torch.inner): `out[i..., j...] = sum_k x[i..., k]
    y[j..., k]`; a scalar operand multiplies.

    Example:
        >>> nabla.inner(nabla.ones(2, 3), nabla.ones(4, 3)).shape
        (2, 4)
    """
    x, y = _as_tensor(x, "inner", "x"), _as_tensor(y, "inner", "y")
    if x.ndim == 0 or y.ndim == 0:
        return _bin.mul(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"inner: the last dims of x {x.shape} and y {y.shape} must match")
    return tensordot(x, y, dims=([x.ndim - 1], [y.ndim - 1]))


@public()
def vdot(x: Any, y: Any) -> Tensor:
    """Dot product of two 1-D tensors (torch.vdot; nabla has no complex dtype to conjugate)."""
    x, y = _as_tensor(x, "vdot", "x"), _as_tensor(y, "vdot", "y")
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"vdot: expected two 1-D tensors of the same length, got shapes {x.shape} and {y.shape}")
    return raw_matmul(x, y)


def _scaled_sum(op: str, input: Any, product: Tensor, beta: Any, alpha: Any, autocast: bool = True) -> Tensor:
    """beta * input + alpha * product, input broadcast to the product's shape; with beta == 0
    input is ignored (its nan and inf do not propagate), as in PyTorch. `autocast`: the op is
    on autocast's list (addmm, baddbmm, addbmm; not addmv or addr)."""
    input = _as_tensor(input, op, "input")
    if autocast and autocast_dtype() is not None:  # (the added input in autocast's dtype too)
        (input,) = autocast_operands(input)
    try:
        shape = broadcast_shapes(input.shape, product.shape)
    except ValueError:
        shape = None
    if shape != tuple(product.shape):
        raise ValueError(
            f"{op}: input of shape {input.shape} cannot be broadcast to the product's shape {product.shape}"
        )
    scaled = product if alpha == 1 else _bin.mul(product, alpha)
    if beta == 0:
        return _red.keep_in_graph(scaled, input)
    return _bin.add(input if beta == 1 else _bin.mul(input, beta), scaled)


@public()
def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2) for 2-D mat1 (n, m) and mat2 (m, p) (torch.addmm);
    input broadcasts to (n, p).

    Example:
        >>> nabla.addmm(nabla.zeros(3), nabla.ones(2, 4), nabla.ones(4, 3), alpha=0.5).numpy()[0]
        array([2., 2., 2.], dtype=float32)
    """
    mat1, mat2 = _as_tensor(mat1, "addmm", "mat1"), _as_tensor(mat2, "addmm", "mat2")
    _rank(mat1, "addmm", "mat1", 2)
    _rank(mat2, "addmm", "mat2", 2)
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


@public()
def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec) (torch.addmv)."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha, autocast=False)


@public()
def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2) (torch.addr)."""
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha, autocast=False)


def _batches(op: str, batch1: Any, batch2: Any) -> Tensor:
    b1, b2 = _as_tensor(batch1, op, "batch1"), _as_tensor(batch2, op, "batch2")
    _rank(b1, op, "batch1", 3)
    _rank(b2, op, "batch2", 3)
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise ValueError(f"{op}: batch1 {b1.shape} and batch2 {b2.shape} must be (b, n, m) and (b, m, p)")
    return matmul(b1, b2)


@public()
def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2) for (b, n, m) and (b, m, p) batches (torch.baddbmm)."""
    return _scaled_sum("baddbmm", input, _batches("baddbmm", batch1, batch2), beta, alpha)


@public()
def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * sum_b batch1[b] @ batch2[b] (torch.addbmm): the batch reduced."""
    return _scaled_sum("addbmm", input, _red.sum(_batches("addbmm", batch1, batch2), axis=0), beta, alpha)


@public()
def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """torch.linalg.vector_norm: the `ord`-norm of the elements over `dim` (all when None), the
    tensor read as a flat vector; `norm`'s numbers (2, 1, inf, -inf, 0, any float)."""
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: ord must be a number, got {ord!r}")
    return _red.norm(x, ord, dim, keepdim)


@public()
def matrix_norm(x: Tensor, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False) -> Tensor:  # noqa: A002
    """torch.linalg.matrix_norm over the two dims `dim`: "fro", 1 / -1 (largest / smallest
    column sum of |x|), inf / -inf (row sums), or from the singular values (`svdvals`, LAPACK on
    the host): "nuc" (their sum), 2 / -2 (the largest / smallest)."""
    x = _as_tensor(x, "matrix_norm", "x")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"matrix_norm: expected a floating-point tensor, got dtype {x.dtype.name}")
    dims = tuple(dim) if isinstance(dim, tuple | list) else ()
    axes = tuple(normalize_axis(d, x.ndim, "matrix_norm", "dim") for d in dims)  # in order: rows, columns
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"matrix_norm: dim must be two different dims, got {dim!r}")
    if ord == "fro":
        return _red.norm(x, 2.0, axes, keepdim)
    if ord in ("nuc", 2, -2) and not isinstance(ord, bool):  # from the singular values (LAPACK, on the host)
        s = OPS.svdvals(moveaxis(x, axes, (-2, -1)))
        out = _red.sum(s, -1) if ord == "nuc" else (_red.max if ord == 2 else _red.min)(s, -1)
        return unsqueeze(unsqueeze(out, min(axes)), max(axes)) if keepdim else out
    if ord not in (1, -1, math.inf, -math.inf) or isinstance(ord, bool):
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    summed, kept = (axes[0], axes[1]) if abs(ord) == 1 else (axes[1], axes[0])  # 1: column sums
    out = (_red.max if ord > 0 else _red.min)(_red.sum(_un.abs(x), summed, True), kept, True)
    return out if keepdim else squeeze(out, axes)


@public()
def vecdot(x: Any, y: Any, *, dim: int = -1) -> Tensor:
    """torch.linalg.vecdot: sum(x * y) over `dim`, the other dims broadcast (in autocast's
    dtype inside `nabla.autocast`, as torch's)."""
    x, y = autocast_operands(_as_tensor(x, "vecdot", "x"), _as_tensor(y, "vecdot", "y"))
    prod = _bin.mul(x, y)
    return _red.sum(prod, normalize_axis(dim, prod.ndim, "vecdot", "dim"))


@public()
def multi_dot(tensors: Any) -> Tensor:
    """torch.linalg.multi_dot: the product of a chain of matrices, the first and last of which
    may be vectors (a row and a column), multiplied in the order that needs the fewest scalar
    products (the classic dynamic program over the chain's shapes)."""
    xs = [_as_tensor(t, "multi_dot", f"tensors[{i}]") for i, t in enumerate(tensors)]
    if len(xs) < 2:
        raise ValueError(f"multi_dot: expected at least 2 tensors, got {len(xs)}")
    first_vec, last_vec = xs[0].ndim == 1, xs[-1].ndim == 1
    mats = [
        reshape(xs[0], (1, -1)) if first_vec else xs[0],
        *xs[1:-1],
        reshape(xs[-1], (-1, 1)) if last_vec else xs[-1],
    ]
    for i, m in enumerate(mats):
        if m.ndim != 2:
            raise ValueError(f"multi_dot: tensors[{i}] must be 2-D (the first and last may be 1-D), got {xs[i].shape}")
        if i and mats[i - 1].shape[1] != m.shape[0]:
            raise ValueError(
                f"multi_dot: tensors[{i - 1}] {xs[i - 1].shape} and tensors[{i}] {xs[i].shape} do not chain"
            )
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k) for k in range(i, j)
            )

    def chain(i: int, j: int) -> Tensor:
        return mats[i] if i == j else matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j))

    out = chain(0, n - 1)
    shape = tuple(out.shape[int(first_vec) :]) if not last_vec else tuple(out.shape[int(first_vec) : 1])
    return reshape(out, shape)


@public()
def vander(x: Any, N: int | None = None) -> Tensor:  # noqa: N803
    """torch.linalg.vander: the Vandermonde matrix of the last dim, powers 0 .. N-1 increasing
    (`out[..., i, j] = x[..., i] ** j`)."""
    x = _as_tensor(x, "vander", "x")
    if x.ndim < 1:
        raise ValueError(f"vander: x must have at least 1 dim, got shape {x.shape}")
    n = x.shape[-1] if N is None else N
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"vander: N must be a positive int, got {N!r}")
    powers = tensor(np.arange(int(n)), dtype=x.dtype)
    return _bin.pow(reshape(x, (*x.shape, 1)), powers)


def _cross_axis(x: Tensor, y: Tensor, axis: int | None) -> int:
    """The dimension of the broadcast result holding the 3-vectors. None: x's first dimension
    of size 3 (torch.cross's deprecated default)."""
    if axis is None:
        axis = next((d for d, n in enumerate(x.shape) if n == 3), None)
        if axis is None:
            raise ValueError(f"cross: no dimension of size 3 in x of shape {x.shape}; pass dim")
        axis -= x.ndim  # counted from the end, so that it names the same dim after broadcasting
    rank = max(x.ndim, y.ndim)
    a = normalize_axis(axis, max(rank, 1), "cross", "dim")
    for t, arg in ((x, "x"), (y, "y")):
        d = a - (rank - t.ndim)
        if d < 0 or t.shape[d] != 3:
            raise ValueError(f"cross: {arg} (shape {t.shape}) must have size 3 in dim {axis}")
    return a


@public()
def cross(x: Any, y: Any, axis: int | None = -1) -> Tensor:
    """The cross product of 3-vectors along `axis`, the other dims broadcast
    (torch.linalg.cross; `axis=None` takes x's first dimension of size 3, as torch.cross
    without dim).

    Args:
        x, y: tensors with size 3 in `axis` (dtypes promote as in `mul`).
        axis: the dimension of the vectors (`dim=` also accepted), or None.

    Example:
        >>> nabla.cross(nabla.tensor([1.0, 0.0, 0.0]), nabla.tensor([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    x, y = _as_tensor(x, "cross", "x"), _as_tensor(y, "cross", "y")
    a = _cross_axis(x, y, axis)
    shape = broadcast_shapes(x.shape, y.shape, op="cross")
    x, y = (broadcast_to(t, shape) for t in _promoted("cross", x, y))
    # (x1 y2 - x2 y1, x2 y0 - x0 y2, x0 y1 - x1 y0): x and y rolled by one and two places.
    return _bin.sub(_bin.mul(roll(x, -1, a), roll(y, -2, a)), _bin.mul(roll(x, -2, a), roll(y, -1, a)))


@public()
def kron(x: Any, y: Any) -> Tensor:
    """The Kronecker product (torch.kron): blocks `x[i, j, ...] * y`, of shape
    `x.shape[d] * y.shape[d]` per dim, the lower-rank operand padded with leading 1s.

    Args:
        x, y: tensors of any ranks (dtypes promote as in `mul`).

    Example:
        >>> nabla.kron(nabla.tensor([[1, 2]]), nabla.tensor([[1], [10]])).tolist()
        [[1, 2], [10, 20]]
    """
    x, y = _as_tensor(x, "kron", "x"), _as_tensor(y, "kron", "y")
    rank = max(x.ndim, y.ndim)
    xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
    # x as (x0, 1, x1, 1, ...) times y as (1, y0, 1, y1, ...): each x entry scales a copy of y.
    grid = _bin.mul(reshape(x, tuple(v for n in xs for v in (n, 1))), reshape(y, tuple(v for n in ys for v in (1, n))))
    return reshape(grid, tuple(p * q for p, q in zip(xs, ys, strict=True)))


@public()
def tensordot(x: Any, y: Any, dims: Any = 2) -> Tensor:
    """Contract the last `dims` dimensions of `x` with the first `dims` of `y` (torch.tensordot).

    Args:
        dims: an int, or a pair of sequences of dimensions `([x dims], [y dims])` contracted in pairs.

    Example:
        >>> nabla.tensordot(nabla.ones(2, 3, 4), nabla.ones(3, 4, 5), dims=2).shape
        (2, 5)
    """
    x, y = _as_tensor(x, "tensordot", "x"), _as_tensor(y, "tensordot", "y")
    if isinstance(dims, int | np.integer) and not isinstance(dims, bool):
        if not 0 <= dims <= min(x.ndim, y.ndim):
            raise ValueError(
                f"tensordot: dims={dims} must be between 0 and the smaller rank, got shapes {x.shape} and {y.shape}"
            )
        dx, dy = list(range(x.ndim - dims, x.ndim)), list(range(dims))
    elif isinstance(dims, list | tuple) and len(dims) == 2:
        dx = [dims[0]] if isinstance(dims[0], int) else list(dims[0])
        dy = [dims[1]] if isinstance(dims[1], int) else list(dims[1])
        if len(dx) != len(dy):
            raise ValueError(f"tensordot: dims {dims} must list as many dimensions of x as of y")
        dx = [_axis(d, x.ndim, "tensordot", "dims[0]") for d in dx]
        dy = [_axis(d, y.ndim, "tensordot", "dims[1]") for d in dy]
    else:
        raise TypeError(f"tensordot: dims must be an int or a pair of dimension lists, got {dims!r}")
    for a, b in zip(dx, dy, strict=True):
        if x.shape[a] != y.shape[b]:
            raise ValueError(
                f"tensordot: contracted dimensions differ: x dim {a} has size {x.shape[a]}, y dim {b} has size "
                f"{y.shape[b]} (shapes {x.shape} and {y.shape})"
            )
    if len(set(dx)) != len(dx) or len(set(dy)) != len(dy):
        raise ValueError(f"tensordot: dims {dims} names a dimension twice")
    keep_x = [d for d in range(x.ndim) if d not in dx]
    keep_y = [d for d in range(y.ndim) if d not in dy]
    if math.prod(x.shape[d] for d in keep_x) * math.prod(y.shape[d] for d in keep_y) != 1:
        x, y = autocast_operands(x, y)  # (torch's autocast casts the product unless it is one number)
    x, y = _promoted("tensordot", x, y)
    k = math.prod(x.shape[d] for d in dx)
    a = reshape(permute(x, keep_x + dx), (math.prod(x.shape[d] for d in keep_x), k))
    b = reshape(permute(y, dy + keep_y), (k, math.prod(y.shape[d] for d in keep_y)))
    out = _matmul(a, b)
    return reshape(out, tuple(x.shape[d] for d in keep_x) + tuple(y.shape[d] for d in keep_y))


def _axis(d: Any, rank: int, op: str, arg: str) -> int:
    if not isinstance(d, int | np.integer) or isinstance(d, bool):
        raise TypeError(f"{op}: {arg} must hold ints, got {d!r}")
    if not -rank <= d < rank:
        raise ValueError(f"{op}: {arg} entry {d} is out of range for a tensor of rank {rank}")
    return int(d) % rank


# -- einsum ------------------------------------------------------------------------------------
# Labels are ints: a letter is its code point; the dimensions an ellipsis covers are -E..-1
# (right-aligned across operands, as broadcasting aligns them).
Labels = list[int]


def _label_name(label: int) -> str:
    return chr(label) if label >= 0 else f"... (dim {label})"


def _parse_term(term: str, where: str) -> tuple[list[str], bool]:
    """Split one subscript term into its letters, noting whether (and where) it has '...'."""
    if term.count("...") > 1 or (term.replace("...", "").count(".")):
        raise ValueError(f"einsum: {where} {term!r} may contain at most one ellipsis '...'")
    before, has_ellipsis, after = term.partition("...")
    for c in before + after:
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise ValueError(f"einsum: invalid subscript {c!r} in {where} {term!r}; use letters a-z, A-Z")
    return [before, after], bool(has_ellipsis)


def _parse(equation: str, operands: tuple[Tensor, ...]) -> tuple[list[Labels], Labels]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise ValueError(f"einsum: equation {equation!r} has more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(
            f"einsum: equation {equation!r} names {len(terms)} operand(s) but {len(operands)} tensor(s) were given"
        )
    parsed = [_parse_term(t, f"operand {i} subscripts") for i, t in enumerate(terms)]
    ranks = []
    for i, ((parts, has_ell), x) in enumerate(zip(parsed, operands, strict=True)):
        letters = len(parts[0]) + len(parts[1])
        if (not has_ell and letters != x.ndim) or (has_ell and letters > x.ndim):
            raise ValueError(
                f"einsum: operand {i} has shape {x.shape} (rank {x.ndim}) but subscripts {terms[i]!r} name "
                f"{letters} dimension(s){'' if has_ell else ' and there is no ellipsis'}"
            )
        ranks.append(x.ndim - letters if has_ell else 0)
    n_ell = max(ranks, default=0)
    inputs: list[Labels] = []
    for (parts, _), e in zip(parsed, ranks, strict=True):
        inputs.append([ord(c) for c in parts[0]] + list(range(-e, 0)) + [ord(c) for c in parts[1]])
    ellipsis = list(range(-n_ell, 0))
    if arrow:
        (parts, has_ell) = _parse_term(rhs, "output subscripts")
        output = [ord(c) for c in parts[0]] + (ellipsis if has_ell else []) + [ord(c) for c in parts[1]]
        seen = {label for labels in inputs for label in labels}
        for label in output:
            if label >= 0 and label not in seen:
                raise ValueError(
                    f"einsum: output subscript {chr(label)!r} in {equation!r} does not appear in any input operand"
                )
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: output subscripts {rhs!r} name a subscript more than once")
    else:  # implicit: ellipsis dims, then the letters that appear exactly once, in alphabetical order
        counts: dict[int, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = ellipsis + sorted(label for label, n in counts.items() if label >= 0 and n == 1)
    return inputs, output


def _sizes(inputs: list[Labels], operands: tuple[Tensor, ...]) -> dict[int, int]:
    """Each label's size; sizes of 1 broadcast (as PyTorch), other mismatches raise naming the label."""
    sizes: dict[int, int] = {}
    first: dict[int, tuple[int, int]] = {}
    for i, (labels, x) in enumerate(zip(inputs, operands, strict=True)):
        for d, (label, size) in enumerate(zip(labels, x.shape, strict=True)):
            e = labels.index(label)
            if e < d and x.shape[e] != size:
                raise ValueError(
                    f"einsum: subscript {_label_name(label)!r} is repeated in operand {i} but its dimensions "
                    f"{e} and {d} have different sizes {x.shape[e]} and {size} (shape {x.shape})"
                )
            if label not in sizes or sizes[label] == 1:
                sizes[label], first[label] = size, (i, d)
            elif size not in (1, sizes[label]):
                j, e = first[label]
                raise ValueError(
                    f"einsum: subscript {_label_name(label)!r} has size {size} for operand {i} (dim {d}) but size "
                    f"{sizes[label]} for operand {j} (dim {e}); the sizes must match or be 1"
                )
    return sizes


def _take_diagonal(x: Tensor, labels: Labels) -> tuple[Tensor, Labels]:
    """Collapse repeated labels of one operand onto their diagonal (an eye mask, then a sum)."""
    while len(set(labels)) != len(labels):
        label = next(lb for lb in labels if labels.count(lb) > 1)
        a = labels.index(label)
        b = labels.index(label, a + 1)
        n = x.shape[a]
        rest = [d for d in range(x.ndim) if d not in (a, b)]
        x = permute(x, rest + [a, b])
        eye = tensor(np.eye(n, dtype=bool))
        x = _red.sum(_bin.where_(eye, x, 0), -1)
        labels = [labels[d] for d in rest] + [label]
    return x, labels


def _sum_out(x: Tensor, labels: Labels, drop: set[int]) -> tuple[Tensor, Labels]:
    axes = tuple(d for d, label in enumerate(labels) if label in drop)
    if not axes:
        return x, labels
    return _red.sum(x, axes), [label for label in labels if label not in drop]


def _arrange(x: Tensor, labels: Labels, order: Labels) -> Tensor:
    """Permute `x` (dims named by `labels`) into `order`."""
    return permute(x, [labels.index(label) for label in order])


def _drop_unit(x: Tensor, labels: Labels, label: int) -> tuple[Tensor, Labels]:
    keep = [d for d, lb in enumerate(labels) if lb != label]
    return reshape(x, tuple(x.shape[d] for d in keep)), [labels[d] for d in keep]


def _contract(a: Tensor, la: Labels, b: Tensor, lb: Labels, keep: set[int]) -> tuple[Tensor, Labels]:
    """Contract two operands, keeping the labels in `keep`; one matmul (or a product if nothing is contracted)."""
    # A contracted label of size 1 on one side only: drop it there (the other side then sums it).
    for label in [x for x in la if x in lb and x not in keep]:
        if a.shape[la.index(label)] != b.shape[lb.index(label)]:
            if a.shape[la.index(label)] == 1:
                a, la = _drop_unit(a, la, label)
            else:
                b, lb = _drop_unit(b, lb, label)
    a, la = _sum_out(a, la, {x for x in la if x not in lb and x not in keep})
    b, lb = _sum_out(b, lb, {x for x in lb if x not in la and x not in keep})
    batch = [x for x in la if x in lb and x in keep]
    contracted = [x for x in la if x in lb and x not in keep]
    rows = [x for x in la if x not in lb]
    cols = [x for x in lb if x not in la]
    size_a = dict(zip(la, a.shape, strict=True))
    size_b = dict(zip(lb, b.shape, strict=True))
    if not contracted:  # an outer product over the batch labels: broadcasting multiply
        x = reshape(_arrange(a, la, batch + rows), tuple(size_a[x] for x in batch + rows) + (1,) * len(cols))
        y = _arrange(b, lb, batch + cols)
        y = reshape(y, tuple(size_b[x] for x in batch) + (1,) * len(rows) + tuple(size_b[x] for x in cols))
        return _bin.mul(x, y), batch + rows + cols
    m = math.prod(size_a[x] for x in rows)
    n = math.prod(size_b[x] for x in cols)
    k = math.prod(size_a[x] for x in contracted)
    x = reshape(_arrange(a, la, batch + rows + contracted), tuple(size_a[x] for x in batch) + (m, k))
    y = reshape(_arrange(b, lb, batch + contracted + cols), tuple(size_b[x] for x in batch) + (k, n))
    bshape = broadcast_shapes(x.shape[:-2], y.shape[:-2], op="einsum")
    out = _matmul(broadcast_to(x, bshape + (m, k)), broadcast_to(y, bshape + (k, n)))
    out_shape = bshape + tuple(size_a[x] for x in rows) + tuple(size_b[x] for x in cols)
    return reshape(out, out_shape), batch + rows + cols


@public()
def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """einsum's sublist form, `einsum(x, [0, 1], y, [1, 2], [0, 2])`, as an equation and operands:
    each operand is followed by its dims (ints below 52, or Ellipsis), then the output's, optionally."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def spell(sublist: Any, what: str) -> str:
        if not isinstance(sublist, list | tuple):
            raise TypeError(f"einsum: {what} must be a list of dims, got {type(sublist).__name__}")
        out = []
        for d in sublist:
            if d is Ellipsis:
                out.append("...")
            elif isinstance(d, int) and not isinstance(d, bool) and 0 <= d < len(letters):
                out.append(letters[d])
            else:
                raise ValueError(f"einsum: {what} holds {d!r}; dims are ints in [0, {len(letters)}) or Ellipsis")
        return "".join(out)

    operands, terms = [], []
    for i in range(0, len(args) - 1, 2):
        operands.append(args[i])
        terms.append(spell(args[i + 1], f"the sublist of operand {i // 2}"))
    equation = ",".join(terms)
    if len(args) % 2:
        equation += "->" + spell(args[-1], "the output sublist")
    return equation, tuple(operands)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation (torch.einsum / numpy.einsum).

    Supports an explicit output (`'ij,jk->ik'`), implicit output (the letters that appear once,
    in alphabetical order), `...` broadcasting, repeated subscripts in one operand (diagonals,
    `'ii->i'`, traces `'ii->'`) and any number of operands (contracted pairwise from the left,
    each contraction one batched matmul). Operands may also be passed as one list.

    Example:
        >>> q, k = nabla.ones(2, 4, 5, 8), nabla.ones(2, 4, 6, 8)
        >>> nabla.einsum("bhqd,bhkd->bhqk", q, k).shape
        (2, 4, 5, 6)
    """
    if not isinstance(equation, str):
        if not isinstance(equation, Tensor):
            raise TypeError(f"einsum: equation must be a string, got {type(equation).__name__}")
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    tensors = tuple(_as_tensor(x, "einsum", f"operand {i}") for i, x in enumerate(operands))
    if autocast_dtype() is not None:  # (einsum is in torch's lower-precision autocast list)
        tensors = tuple(autocast_operands(*tensors))
    inputs, output = _parse(equation, tensors)
    sizes = _sizes(inputs, tensors)
    tensors = tuple(_promoted("einsum", *tensors))
    dtype = tensors[0].dtype
    if dtype == _dt.bool_:
        raise TypeError("einsum: bool operands are not supported")
    out_set = set(output)
    items = []
    for i, (x, labels) in enumerate(zip(tensors, inputs, strict=True)):
        x, labels = _take_diagonal(x, list(labels))
        others = {label for j, lbs in enumerate(inputs) if j != i for label in lbs}
        x, labels = _sum_out(x, labels, {label for label in labels if label not in out_set and label not in others})
        items.append((x, labels))
    x, labels = items[0]
    for i in range(1, len(items)):
        later = {label for _, lbs in items[i + 1 :] for label in lbs}
        x, labels = _contract(x, labels, *items[i], keep=out_set | later)
    x, labels = _sum_out(x, labels, {label for label in labels if label not in out_set})
    x = cast(_arrange(x, labels, output), dtype)  # (sum gives int64 for integers)
    target = tuple(sizes[label] for label in output)
    return broadcast_to(x, target) if x.shape != target else x
