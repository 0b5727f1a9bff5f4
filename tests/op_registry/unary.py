"""Registry entries for nabla.ops.unary (elementwise, one input; activations.py has the activations)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, away_from, uniform

FAMILY = "unary"
NAN, INF = float("nan"), float("inf")
SHAPES = [(), (5,), (3, 4), (2, 3, 2), (0, 3)]
INTS = np.array([[-3, 0, 2], [7, -1, 5]], np.int64)


def _samples(
    low: float = -2.0, high: float = 2.0, kinks: tuple[float, ...] = (), seed: str = "", margin: float = 0.05, **kwargs
) -> list[Sample]:
    """The standard shapes: scalar, vector, matrix, 3-D, and an empty tensor."""
    out = []
    for shape in SHAPES:
        x = uniform(shape, low, high, seed=seed)
        label = str(shape) + ("" if not kwargs else " " + ",".join(f"{k}={v}" for k, v in kwargs.items()))
        out.append(Sample((away_from(x, kinks, margin) if kinks else x,), dict(kwargs), label=label))
    return out


def _edge(*values: float, label: str = "edge", **kwargs) -> Sample:
    """nan/inf/large-magnitude values: forward only."""
    return Sample((np.array(values, np.float64),), dict(kwargs), label=label, grad=False)


def _ints(label: str = "int64", **kwargs) -> Sample:
    return Sample((INTS.copy(),), dict(kwargs), label=label)


def _f64(fn):
    """A reference computed in float64 and rounded to the input's dtype."""

    def ref(x, *args, **kwargs):
        return np.asarray(fn(x.astype(np.float64), *args, **kwargs)).astype(x.dtype)

    return ref


def _int_or_float(fn):
    """Integers pass through unchanged (floor/ceil/trunc/round on integers are the identity)."""

    def ref(x, *args, **kwargs):
        return x.copy() if x.dtype.kind in "iub" else fn(x, *args, **kwargs)

    return ref


def _torch(name: str):
    return lambda torch, x, **kw: getattr(torch, name)(x, **kw)


def _torch_f(name: str):
    return lambda torch, x, **kw: getattr(torch.nn.functional, name)(x, **kw)


def _unary(
    name: str,
    ref,
    low: float = -2.0,
    high: float = 2.0,
    kinks: tuple[float, ...] = (),
    extra: tuple[Sample, ...] = (),
    margin: float = 0.05,
    torch_ref=None,
    family: str = FAMILY,
    **kw,
) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=_samples(low, high, kinks, seed=name, margin=margin) + list(extra),
        family=family,
        torch_ref=torch_ref or _torch(name),
        **kw,
    )


