"""Registry entries for nabla.ops.linalg_host: eigh / eigvalsh, svd / svdvals (LAPACK on the
host) and what builds on them (pinv, pinverse, matrix_rank, cond, lstsq).

The references are NumPy's LAPACK calls, so the eigenvector and singular-vector signs agree
exactly (torch's LAPACK may choose other signs: tests/test_linalg_host.py compares with it up
to sign). eigh reads only the lower triangle, and its derivative (torch's) is that of a
symmetric argument, so its entries symmetrize their input first: finite differences then see
the same function. None of the samples join the MAX graphs: the decompositions run on the host.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "linalg"


def _sym_nb(a):
    return (a + nb.transpose(a, -1, -2)) * 0.5


def _sym_np(a):
    return (a + np.swapaxes(a, -1, -2)) * 0.5


def _host(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


def _square_samples(seed: str) -> list[Sample]:
    return _host(
        [
            Sample((uniform((4, 4), seed=seed),), label="4x4"),
            Sample((uniform((2, 3, 3), seed=seed + "b"),), label="batch"),
        ]
    )


def _matrix_samples(seed: str) -> list[Sample]:
    return _host(
        [
            Sample((uniform((5, 3), seed=seed),), label="tall"),
            Sample((uniform((3, 5), seed=seed + "w"),), label="wide"),
            Sample((uniform((2, 4, 4), seed=seed + "b"),), label="batch"),
        ]
    )


def _np_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u, s, vh


def _np_rank(a):
    s = np.linalg.svd(a, compute_uv=False)
    tol = s.max(-1, keepdims=True) * np.finfo(np.float32).eps * max(a.shape[-2:])
    return (s > tol).sum(-1).astype(np.int64)


def _np_cond(a, p=None):
    if p in (None, 2, -2):
        s = np.linalg.svd(a, compute_uv=False)
        return (s.min(-1) / s.max(-1) if p == -2 else s.max(-1) / s.min(-1)).astype(a.dtype)
    return np.linalg.cond(a, p).astype(a.dtype)


def _rank_deficient() -> np.ndarray:
    a = uniform((4, 2), seed="rd") @ uniform((2, 5), seed="rd2")  # rank 2
    return a


SPECS = [
    OpSpec(
        name="eigh",
        fn=lambda a: tuple(nb.linalg.eigh(_sym_nb(a))),
        ref=lambda a: tuple(np.linalg.eigh(_sym_np(a))),
        samples=_square_samples("eigh"),
        family=FAMILY,
        covers=("eigh",),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="eigvalsh",
        fn=lambda a: nb.linalg.eigvalsh(_sym_nb(a)),
        ref=lambda a: np.linalg.eigvalsh(_sym_np(a)),
        samples=_square_samples("eigvalsh"),
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a: torch.linalg.eigvalsh((a + a.mT) * 0.5),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="linalg_svd",
        fn=lambda a: tuple(nb.linalg.svd(a, full_matrices=False)),
        ref=_np_svd,
        samples=_matrix_samples("svd"),
        family=FAMILY,
        covers=("svd",),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="svd",
        fn=lambda a: tuple(nb.svd(a)),
        ref=lambda a: (lambda u, s, vh: (u, s, np.swapaxes(vh, -1, -2)))(*_np_svd(a)),
        samples=_matrix_samples("tsvd")[:2],
        family=FAMILY,
        covers=(),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="svdvals",
        fn=nb.linalg.svdvals,
        ref=lambda a: np.linalg.svd(a, compute_uv=False),
        samples=_matrix_samples("svdvals"),
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a: torch.linalg.svdvals(a),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="pinv",
        fn=nb.linalg.pinv,
        ref=lambda a: np.linalg.pinv(a, rcond=np.finfo(np.float32).eps * max(a.shape[-2:])).astype(a.dtype),
        samples=[*_matrix_samples("pinv"), Sample((_rank_deficient(),), label="rank-2", grad=False, max=False)],
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a: torch.linalg.pinv(a),
        rtol=1e-4,
        atol=1e-4,
    ),
    OpSpec(
        name="pinverse",
        fn=nb.pinverse,
        ref=lambda a: np.linalg.pinv(a, rcond=1e-15).astype(a.dtype),
        samples=_matrix_samples("pinverse")[:1],
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a: torch.pinverse(a),
        rtol=1e-4,
        atol=1e-4,
    ),
    OpSpec(
        name="matrix_rank",
        fn=nb.linalg.matrix_rank,
        ref=_np_rank,
        samples=[*_matrix_samples("rank"), Sample((_rank_deficient(),), label="rank-2", grad=False, max=False)],
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a: torch.linalg.matrix_rank(a),
        differentiable=False,
    ),
    OpSpec(
        name="linalg_cond",
        fn=nb.linalg.cond,
        ref=_np_cond,
        samples=[
            *_square_samples("cond"),
            *[
                Sample((uniform((3, 3), seed="condp"), p), label=f"p={p}", max=False)
                for p in (-2, 2, "fro", "nuc", 1, -1, np.inf, -np.inf)
            ],
        ],
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a, p=None: torch.linalg.cond(a, p),
        rtol=1e-4,
        atol=1e-5,
    ),
    OpSpec(
        name="lstsq",
        fn=lambda a, b: nb.linalg.lstsq(a, b).solution,
        ref=lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0].astype(a.dtype),
        samples=_host(
            [
                Sample((uniform((5, 3), seed="ls"), uniform((5, 2), seed="lsb")), label="tall"),
                Sample((uniform((3, 5), seed="lsw"), uniform((3, 2), seed="lswb")), label="wide"),
            ]
        ),
        family=FAMILY,
        covers=(),
        torch_ref=lambda torch, a, b: torch.linalg.lstsq(a, b).solution,
        rtol=1e-4,
        atol=1e-4,
    ),
]
