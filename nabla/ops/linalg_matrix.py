"""Matrix functions and factorizations (PyTorch's `torch.linalg`): matrix_exp, householder_product,
geqrf, qr, solve, inv, matrix_power, cholesky, solve_triangular and cholesky_solve/
cholesky_inverse, all composites of matmul, where, triangular masks, reductions and shape
ops, so their derivatives (VJP, JVP, any order), MAX lowering, vmap and sharding come from those
ops. Every function works on batches of matrices (`(..., m, n)`); float16/bfloat16 inputs are
computed in float32 and cast back. Complex matrices are not supported (nabla has no complex dtype).

The lazy graph has a static structure, so nothing here branches on values:

- `matrix_exp` is scaling and squaring with the degree-18 Taylor polynomial (Paterson-Stockmeyer:
  7 matmuls). A is scaled by 2^-s so that its 1-norm is at most theta, where the polynomial's
  backward error is below the unit roundoff (Higham 2005, the bounds torch uses: theta = 1.09 for
  float64, 3.01 for float32). s is a graph value, s = #{j < S : ||A||_1 > theta 2^j} with S =
  `max_squarings` (16 by default), and the result is squared S times, the first S - s squarings
  masked off with `where`: the graph always holds S squarings (S matmuls whatever the norm, ~120
  ops forward in all) and each matrix of a batch gets its own s. Accurate for ||A||_1 <= theta 2^S
  (~71e3 in float64, ~197e3 in float32 by default); above, s saturates and accuracy is lost fast.
- `householder_product` is the compact WY form `I - V T V^T`; the triangular factor T is built by
  merging blocks pairwise (LAPACK's recursive dlarft), all blocks of one level in one batched
  matmul, so the graph grows with log2(k), not k.
- `geqrf`/`qr` (Householder QR with LAPACK's sign conventions, so the factors equal LAPACK's)
  and `solve`/`inv` (Gauss-Jordan elimination with partial pivoting: the pivot row is found with
  argmax and swapped in with `where`) are unrolled over the columns: their graphs grow linearly
  with min(m, n) resp. n. A singular matrix gives inf/nan instead of raising (the values are
  not known when the graph is built). cholesky goes by columns and solve_triangular by rows (n
  matrix-vector products each); a matrix that is not positive definite gives nan. The LU
  factorization and determinants are in `linalg_lu.py`.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import reduction as _red
from . import unary as _un
from .base import public
from .cast import cast
from .creation import eye, known_values, tensor, zeros
from .indexing import getitem
from .linalg import raw_matmul as matmul
from .shape import concatenate, pad, stack
from .triangular import tril, triu
from .view import broadcast_to, detach, permute, reshape, transpose, unsqueeze

__all__ = [
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "geqrf",
    "householder_product",
    "inv",
    "matrix_exp",
    "matrix_power",
    "qr",
    "solve",
    "solve_triangular",
]

QRResult = namedtuple("QRResult", ["Q", "R"])
GeqrfResult = namedtuple("GeqrfResult", ["a", "tau"])

_HALF = (_dt.float16, _dt.bfloat16)


def _float_tensor(x: Any, op: str, arg: str, min_ndim: int) -> Tensor:
    if isinstance(x, np.ndarray | list | tuple | np.generic):
        x = tensor(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if x.ndim < min_ndim:
        what = "a matrix or a batch of matrices (..., m, n)" if min_ndim == 2 else f"at least {min_ndim} dimension(s)"
        raise ValueError(f"{op}: {arg} must be {what}, got shape {x.shape}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: {arg} must have a floating dtype, got {x.dtype.name}")
    return x


def _working(*xs: Tensor) -> tuple[list[Tensor], Any]:
    """The operands in one computation dtype (float32 for half precision) and the result dtype."""
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = _dt.promote_types(dtype, x.dtype)
    work = _dt.float32 if dtype in _HALF else dtype
    return [cast(x, work) for x in xs], dtype


def _mT(x: Tensor) -> Tensor:
    return transpose(x, -1, -2)


def _const(values: np.ndarray) -> Tensor:
    return tensor(np.asarray(values))


# -- matrix_exp ----------------------------------------------------------------------------------
# Higham's (2005) Taylor degree-18 backward-error bounds (torch's matrix_exp uses them too): on
# ||B||_1 <= theta the polynomial's backward error is below the dtype's unit roundoff.
_EXP_DEGREE = 18
_EXP_THETA = {_dt.float64: 1.090863719290036}
_EXP_THETA_DEFAULT = 3.010066362817634  # float32 (and half precision, computed in float32)
_PS_BLOCK = 4  # Paterson-Stockmeyer block: b^2..b^4, then Horner in b^4: 7 matmuls for degree 18


def _taylor_exp(b: Tensor, degree: int) -> Tensor:
    """sum_{i <= degree} b^i / i! by Paterson-Stockmeyer: b^2..b^q, then Horner in b^q."""
    n = b.shape[-1]
    ident = eye(n, dtype=b.dtype)
    q = _PS_BLOCK
    powers = [ident, b]
    for _ in range(2, q + 1):
        powers.append(matmul(powers[-1], b))
    coeffs = [1.0 / math.factorial(i) for i in range(degree + 1)]
    chunks = [coeffs[i : i + q] for i in range(0, degree + 1, q)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:  # c b^q joins the previous chunk (no matmul)
        last = chunks.pop()
        chunks[-1] = chunks[-1] + last

    def chunk(cs: list[float]) -> Tensor:
        out = _bin.mul(powers[0], cs[0])
        for j, c in enumerate(cs[1:], start=1):
            out = _bin.add(out, _bin.mul(powers[j], c))
        return out

    out = chunk(chunks[-1])
    for cs in reversed(chunks[:-1]):
        out = _bin.add(chunk(cs), matmul(powers[q], out))
    return out


@public()
def matrix_exp(x: Any, *, max_squarings: int | None = None) -> Tensor:
    """The matrix exponential `sum_k x^k / k!` of square matrices (torch.linalg.matrix_exp).

    Scaling and squaring with the degree-18 Taylor polynomial (see the module notes): the
    graph's structure is fixed, so it always holds `max_squarings` masked squarings; the result
    is accurate to the dtype's precision for 1-norms up to theta * 2^max_squarings (theta = 1.09
    in float64, 3.01 in float32; ~71e3 and ~197e3 by default) and loses accuracy above (to nan).
    By default, an x whose values are known when the op is recorded (not the output of pending
    ops) gets as many squarings as its norm needs. The derivative is that of the computed
    approximation.

    Args:
        x: (..., n, n), floating.
        max_squarings: the most squarings (a nabla extension; each costs a matmul). None: 16,
            or more for a known x of a larger norm.

    Example:
        >>> a = nabla.tensor([[0.0, 1.0], [-1.0, 0.0]])
        >>> nabla.matrix_exp(a).numpy().round(4)  # a rotation by 1 radian
        array([[ 0.5403,  0.8415],
               [-0.8415,  0.5403]], dtype=float32)
    """
    x = _float_tensor(x, "matrix_exp", "x", 2)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_exp: x must be a batch of square matrices (..., n, n), got shape {x.shape}")
    known = known_values(x) if max_squarings is None else None
    max_squarings = 16 if max_squarings is None else max_squarings
    if isinstance(max_squarings, bool) or not isinstance(max_squarings, int) or max_squarings < 0:
        raise ValueError(f"matrix_exp: max_squarings must be an int >= 0, got {max_squarings!r}")
    if math.prod(x.shape) == 0:
        return zeros(*x.shape, dtype=x.dtype)
    (a,), dtype = _working(x)
    if max_squarings == 0:
        return cast(_taylor_exp(a, _EXP_DEGREE), dtype)
    theta = _EXP_THETA.get(a.dtype, _EXP_THETA_DEFAULT)
    if known is not None:  # (its norm is known now: as many squarings as it needs, as torch)
        largest = float(np.abs(known.astype(np.float64)).sum(axis=-2).max())
        if math.isfinite(largest) and largest > theta:
            max_squarings = builtins.max(max_squarings, math.ceil(math.log2(largest / theta)))
    # The scaling is piecewise constant in x: computed off the tape.
    norm = _red.max(_red.sum(_un.abs(detach(a)), axis=-2), axis=-1, keepdims=True)  # (..., 1)
    over = _bin.gt(norm, cast(_const(theta * 2.0 ** np.arange(max_squarings)), a.dtype))  # (..., S): s = count
    halves = _cf.where(over, cast(_const(np.array(0.5)), a.dtype), cast(_const(np.array(1.0)), a.dtype))
    scale = _red.prod(halves, axis=-1)  # 2^-s, exactly
    out = _taylor_exp(_bin.mul(a, reshape(scale, scale.shape + (1, 1))), _EXP_DEGREE)
    for j in range(max_squarings):  # squaring j runs when s > S - 1 - j: the last s of them
        keep = reshape(getitem(over, (Ellipsis, max_squarings - 1 - j)), over.shape[:-1] + (1, 1))
        out = _cf.where(keep, matmul(out, out), out)
    return cast(out, dtype)


# -- householder_product -------------------------------------------------------------------------
def _wy_factor(v: Tensor, tau: Tensor) -> Tensor:
    """The upper triangular T (..., K, K) with H_1 ... H_K = I - V T V^T (H_i = I - tau_i v_i v_i^T),
    K a power of two (V's columns and tau zero-padded to it). Blocks are merged pairwise,
    T = [[T1, -T1 V1^T V2 T2], [0, T2]], every pair of a level in one batched matmul."""
    batch, m, big_k = v.shape[:-2], v.shape[-2], v.shape[-1]
    t = reshape(tau, batch + (big_k, 1, 1))  # the 1x1 blocks: tau_i
    b = 1
    while b < big_k:
        p = big_k // (2 * b)
        vb = reshape(v, batch + (m, p, 2, b))
        lead = list(range(len(batch)))
        m_ax, p_ax, b_ax = len(batch), len(batch) + 1, len(batch) + 2
        v1t = permute(getitem(vb, (Ellipsis, 0, slice(None))), [*lead, p_ax, b_ax, m_ax])  # (..., p, b, m)
        v2 = permute(getitem(vb, (Ellipsis, 1, slice(None))), [*lead, p_ax, m_ax, b_ax])  # (..., p, m, b)
        g12 = matmul(v1t, v2)  # (..., p, b, b): V1^T V2 of each pair
        tb = reshape(t, batch + (p, 2, b, b))
        t1 = getitem(tb, (Ellipsis, 0, slice(None), slice(None)))
        t2 = getitem(tb, (Ellipsis, 1, slice(None), slice(None)))
        off = _un.neg(matmul(matmul(t1, g12), t2))
        top = concatenate([t1, off], axis=-1)
        bottom = concatenate([zeros(*t2.shape, dtype=t2.dtype), t2], axis=-1)
        t = concatenate([top, bottom], axis=-2)
        b *= 2
    return reshape(t, batch + (big_k, big_k))


@public()
def householder_product(x: Any, tau: Any) -> Tensor:
    """The first n columns of the product of Householder reflectors H_1 ... H_k
    (torch.linalg.householder_product, LAPACK's orgqr), H_i = I - tau_i v_i v_i^T where v_i is
    x's column i below the diagonal with an implicit 1 on it (x's diagonal and upper triangle
    are not read): the Q factor of `geqrf`'s output.

    Args:
        x: (..., m, n) with m >= n, floating.
        tau: (..., k) with k <= n, the same batch dims.

    Example:
        >>> a, tau = nabla.geqrf(nabla.randn(4, 3))
        >>> q = nabla.householder_product(a, tau)
        >>> q.shape
        (4, 3)
    """
    x = _float_tensor(x, "householder_product", "x", 2)
    tau = _float_tensor(tau, "householder_product", "tau", 1)
    m, n, k = x.shape[-2], x.shape[-1], tau.shape[-1]
    if m < n:
        raise ValueError(f"householder_product: x must have at least as many rows as columns, got shape {x.shape}")
    if k > n:
        raise ValueError(
            f"householder_product: tau may hold at most x.shape[-1] = {n} scalars, got tau of shape {tau.shape}"
        )
    if tau.shape[:-1] != x.shape[:-2]:
        raise ValueError(
            f"householder_product: tau's batch dims {tau.shape[:-1]} must equal x's {x.shape[:-2]} "
            f"(x {x.shape}, tau {tau.shape})"
        )
    (x, tau), dtype = _working(x, tau)
    batch = x.shape[:-2]
    ident = broadcast_to(eye(m, n, dtype=x.dtype), batch + (m, n))
    if k == 0 or m == 0:
        return cast(ident, dtype)
    v = _bin.add(tril(getitem(x, (Ellipsis, slice(None), slice(0, k))), -1), eye(m, k, dtype=x.dtype))
    big_k = 1 << (k - 1).bit_length()
    if big_k != k:  # zero reflectors (v = 0, tau = 0) up to a power of two
        v = pad(v, (0, big_k - k))
        tau = pad(tau, (0, big_k - k))
    t = _wy_factor(v, tau)
    # (I - V T V^T) I_{m,n}: V^T I_{m,n} is the transpose of V's first n rows.
    top = _mT(getitem(v, (Ellipsis, slice(0, n), slice(None))))
    return cast(_bin.sub(ident, matmul(v, matmul(t, top))), dtype)


# -- geqrf / qr ----------------------------------------------------------------------------------
def _householder_qr(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's geqr2, one column at a time (dlarfg's reflector, then applied to the columns on
    the right): R in the upper triangle, the reflectors below the diagonal, and tau."""
    m, n = a.shape[-2], a.shape[-1]
    rows = np.arange(m)
    cols = np.arange(n)
    one = cast(_const(np.array(1.0)), a.dtype)
    taus = []
    for j in range(min(m, n)):
        below, at_j, above = _const(rows > j), _const(rows == j), _const(rows < j)
        col = getitem(a, (Ellipsis, slice(None), j))  # (..., m)
        alpha = getitem(col, (Ellipsis, j))  # (...,)
        xsq = _red.sum(_cf.where(below, _bin.mul(col, col), 0), axis=-1)
        zero = _bin.eq(xsq, 0)  # H = I (tau = 0); the other branch is kept finite for the gradients
        sgn = _cf.where(_bin.ge(alpha, 0), one, _un.neg(one))
        r = _un.sqrt(_cf.where(zero, one, _bin.add(_bin.mul(alpha, alpha), xsq)))
        beta_nz = _un.neg(_bin.mul(sgn, r))
        beta = _cf.where(zero, alpha, beta_nz)
        tau = _cf.where(zero, 0.0, _bin.div(_bin.sub(beta_nz, alpha), beta_nz))
        scale = _cf.where(zero, 0.0, _bin.div(one, _bin.add(alpha, _bin.mul(sgn, r))))  # 1 / (alpha - beta)
        vbelow = _bin.mul(col, unsqueeze(scale, -1))
        u = _cf.where(at_j, one, _cf.where(below, vbelow, 0.0))  # (..., m)
        w = matmul(unsqueeze(u, -2), a)  # (..., 1, n): u^T A
        update = _bin.mul(_bin.mul(unsqueeze(unsqueeze(tau, -1), -1), unsqueeze(u, -1)), w)
        a = _bin.sub(a, _cf.where(_const(cols > j), update, 0.0))
        new_col = _cf.where(above, col, _cf.where(at_j, unsqueeze(beta, -1), vbelow))
        a = _cf.where(_const(cols == j), unsqueeze(new_col, -1), a)
        taus.append(tau)
    tau = stack(taus, axis=-1) if taus else zeros(*a.shape[:-2], 0, dtype=a.dtype)
    return a, tau


@public()
def geqrf(x: Any) -> GeqrfResult:
    """Householder QR in LAPACK's compact form (torch.geqrf): `(a, tau)` with R in a's upper
    triangle and the reflectors' vectors below the diagonal (implicit 1 on it); `tau` has
    min(m, n) entries. `householder_product(a, tau)` forms Q. LAPACK's conventions
    (dlarfg: beta = -sign(alpha) * norm, tau = 0 when the column below the diagonal is zero),
    so the result is LAPACK's (torch's, NumPy's `qr(mode='raw')`). Differentiable.

    Args:
        x: (..., m, n), floating.

    Example:
        >>> a, tau = nabla.geqrf(nabla.randn(4, 3))
        >>> a.shape, tau.shape
        ((4, 3), (3,))
    """
    x = _float_tensor(x, "geqrf", "x", 2)
    (a,), dtype = _working(x)
    a, tau = _householder_qr(a)
    return GeqrfResult(cast(a, dtype), cast(tau, dtype))


@public()
def qr(x: Any, mode: str = "reduced") -> QRResult:
    """The QR decomposition `x = Q R` (torch.linalg.qr) by Householder reflections, with
    LAPACK's signs (R's diagonal may be negative, as in torch and NumPy). Differentiable.

    Args:
        x: (..., m, n), floating.
        mode: "reduced" (Q (..., m, k), R (..., k, n), k = min(m, n)), "complete" (Q (..., m, m),
            R (..., m, n)) or "r" (R of the reduced mode and an empty Q, as torch).

    Example:
        >>> q, r = nabla.qr(nabla.randn(5, 3))
        >>> q.shape, r.shape
        ((5, 3), (3, 3))
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    x = _float_tensor(x, "qr", "x", 2)
    (a,), dtype = _working(x)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    a, tau = _householder_qr(a)
    if mode == "complete" and m > n:
        r = triu(a)
        q = householder_product(pad(a, (0, m - n)), pad(tau, (0, m - n)))
    else:
        r = triu(getitem(a, (Ellipsis, slice(0, k), slice(None))))
        q = None if mode == "r" else householder_product(getitem(a, (Ellipsis, slice(None), slice(0, k))), tau)
    q = zeros(0, dtype=dtype) if q is None else cast(q, dtype)
    return QRResult(q, cast(r, dtype))


# -- solve / inv ---------------------------------------------------------------------------------
def _swap_in_pivot(w: Tensor, j: int) -> tuple[Tensor, Tensor, Tensor]:
    """Partial pivoting at column j (LAPACK's choice: the largest |entry| of the column at or
    below the diagonal, the first of ties): w with rows j and p swapped, p (..., 1) and the
    pivot row (..., 1, columns)."""
    rows = np.arange(w.shape[-2])
    col = getitem(w, (Ellipsis, slice(None), j))  # (..., rows)
    p = _red.argmax(_cf.where(_const(rows >= j), _un.abs(col), -1.0), axis=-1, keepdims=True)
    at_p = unsqueeze(_bin.eq(_const(rows), p), -1)  # (..., rows, 1)
    row_p = _red.sum(_cf.where(at_p, w, 0.0), axis=-2, keepdims=True)
    row_j = getitem(w, (Ellipsis, slice(j, j + 1), slice(None)))
    w = _cf.where(unsqueeze(_const(rows == j), -1), row_p, _cf.where(at_p, row_j, w))
    return w, p, row_p


def _gauss_jordan(w: Tensor, n: int) -> Tensor:
    """Reduce the augmented (..., n, n + r) matrix [A | B] to [I | A^-1 B] with partial pivoting."""
    rows = np.arange(n)
    for j in range(n):
        is_j = _const(rows == j)
        w, _, row_p = _swap_in_pivot(w, j)
        pivot = getitem(row_p, (Ellipsis, slice(None), slice(j, j + 1)))  # (..., 1, 1)
        prow = _bin.div(row_p, pivot)
        factors = _cf.where(is_j, 0.0, getitem(w, (Ellipsis, slice(None), j)))  # (..., n)
        w = _bin.sub(w, _bin.mul(unsqueeze(factors, -1), prow))
        w = _cf.where(unsqueeze(is_j, -1), prow, w)
    return w


def _system(op: str, a: Tensor, b: Tensor, left: bool) -> tuple[Tensor, Tensor, Any]:
    """A (..., n, n) and B (..., n, k) of `A X = B` (for left=False already transposed) checked
    to match, in one computation dtype, with their batch dims broadcast; and the result dtype."""
    n = a.shape[-1]
    if b.shape[-2] != n:
        raise ValueError(
            f"{op}: A {a.shape} and B {b.shape} do not match: B needs {n} "
            f"{'rows' if left else 'columns'} for A's {n}x{n} matrices"
        )
    (a, b), dtype = _working(a, b)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: the batch dims of A {a.shape} and B {b.shape} cannot be broadcast together") from None
    return broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:]), dtype


def _square(x: Tensor, op: str) -> None:
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: A must be a batch of square matrices (..., n, n), got shape {x.shape}")


@public()
def solve(a: Any, b: Any, *, left: bool = True) -> Tensor:
    """The solution X of `A X = B` (`X A = B` for left=False) (torch.linalg.solve).

    Gauss-Jordan elimination with partial pivoting, unrolled over the n columns (a graph of
    O(n) ops). Batch dims broadcast. As in torch, B is a batch of vectors when it is 1-D or
    its shape is A's without the last dim (left=True only). A singular A gives inf/nan.

    Args:
        a: (..., n, n), floating.
        b: (..., n, r) (or (..., r, n) for left=False), or (..., n) vectors.
        left: solve A X = B (True) or X A = B (False).

    Example:
        >>> a = nabla.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> nabla.solve(a, nabla.tensor([3.0, 5.0])).numpy()
        array([0.8, 1.4], dtype=float32)
    """
    a = _float_tensor(a, "solve", "A", 2)
    b = _float_tensor(b, "solve", "B", 1)
    _square(a, "solve")
    n = a.shape[-1]
    vector = left and (b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]))
    if vector:
        b = unsqueeze(b, -1)
    elif b.ndim < 2:
        raise ValueError(f"solve: B must be a vector (n,) or a batch of matrices, got shape {b.shape}")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = _mT(a), _mT(b)
    a, b, dtype = _system("solve", a, b, left)
    if n == 0 or math.prod(b.shape) == 0:
        out = zeros(*b.shape, dtype=a.dtype)
    else:
        w = _gauss_jordan(concatenate([a, b], axis=-1), n)
        out = getitem(w, (Ellipsis, slice(None), slice(n, None)))
    if not left:
        out = _mT(out)
    if vector:
        out = reshape(out, out.shape[:-1])
    return cast(out, dtype)


@public()
def inv(a: Any) -> Tensor:
    """The inverse of square matrices (torch.linalg.inv): `solve(a, I)`, Gauss-Jordan with
    partial pivoting (O(n) ops); a singular matrix gives inf/nan.

    Args:
        a: (..., n, n), floating.

    Example:
        >>> nabla.inv(nabla.tensor([[2.0, 0.0], [0.0, 4.0]])).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]], dtype=float32)
    """
    a = _float_tensor(a, "inv", "A", 2)
    _square(a, "inv")
    n = a.shape[-1]
    return solve(a, broadcast_to(eye(n, dtype=a.dtype), a.shape))


# -- matrix_power ----------------------------------------------------------------------------------
@public()
def matrix_power(a: Any, n: int) -> Tensor:
    """A^n for square matrices and an integer n (torch.linalg.matrix_power): repeated squaring
    (about 2 log2|n| matmuls); n = 0 gives the identity, n < 0 powers of inv(A).

    Example:
        >>> nabla.matrix_power(nabla.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).numpy()
        array([[1., 3.],
               [0., 1.]], dtype=float32)
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"matrix_power: n must be an int, got {n!r}")
    x = a if isinstance(a, Tensor) else tensor(a)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: A must be a batch of square matrices (..., n, n), got shape {x.shape}")
    if n == 0:
        return _red.keep_in_graph(broadcast_to(eye(x.shape[-1], dtype=x.dtype), x.shape), x)
    base = inv(x) if n < 0 else x
    out, k = None, abs(int(n))
    while k:
        if k & 1:
            out = base if out is None else matmul(out, base)
        k >>= 1
        if k:
            base = matmul(base, base)
    return out


