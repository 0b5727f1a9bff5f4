"""Eigen- and singular-value decompositions, computed by LAPACK on the host when recorded:
eigh / eigvalsh and svd / svdvals, and what builds on them (pinv, matrix_rank, cond, lstsq;
`matrix_norm`'s "nuc" and +-2 go through svdvals).

MAX has no eigen- or singular-value solver, and an unrolled Jacobi method would be a graph of
thousands of ops. These ops evaluate their input, run NumPy's LAPACK on it, and record a node
whose outputs are already realized. Everything after them stays lazy and runs on MAX,
including their derivatives, which are written with nabla ops on the outputs (torch's
formulas). On a realized input (a parameter, a batch) a training step stays one graph; on a
computed one it evaluates twice, once up to the decomposition's input and once after it. Inside
`nabla.compile` the input has no values: they raise there. A backward through them runs its
rules every time (never replayed), computing a decomposition again when the caller dropped an
output the rule needs.

    eigh   A = V diag(L) V^T (lower triangle read, as torch); VJP V (skew(V^T gV)/2 / E +
           diag(gL)) V^T with E_ij = L_j - L_i; JVP dL = diag(V^T dA V), dV = V (V^T dA V / E).
    svd    A = U diag(S) Vh, reduced; VJP torch's svd_backward, JVP from dP = U^T dA V (real
           matrices, distinct nonzero singular values).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.graph.engine import GRAPH
from ..core.graph.executors import host_array
from ..core.graph.tracing import tracing
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import reduction as _red
from .base import AVal, Operation, public
from .communication import unshard
from .creation import eye, zeros, zeros_like
from .linalg import _as_tensor, matrix_norm
from .linalg import raw_matmul as matmul
from .linalg_matrix import _mT, inv
from .triangular import diag_embed, diagonal
from .view import unsqueeze

__all__ = [
    "eigh",
    "eigvalsh",
    "linalg_cond",
    "linalg_svd",
    "lstsq",
    "matrix_rank",
    "pinv",
    "pinverse",
    "svd",
    "svdvals",
]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
TorchSVDResult = namedtuple("TorchSVDResult", ["U", "S", "V"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


class _HostOp(Operation):
    """An op whose outputs are computed by its NumPy kernel when it is recorded (`_on_host`)."""

    always_tuple = True
    # A derivative rule may compute the decomposition again (an output the caller dropped): a
    # replayed backward would re-create that as a lazy node, which MAX cannot run.
    replayable = False

    def kernel(self, *values: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{self.name} is computed on the host (LAPACK) when recorded: MAX has no kernel for it"
        )

    def _all_outputs(self, primals: list, outputs: list, **kwargs: Any) -> list:
        """The outputs a derivative rule reads: those the caller dropped are computed again,
        differentiably (a backward with create_graph=True differentiates through them)."""
        if all(o is not None for o in outputs):
            return outputs
        return list(_on_host(self, primals[0], self.name, **kwargs))


def _gaps(values: Tensor) -> Tensor:
    """E_ij = values_j - values_i, with 1 on the diagonal (a divisor)."""
    e = _bin.sub(unsqueeze(values, -2), unsqueeze(values, -1))
    return _cf.where(_eye_like(e), 1.0, e)


def _eye_like(square: Tensor) -> Tensor:
    """A bool (n, n) identity for a (..., n, n) tensor."""
    return eye(square.shape[-1], dtype=_dt.bool_)


class EighOp(_HostOp):
    name = "eigh"
    none_cotangents = True

    def abstract_eval(self, a: AVal) -> list[AVal]:
        shape, dtype = a
        return [(shape[:-1], dtype), (shape, dtype)]

    def numpy_kernel(self, a: np.ndarray) -> list[np.ndarray]:
        values, vectors = np.linalg.eigh(a, UPLO="L")
        return [values.astype(a.dtype), vectors.astype(a.dtype)]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        values, vectors = self._all_outputs(primals, outputs)
        g_values, g_vectors = cotangents
        inner = diag_embed(g_values if g_values is not None else zeros_like(values))
        if g_vectors is not None:  # (only then: the term divides by the eigenvalue gaps)
            vh_gv = matmul(_mT(vectors), g_vectors)
            inner = _bin.add(inner, _bin.div(_bin.mul(_bin.sub(vh_gv, _mT(vh_gv)), 0.5), _gaps(values)))
        return [matmul(matmul(vectors, inner), _mT(vectors))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        values, vectors = self._all_outputs(primals, outputs)
        projected = matmul(matmul(_mT(vectors), tangents[0]), vectors)
        d_values = diagonal(projected, 0, -2, -1)
        off = _cf.where(_eye_like(projected), 0.0, _bin.div(projected, _gaps(values)))
        return [d_values, matmul(vectors, off)]


class SvdOp(_HostOp):
    """`full`: U (m, m) and Vh (n, n) (torch's full_matrices), else the reduced (m, k), (k, n)."""

    name = "svd"
    none_cotangents = True

    def abstract_eval(self, a: AVal, *, full: bool) -> list[AVal]:
        shape, dtype = a
        batch, (m, n) = shape[:-2], shape[-2:]
        k = min(m, n)
        return [((*batch, m, m if full else k), dtype), ((*batch, k), dtype), ((*batch, n if full else k, n), dtype)]

    def numpy_kernel(self, a: np.ndarray, *, full: bool) -> list[np.ndarray]:
        if 0 in a.shape[-2:]:  # (LAPACK rejects empty matrices; U and Vh are identities then)
            u_shape, s_shape, vh_shape = (shape for shape, _ in self.abstract_eval((a.shape, None), full=full))
            return [_eyes(u_shape, a.dtype), np.zeros(s_shape, a.dtype), _eyes(vh_shape, a.dtype)]
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        return [u.astype(a.dtype), s.astype(a.dtype), vh.astype(a.dtype)]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, full: bool) -> list:
        u, s, vh = self._all_outputs(primals, outputs, full=full)
        gu, gs, gvh = cotangents
        k = s.shape[-1]
        gs = gs if gs is not None else zeros_like(s)
        if gu is None and gvh is None:  # singular values only (svdvals, norms): U diag(gs) Vh
            return [matmul(_bin.mul(u[..., :k], unsqueeze(gs, -2)), vh[..., :k, :])]
        gu = gu if gu is not None else zeros_like(u)
        gvh = gvh if gvh is not None else zeros_like(vh)
        if full:  # (as torch: the columns of U and rows of Vh past k get no gradient)
            u, gu, vh, gvh = u[..., :k], gu[..., :k], vh[..., :k, :], gvh[..., :k, :]
        return [_svd_backward(u, s, vh, gu, gs, gvh)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, full: bool) -> list:
        u, s, vh = self._all_outputs(primals, outputs, full=full)
        if full and u.shape[-1] != vh.shape[-1]:
            raise NotImplementedError("svd: no forward-mode derivative for full_matrices=True of non-square matrices")
        return list(_svd_forward(u, s, vh, tangents[0]))


