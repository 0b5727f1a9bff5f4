"""Helpers of the registry's vmap level (tests/test_vmap_registry.py, test_conformance_max.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample

B = 3
SCALES = (1.0, 0.75, 0.5)


def mappable(sample: Sample) -> list[int]:
    """Positions of the array arguments the vmap level maps."""
    if not sample.vmap:
        return []
    return [
        i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and (sample.vmap_ints or a.dtype.kind == "f")
    ]


def variants(a: np.ndarray) -> list[np.ndarray]:
    if a.dtype.kind == "f":
        return [np.asarray(a * s, dtype=a.dtype) for s in SCALES]
    if a.dtype.kind in "iu" and a.size > 1:  # same values (still valid indices), other places
        return [np.roll(a.ravel(), b).reshape(a.shape) for b in range(len(SCALES))]
    return [a.copy() for _ in SCALES]


def weighted_sum(spec: OpSpec, kwargs: dict, diff: tuple, args: tuple) -> Callable:
    """A scalar function of the differentiable arguments: sum of outputs times fixed weights."""

    def f(*dargs):
        full = list(args)
        for i, a in zip(diff, dargs, strict=True):
            full[i] = a
        total = 0.0
        for k, o in enumerate(nb.tree_leaves(spec.fn(*full, **kwargs))):
            if o.dtype in (nb.float32, nb.float64):
                w = np.cos(np.arange(int(np.prod(o.shape))) + k).reshape(o.shape).astype(np.float32)
                total = total + (o * nb.asarray(w)).sum()
        return total

    return f
