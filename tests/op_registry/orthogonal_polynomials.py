"""Registry entries for nabla.ops.orthogonal_polynomials (torch.special's Chebyshev, Hermite,
Laguerre and Legendre polynomials). The reference is PyTorch's scalar algorithm written out in
float64 per element (branches included); PyTorch itself is the second oracle."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "orthogonal_polynomials"
_THRESHOLD = {False: {"t": 6, "u": 8, "v": 8, "w": 8}, True: {"t": 6, "u": 6, "v": 6, "w": 4}}


def _recurrence(n: int, p0: float, p1: float, step) -> float:
    if n == 0:
        return p0
    p, q = p0, p1
    for k in range(2, n + 1):
        p, q = q, step(k, p, q)
    return q


def _chebyshev(kind: str, shifted: bool):
    def one(x: float, n: int) -> float:
        y = 2 * x - 1 if shifted else x
        sign = -1.0 if n % 2 else 1.0
        if n < 0:
            return 0.0
        if (x == 1.0) if shifted else (y == 1.0):
            return {"t": 1.0, "u": n + 1.0, "v": 1.0, "w": 2 * n + 1.0}[kind]
        if (x == 0.0) if shifted else (y == -1.0):
            return {"t": sign, "u": sign * (n + 1), "v": sign * (2 * n + 1), "w": sign}[kind]
        if n > _THRESHOLD[shifted][kind] and abs(y) < 1:
            th = math.acos(y)
            if kind == "t":
                return math.cos(n * th)
            if kind == "u":
                s = math.sin(th)
                return math.sin((n + 1) * th) / s if s != 0 else (n + 1) * math.cos((n + 1) * th) / y
            if kind == "v":
                return math.cos((n + 0.5) * th) / math.cos(th / 2) if math.sin(th / 2) != 1 else sign * (2 * n + 1)
            if math.cos(th / 2) != 1:
                return math.sin((n + 0.5) * th) / math.sin(th / 2)
            return sign if shifted or y <= 0 else 2 * n + 1.0
        first = {"t": y, "u": 2 * y, "v": 2 * y - 1, "w": 2 * y + 1}[kind]
        return _recurrence(n, 1.0, first, lambda k, p, q: 2 * y * q - p)

    return one


def _hermite(physicists: bool):
    def one(x: float, n: int, limit: int) -> float:
        if n < 0:
            return 0.0
        if n > limit:
            return math.nan
        if physicists:
            return _recurrence(n, 1.0, 2 * x, lambda k, p, q: 2 * x * q - 2 * (k - 1) * p)
        return _recurrence(n, 1.0, x, lambda k, p, q: x * q - (k - 1) * p)

    return one


def _laguerre(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if x == 0:
        return 1.0
    return _recurrence(n, 1.0, 1 - x, lambda k, p, q: ((2 * (k - 1) + 1 - x) * q - (k - 1) * p) / k)


def _legendre(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        return 1.0 if x > 0 or n % 2 == 0 else -1.0
    return _recurrence(n, 1.0, x, lambda k, p, q: ((2 * (k - 1) + 1) * x * q - (k - 1) * p) / k)


def _ref(fn, hermite: bool = False):
    def ref(x, n):
        xs = np.asarray(x)
        dtype = xs.dtype if xs.dtype.kind == "f" else np.float32
        limit = 512 if dtype == np.float64 else 128
        x64, n64 = np.broadcast_arrays(np.asarray(x, np.float64), np.trunc(np.asarray(n, np.float64)).astype(np.int64))
        args = [
            (float(a), int(b)) + ((limit,) if hermite else ()) for a, b in zip(x64.ravel(), n64.ravel(), strict=True)
        ]
        with np.errstate(over="ignore"):
            return np.array([fn(*a) for a in args], np.float64).reshape(x64.shape).astype(dtype)

    return ref


_X = np.array([-1.5, -1.0, -0.7, -0.2, 0.0, 0.3, 0.5, 0.9, 1.0, 1.2, 2.5, 0.75])
_DEGREES = np.array([0, 1, 4, 9, -2, 11, 3, 2, 8, 7, 10, 6])


def _samples(name: str, low: float, high: float) -> list[Sample]:
    samples = [
        Sample((uniform(s, low, high, seed=name), n), label=f"{s} n={n}") for s in [(5,), (2, 3)] for n in (0, 1, 3, 5)
    ]
    samples += [Sample((uniform((6,), low, high, seed=name + "9"), 9), label="n=9")]  # the trigonometric forms
    samples += [Sample((_X, n), label=f"edges n={n}", grad=False) for n in (-1, 2, 7, 12)]
    # (the largest degree sizes the graph: read on the host, so vmap leaves the degrees unmapped)
    samples += [Sample((_X, _DEGREES), label="per-element degrees", grad=False, vmap_ints=False)]
    samples += [Sample((np.array([[1, 2], [0, 3]], np.int64), 3), label="int64", grad=False)]
    return [replace(s, max=False) for s in samples]


def _spec(name: str, ref, low: float, high: float, covers: tuple, **kwargs) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=_samples(name, low, high),
        family=FAMILY,
        covers=covers,
        diff_args=(0,),
        torch_ref=lambda torch, x, n, _name=name: getattr(torch.special, _name)(x, n),
        **kwargs,
    )


_CHEBYSHEV_OPS = (
    "where",
    "equal",
    "greater",
    "greater_equal",
    "less",
    "mul",
    "add",
    "sub",
    "div",
    "acos",
    "cos",
    "sin",
)
_RECURRENCE_OPS = ("where", "equal", "greater", "greater_equal", "less", "mul", "add", "sub", "div")

SPECS = [
    _spec(f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}", _ref(_chebyshev(kind, shifted)),
          0.05 if shifted else -0.95, 0.95, _CHEBYSHEV_OPS, rtol=1e-4, atol=1e-5)
    for shifted in (False, True) for kind in "tuvw"
] + [
    _spec("hermite_polynomial_h", _ref(_hermite(True), hermite=True), -2.0, 2.0, _RECURRENCE_OPS, rtol=1e-5, atol=1e-4),
    _spec("hermite_polynomial_he", _ref(_hermite(False), hermite=True), -2.0, 2.0, _RECURRENCE_OPS, atol=1e-5),
    _spec("laguerre_polynomial_l", _ref(_laguerre), -2.0, 4.0, _RECURRENCE_OPS, atol=1e-5),
    _spec("legendre_polynomial_p", _ref(_legendre), -0.95, 0.95, _RECURRENCE_OPS),
]  # fmt: skip