# -- references without a NumPy function -------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _sign(x):
    return x.copy() if x.dtype == np.bool_ else (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _round(x, decimals=0):
    """PyTorch's formula, in the input's own dtype (so ties after scaling match)."""
    if x.dtype.kind != "f":
        return x.copy()
    if decimals == 0:
        return np.rint(x)
    scale = x.dtype.type(10.0 ** abs(decimals))
    return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * _erfc(-x / math.sqrt(2.0))


def _softplus(x, beta=1.0, threshold=20.0):
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _logsigmoid(x):
    return -np.logaddexp(0.0, -x)


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return np.clip(x, min_val, max_val)


def _clamp(x, lo=None, hi=None):
    out = x if lo is None else np.maximum(x, lo)
    return out if hi is None else np.minimum(out, hi)


def _torch_clamp(torch, x, lo, hi):
    """torch.clamp takes two scalar bounds or two tensor bounds: make a mixed pair two tensors."""
    if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
        lo, hi = (b if b is None or isinstance(b, torch.Tensor) else torch.tensor(b, dtype=x.dtype) for b in (lo, hi))
    return torch.clamp(x, lo, hi)


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _clamp_samples() -> list[Sample]:
    x = uniform((3, 4), seed="clamp-x")
    return [
        Sample((away_from(x, (-0.5, 0.7)), -0.5, 0.7), label="scalar bounds"),
        Sample((away_from(x, (-0.5,)), -0.5, None), label="min only"),
        Sample((away_from(x, (0.5,)), None, 0.5), label="max only"),
        Sample((uniform((), seed="clamp-0d"), -0.25, 0.25), label="0-d"),
        Sample(
            (x, uniform((4,), -1.0, -0.2, seed="clamp-lo"), uniform((3, 1), 0.2, 1.0, seed="clamp-hi")),
            label="tensor bounds",
        ),
        Sample(
            (uniform((5,), seed="clamp-b"), uniform((2, 1), -0.5, 0.0, seed="clamp-blo"), 0.5),
            label="bounds broadcast x",
        ),
        Sample((x, uniform((3, 4), 0.5, 1.0, seed="lo"), uniform((3, 4), -1.0, -0.5, seed="hi")), label="min > max"),
        Sample((uniform((0, 3), seed="clamp-e"), -1.0, 1.0), label="empty"),
        Sample((INTS.copy(), -1, 3), label="int64"),
        Sample((np.array([NAN, -INF, INF, 0.3]), -1.0, 1.0), label="nan-inf", grad=False),
    ]


_SPECIAL = np.array([[NAN, INF, -INF], [0.0, -1.5, 2.0]])
_PREDICATE_SAMPLES = [
    Sample((_SPECIAL,), label="special"),
    Sample((np.array(NAN),), label="0-d"),
    Sample((uniform((3, 4), seed="pred"),), label="finite"),
    Sample((np.zeros((0, 2)),), label="empty"),
    _ints(),
]

SPECS: list[OpSpec] = [
    # -- sign-like and rounding ------------------------------------------------------------------
    _unary("neg", np.negative, aliases=("negative",), extra=(_ints(),)),
    _unary(
        "abs",
        np.abs,
        kinks=(0.0,),
        extra=(_ints(), _edge(-INF, NAN, -0.0, 0.0, 3.5)),
        dtypes=("float64", "float16", "bfloat16"),
    ),
    _unary(
        "sign",
        _sign,
        kinks=(0.0,),
        extra=(_ints(), _edge(-INF, INF, 0.0, -0.0, 1e-30)),
    ),
    _unary("floor", _int_or_float(np.floor), -3.0, 3.0, kinks=(-3, -2, -1, 0, 1, 2, 3), extra=(_ints(),)),
    _unary("ceil", _int_or_float(np.ceil), -3.0, 3.0, kinks=(-3, -2, -1, 0, 1, 2, 3), extra=(_ints(),)),
    _unary("trunc", _int_or_float(np.trunc), -3.0, 3.0, kinks=(-2, -1, 0, 1, 2), extra=(_ints(),)),
    _unary(
        "round",
        _round,
        -3.0,
        3.0,
        kinks=(-2.5, -1.5, -0.5, 0.5, 1.5, 2.5),
        extra=(
            _edge(0.5, 1.5, 2.5, -0.5, -2.5, 3.5, NAN, INF, label="half to even"),
            Sample((uniform((3, 4), -5.0, 5.0, seed="r1"),), {"decimals": 1}, label="decimals=1", grad=False),
            Sample((uniform((5,), -5.0, 5.0, seed="r2"),), {"decimals": 2}, label="decimals=2", grad=False),
            Sample((uniform((2, 3), -500.0, 500.0, seed="r3"),), {"decimals": -1}, label="decimals=-1", grad=False),
            _ints(),
        ),
        torch_ref=lambda torch, x, **kw: torch.round(x, **kw),
    ),
    # -- powers, exponentials, logarithms ------------------------------------------------------
    _unary("square", np.square, extra=(_ints(),)),
    _unary("reciprocal", np.reciprocal, kinks=(0.0,), margin=0.25, extra=(_edge(0.0, -0.0, INF, NAN),)),
    _unary("exp", np.exp, dtypes=("float64", "float16", "bfloat16"), extra=(_edge(-INF, INF, NAN, 10.0, -100.0),)),
    _unary(
        "expm1",
        _f64(np.expm1),
        extra=(
            Sample((np.array([1e-7, -1e-6, 3e-4, -0.999, 0.999, 1.001]),), label="near 0 and 1"),
            _edge(-INF, INF, NAN, 100.0, -100.0),
        ),
    ),
    _unary("log", np.log, 0.1, 3.0, extra=(_edge(0.0, INF, NAN, 1e-30),)),
    _unary("log1p", _f64(np.log1p), -0.9, 3.0, extra=(_edge(-1.0, 1e-8, -1e-8, INF, NAN),)),
    _unary("log2", _f64(np.log2), 0.1, 4.0, extra=(_edge(0.0, 1.0, 8.0, 0.125, INF, NAN),)),
    _unary("sqrt", np.sqrt, 0.1, 3.0, extra=(_edge(0.0, INF, NAN, 1e-30),)),
    _unary("rsqrt", _f64(lambda x: 1.0 / np.sqrt(x)), 0.1, 3.0, extra=(_edge(0.0, INF, NAN, 4.0),)),
    # -- trigonometric and hyperbolic ----------------------------------------------------------
    _unary("sin", np.sin, -4.0, 4.0, dtypes=("float64", "float16", "bfloat16")),
    _unary("cos", np.cos, -4.0, 4.0),
    _unary("tan", _f64(np.tan), -1.2, 1.2),
    _unary(
        "sinh",
        _f64(np.sinh),
        -3.0,
        3.0,
        extra=(Sample((np.array([1e-6, -1e-4, 0.5, -0.99, 1.01]),), label="small"), _edge(-50.0, 80.0, INF, NAN)),
    ),
    _unary("cosh", _f64(np.cosh), -3.0, 3.0, extra=(_edge(-50.0, 80.0, 0.0, INF, NAN),)),
    _unary("asin", _f64(np.arcsin), -0.95, 0.95, extra=(_edge(-1.0, 1.0, 1e-8, 0.9999, NAN),)),
    _unary("acos", _f64(np.arccos), -0.95, 0.95, extra=(_edge(-1.0, 1.0, 0.9999, -0.9999, NAN),)),
    _unary(
        "atan",
        _f64(np.arctan),
        -5.0,
        5.0,
        extra=(Sample((np.array([0.65, 0.67, 2.4, 2.43, -1e-6]),), label="branch edges"), _edge(INF, -INF, 1e30, NAN)),
    ),
    _unary("tanh", np.tanh, extra=(_edge(-INF, INF, 50.0, NAN),)),
    _unary("erf", _f64(_erf), -2.5, 2.5, extra=(_edge(-INF, INF, 10.0, NAN),), dtypes=("float64",)),
    # -- clamp ---------------------------------------------------------------------------------
    OpSpec(
        name="clamp",
        fn=nb.clamp,
        ref=_clamp,
        samples=_clamp_samples(),
        family=FAMILY,
        aliases=("clip",),
        torch_ref=_torch_clamp,
        dtypes=("float64", "float16"),
    ),
    # -- predicates and cleanup ----------------------------------------------------------------
    OpSpec(
        name="isnan",
        fn=nb.isnan,
        ref=np.isnan,
        samples=_PREDICATE_SAMPLES,
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch("isnan"),
    ),
    OpSpec(
        name="isinf",
        fn=nb.isinf,
        ref=np.isinf,
        samples=_PREDICATE_SAMPLES,
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch("isinf"),
    ),
    OpSpec(
        name="isfinite",
        fn=nb.isfinite,
        ref=np.isfinite,
        samples=_PREDICATE_SAMPLES,
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch("isfinite"),
    ),
    OpSpec(
        name="logical_not",
        fn=nb.logical_not,
        ref=np.logical_not,
        samples=[
            Sample((np.array([[True, False], [False, False]]),), label="bool"),
            Sample((np.array([0.0, -1.5, NAN, 0.0, INF]),), label="float"),
            Sample((np.array(0.0),), label="0-d"),
            _ints(),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch("logical_not"),
    ),
    OpSpec(
        name="nan_to_num",
        fn=nb.nan_to_num,
        ref=_nan_to_num,
        samples=[
            Sample((uniform((3, 4), seed="n2n"),), label="finite"),
            Sample((uniform((), seed="n2n0"),), {"nan": 1.0}, label="0-d"),
            Sample((_SPECIAL,), label="defaults", grad=False),
            Sample((_SPECIAL,), {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}, label="given", grad=False),
            Sample((_SPECIAL,), {"posinf": 7.0}, label="posinf only", grad=False),
            _ints(),
        ],
        family=FAMILY,
        torch_ref=_torch("nan_to_num"),
        dtypes=("float64",),
    ),
]


# -- composites (torch's other elementwise functions): their primitives run on MAX already ------
def _composite(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


def _float_result(fn):
    """A reference computed in float64 and given PyTorch's float result dtype (float32 for ints)."""

    def ref(x, *args, **kwargs):
        out = np.asarray(fn(x.astype(np.float64), *args, **kwargs))
        return out.astype(x.dtype if x.dtype.kind == "f" else np.float32)

    return ref


def _logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    with np.errstate(divide="ignore"):
        return np.log(x / (1 - x))


def _composite_unary(name: str, ref, low: float = -2.0, high: float = 2.0, extra: tuple = (), covers=(), **kw):
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=_float_result(ref) if kw.pop("float_result", True) else ref,
        samples=_composite(_samples(low, high, seed=name) + list(extra)),
        family=FAMILY,
        covers=covers,
        torch_ref=kw.pop("torch_ref", _torch(name)),
        **kw,
    )


def _predicate(name: str, ref) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=_composite(_PREDICATE_SAMPLES + [Sample((np.array([-0.0, 0.0, -2.0, 3.0]),), label="signed-zeros")]),
        family=FAMILY,
        covers=("isinf", "less", "greater", "logical_and"),
        differentiable=False,
        torch_ref=_torch(name),
    )


_LOGS = ("log", "log1p", "sqrt", "add", "mul", "div", "where")
SPECS += [
    OpSpec(
        name="positive",
        fn=nb.positive,
        ref=np.positive,
        samples=_composite([Sample((uniform((3, 4), seed="pos"),), label="float"), _ints()]),
        family=FAMILY,
        covers=(),
        torch_ref=_torch("positive"),
    ),
    _composite_unary(
        "asinh",
        np.arcsinh,
        -5.0,
        5.0,
        extra=(_edge(0.0, 1e-20, -1e30, 1e30, INF, -INF, NAN), _ints()),
        covers=_LOGS,
        aliases=("arcsinh",),
        dtypes=("float64",),
    ),
    _composite_unary(
        "acosh",
        np.arccosh,
        1.1,
        4.0,
        extra=(_edge(1.0, 1.0 + 1e-6, 0.5, -3.0, 1e30, INF, NAN),),
        covers=_LOGS,
        aliases=("arccosh",),
        dtypes=("float64",),
    ),
    _composite_unary(
        "atanh",
        np.arctanh,
        -0.9,
        0.9,
        extra=(_edge(1.0, -1.0, 1.5, 1e-10, NAN),),
        covers=("log1p", "div", "mul", "sub"),
        aliases=("arctanh",),
        dtypes=("float64",),
    ),
    _composite_unary("log10", np.log10, 0.1, 5.0, extra=(_edge(0.0, 1000.0, INF, NAN), _ints()), covers=("log", "div")),
    _composite_unary("exp2", np.exp2, -3.0, 3.0, extra=(_edge(-INF, INF, 10.0, NAN), _ints()), covers=("pow",)),
    _composite_unary(
        "sinc", np.sinc, -3.0, 3.0, extra=(_edge(0.0, 1.0, -2.0, INF, NAN),), covers=("sin", "div", "where")
    ),
    _composite_unary("deg2rad", np.deg2rad, -360.0, 360.0, extra=(_ints(),), covers=("mul",)),
    _composite_unary("rad2deg", np.rad2deg, extra=(_ints(),), covers=("mul",)),
    _composite_unary(
        "logit",
        _logit,
        0.05,
        0.95,
        extra=(
            Sample((uniform((3, 4), 0.01, 0.99, seed="logit-eps"),), {"eps": 0.1}, label="eps", grad=False),
            Sample(
                (away_from(uniform((5,), 0.01, 0.99, seed="logit-e2"), (0.1, 0.9)),), {"eps": 0.1}, label="eps-grad"
            ),
            _edge(0.0, 1.0, 0.5, NAN),
        ),
        covers=("log", "div", "clamp"),
    ),
    _composite_unary(
        "signbit",
        np.signbit,
        extra=(Sample((np.array([-0.0, 0.0, -INF, INF, 1.0]),), label="signed-zeros"), _ints()),
        covers=("less", "equal", "div", "logical_or"),
        float_result=False,
        differentiable=False,
    ),
    _predicate("isposinf", np.isposinf),
    _predicate("isneginf", np.isneginf),
    OpSpec(
        name="isreal",
        fn=nb.isreal,
        ref=np.isreal,
        samples=_composite(_PREDICATE_SAMPLES),
        family=FAMILY,
        covers=("full",),
        differentiable=False,
        torch_ref=_torch("isreal"),
    ),
]
for _spec in SPECS:  # PyTorch's other names of the same functions
    _spec.aliases += {"abs": ("absolute",), "trunc": ("fix",), "sign": ("sgn",), "acos": ("arccos",)}.get(
        _spec.name, ()
    )
    _spec.aliases += {"asin": ("arcsin",), "atan": ("arctan",)}.get(_spec.name, ())
