"""Registry entries for nabla.ops.linalg (matmul, linear, dot, outer, tensordot, einsum, cross, kron) and
nabla.ops.linalg_matrix (matrix_exp, householder_product, geqrf, qr, solve, inv: composites)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "linalg"


def _arrays(seed: str, *shapes: tuple) -> tuple:
    return tuple(uniform(s, seed=f"{seed}{i}") for i, s in enumerate(shapes))


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),  # 2-D
    ((4,), (4,)),  # 1-D . 1-D
    ((4,), (4, 5)),  # vector-matrix
    ((3, 4), (4,)),  # matrix-vector
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcasting batch dims
    ((4, 5), (2, 5, 3)),  # matrix times a batch
    ((4,), (2, 4, 5)),  # vector times a batch
    ((2, 3, 4), (4,)),  # batch times a vector
    ((1, 1), (1, 1)),
]


def _matmul_samples() -> list[Sample]:
    out = [Sample(_arrays(f"mm{a}{b}", a, b), label=f"{a}@{b}") for a, b in MATMUL_SHAPES]
    ints = (np.arange(6, dtype=np.int64).reshape(2, 3) - 2, np.arange(12, dtype=np.int64).reshape(3, 4) % 5)
    out.append(Sample(ints, label="int64", grad=False, max=False))
    out.append(Sample((ints[0], uniform((3, 2), seed="mmif")), label="int-float"))
    return out


def _same_dtype(x: np.ndarray, y: np.ndarray) -> tuple:
    """Cast to PyTorch's promoted dtype (int64 @ float32 is float32; NumPy would give float64)."""
    if x.dtype.kind == y.dtype.kind:
        dtype = np.promote_types(x.dtype, y.dtype)
    else:
        dtype = x.dtype if x.dtype.kind == "f" else y.dtype
    return x.astype(dtype), y.astype(dtype)


def _torch_same_dtype(torch, x, y) -> tuple:
    dtype = torch.promote_types(x.dtype, y.dtype)
    return x.to(dtype), y.to(dtype)


