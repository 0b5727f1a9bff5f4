"""Registry entries for the Bessel functions of nabla.ops.special_bessel that torch.special has
beside i0/i1 (bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
spherical_bessel_j0) and the Airy function airy_ai; i0, i0e, i1 and i1e are in special.py's
entries.

References are mpmath's, per element in float64, with PyTorch's values off the domain (nan
where Cephes' asymptotic forms meet inf); PyTorch's functions are the second oracle.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform
from .special import INF, NAN, SHAPES, _edge, _elementwise, _ints, _torch

FAMILY = "special_bessel"


def _first_kind(n: int):
    def fn(v: float) -> float:
        return NAN if math.isnan(v) or math.isinf(v) else float(mpmath.besselj(n, v))

    return fn


def _second_kind(n: int):
    def fn(v: float) -> float:
        if math.isnan(v) or v < 0 or v == INF:
            return NAN
        return -INF if v == 0 else float(mpmath.bessely(n, v))

    return fn


def _modified_second_kind(n: int, scaled: bool):
    def fn(v: float) -> float:
        if math.isnan(v) or v < 0:
            return NAN
        if v == 0 or v == INF:
            return INF if v == 0 else 0.0
        out = mpmath.besselk(n, v)
        return float(out * mpmath.exp(v) if scaled else out)

    return fn


def _modified_first_kind(n: int):
    def fn(v: float) -> float:
        return NAN if math.isnan(v) or math.isinf(v) else float(mpmath.besseli(n, v))

    return fn


def _spherical(v: float) -> float:
    if math.isnan(v) or math.isinf(v):
        return NAN if math.isnan(v) else 0.0
    return 1.0 if v == 0 else math.sin(v) / v


def _airy(v: float) -> float:
    if math.isnan(v) or math.isinf(v):
        return NAN  # (PyTorch's at +-inf)
    return 0.0 if v > 103.892 else float(mpmath.airyai(v))


def _samples(name: str, low: float, high: float, *extra: Sample) -> list[Sample]:
    samples = [Sample((uniform(s, low, high, seed=name),), label=str(s)) for s in SHAPES]
    return samples + list(extra) + [_ints()]


def _spec(name: str, ref, low: float, high: float, *extra: Sample, **kwargs) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=_elementwise(ref),
        samples=_samples(name, low, high, *extra),
        family=FAMILY,
        torch_ref=_torch(name),
        **({"dtypes": ("float64",)} | kwargs),
    )


# Cephes' J, Y and Ai (PyTorch's, to the last bit) are good to about 1e-8 relative in float64
# near their zeros: the float64 check (1e-9) is left to the other functions.
_FLOAT32_ONLY = {"dtypes": ()}
_NEAR_ZERO = Sample((np.array([0.0, -0.3, 0.4, 1e-6]),), label="near-zero")
_POSITIVE_EDGES = _edge(0.0, -0.0, -1.0, 1e-6, 1.99, 2.0, 2.01, 4.99, 5.0, 5.01, 60.0, INF, -INF, NAN)

SPECS = [
    _spec(
        "bessel_j0",
        _first_kind(0),
        -20.0,
        20.0,
        _NEAR_ZERO,
        _edge(0.0, -0.0, 1e-6, 4.99, 5.0, -5.01, 60.0, INF, NAN),
        **_FLOAT32_ONLY,
    ),
    _spec(
        "bessel_j1",
        _first_kind(1),
        -20.0,
        20.0,
        _NEAR_ZERO,
        _edge(0.0, -0.0, 1e-6, -4.99, 5.0, 5.01, -60.0, INF, NAN),
        **_FLOAT32_ONLY,
    ),
    _spec("bessel_y0", _second_kind(0), 0.1, 20.0, _POSITIVE_EDGES, **_FLOAT32_ONLY),
    _spec("bessel_y1", _second_kind(1), 0.1, 20.0, _POSITIVE_EDGES, atol=2e-6, **_FLOAT32_ONLY),
    _spec("modified_bessel_k0", _modified_second_kind(0, False), 0.05, 15.0, _POSITIVE_EDGES),
    _spec("modified_bessel_k1", _modified_second_kind(1, False), 0.05, 15.0, _POSITIVE_EDGES),
    _spec("scaled_modified_bessel_k0", _modified_second_kind(0, True), 0.05, 30.0, _POSITIVE_EDGES),
    _spec("scaled_modified_bessel_k1", _modified_second_kind(1, True), 0.05, 30.0, _POSITIVE_EDGES),
    _spec(
        "spherical_bessel_j0", _spherical, -20.0, 20.0, _NEAR_ZERO, _edge(0.0, -0.0, 0.49, 0.5, -0.51, INF, -INF, NAN)
    ),
    # no derivative, as in PyTorch; Cephes' float32 phase past -10 is good to about 1e-5 absolute
    _spec(
        "airy_ai",
        _airy,
        -8.0,
        8.0,
        _edge(-2.09, -2.0899, 2.0899, 2.09, -25.3, 8.3, 8.33, 104.0, 0.0, INF, -INF, NAN),
        differentiable=False,
        atol=1e-5,
        **_FLOAT32_ONLY,
    ),
    # the same functions as i0 and i1 (whose entries check them on MAX)
    _spec("modified_bessel_i0", _modified_first_kind(0), -20.0, 20.0, covers=("i0e", "exp", "abs", "mul")),
    _spec("modified_bessel_i1", _modified_first_kind(1), -20.0, 20.0, _NEAR_ZERO, covers=("i1e", "exp", "abs", "mul")),
]
