"""Registry entries for nabla.ops.special (the gamma family, the Hurwitz zeta, erfinv, ndtri).

The references are mpmath's arbitrary-precision functions (a test dependency), evaluated per
element in float64 and given PyTorch's float result dtype; PyTorch's own functions are the
second oracle where installed.
"""

from __future__ import annotations

import math
from dataclasses import replace

import mpmath
import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "special"
NAN, INF = float("nan"), float("inf")
SHAPES = [(), (5,), (3, 4), (2, 3, 2), (0, 3)]
INTS = np.array([[1, 2, 3], [7, 4, 5]], np.int64)


def _result(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a float64 value beyond float32's range is inf there too
        return np.asarray(out, np.float64).astype(x.dtype if x.dtype.kind == "f" else np.float32)


def _pole(v: float) -> bool:
    """0, a negative integer or -inf."""
    return v <= 0 and (math.isinf(v) or v == math.floor(v))


def _elementwise(fn):
    """A reference applying `fn` to each element as a Python float (float64)."""

    def ref(x, *args, **kwargs):
        flat = [fn(float(v), *args, **kwargs) for v in np.asarray(x, np.float64).ravel()]
        return _result(x, np.array(flat, np.float64).reshape(np.shape(x)))

    return ref


def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole
        return INF


def _digamma(v: float) -> float:
    if math.isnan(v):
        return NAN
    if v == 0.0:
        return INF if math.copysign(1.0, v) < 0 else -INF
    if v == INF:
        return INF
    if _pole(v):
        return NAN
    return float(mpmath.digamma(v))


def _polygamma(v: float, n: int) -> float:
    if n == 0:
        return _digamma(v)
    if math.isnan(v):
        return NAN
    if _pole(v):
        return INF if n % 2 == 1 else -INF
    return float(mpmath.psi(n, v))


def _zeta(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    def one(s: float, a: float) -> float:
        if math.isnan(s) or math.isnan(a) or s < 1:
            return NAN
        if s == 1 or _pole(a):
            return INF
        if a < 0 and (math.isinf(s) or s != math.floor(s)):
            return NAN
        return float(mpmath.zeta(s, a))

    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    return np.array([one(s, a) for s, a in zip(x.ravel(), q.ravel(), strict=True)]).reshape(x.shape)


def _erfinv(v: float) -> float:
    if math.isnan(v) or abs(v) > 1:
        return NAN
    return math.copysign(INF, v) if abs(v) == 1 else float(mpmath.erfinv(v))


def _ndtri(v: float) -> float:
    if math.isnan(v) or not 0 <= v <= 1:
        return NAN
    if v in (0.0, 1.0):
        return -INF if v == 0 else INF
    with mpmath.workdps(60):
        return float(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(v) - 1))


def _mvlgamma(x: np.ndarray, p: int) -> np.ndarray:
    lg = np.vectorize(_lgamma, otypes=[np.float64])
    x64 = np.asarray(x, np.float64)
    out = sum(lg(x64 - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)
    return _result(x, out)


def _xlog1py(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))
    return out.astype(np.result_type(x, y) if np.result_type(x, y).kind == "f" else np.float32)


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))
    return out.astype(np.result_type(x, y) if np.result_type(x, y).kind == "f" else np.float32)


def _entr(v: float) -> float:
    if math.isnan(v):
        return NAN
    if v < 0:
        return -INF
    return 0.0 if v == 0 else -v * math.log(v)


def _ndtr(v: float) -> float:
    return 0.5 * math.erfc(-v / math.sqrt(2.0))


def _erfcx(v: float) -> float:
    if math.isnan(v) or v == INF:
        return 0.0 if v == INF else NAN
    with mpmath.workdps(40):
        return float(mpmath.exp(mpmath.mpf(v) ** 2) * mpmath.erfc(v))


def _log_ndtr(v: float) -> float:
    if math.isnan(v) or math.isinf(v):
        return v if v < 0 or math.isnan(v) else 0.0
    with mpmath.workdps(400):  # log(1 - tiny) for large v
        return float(mpmath.log(mpmath.ncdf(v)))