# -- cholesky / triangular solves ------------------------------------------------------------------
def _cholesky_lower(a: Tensor, n: int) -> Tensor:
    """L with A = L L^T, one column at a time (column j of A minus L[:, :j] L[j, :j]^T, scaled by
    the square root of its diagonal entry): n matrix-vector products."""
    rows = np.arange(n)
    below, cols = _const(rows), _const(rows)
    lower = _bin.mul(a, 0.0)
    for j in range(n):
        row_j = getitem(lower, (Ellipsis, slice(j, j + 1), slice(None)))  # (..., 1, n), zeros from column j on
        col = _bin.sub(getitem(a, (Ellipsis, slice(None), j)), getitem(matmul(lower, _mT(row_j)), (Ellipsis, 0)))
        d = _un.sqrt(getitem(col, (Ellipsis, slice(j, j + 1))))  # nan where A is not positive definite
        new = _cf.where(_bin.greater(below, j), _bin.div(col, d), _cf.where(_bin.eq(below, j), d, 0.0))
        lower = _cf.where(_bin.eq(cols, j), unsqueeze(new, -1), lower)
    return lower


@public()
def cholesky(a: Any, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (torch.linalg.cholesky): lower
    L with A = L L^T, or upper U = L^T with A = U^T U. As torch, only A's lower triangle is
    read (its upper one for upper=True); the gradient is symmetric, as torch's. Unrolled
    over the n columns (n matrix-vector products); a matrix that is not positive definite gives
    nan instead of raising (its values are not known when the graph is built): to raise, as
    torch's does, use `nabla.linalg.cholesky_ex(a, check_errors=True)`. Differentiable.

    Args:
        a: (..., n, n), floating.
        upper: return U instead of L.

    Example:
        >>> nabla.cholesky(nabla.tensor([[4.0, 2.0], [2.0, 5.0]])).numpy()
        array([[2., 0.],
               [1., 2.]], dtype=float32)
    """
    a = _float_tensor(a, "cholesky", "A", 2)
    _square(a, "cholesky")
    (a,), dtype = _working(a)
    n = a.shape[-1]
    # The value reads the lower triangle; the gradient is that of the symmetric part, split
    # evenly between A[i, j] and A[j, i] (torch's convention: A is taken to be symmetric).
    sym = _bin.mul(_bin.add(a, _mT(a)), 0.5)
    read = _bin.add(triu(a), _mT(triu(a, 1))) if upper else _bin.add(tril(a), _mT(tril(a, -1)))
    lower = _cholesky_lower(_bin.add(sym, detach(_bin.sub(read, sym))), n) if n else a
    return cast(_mT(lower) if upper else lower, dtype)


def _substitute(a: Tensor, b: Tensor, upper: bool, unit: bool) -> Tensor:
    """X with A X = B for triangular A (the other triangle is not read): back substitution for
    upper, forward for lower, one row of X per step (rows not yet solved are 0 in X)."""
    n = a.shape[-1]
    a = (triu(a, 1) if unit else triu(a)) if upper else (tril(a, -1) if unit else tril(a))
    rows = unsqueeze(_const(np.arange(n)), -1)
    x = _bin.mul(b, 0.0)
    for i in reversed(range(n)) if upper else range(n):
        row = getitem(a, (Ellipsis, slice(i, i + 1), slice(None)))
        r = _bin.sub(getitem(b, (Ellipsis, slice(i, i + 1), slice(None))), matmul(row, x))
        if not unit:
            r = _bin.div(r, getitem(a, (Ellipsis, slice(i, i + 1), slice(i, i + 1))))
        x = _cf.where(_bin.eq(rows, i), r, x)
    return x


@public()
def solve_triangular(a: Any, b: Any, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """The solution X of `A X = B` (`X A = B` for left=False) for triangular A
    (torch.linalg.solve_triangular): substitution, unrolled over the n rows; only A's `upper`
    (or lower) triangle is read, and with unitriangular=True its diagonal is taken as ones.
    Batch dims broadcast.

    Args:
        a: (..., n, n), floating.
        b: (..., n, k) (or (..., k, n) for left=False).
        upper: A is upper triangular (keyword only, as in torch).

    Example:
        >>> a = nabla.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> nabla.solve_triangular(a, nabla.tensor([[3.0], [4.0]]), upper=True).numpy()
        array([[1.],
               [1.]], dtype=float32)
    """
    a = _float_tensor(a, "solve_triangular", "A", 2)
    b = _float_tensor(b, "solve_triangular", "B", 2)
    _square(a, "solve_triangular")
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T is triangular the other way
        a, b, upper = _mT(a), _mT(b), not upper
    a, b, dtype = _system("solve_triangular", a, b, left)
    out = _substitute(a, b, upper, unitriangular) if a.shape[-1] else b
    return cast(_mT(out) if not left else out, dtype)


@public()
def cholesky_solve(b: Any, factor: Any, upper: bool = False) -> Tensor:
    """The solution X of `A X = B` given A's Cholesky factor (torch.cholesky_solve(B, L)):
    two triangular solves, L then L^T (U^T then U for upper=True).

    Args:
        b: (..., n, k), floating.
        factor: (..., n, n), L (or U for upper=True).
    """
    factor = _float_tensor(factor, "cholesky_solve", "L", 2)
    if upper:
        y = solve_triangular(_mT(factor), b, upper=False)
        return solve_triangular(factor, y, upper=True)
    y = solve_triangular(factor, b, upper=False)
    return solve_triangular(_mT(factor), y, upper=True)


@public()
def cholesky_inverse(factor: Any, upper: bool = False) -> Tensor:
    """A^-1 from A's Cholesky factor (torch.cholesky_inverse): `cholesky_solve(I, L)`."""
    factor = _float_tensor(factor, "cholesky_inverse", "L", 2)
    _square(factor, "cholesky_inverse")
    return cholesky_solve(broadcast_to(eye(factor.shape[-1], dtype=factor.dtype), factor.shape), factor, upper)
