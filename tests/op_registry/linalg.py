"""Registry entries for nabla.ops.linalg: matmul, linear, dot, outer, tensordot, einsum, cross, kron."""

from __future__ import annotations

import warnings

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
]