def _einsum_ref(equation: str, *arrays: np.ndarray) -> np.ndarray:
    """numpy.einsum, except that (like torch.einsum) an explicit output without '...' sums the
    dimensions an input ellipsis covers (NumPy refuses such equations)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    if arrow and "..." in lhs and "..." not in rhs:
        out = np.einsum(f"{lhs}->...{rhs}", *arrays)
        return np.sum(out, axis=tuple(range(out.ndim - len(rhs))))
    return np.asarray(np.einsum(equation, *arrays))


EINSUM_CASES = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("bhqd,bhkd->bhqk", (2, 2, 3, 4), (2, 2, 5, 4)),
    ("bhqk,bhkd->bhqd", (2, 2, 3, 5), (2, 2, 5, 4)),
    ("bi,oij,bj->bo", (2, 3), (4, 3, 5), (2, 5)),
    ("i,i->", (4,), (4,)),
    ("i,j->ij", (3,), (4,)),
    ("ij->ji", (3, 4)),
    ("ii->i", (4, 4)),
    ("ii->", (4, 4)),
    ("ij->", (3, 4)),
    ("ij->i", (3, 4)),
    ("ij,jk", (3, 4), (4, 2)),  # implicit output
    ("ba", (3, 4)),  # implicit output reorders alphabetically: a transpose
    ("...ij,...jk->...ik", (2, 3, 4), (4, 5)),  # ellipsis broadcasting
    ("...ij,...jk", (5, 1, 2, 3), (4, 3, 2)),  # implicit with ellipsis
    ("...i->i", (2, 3, 4)),  # explicit output drops the ellipsis: summed
    ("iij->ji", (3, 3, 2)),  # repeated subscript next to a free one
    ("ij,ij->ij", (3, 4), (3, 4)),  # elementwise (no contraction)
    ("ij,ij->", (3, 4), (3, 4)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),  # chain
    ("a,b,c->abc", (2,), (3,), (2,)),
    ("ji,jk->ik", (3, 2), (3, 4)),
    ("ii,ij->j", (3, 3), (3, 2)),
    ("Ab,bA->", (2, 3), (3, 2)),
    ("i,->i", (3,), ()),  # a 0-d operand
]


def _einsum_samples() -> list[Sample]:
    out = []
    for eq, *shapes in EINSUM_CASES:
        out.append(Sample((eq, *_arrays("es" + eq, *shapes)), label=eq))
    return out


def _np_cross(x, y, axis=-1):
    if axis is None:  # torch.cross without dim: x's first dimension of size 3
        axis = x.shape.index(3) - x.ndim
    return np.cross(x, y, axis=axis)


def _torch_cross(torch, x, y, axis=-1):
    if axis is None:
        with warnings.catch_warnings():  # torch deprecates the default; its behaviour is what is tested
            warnings.simplefilter("ignore", UserWarning)
            return torch.cross(x, y)
    return torch.linalg.cross(*torch.broadcast_tensors(x, y), dim=axis)  # which wants one rank


CROSS_SAMPLES = [
    Sample(_arrays("cr1", (3,), (3,)), label="(3,)"),
    Sample(_arrays("cr2", (4, 3), (4, 3)), label="(4,3)"),
    Sample(_arrays("cr3", (3, 5), (3, 5)), {"axis": 0}, label="axis0"),
    Sample(_arrays("cr4", (2, 3, 4), (2, 3, 4)), {"axis": -2}, label="axis-2"),
    Sample(_arrays("cr5", (4, 3), (1, 3)), label="broadcast"),
    Sample(_arrays("cr6", (2, 4, 3), (3,)), label="broadcast-rank"),
    Sample(_arrays("cr7", (2, 3, 3), (2, 3, 3)), {"axis": None}, label="dim-none"),
    Sample(_arrays("cr8", (0, 3), (0, 3)), label="empty"),
    Sample((np.array([[1, 0, 2]], np.int64), np.array([[0, 3, -1]], np.int64)), label="int64"),
]
KRON_SAMPLES = [
    Sample(_arrays("kr1", (2, 3), (4, 2)), label="(2,3)x(4,2)"),
    Sample(_arrays("kr2", (3,), (2,)), label="1-d"),
    Sample(_arrays("kr3", (2, 3), (4,)), label="ranks-differ"),
    Sample(_arrays("kr4", (), (2, 2)), label="0-d"),
    Sample(_arrays("kr5", (2, 1, 2), (1, 3, 2)), label="3-d"),
    Sample(_arrays("kr6", (0, 2), (3, 2)), label="empty"),
    Sample((np.array([[1, 2]], np.int64), np.array([[1], [10]], np.int64)), label="int64"),
]


# -- linalg_matrix: NumPy references written out (NumPy has no expm, orgqr or batched raw QR) ----------
def _per_matrix(fn, *arrays: np.ndarray, nout: int = 1):
    """fn applied to each matrix of a batch (the leading dims of the first array)."""
    batch = arrays[0].shape[:-2]
    outs = [fn(*(a[idx] for a in arrays)) for idx in np.ndindex(*batch)]
    if nout == 1:
        return np.stack(outs).reshape(batch + outs[0].shape)
    return tuple(np.stack([o[k] for o in outs]).reshape(batch + outs[0][k].shape) for k in range(nout))


def _np_expm(a: np.ndarray) -> np.ndarray:
    """exp(a) in float64: scaled to 1-norm <= 1/16, a degree-24 Taylor sum, then squared back."""

    def one(x):
        s = max(0, int(np.ceil(np.log2(max(np.abs(x).sum(axis=0).max(), 1e-300))))) + 4
        b, term, out = x / 2.0**s, np.eye(len(x)), np.eye(len(x))
        for i in range(1, 25):
            term = term @ b / i
            out = out + term
        for _ in range(s):
            out = out @ out
        return out

    return _per_matrix(one, a.astype(np.float64)).astype(a.dtype)


def _np_householder_product(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    def one(x, t):
        m, n = x.shape
        q = np.eye(m)
        for i in range(len(t)):
            v = np.concatenate([np.zeros(i), [1.0], x[i + 1 :, i]])
            q = q @ (np.eye(m) - t[i] * np.outer(v, v))
        return q[:, :n]

    return _per_matrix(one, a.astype(np.float64), tau.astype(np.float64)).astype(a.dtype)


def _np_geqrf(a: np.ndarray) -> tuple:
    def one(x):
        h, tau = np.linalg.qr(x, mode="raw")  # LAPACK's geqrf, h transposed
        return h.T, tau

    out = _per_matrix(one, a.astype(np.float64), nout=2)
    return tuple(o.astype(a.dtype) for o in out)


def _np_qr(a: np.ndarray, mode: str = "reduced") -> tuple:
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a.astype(np.float64), mode="r").astype(a.dtype)
    q, r = np.linalg.qr(a.astype(np.float64), mode=mode)
    return q.astype(a.dtype), r.astype(a.dtype)


def _np_solve(a: np.ndarray, b: np.ndarray, left: bool = True) -> np.ndarray:
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = a.astype(np.float64), b.astype(np.float64)
    if left and (b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])):  # torch's vector rule
        return np.linalg.solve(a, b[..., None])[..., 0].astype(dtype)
    if not left:
        return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2).astype(dtype)
    return np.linalg.solve(a, b).astype(dtype)


def _dominant(seed: str, shape: tuple) -> np.ndarray:
    """A well-conditioned square matrix (or batch): uniform entries plus 4 on the diagonal."""
    return uniform(shape, seed=seed) + 4.0 * np.eye(shape[-1])


# Pivoting needed: small diagonal entries, the largest entry of each column off the diagonal.
_PIVOT = np.array([[0.05, 2.0, 1.0, 0.3], [1.0, 0.1, 3.0, -0.5], [3.0, 1.0, 0.02, 0.4], [0.2, -1.0, 0.7, 0.01]])

MATRIX_EXP_SAMPLES = [
    Sample(_arrays("mexp1", (3, 3)), label="(3,3)"),
    Sample(_arrays("mexp2", (2, 4, 4)), label="batched"),
    Sample((uniform((4, 4), seed="mexp3") * 4.0,), label="norm-16"),  # a few squarings
    Sample((uniform((3, 3), seed="mexp4") * 0.01,), label="small"),  # none
    Sample((np.diag([1.0, -2.0, 0.5]),), label="diagonal"),
    Sample(_arrays("mexp5", (1, 1)), label="(1,1)"),
    Sample((uniform((3, 3), seed="mexp6") * 3.0,), {"max_squarings": 4}, label="max_squarings=4"),
]
HOUSEHOLDER_SAMPLES = [
    Sample(_arrays("hp1", (4, 3), (3,)), label="(4,3)-k3"),
    Sample(_arrays("hp2", (5, 3), (2,)), label="(5,3)-k2"),
    Sample(_arrays("hp3", (4, 4), (4,)), label="(4,4)-k4"),
    Sample(_arrays("hp4", (2, 6, 5), (2, 5)), label="batched-k5"),
    Sample(_arrays("hp5", (3, 1), (1,)), label="(3,1)"),
]
GEQRF_SAMPLES = [
    Sample(_arrays("gq1", (4, 3)), label="tall"),
    Sample(_arrays("gq2", (3, 3)), label="square"),
    Sample(_arrays("gq3", (3, 5)), label="wide"),
    Sample(_arrays("gq4", (2, 4, 3)), label="batched"),
    Sample(_arrays("gq5", (3, 2)), label="(3,2)"),
]
QR_SAMPLES = [
    Sample(_arrays("qr1", (4, 3)), label="tall"),
    Sample(_arrays("qr2", (3, 3)), label="square"),
    Sample(_arrays("qr3", (3, 5)), label="wide"),
    Sample(_arrays("qr4", (2, 4, 3)), label="batched"),
    Sample(_arrays("qr5", (4, 3)), {"mode": "complete"}, label="complete-tall"),
    Sample(_arrays("qr6", (3, 5)), {"mode": "complete"}, label="complete-wide"),
    Sample(_arrays("qr7", (4, 3)), {"mode": "r"}, label="mode-r"),
    Sample(_arrays("qr8", (3, 2)), label="(3,2)"),
]
SOLVE_SAMPLES = [
    Sample((_dominant("sv1", (3, 3)), uniform((3, 2), seed="sv1b")), label="(3,3)(3,2)"),
    Sample((_dominant("sv2", (3, 3)), uniform((3,), seed="sv2b")), label="vector"),
    Sample((_dominant("sv3", (2, 3, 3)), uniform((2, 3), seed="sv3b")), label="batched-vectors"),
    Sample((_dominant("sv4", (2, 3, 3)), uniform((3, 4), seed="sv4b")), label="broadcast-B"),
    Sample((_PIVOT, uniform((4, 2), seed="sv5b")), label="pivoting"),
    Sample((np.array([[0.1, 2.0], [1.0, 0.5]]), uniform((2, 1), seed="sv7b")), label="pivoting-2x2"),
    Sample((_dominant("sv6", (3, 3)), uniform((2, 3), seed="sv6b")), {"left": False}, label="left=False"),
]
INV_SAMPLES = [
    Sample((_dominant("inv1", (3, 3)),), label="(3,3)"),
    Sample((_dominant("inv2", (2, 4, 4)),), label="batched"),
    Sample((_PIVOT,), label="pivoting"),
    Sample((np.array([[2.0]]),), label="(1,1)"),
    Sample((np.array([[0.2, 1.0], [2.0, 0.3]]),), label="pivoting-2x2"),
]


# These composites unroll into hundreds of primitive calls per sample (forward and VJP), each
# primitive MAX-checked by its own entry. In the MAX group's graph they took more than 20 minutes
# of cold compile on a 2-core CPU for one small sample each, so their samples stay out of it.
def _off_max(samples: list[Sample]) -> list[Sample]:
    for sample in samples:
        sample.max = False
    return samples


_HOUSEHOLDER_COVERS = (
    "matmul", "add", "sub", "neg", "tril", "concatenate", "reshape", "permute", "pad", "slice", "eye",
)  # fmt: skip
_GEQRF_COVERS = ("matmul", "mul", "add", "sub", "div", "neg", "sqrt", "where", "sum", "equal", "greater_equal", "slice")
_SOLVE_COVERS = ("argmax", "abs", "equal", "where", "sum", "div", "mul", "sub", "concatenate", "slice")


SPECS: list[OpSpec] = [
    OpSpec(
        name="matmul",
        fn=nb.matmul,
        ref=lambda x, y: np.matmul(*_same_dtype(x, y)),
        samples=_matmul_samples(),
        family=FAMILY,
        torch_ref=lambda torch, x, y: torch.matmul(*_torch_same_dtype(torch, x, y)),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="linear",
        fn=nb.linear,
        ref=lambda x, w, b=None: (np.matmul(x, w.T) if b is None else np.matmul(x, w.T) + b).astype(x.dtype),
        samples=[
            Sample(_arrays("lin2", (3, 4), (5, 4), (5,)), label="(3,4)-bias"),
            Sample(_arrays("lin3", (2, 3, 4), (5, 4), (5,)), label="(2,3,4)-bias"),
            Sample(_arrays("lin4", (2, 1, 3, 4), (2, 4)), label="(2,1,3,4)-no-bias"),
            Sample(_arrays("lin1", (4,), (3, 4), (3,)), label="(4,)-vector-input"),
            Sample(_arrays("linv", (3, 4), (4,)), label="1-D-weight"),  # the composite's case
            Sample((*_arrays("linb", (3, 4), (5, 4)), uniform((3, 5), seed="linbb")), label="broadcast-bias"),
            # sharded levels split the largest dim: rows and outputs (8, 4), a middle leading dim (6)
            Sample(_arrays("linr", (6, 4), (8, 4), (8,)), label="(6,4)x(8,4)-bias"),
            Sample(_arrays("linm", (2, 6, 4), (3, 4), (3,)), label="(2,6,4)x(3,4)-bias"),
        ],
        family=FAMILY,
        covers=("linear",),
        torch_ref=lambda torch, x, w, b=None: torch.nn.functional.linear(x, w, b),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64", "float16"),
    ),
    OpSpec(
        name="dot",
        fn=nb.dot,
        ref=lambda x, y: np.asarray(np.dot(x, y)),
        samples=[
            Sample(_arrays("dot", (5,), (5,)), label="(5,)"),
            Sample(_arrays("dot1", (1,), (1,)), label="(1,)"),
            Sample(
                (np.array([1, -2, 3], np.int64), np.array([4, 5, -6], np.int64)), label="int", grad=False, max=False
            ),
        ],
        family=FAMILY,
        covers=("matmul",),
        torch_ref=lambda torch, x, y: torch.dot(x, y),
        atol=1e-5,
    ),
    OpSpec(
        name="outer",
        fn=nb.outer,
        ref=np.outer,
        samples=[
            Sample(_arrays("outer", (3,), (4,)), label="(3,)x(4,)"),
            Sample(_arrays("outer1", (1,), (5,)), label="(1,)x(5,)"),
            Sample((np.array([1, -2], np.int64), np.array([3, 4, 5], np.int64)), label="int", grad=False),
        ],
        family=FAMILY,
        covers=("mul",),
        aliases=("ger",),
        torch_ref=lambda torch, x, y: torch.outer(x, y),
    ),
    OpSpec(
        name="tensordot",
        fn=nb.tensordot,
        ref=lambda x, y, dims=2: np.tensordot(x, y, axes=dims),
        samples=[
            Sample(_arrays("td2", (2, 3, 4), (3, 4, 5)), label="dims=2"),
            Sample(_arrays("td1", (2, 3), (3, 4)), {"dims": 1}, label="dims=1"),
            Sample(_arrays("td0", (2,), (3,)), {"dims": 0}, label="dims=0"),
            Sample(_arrays("tdl", (3, 2, 4), (2, 3, 5)), {"dims": ([1, 0], [0, 1])}, label="dims-lists"),
            Sample(_arrays("tdn", (4, 3), (3, 4)), {"dims": ([-1], [0])}, label="dims-negative"),
        ],
        family=FAMILY,
        covers=("matmul",),
        torch_ref=lambda torch, x, y, dims=2: torch.tensordot(x, y, dims=dims),
        rtol=1e-5,
        atol=1e-5,
    ),
    OpSpec(
        name="einsum",
        fn=nb.einsum,
        ref=_einsum_ref,
        samples=_einsum_samples(),
        family=FAMILY,
        covers=("matmul",),
        torch_ref=lambda torch, eq, *xs: torch.einsum(eq, *xs),
        rtol=1e-5,
        atol=1e-5,
    ),
    OpSpec(
        name="cross",
        fn=nb.cross,
        ref=_np_cross,
        samples=CROSS_SAMPLES,
        family=FAMILY,
        covers=("mul", "sub", "concatenate", "pad", "broadcast_to"),
        torch_ref=_torch_cross,
        dtypes=("float64",),
    ),
    OpSpec(
        name="kron",
        fn=nb.kron,
        ref=np.kron,
        samples=KRON_SAMPLES,
        family=FAMILY,
        covers=("mul", "reshape"),
        torch_ref=lambda torch, x, y: torch.kron(x, y),
        dtypes=("float64",),
    ),
    OpSpec(
        name="matrix_exp",
        fn=nb.matrix_exp,
        ref=lambda a, max_squarings=16: _np_expm(a),
        samples=_off_max(MATRIX_EXP_SAMPLES),
        family=FAMILY,
        covers=("matmul", "mul", "add", "where", "prod", "greater", "abs", "sum", "max", "eye"),
        torch_ref=lambda torch, a, max_squarings=16: torch.linalg.matrix_exp(a),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="householder_product",
        fn=nb.householder_product,
        ref=_np_householder_product,
        samples=_off_max(HOUSEHOLDER_SAMPLES),
        family=FAMILY,
        covers=_HOUSEHOLDER_COVERS,
        torch_ref=lambda torch, a, tau: torch.linalg.householder_product(a, tau),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="geqrf",
        fn=nb.geqrf,
        ref=_np_geqrf,
        samples=_off_max(GEQRF_SAMPLES),
        family=FAMILY,
        covers=_GEQRF_COVERS,
        torch_ref=lambda torch, a: tuple(torch.geqrf(a)),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="qr",
        fn=nb.qr,
        ref=_np_qr,
        samples=_off_max(QR_SAMPLES),
        family=FAMILY,
        covers=tuple(dict.fromkeys(_GEQRF_COVERS + _HOUSEHOLDER_COVERS + ("triu",))),
        torch_ref=lambda torch, a, mode="reduced": tuple(torch.linalg.qr(a, mode=mode)),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="solve",
        fn=nb.solve,
        ref=_np_solve,
        samples=_off_max(SOLVE_SAMPLES),
        family=FAMILY,
        covers=_SOLVE_COVERS,
        torch_ref=lambda torch, a, b, left=True: torch.linalg.solve(a, b, left=left),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
    OpSpec(
        name="inv",
        fn=nb.inv,
        ref=lambda a: np.linalg.inv(a.astype(np.float64)).astype(a.dtype),
        samples=_off_max(INV_SAMPLES),
        family=FAMILY,
        covers=(*_SOLVE_COVERS, "eye"),
        torch_ref=lambda torch, a: torch.linalg.inv(a),
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64",),
    ),
]


# -- torch's BLAS-style products and determinants: composites, kept out of the MAX groups ---------
def _blas(name: str, ref, samples: list[Sample], torch_ref, covers=("matmul", "mul", "add"), fn=None, **kw) -> OpSpec:
    return OpSpec(
        name=name,
        fn=fn or getattr(nb, name),
        ref=ref,
        samples=_off_max(samples),
        family=FAMILY,
        covers=covers,
        torch_ref=torch_ref,
        **kw,
    )


def _scaled(product, beta=1, alpha=1):
    def ref(inp, *xs, beta=beta, alpha=alpha):
        out = alpha * product(*[x.astype(np.float64) for x in xs])
        return (out if beta == 0 else beta * inp.astype(np.float64) + out).astype(inp.dtype)

    return ref


def _np_slogdet(a):
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    return sign.astype(a.dtype), logabs.astype(a.dtype)


def _np_logdet(a):
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    with np.errstate(invalid="ignore"):
        return np.where(sign < 0, np.nan, logabs).astype(a.dtype)


_DET_COVERS = ("argmax", "abs", "equal", "where", "sum", "div", "mul", "sub", "prod", "slice", "stack")
_DET_SAMPLES = [
    Sample((uniform((3, 3), seed="det1"),), label="(3,3)"),
    Sample((uniform((2, 4, 4), seed="det2"),), label="batched"),
    Sample((_PIVOT,), label="pivoting"),
    Sample((np.array([[2.0]]),), label="(1,1)"),
    Sample((np.array([[1.0, 2.0], [2.0, 4.0]]),), label="singular", grad=False),
    Sample((np.zeros((0, 0)),), label="(0,0)", grad=False),
]
SPECS += [
    _blas(
        "addmm",
        _scaled(np.matmul),
        [
            Sample(_arrays("addmm", (3, 5), (3, 4), (4, 5)), label="(3,5)"),
            Sample(_arrays("addmm-b", (5,), (3, 4), (4, 5)), {"beta": 0.5, "alpha": 2.0}, label="broadcast"),
            Sample(
                (np.full((3, 5), np.nan), *_arrays("addmm-0", (3, 4), (4, 5))), {"beta": 0}, label="beta=0", grad=False
            ),
        ],
        lambda torch, i, a, b, **kw: torch.addmm(i, a, b, **kw),
    ),
    _blas(
        "addmv",
        _scaled(np.matmul),
        [Sample(_arrays("addmv", (3,), (3, 4), (4,)), {"beta": 2.0, "alpha": -1.0}, label="(3,)")],
        lambda torch, i, a, b, **kw: torch.addmv(i, a, b, **kw),
    ),
    _blas(
        "addr",
        _scaled(np.outer),
        [Sample(_arrays("addr", (3, 4), (3,), (4,)), {"alpha": 0.5}, label="(3,4)")],
        lambda torch, i, a, b, **kw: torch.addr(i, a, b, **kw),
    ),
    _blas(
        "baddbmm",
        _scaled(np.matmul),
        [Sample(_arrays("baddbmm", (2, 3, 5), (2, 3, 4), (2, 4, 5)), {"beta": 0.5}, label="(2,3,5)")],
        lambda torch, i, a, b, **kw: torch.baddbmm(i, a, b, **kw),
    ),
    _blas(
        "addbmm",
        _scaled(lambda a, b: np.matmul(a, b).sum(0)),
        [Sample(_arrays("addbmm", (3, 5), (2, 3, 4), (2, 4, 5)), {"alpha": 2.0}, label="(3,5)")],
        lambda torch, i, a, b, **kw: torch.addbmm(i, a, b, **kw),
        covers=("matmul", "mul", "add", "sum"),
    ),
    _blas(
        "mv",
        lambda a, v: np.matmul(a, v),
        [Sample(_arrays("mv", (3, 4), (4,)), label="(3,4)")],
        lambda torch, a, v: torch.mv(a, v),
        covers=("matmul",),
    ),
    _blas(
        "inner",
        np.inner,
        [
            Sample(_arrays("inner", (2, 3), (4, 3)), label="(2,3)x(4,3)"),
            Sample(_arrays("inner1", (3,), (3,)), label="vectors"),
            Sample((np.array(2.0), uniform((2, 3), seed="inner-s")), label="scalar"),
        ],
        lambda torch, a, b: torch.inner(a, b),
        covers=("matmul", "mul", "permute", "reshape"),
    ),
    _blas(
        "vdot",
        lambda a, b: np.asarray(np.vdot(a, b)),
        [Sample(_arrays("vdot", (5,), (5,)), label="(5,)")],
        lambda torch, a, b: torch.vdot(a, b),
        covers=("matmul",),
    ),
    _blas(
        "det",
        lambda a: np.asarray(np.linalg.det(a.astype(np.float64))).astype(a.dtype),
        list(_DET_SAMPLES),
        lambda torch, a: torch.linalg.det(a),
        covers=_DET_COVERS,
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "slogdet",
        _np_slogdet,
        [s for s in _DET_SAMPLES if s.label != "(0,0)"],
        lambda torch, a: tuple(torch.linalg.slogdet(a)),
        covers=(*_DET_COVERS, "sign", "log"),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "logdet",
        _np_logdet,
        [
            Sample((_dominant("logdet", (3, 3)),), label="positive"),
            Sample((_dominant("logdet2", (2, 4, 4)),), label="batched"),
            Sample((uniform((3, 4, 4), seed="logdet3"),), label="signs", grad=False),  # nan where det < 0
        ],
        lambda torch, a: torch.logdet(a),
        covers=(*_DET_COVERS, "sign", "log", "less"),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "matrix_power",
        lambda a, n: np.linalg.matrix_power(a.astype(np.float64), n).astype(a.dtype),
        [
            Sample((uniform((3, 3), seed="mp"), 5), label="n=5"),
            Sample((uniform((2, 3, 3), seed="mp0"), 0), label="n=0", grad=False),
            Sample((_dominant("mpn", (3, 3)), -2), label="n=-2"),
        ],
        lambda torch, a, n: torch.linalg.matrix_power(a, n),
        covers=("matmul", "eye", *_SOLVE_COVERS),
        dtypes=("float64",),
        atol=1e-5,
    ),
]


def _spd(seed: str, shape: tuple) -> np.ndarray:
    m = uniform(shape, seed=seed)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _np_solve_triangular(a, b, upper, left=True, unitriangular=False):
    a64 = np.triu(a.astype(np.float64)) if upper else np.tril(a.astype(np.float64))
    if unitriangular:
        a64 = a64 - np.eye(a.shape[-1]) * np.diagonal(a64, axis1=-2, axis2=-1)[..., None, :] + np.eye(a.shape[-1])
    if left:
        return np.linalg.solve(a64, b.astype(np.float64)).astype(a.dtype)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a64, -1, -2), np.swapaxes(b, -1, -2)), -1, -2).astype(a.dtype)


def _np_cholesky_solve(b, factor, upper=False):
    lower = np.swapaxes(factor, -1, -2) if upper else factor
    a = lower.astype(np.float64) @ np.swapaxes(lower.astype(np.float64), -1, -2)
    return np.linalg.solve(a, b.astype(np.float64)).astype(b.dtype)


_CHOL_COVERS = ("matmul", "sqrt", "div", "sub", "where", "tril", "slice", "permute")
_L = np.linalg.cholesky(_spd("cs", (3, 3)))
SPECS += [
    _blas(
        "cholesky",
        lambda a, upper=False: (
            np.swapaxes(np.linalg.cholesky(a.astype(np.float64)), -1, -2)
            if upper
            else np.linalg.cholesky(a.astype(np.float64))
        ).astype(a.dtype),
        [
            Sample((_spd("ch", (3, 3)),), label="(3,3)"),
            Sample((_spd("ch2", (2, 4, 4)),), label="batched"),
            Sample((_spd("ch3", (3, 3)),), {"upper": True}, label="upper"),
        ],
        lambda torch, a, upper=False: torch.linalg.cholesky(a, upper=upper),
        covers=_CHOL_COVERS,
        # A's symmetric part in: cholesky reads one triangle, and its gradient is torch's symmetric
        # one, which is the derivative along symmetric perturbations only
        fn=lambda a, upper=False: nb.cholesky(nb.mul(nb.add(a, nb.transpose(a, -1, -2)), 0.5), upper=upper),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "solve_triangular",
        _np_solve_triangular,
        [
            Sample((_dominant("st", (3, 3)), uniform((3, 2), seed="stb")), {"upper": True}, label="upper"),
            Sample((_dominant("st2", (2, 3, 3)), uniform((2, 3, 2), seed="st2b")), {"upper": False}, label="lower"),
            Sample(
                (_dominant("st3", (3, 3)), uniform((2, 3), seed="st3b")), {"upper": True, "left": False}, label="right"
            ),
            Sample(
                (_dominant("st4", (3, 3)), uniform((3, 1), seed="st4b")),
                {"upper": False, "unitriangular": True},
                label="unit",
            ),
        ],
        lambda torch, a, b, **kw: torch.linalg.solve_triangular(a, b, **kw),
        covers=("matmul", "div", "sub", "where", "tril", "triu", "slice"),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "cholesky_solve",
        _np_cholesky_solve,
        [
            Sample((uniform((3, 2), seed="csb"), _L), label="lower"),
            Sample((uniform((3, 2), seed="csb2"), np.swapaxes(_L, -1, -2).copy()), {"upper": True}, label="upper"),
        ],
        lambda torch, b, f, upper=False: torch.cholesky_solve(b, f, upper=upper),
        covers=("matmul", "div", "sub", "where", "tril", "triu", "slice", "permute"),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "cholesky_inverse",
        lambda f, upper=False: np.linalg.inv(
            (np.swapaxes(f, -1, -2) @ f) if upper else (f @ np.swapaxes(f, -1, -2))
        ).astype(f.dtype),
        [Sample((_L,), label="lower"), Sample((np.swapaxes(_L, -1, -2).copy(),), {"upper": True}, label="upper")],
        lambda torch, f, upper=False: torch.cholesky_inverse(f, upper=upper),
        covers=("matmul", "div", "sub", "where", "tril", "triu", "slice", "permute", "eye"),
        dtypes=("float64",),
        atol=1e-5,
    ),
]


def _np_multi_dot(*xs):
    return np.linalg.multi_dot([x.astype(np.float64) for x in xs]).astype(xs[0].dtype)


SPECS += [
    _blas(
        "vecdot",
        lambda x, y, dim=-1: np.sum(x * y, axis=dim),
        [
            Sample(_arrays("vecdot", (3, 4), (4,)), label="broadcast"),
            Sample(_arrays("vecdot2", (3, 4), (3, 1)), {"dim": 0}, label="dim=0"),
        ],
        lambda torch, x, y, dim=-1: torch.linalg.vecdot(x, y, dim=dim),
        covers=("mul", "sum"),
    ),
    _blas(
        "multi_dot",
        _np_multi_dot,
        [
            Sample(_arrays("md", (5,), (5, 3), (3, 7), (7, 2), (2,)), label="vector-ends"),
            Sample(_arrays("md2", (4, 5), (5, 3), (3, 7)), label="matrices"),
        ],
        lambda torch, *xs: torch.linalg.multi_dot(list(xs)),
        covers=("matmul", "reshape"),
        fn=lambda *xs: nb.multi_dot(list(xs)),
        atol=1e-5,
    ),
    _blas(
        "vander",
        lambda x, N=None: (
            np.vander(x, N, increasing=True) if x.ndim == 1 else np.stack([np.vander(r, N, increasing=True) for r in x])
        ).astype(x.dtype),
        [
            Sample((uniform((4,), seed="vander"),), label="(4,)"),
            Sample((uniform((2, 3), seed="vander2"), 5), label="N=5"),
        ],
        lambda torch, x, N=None: torch.linalg.vander(x, N=N),
        covers=("pow", "reshape"),
        fn=lambda x, N=None: nb.linalg.vander(x, N),  # (nabla.vander is torch.vander's decreasing form)
    ),
]


def _np_lu(a):
    """LAPACK-style LU with partial pivoting in float64: (LU, 1-based pivots)."""
    lu = a.astype(np.float64).copy()
    m, n = lu.shape[-2:]
    piv = np.zeros(lu.shape[:-2] + (min(m, n),), np.int32)
    for idx in np.ndindex(*lu.shape[:-2]):
        w = lu[idx]
        for j in range(min(m, n)):
            p = j + int(np.argmax(np.abs(w[j:, j])))
            piv[idx + (j,)] = p + 1
            w[[j, p]] = w[[p, j]]
            if w[j, j] != 0:
                w[j + 1 :, j] /= w[j, j]
                w[j + 1 :, j + 1 :] -= np.outer(w[j + 1 :, j], w[j, j + 1 :])
    return lu.astype(a.dtype), piv


def _np_unpack(lu, piv):
    """(P, L, U) with A = P L U from compact LU factors and 1-based pivots (batched)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    perm = np.broadcast_to(np.arange(m), lu.shape[:-2] + (m,)).copy()
    for idx in np.ndindex(*lu.shape[:-2]):
        for j in range(k):
            p = piv[idx + (j,)] - 1
            perm[idx + (j,)], perm[idx + (p,)] = perm[idx + (p,)], perm[idx + (j,)]
    p_mat = np.swapaxes(np.eye(m, dtype=lu.dtype)[perm], -1, -2)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    return p_mat, lower, np.triu(lu[..., :k, :])