def _bessel(n: int, scaled: bool):
    def fn(v: float) -> float:
        if math.isnan(v) or (math.isinf(v) and not scaled):
            return NAN  # PyTorch: e^|x| * i_ne(x) is inf * 0 at +-inf
        if math.isinf(v):
            return 0.0 if n == 0 or v > 0 else -0.0
        out = mpmath.besseli(n, v)
        return float(out * mpmath.exp(-abs(v)) if scaled else out)

    return fn


def _samples(low: float, high: float, seed: str, **kwargs) -> list[Sample]:
    label = "" if not kwargs else " " + ",".join(f"{k}={v}" for k, v in kwargs.items())
    return [Sample((uniform(s, low, high, seed=seed),), dict(kwargs), label=str(s) + label) for s in SHAPES]


def _edge(*values: float, label: str = "edge", **kwargs) -> Sample:
    return Sample((np.array(values, np.float64),), dict(kwargs), label=label, grad=False)


def _ints(label: str = "int64", **kwargs) -> Sample:
    return Sample((INTS.copy(),), dict(kwargs), label=label, grad=False)


def _composite(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


def _torch(name: str):
    return lambda torch, *xs, **kw: getattr(torch.special, name)(*xs, **kw)


# Negative samples kept 0.1 away from the poles (finite differences stay valid).
_NEGATIVE = np.array([-0.5, -1.3, -2.7, -3.5, -4.2, -0.05])

SPECS = [
    OpSpec(
        name="lgamma",
        fn=nb.lgamma,
        ref=_elementwise(_lgamma),
        samples=_samples(0.1, 6.0, "lgamma")
        + [
            Sample((_NEGATIVE,), label="negative"),
            Sample((np.array([0.9, 0.99, 1.01, 1.5, 1.99, 2.01, 2.49, 2.51]),), label="roots"),
            _edge(0.0, -0.0, -1.0, -2.0, 1e-30, 1.0, 2.0, 1e30, INF, -INF, NAN, -1e10),
            _ints(),
        ],
        family=FAMILY,
        torch_ref=lambda torch, x: torch.lgamma(x),
        dtypes=("float64", "bfloat16"),
        atol=2e-6,
    ),
    OpSpec(
        name="digamma",
        fn=nb.digamma,
        ref=_elementwise(_digamma),
        samples=_samples(0.2, 12.0, "digamma")
        + [
            Sample((_NEGATIVE,), label="negative"),
            _edge(0.0, -0.0, -1.0, -3.0, 1e-20, 1.4616321449683622, 1e30, INF, -INF, NAN),
            _ints(),
        ],
        family=FAMILY,
        torch_ref=lambda torch, x: torch.digamma(x),
        dtypes=("float64", "bfloat16"),
        atol=2e-6,
    ),
    OpSpec(
        name="zeta",
        fn=nb.zeta,
        ref=lambda x, q: _zeta(x, q).astype(np.result_type(x, q)),
        samples=[
            Sample((uniform(s, 1.5, 6.0, seed="zeta-x"), uniform(s, 0.2, 5.0, seed="zeta-q")), label=str(s))
            for s in SHAPES
        ]
        + [
            Sample((np.array([2.0, 3.0, 4.0, 2.0]), np.array([-2.5, -1.5, -0.5, -5.5])), label="negative-q"),
            Sample((np.array(3.0), uniform((2, 3), 0.5, 4.0, seed="zeta-bcast")), label="broadcast"),
            Sample(
                (
                    np.array([1.0, 0.5, 2.0, 2.0, 2.5, 40.0, 2.0, NAN]),
                    np.array([1.0, 1.0, 0.0, -1.0, -2.5, 1.5, 1e-3, 1.0]),
                ),
                label="edge",
                grad=False,
            ),
        ],
        family=FAMILY,
        diff_args=(1,),
        torch_ref=_torch("zeta"),
        dtypes=("float64",),
    ),
    OpSpec(
        name="erfinv",
        fn=nb.erfinv,
        ref=_elementwise(_erfinv),
        samples=_samples(-0.95, 0.95, "erfinv")
        + [_edge(-1.0, 1.0, 1.5, -2.0, 0.0, -0.0, 0.999999, -0.9999, 1e-30, NAN), _ints()],
        family=FAMILY,
        torch_ref=lambda torch, x: torch.erfinv(x),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="erfc",
        fn=nb.erfc,
        ref=_elementwise(math.erfc),
        samples=_samples(-4.0, 4.0, "erfc")
        + [_edge(-9.0, 9.0, 0.99, 1.01, 7.99, 8.01, 5.5, 26.0, 40.0, INF, -INF, NAN), _ints()],
        family=FAMILY,
        torch_ref=lambda torch, x: torch.erfc(x),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="erfcx",
        fn=nb.erfcx,
        ref=_elementwise(_erfcx),
        samples=_samples(-2.0, 10.0, "erfcx") + [_edge(-30.0, -5.0, 0.99, 1.01, 8.0, 1e3, 1e20, INF, -INF, NAN)],
        family=FAMILY,
        torch_ref=_torch("erfcx"),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="log_ndtr",
        fn=nb.log_ndtr,
        ref=_elementwise(_log_ndtr),
        samples=_samples(-6.0, 4.0, "log_ndtr")
        + [_edge(-40.0, -1.415, -1.414, 0.99, 1.01, 6.0, 12.0, -1e3, INF, -INF, NAN), _ints()],
        family=FAMILY,
        torch_ref=_torch("log_ndtr"),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="i0e",
        fn=nb.i0e,
        ref=_elementwise(_bessel(0, scaled=True)),
        samples=_samples(-20.0, 20.0, "i0e") + [_edge(0.0, 7.99, 8.0, 8.01, 60.0, -800.0, INF, -INF, NAN), _ints()],
        family=FAMILY,
        torch_ref=_torch("i0e"),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="i1e",
        fn=nb.i1e,
        ref=_elementwise(_bessel(1, scaled=True)),
        samples=_samples(-20.0, 20.0, "i1e")
        + [
            Sample((np.array([0.0, -0.3, 0.4]),), label="near-zero"),
            _edge(0.0, -0.0, 7.99, 8.0, 8.01, 60.0, -800.0, INF, -INF, NAN),
            _ints(),
        ],
        family=FAMILY,
        torch_ref=_torch("i1e"),
        dtypes=("float64", "bfloat16"),
    ),
    OpSpec(
        name="ndtri",
        fn=nb.ndtri,
        ref=_elementwise(_ndtri),
        samples=_samples(0.02, 0.98, "ndtri") + [_edge(0.0, 1.0, -0.5, 1.5, 0.5, 1e-30, 1e-10, 0.1, 0.9, 0.999, NAN)],
        family=FAMILY,
        torch_ref=_torch("ndtri"),
        dtypes=("float64", "bfloat16"),
    ),
]

_POLYGAMMA_COVERS = ("digamma", "zeta", "where", "less", "sub", "mul", "floor", "cos", "sin", "div", "add")
SPECS += [
    OpSpec(
        name="polygamma",
        fn=lambda x, n=1: nb.polygamma(n, x),
        ref=lambda x, n=1: _elementwise(_polygamma)(x, n),
        samples=_composite(
            [s for n in (0, 1, 2, 3) for s in _samples(0.2, 6.0, f"polygamma{n}", n=n)[1:3]]
            + [Sample((_NEGATIVE,), {"n": n}, label=f"negative n={n}") for n in (1, 2, 3)]
            + [_edge(-1.0, -2.0, 0.0, 1e-8, 1e30, NAN, label="edge n=2", n=2), _ints(n=1)]
        ),
        family=FAMILY,
        covers=_POLYGAMMA_COVERS,
        torch_ref=lambda torch, x, n=1: torch.polygamma(n, x),
        dtypes=("float64",),
        rtol=2e-5,
        atol=1e-5,  # float32 reflection cancels: psi_2(-3.5) = -0.06 from terms of about 70
    ),
    OpSpec(
        name="mvlgamma",
        fn=nb.mvlgamma,
        ref=_mvlgamma,
        samples=_composite(
            [
                Sample((uniform(s, 2.2, 5.0, seed="mvlgamma"),), {"p": p}, label=f"{s} p={p}")
                for s in SHAPES[:4]
                for p in (1, 3)
            ]
        ),
        family=FAMILY,
        covers=("lgamma", "sub", "add"),
        torch_ref=lambda torch, x, p: torch.mvlgamma(x, p=p),
        dtypes=("float64",),
        atol=2e-6,
    ),
    OpSpec(
        name="i0",
        fn=nb.i0,
        ref=_elementwise(_bessel(0, scaled=False)),
        samples=_composite(_samples(-20.0, 20.0, "i0") + [_edge(0.0, 8.0, 60.0, -80.0, 800.0, INF, NAN), _ints()]),
        family=FAMILY,
        covers=("i0e", "exp", "abs", "mul"),
        torch_ref=lambda torch, x: torch.i0(x),
        dtypes=("float64",),
    ),
    OpSpec(
        name="i1",
        fn=nb.i1,
        ref=_elementwise(_bessel(1, scaled=False)),
        samples=_composite(
            _samples(-20.0, 20.0, "i1")
            + [
                Sample((np.array([0.0, -0.3, 0.4]),), label="near-zero"),
                _edge(0.0, -8.0, 60.0, 800.0, INF, NAN),
                _ints(),
            ]
        ),
        family=FAMILY,
        covers=("i1e", "exp", "abs", "mul"),
        torch_ref=_torch("i1"),
        dtypes=("float64",),
    ),
    OpSpec(
        name="xlogy",
        fn=nb.xlogy,
        ref=_xlogy,
        samples=_composite(
            [
                Sample((uniform(s, -2.0, 2.0, seed="xlogy-x"), uniform(s, 0.1, 3.0, seed="xlogy-y")), label=str(s))
                for s in SHAPES
            ]
            + [
                Sample(
                    (np.array([0.0, 0.0, 0.0, 2.0, 1.5]), np.array([0.0, NAN, 2.0, 0.0, INF])),
                    label="zeros",
                    grad=False,
                ),
                Sample((np.array([0.0, 1.5, -2.0]), np.array([1.5, 2.5, 0.5])), label="x-zero-grad"),
                Sample((np.array([1, 0, 2], np.int64), np.array([2, 3, 1], np.int64)), label="int", grad=False),
            ]
        ),
        family=FAMILY,
        covers=("mul", "log", "where", "equal", "isnan", "isinf", "less_equal", "logical_or"),
        torch_ref=lambda torch, x, y: torch.xlogy(x, y),
    ),
    OpSpec(
        name="xlog1py",
        fn=nb.xlog1py,
        ref=_xlog1py,
        samples=_composite(
            [
                Sample((uniform(s, -2.0, 2.0, seed="xlog1py-x"), uniform(s, -0.5, 3.0, seed="xlog1py-y")), label=str(s))
                for s in SHAPES
            ]
            + [
                Sample(
                    (np.array([0.0, 0.0, 0.0, 2.0, 1.5, -1.0]), np.array([-1.0, NAN, 2.0, -1.0, INF, 0.5])),
                    label="zeros",
                    grad=False,
                ),
                Sample((np.array([0.0, 1.5, -2.0]), np.array([1.5, 2.5, 0.5])), label="x-zero-grad"),
            ]
        ),
        family=FAMILY,
        covers=("mul", "log1p", "where", "equal", "isnan", "isinf", "less_equal", "logical_or"),
        torch_ref=_torch("xlog1py"),
    ),
    OpSpec(
        name="entr",
        fn=nb.entr,
        ref=_elementwise(_entr),
        samples=_composite(_samples(0.1, 3.0, "entr") + [_edge(0.0, -1.0, -0.0, 1.0, INF, NAN), _ints()]),
        family=FAMILY,
        covers=("mul", "log", "where", "greater", "less"),
        torch_ref=_torch("entr"),
    ),
    OpSpec(
        name="ndtr",
        fn=nb.ndtr,
        ref=_elementwise(_ndtr),
        samples=_composite(_samples(-4.0, 4.0, "ndtr") + [_edge(-10.0, 10.0, 0.0, -INF, INF, NAN), _ints()]),
        family=FAMILY,
        covers=("erf", "exp", "reciprocal", "where", "mul"),
        torch_ref=_torch("ndtr"),
        rtol=2e-5,
    ),
]
