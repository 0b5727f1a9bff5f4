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


def _spec(name: str, fn, ref, samples: list[Sample], *, covers: tuple = (), **kw) -> OpSpec:
    """An entry of this family: composites cover no op of their own; tolerances for float32 LAPACK."""
    return OpSpec(
        name=name, fn=fn, ref=ref, samples=samples, family=FAMILY, covers=covers, **{"rtol": 1e-4, "atol": 1e-5} | kw
    )


SPECS = [
    _spec(
        "eigh",
        lambda a: tuple(nb.linalg.eigh(_sym_nb(a))),
        lambda a: tuple(np.linalg.eigh(_sym_np(a))),
        _square_samples("eigh"),
        covers=("eigh",),
    ),
    _spec(
        "eigvalsh",
        lambda a: nb.linalg.eigvalsh(_sym_nb(a)),
        lambda a: np.linalg.eigvalsh(_sym_np(a)),
        _square_samples("eigvalsh"),
        torch_ref=lambda torch, a: torch.linalg.eigvalsh((a + a.mT) * 0.5),
    ),
    _spec(
        "linalg_svd",
        lambda a: tuple(nb.linalg.svd(a, full_matrices=False)),
        _np_svd,
        _matrix_samples("svd"),
        covers=("svd",),
    ),
    _spec(
        "svd",
        lambda a: tuple(nb.svd(a)),
        lambda a: (lambda u, s, vh: (u, s, np.swapaxes(vh, -1, -2)))(*_np_svd(a)),
        _matrix_samples("tsvd")[:2],
    ),
    _spec(
        "svdvals",
        nb.linalg.svdvals,
        lambda a: np.linalg.svd(a, compute_uv=False),
        _matrix_samples("svdvals"),
        torch_ref=lambda torch, a: torch.linalg.svdvals(a),
    ),
    _spec(
        "pinv",
        nb.linalg.pinv,
        lambda a: np.linalg.pinv(a, rcond=np.finfo(np.float32).eps * max(a.shape[-2:])).astype(a.dtype),
        [*_matrix_samples("pinv"), Sample((_rank_deficient(),), label="rank-2", grad=False, max=False)],
        torch_ref=lambda torch, a: torch.linalg.pinv(a),
        atol=1e-4,
    ),
    _spec(
        "pinverse",
        nb.pinverse,
        lambda a: np.linalg.pinv(a, rcond=1e-15).astype(a.dtype),
        _matrix_samples("pinverse")[:1],
        torch_ref=lambda torch, a: torch.pinverse(a),
        atol=1e-4,
    ),
    _spec(
        "matrix_rank",
        nb.linalg.matrix_rank,
        _np_rank,
        [*_matrix_samples("rank"), Sample((_rank_deficient(),), label="rank-2", grad=False, max=False)],
        torch_ref=lambda torch, a: torch.linalg.matrix_rank(a),
        differentiable=False,
        rtol=1e-5,  # (OpSpec's defaults: an integer result)
        atol=1e-6,
    ),
    _spec(
        "linalg_cond",
        nb.linalg.cond,
        _np_cond,
        [
            *_square_samples("cond"),
            *[
                Sample((uniform((3, 3), seed="condp"), p), label=f"p={p}", max=False)
                for p in (-2, 2, "fro", "nuc", 1, -1, np.inf, -np.inf)
            ],
        ],
        torch_ref=lambda torch, a, p=None: torch.linalg.cond(a, p),
    ),
    _spec(
        "lstsq",
        lambda a, b: nb.linalg.lstsq(a, b).solution,
        lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0].astype(a.dtype),
        _host(
            [
                Sample((uniform((5, 3), seed="ls"), uniform((5, 2), seed="lsb")), label="tall"),
                Sample((uniform((3, 5), seed="lsw"), uniform((3, 2), seed="lswb")), label="wide"),
            ]
        ),
        torch_ref=lambda torch, a, b: torch.linalg.lstsq(a, b).solution,
        atol=1e-4,
    ),
]