def _np_lu_solve(lu, piv, b, left=True, adjoint=False):
    p, lower, upper = _np_unpack(lu, piv)
    a = (p @ lower @ upper).astype(np.float64)
    a = a.T if adjoint else a
    if left:
        return np.linalg.solve(a, b.astype(np.float64)).astype(b.dtype)
    return np.linalg.solve(a.T, b.T.astype(np.float64)).T.astype(b.dtype)


_LU_COVERS = ("argmax", "abs", "equal", "where", "sum", "div", "mul", "sub", "slice", "stack", "tril", "triu", "cast")
_LU_SAMPLES = [
    Sample((uniform((3, 3), seed="lu1"),), label="(3,3)"),
    Sample((uniform((2, 4, 4), seed="lu2"),), label="batched"),
    Sample((uniform((4, 3), seed="lu3"),), label="tall"),
    Sample((uniform((3, 5), seed="lu4"),), label="wide"),
]
_LU_A = uniform((3, 3), seed="lus")
SPECS += [
    _blas(
        "lu_factor",
        _np_lu,
        list(_LU_SAMPLES),
        lambda torch, a: tuple(torch.linalg.lu_factor(a)),
        covers=_LU_COVERS,
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "lu",
        lambda a: _np_unpack(*_np_lu(a)),
        [replace(s) for s in _LU_SAMPLES],
        lambda torch, a: tuple(torch.linalg.lu(a)),
        covers=(*_LU_COVERS, "eye", "add"),
        dtypes=("float64",),
        atol=1e-5,
    ),
    _blas(
        "lu_unpack",
        _np_unpack,
        [Sample(_np_lu(_LU_A), label="(3,3)", grad=False)],
        lambda torch, lu, piv: tuple(torch.lu_unpack(lu, piv)),
        covers=("tril", "triu", "eye", "add", "where", "sum", "equal", "cast"),
    ),
    _blas(
        "lu_solve",
        _np_lu_solve,
        [
            Sample((*_np_lu(_LU_A), uniform((3, 2), seed="lusb")), label="left", grad=False),
            Sample((*_np_lu(_LU_A), uniform((3, 2), seed="lusb2")), {"adjoint": True}, label="adjoint", grad=False),
            Sample((*_np_lu(_LU_A), uniform((2, 3), seed="lusb3")), {"left": False}, label="right", grad=False),
        ],
        lambda torch, lu, piv, b, **kw: torch.linalg.lu_solve(lu, piv, b, **kw),
        covers=("matmul", "div", "sub", "where", "tril", "triu", "slice", "permute", "equal", "cast"),
        atol=1e-5,
    ),
]