def _eyes(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Identity matrices of `shape` (..., n, m)."""
    return np.broadcast_to(np.eye(shape[-2], shape[-1]), shape).astype(dtype)


def _svd_forward(u: Tensor, s: Tensor, vh: Tensor, da: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(dU, dS, dVh) of A = U diag(S) Vh along dA (real, reduced, distinct nonzero S): with
    dP = U^T dA V, dS = diag(dP), and U^T dU, V^T dV the skew matrices that solve dP's
    off-diagonal equations; the parts of dA outside U's and V's columns add to dU and dV."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    v = _mT(vh)
    dp = matmul(matmul(_mT(u), da), v)
    on_diagonal = _eye_like(dp)
    ds = diagonal(dp, 0, -2, -1)
    gaps = _gaps(_bin.mul(s, s))
    row, col = unsqueeze(s, -2), unsqueeze(s, -1)
    omega_u = _cf.where(on_diagonal, 0.0, _bin.div(_bin.add(_bin.mul(dp, row), _bin.mul(col, _mT(dp))), gaps))
    omega_v = _cf.where(on_diagonal, 0.0, _bin.div(_bin.add(_bin.mul(col, dp), _bin.mul(_mT(dp), row)), gaps))
    du, dv = matmul(u, omega_u), matmul(v, omega_v)
    if m > k:
        du = _bin.add(du, _bin.div(_bin.sub(matmul(da, v), matmul(u, dp)), row))
    if n > k:
        dv = _bin.add(dv, _bin.div(_bin.sub(matmul(_mT(da), u), matmul(v, _mT(dp))), row))
    return du, ds, _mT(dv)


def _svd_backward(u: Tensor, s: Tensor, vh: Tensor, gu: Tensor, gs: Tensor, gvh: Tensor) -> Tensor:
    """torch's svd_backward for real matrices (reduced SVD, distinct nonzero singular values)."""
    m, n = u.shape[-2], vh.shape[-1]
    v, gv = _mT(vh), _mT(gvh)
    uh_gu = matmul(_mT(u), gu)
    vh_gv = matmul(vh, gv)
    skew_u = _bin.sub(uh_gu, _mT(uh_gu))
    skew_v = _bin.sub(vh_gv, _mT(vh_gv))
    s2 = _bin.mul(s, s)
    inner = _bin.div(
        _bin.add(_bin.mul(skew_u, unsqueeze(s, -2)), _bin.mul(unsqueeze(s, -1), skew_v)),
        _gaps(s2),
    )
    inner = _bin.add(inner, diag_embed(gs))
    k = s.shape[-1]
    if m > k:  # tall: the part of gU outside U's columns
        gu_sinv = _bin.div(gu, unsqueeze(s, -2))
        left = _bin.add(matmul(u, inner), _bin.sub(gu_sinv, matmul(u, matmul(_mT(u), gu_sinv))))
        return matmul(left, vh)
    if n > k:  # wide: the part of gV outside V's columns
        gv_sinv = _bin.div(gv, unsqueeze(s, -2))
        right = _bin.add(matmul(inner, vh), _bin.sub(_mT(gv_sinv), matmul(matmul(_mT(gv_sinv), v), vh)))
        return matmul(u, right)
    return matmul(matmul(u, inner), vh)


_eigh, _svd = EighOp(), SvdOp()


def _on_host(op: _HostOp, x: Tensor, name: str, **kwargs: Any) -> tuple[Tensor, ...]:
    """Record `op` on `x` and compute its outputs now, on the host."""
    if not _dt.is_float(x.dtype) or x.dtype in (_dt.float16, _dt.bfloat16):
        raise TypeError(f"{name}: expected a float32 or float64 tensor, got dtype {x.dtype.name}")
    if x.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices, got shape {x.shape}")
    if tracing():
        raise RuntimeError(
            f"{name} is computed by LAPACK on the host from its input's values, which a nabla.compile trace "
            "does not have: call it outside the compiled function"
        )
    if x.sharding is not None:  # LAPACK sees the whole matrix: gathered (off the mesh) first
        x = unshard(x)
    GRAPH.evaluate([x._impl])
    outs = op(x, **kwargs)
    arrays = op.numpy_kernel(host_array(x._impl), **outs[0]._impl.output_refs.adapted_kwargs)
    for t, value in zip(outs, arrays, strict=True):
        t._impl.set_realized(np.ascontiguousarray(value))
    return outs


@public()
def eigh(a: Any, UPLO: str = "L") -> EighResult:  # noqa: N803 (torch's name)
    """torch.linalg.eigh: eigenvalues (ascending) and orthonormal eigenvectors of symmetric
    matrices (..., n, n), reading only the lower triangle (`UPLO="L"`) or the upper one.

    Example:
        >>> nabla.linalg.eigh(nabla.tensor([[2.0, 1.0], [1.0, 2.0]])).eigenvalues.tolist()
        [1.0, 3.0]
    """
    a = _square(a, "eigh")
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if UPLO == "U":
        a = _mT(a)  # the upper triangle is the transpose's lower one
    return EighResult(*_on_host(_eigh, a, "eigh"))


@public()
def eigvalsh(a: Any, UPLO: str = "L") -> Tensor:  # noqa: N803
    """torch.linalg.eigvalsh: the eigenvalues of `eigh`, ascending."""
    return eigh(a, UPLO).eigenvalues


def _square(a: Any, op: str) -> Tensor:
    a = _as_tensor(a, op, "A")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: expected square matrices (..., n, n), got shape {a.shape}")
    return a


@public()
def linalg_svd(a: Any, full_matrices: bool = True) -> SVDResult:
    """torch.linalg.svd (`nabla.linalg.svd`): A = U diag(S) Vh, singular values descending; with
    `full_matrices` (torch's default) U is (m, m) and Vh (n, n), else (m, k) and (k, n) for
    k = min(m, n). As torch, the columns past k get no gradient.

    Example:
        >>> nabla.linalg.svd(nabla.eye(2) * 3.0).S.tolist()
        [3.0, 3.0]
    """
    return SVDResult(*_on_host(_svd, _as_tensor(a, "svd", "A"), "svd", full=bool(full_matrices)))


@public()
def svd(a: Any, some: bool = True, compute_uv: bool = True) -> TorchSVDResult:
    """torch.svd (the older form): (U, S, V) with V, not its transpose; `some=False` gives the
    full U and V; `compute_uv=False` gives zero U and V, as torch."""
    u, s, vh = linalg_svd(a, full_matrices=not some and compute_uv)
    if not compute_uv:  # zero square U and V, as torch
        batch, (m, n) = u.shape[:-2], (u.shape[-2], vh.shape[-1])
        return TorchSVDResult(zeros((*batch, m, m), dtype=s.dtype), s, zeros((*batch, n, n), dtype=s.dtype))
    return TorchSVDResult(u, s, _mT(vh))


@public()
def svdvals(a: Any) -> Tensor:
    """torch.linalg.svdvals: the singular values, descending."""
    return linalg_svd(a, full_matrices=False).S


def _default_rtol(a: Tensor) -> float:
    return float(np.finfo(_dt.to_numpy_dtype(a.dtype)).eps) * max(a.shape[-2:])


def _cutoff(s: Tensor, atol: Any, rtol: Any, a: Tensor) -> Tensor:
    """max(atol, rtol * largest singular value), torch's rule (rtol's default eps * max(m, n)
    unless atol > 0, then 0; per matrix for a tensor atol)."""
    if rtol is None:
        if isinstance(atol, Tensor):
            rtol = _cf.where(_bin.greater(atol, 0), 0.0, _default_rtol(a))
        else:
            rtol = _default_rtol(a) if atol is None or atol <= 0 else 0.0
    largest = _red.max(s, -1, True) if s.shape[-1] else zeros_like(s[..., :1])
    # (a tensor tolerance has one entry per matrix of the batch: it lines up with s's batch dims)
    rtol, atol = (unsqueeze(t, -1) if isinstance(t, Tensor) else t for t in (rtol, atol))
    return _bin.maximum(_bin.mul(largest, rtol), 0.0 if atol is None else atol)


@public()
def pinv(a: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """torch.linalg.pinv: the Moore-Penrose pseudoinverse through the SVD, singular values at
    or below max(atol, rtol * largest) treated as 0."""
    a = _as_tensor(a, "pinv", "A")
    u, s, vh = linalg_svd(a, full_matrices=False)
    keep = _bin.greater(s, _cutoff(s, atol, rtol, a))
    s_inv = _cf.where(keep, _bin.div(1.0, _cf.where(keep, s, 1.0)), 0.0)
    return matmul(_bin.mul(_mT(vh), unsqueeze(s_inv, -2)), _mT(u))


@public()
def pinverse(a: Any, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: `pinv` with a relative cutoff `rcond`."""
    return pinv(a, rtol=rcond)


@public()
def matrix_rank(a: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """torch.linalg.matrix_rank: the number of singular values above max(atol, rtol * largest)
    (int64)."""
    a = _as_tensor(a, "matrix_rank", "A")
    s = svdvals(a)
    return _red.sum(_bin.greater(s, _cutoff(s, atol, rtol, a)).astype(_dt.int64), -1)


@public()
def linalg_cond(a: Any, p: Any = None) -> Tensor:
    """torch.linalg.cond (`nabla.linalg.cond`; `nabla.cond` is control flow): the condition number, largest over smallest singular value for p None
    or 2 (-2: the inverse), else norm(A, p) * norm(inv(A), p) for "fro", "nuc", +-1, +-inf."""
    a = _as_tensor(a, "cond", "A")
    if p is None or p in (2, -2):
        s = svdvals(a)
        big, small = _red.max(s, -1), _red.min(s, -1)
        return _bin.div(small, big) if p == -2 else _bin.div(big, small)
    return _bin.mul(matrix_norm(a, p), matrix_norm(inv(a), p))


@public()
def lstsq(a: Any, b: Any, rcond: Any = None, *, driver: str | None = None) -> LstsqResult:
    """torch.linalg.lstsq on the CPU ("gelsy"): the least-squares, minimum-norm solution X of
    A X = B, and the effective rank; residuals and singular_values are empty, as with gelsy.
    A 1-D B is not accepted (as torch)."""
    a, b = _as_tensor(a, "lstsq", "A"), _as_tensor(b, "lstsq", "B")
    if b.ndim < 2:
        raise ValueError(f"lstsq: B must be a matrix or a batch of matrices (..., m, k), got shape {b.shape}")
    if a.shape[-2] != b.shape[-2]:
        raise ValueError(f"lstsq: A {a.shape} and B {b.shape} must have the same number of rows")
    rtol = _default_rtol(a) if rcond is None else max(float(rcond), 0.0)
    solution = matmul(pinv(a, rtol=rtol), b)
    rank = matrix_rank(a, rtol=rtol)
    empty = zeros_like(solution)[..., :0, 0]
    return LstsqResult(solution, empty, rank, empty)