# torch.linalg's vector and matrix norms: composites of norm / sum / max, off the MAX groups
def _np_matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False):
    return np.asarray(np.linalg.norm(x.astype(np.float64), ord, tuple(dim), keepdim)).astype(x.dtype)


def _np_vector_norm(x, ord=2, dim=None, keepdim=False):
    x64 = np.abs(x.astype(np.float64))
    axes = None if dim is None else dim
    if ord == 0:
        out = np.sum(x64 != 0, axis=axes, keepdims=keepdim).astype(np.float64)
    elif np.isinf(ord):
        out = (np.max if ord > 0 else np.min)(x64, axis=axes, keepdims=keepdim)
    else:
        out = np.sum(x64**ord, axis=axes, keepdims=keepdim) ** (1 / ord)
    return np.asarray(out).astype(x.dtype)


_MAT = uniform((2, 3, 4), seed="matrix_norm")
SPECS += [
    OpSpec(
        name="vector_norm",
        fn=nb.vector_norm,
        ref=_np_vector_norm,
        samples=[
            replace(s, max=False)
            for s in [
                Sample((_MAT,), label="all"),
                Sample((_MAT, 1, (0, 2), True), label="ord=1 dims"),
                Sample((_MAT, 3.5, -1), label="ord=3.5"),
                Sample((_MAT, float("inf"), 1), label="inf", grad=False),
            ]
        ],
        family=FAMILY,
        covers=("mul", "sum", "sqrt", "abs", "max", "pow"),
        torch_ref=lambda torch, x, *a: torch.linalg.vector_norm(x, *a),
    ),
    OpSpec(
        name="matrix_norm",
        fn=nb.matrix_norm,
        ref=_np_matrix_norm,
        samples=[
            replace(s, max=False)
            for s in [
                Sample((_MAT,), label="fro"),
                Sample((_MAT, 1), label="ord=1", grad=False),  # max: ties have no unique gradient
                Sample((_MAT, -1, (0, 2), True), label="ord=-1 dims", grad=False),
                Sample((_MAT, float("inf")), label="inf", grad=False),
                Sample((uniform((3, 3), seed="mn2"), -float("inf")), label="-inf", grad=False),
            ]
        ],
        family=FAMILY,
        covers=("mul", "sum", "sqrt", "abs", "max", "min", "squeeze"),
        torch_ref=lambda torch, x, *a: torch.linalg.matrix_norm(x, *a),
    ),
]
