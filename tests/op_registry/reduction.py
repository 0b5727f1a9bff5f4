"""Registry entries for nabla.ops.reduction (reductions, moments, norms), nabla.ops.reduction_softmax (softmax,
log_softmax, logsumexp) and nabla.ops.cumulative (scans)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "reduction"
INF = math.inf
NAN = math.nan

# (shape, kwargs): every rank, single axes, negative axes, axis tuples, keepdims both ways.
REDUCE_CASES = [
    ((), {}),
    ((5,), {}),
    ((5,), {"axis": 0, "keepdims": True}),
    ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": -2, "keepdims": True}),
    ((3, 4), {"axis": (0, 1)}),
    ((2, 3, 4), {"axis": (0, 2)}),
    ((2, 3, 4), {"axis": (-1, 0), "keepdims": True}),
    ((2, 3, 4), {"keepdims": True}),
    ((0, 3), {"axis": 1}),  # empty result
]
EMPTY_REDUCTION = ((0, 3), {"axis": 0})  # reduces an empty dimension: the op's identity


def _label(shape: tuple, kw: dict) -> str:
    return f"{shape}" + "".join(f",{k}={v}" for k, v in kw.items())


def _samples(
    seed: str, low: float = -2.0, high: float = 2.0, empty: bool = True, nan_at: tuple = (), **extra
) -> list[Sample]:
    """The REDUCE_CASES (plus the empty reduction); `nan_at`: shapes whose result is nan/inf,
    kept out of the derivative checks."""
    cases = REDUCE_CASES + ([EMPTY_REDUCTION] if empty else [])
    return [
        Sample(
            (uniform(shape, low, high, seed=seed),),
            {**kw, **extra},
            label=_label(shape, {**kw, **extra}),
            grad=(shape, kw) not in nan_at,
        )
        for shape, kw in cases
    ]


def _axes(x, axis) -> tuple:
    """PyTorch helper: the dims tuple for `axis` (None: all)."""
    if axis is None:
        return tuple(range(x.ndim))
    return (axis,) if isinstance(axis, int) else tuple(axis)


def _torch_one_dim_at_a_time(fn):
    """torch reductions that take one int dim (prod): reduce the dims one by one, keepdim=True."""

    def ref(torch, x, axis=None, keepdims=False):
        out = x
        for a in sorted({a % max(x.ndim, 1) for a in _axes(x, axis)}, reverse=True):
            out = fn(torch, out, a)
        if not keepdims:
            axes = {a % max(x.ndim, 1) for a in _axes(x, axis)}
            out = out.reshape([s for i, s in enumerate(x.shape) if i not in axes])
        return out

    return ref


# -- NumPy references --------------------------------------------------------------------------
def _np_logsumexp(x, axis=None, keepdims=False):
    x = x if x.dtype.kind == "f" else x.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if any(x.shape[a] == 0 for a in np.atleast_1d(np.arange(x.ndim) if axis is None else axis)):
            return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, np.zeros((), x.dtype))
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_norm(x, p="fro", axis=None, keepdims=False):
    p = 2.0 if p in ("fro", None) else float(p)
    a = np.abs(x)
    if p == INF:
        return np.max(a, axis=axis, keepdims=keepdims)
    if p == -INF:
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    with np.errstate(divide="ignore"):
        return (np.sum(a**p, axis=axis, keepdims=keepdims) ** (1.0 / p)).astype(x.dtype)


def _np_scan(fn):
    def ref(x, axis):
        if x.dtype.kind != "f":
            x = x.astype(np.int64)
        if x.ndim == 0:
            return x.copy()
        return fn(x, axis=axis, dtype=x.dtype)

    return ref


def _np_shifted(x, axis):
    """x - max(x), as torch: a row holding +inf or nan becomes all nan; an all -inf row shifts by 0."""
    m = np.max(x, axis=axis, keepdims=True)
    return x - np.where(m == -INF, 0, m).astype(x.dtype)


def _np_softmax(x, axis=-1, safe=False):
    if x.ndim == 0:
        return np.ones_like(x)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(_np_shifted(x, axis))
        y = e / np.sum(e, axis=axis, keepdims=True)
    return np.where(np.all(x == -INF, axis=axis, keepdims=True), 0, y).astype(x.dtype) if safe and x.size else y


def _torch_softmax(torch, x, axis=-1, safe=False):
    return torch._safe_softmax(x, axis) if safe else torch.softmax(x, axis)


def _np_log_softmax(x, axis=-1):
    if x.ndim == 0:
        return np.zeros_like(x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z = _np_shifted(x, axis)
        return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _np_arg(fn):
    def ref(x, axis=None, keepdims=False):
        return np.asarray(fn(x, axis=axis, keepdims=keepdims), np.int64)

    return ref


# -- samples -----------------------------------------------------------------------------------
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.5, 2.0], [-1.0, -1.0, -1.0, -1.0]])
WITH_ZEROS = np.array([[1.5, 0.0, 2.0, -3.0], [0.0, 2.0, 0.0, 4.0], [1.5, -2.0, 0.5, 3.0], [0.0, 0.7, 1.2, -0.9]])
INTS = np.array([[3, -1, 0], [2, 5, -7]], np.int32)
# rows of -inf and of +inf, a NaN among finite values and infinities, both infinities
EXTREMES = np.array([[-INF, -INF, -INF], [INF, INF, INF], [NAN, 1.0, -INF], [1.0, -INF, INF]])
BOOLS = np.array([[True, False, True], [True, True, True]])


def _int_samples(axis=1) -> list[Sample]:
    return [
        Sample((INTS,), {"axis": axis}, label="int32"),
        Sample((BOOLS,), {"axis": axis}, label="bool"),
    ]


def _extremum(name: str, ref, torch_name: str) -> OpSpec:
    samples = _samples(name, empty=False)
    samples.append(Sample((TIES,), {"axis": 1}, label="ties", grad=False))
    samples.append(Sample((TIES,), {}, label="ties-all", grad=False))
    samples.append(Sample((INTS,), {"axis": 0}, label="int32"))
    samples.append(Sample((EXTREMES,), {"axis": 1}, label="inf-nan-rows", grad=False))
    samples.append(Sample((EXTREMES[:2],), {"axis": 1, "keepdims": True}, label="inf-rows-keepdims", grad=False))
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=samples,
        family=FAMILY,
        aliases=("a" + name,),
        torch_ref=lambda torch, x, axis=None, keepdims=False, _n=torch_name: getattr(torch, _n)(
            x, dim=() if axis is None else axis, keepdim=keepdims
        ),
        dtypes=("float64",),
    )


def _arg(name: str, ref) -> OpSpec:
    x = uniform((3, 4), seed=name)
    samples = [
        Sample((uniform((), seed=name),), {}, label="0d"),
        Sample((uniform((5,), seed=name),), {}, label="(5,)"),
        Sample((x,), {}, label="flat"),
        Sample((x,), {"keepdims": True}, label="flat-keepdims"),
        Sample((x,), {"axis": 0}, label="axis0"),
        Sample((x,), {"axis": -1, "keepdims": True}, label="axis-1-keepdims"),
        Sample((uniform((2, 3, 4), seed=name),), {"axis": 1}, label="(2,3,4)-axis1"),
        Sample((TIES,), {"axis": 1}, label="ties-first-index"),
        Sample((INTS,), {"axis": 1}, label="int32"),
    ]
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=samples,
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, x, axis=None, keepdims=False, _n=name: getattr(torch, _n)(
            x, dim=axis, keepdim=keepdims
        ),
    )


def _scan_samples(name: str) -> list[Sample]:
    out = [
        Sample((uniform((), seed=name),), {"axis": 0}, label="0d"),
        Sample((uniform((5,), seed=name),), {"axis": 0}, label="(5,)"),
        Sample((uniform((3, 4), seed=name),), {"axis": 1}, label="(3,4)-axis1"),
        Sample((uniform((3, 4), seed=name),), {"axis": -2}, label="(3,4)-axis-2"),
        Sample((uniform((2, 3, 5), seed=name),), {"axis": 1}, label="(2,3,5)-axis1"),
        Sample((uniform((2, 9), 0.5, 1.5, seed=name),), {"axis": 1}, label="(2,9)-long"),
        Sample((uniform((0, 3), seed=name),), {"axis": 0}, label="empty-axis"),
        Sample((WITH_ZEROS,), {"axis": 1}, label="zeros-axis1"),
        Sample((WITH_ZEROS,), {"axis": 0}, label="zeros-axis0"),
    ]
    return out + _int_samples()


def _softmax_samples(name: str) -> list[Sample]:
    return [
        Sample((uniform((), seed=name),), {"axis": -1}, label="0d"),
        Sample((uniform((5,), seed=name),), {}, label="(5,)"),
        Sample((uniform((3, 4), seed=name),), {"axis": 0}, label="(3,4)-axis0"),
        Sample((uniform((3, 4), seed=name),), {"axis": -1}, label="(3,4)-axis-1"),
        Sample((uniform((2, 3, 4), seed=name),), {"axis": 1}, label="(2,3,4)-axis1"),
        Sample((uniform((0, 3), seed=name),), {"axis": 1}, label="empty"),
        Sample((np.array([[1000.0, 0.0, -1000.0], [3000.0, 2999.0, 2998.0]]),), {"axis": 1}, label="huge", grad=False),
        Sample((np.array([[-INF, 0.0, 1.0], [2.0, -INF, -INF]]),), {"axis": 1}, label="-inf", grad=False),
        # a row holding +inf or nan is all nan, as torch's x - max(x) makes it (a column on axis 0)
        Sample(
            (np.array([[INF, 0.0, 1.0], [NAN, 1.0, -INF], [1.0, 2.0, 3.0]]),),
            {"axis": 1},
            label="inf-nan-rows",
            grad=False,
        ),
        Sample((np.array([[INF, NAN, 1.0], [0.0, 1.0, 2.0]]),), {"axis": 0}, label="inf-nan-columns", grad=False),
    ]


def _safe_softmax_samples() -> list[Sample]:
    masked = np.array([[-INF, 0.0, 1.0], [-INF, -INF, -INF], [2.0, -INF, 0.5]])
    return [
        Sample((uniform((3, 4), seed="safe"),), {"axis": -1, "safe": True}, label="safe-(3,4)"),
        Sample((uniform((2, 3, 4), seed="safe"),), {"axis": 1, "safe": True}, label="safe-(2,3,4)-axis1"),
        Sample((masked,), {"axis": 1, "safe": True}, label="safe-masked-row", grad=False),
        Sample((masked.T.copy(),), {"axis": 0, "safe": True}, label="safe-masked-column", grad=False),
        # a NaN keeps its row alive (NaN out, as torch), whatever -inf entries it has. Not on MAX:
        # its softmax kernel puts the NaN only at the NaN's own position (the rest of the row 0)
        Sample(
            (np.array([[NAN, -INF, 1.0], [-INF, -INF, -INF]]),),
            {"axis": 1, "safe": True},
            label="safe-nan-row",
            grad=False,
            max=False,
        ),
    ]


def _var_samples(name: str) -> list[Sample]:
    samples = _samples(name, nan_at=(((), {}), EMPTY_REDUCTION))
    # One element with correction=1 is 0/0 = nan; MAX's compiler folds (x - mean) to 0 and 0/0 to 0.
    samples[0].max = False
    samples += [
        Sample((uniform((3, 4), seed=name),), {"axis": 1, "correction": 0}, label="correction=0"),
        Sample((uniform((3, 4), seed=name),), {"axis": (0, 1), "correction": 2.5}, label="correction=2.5"),
        Sample((uniform((2, 3), seed=name),), {"axis": 0, "correction": 3}, label="correction>=N", grad=False),
        Sample((np.full((2, 3), 1.5),), {"axis": 1}, label="constant", grad=False),
    ]
    return samples


def _norm_samples() -> list[Sample]:
    x = uniform((3, 4), seed="norm")
    cube = uniform((2, 3, 4), seed="norm")
    return [
        Sample((uniform((), seed="norm"),), {}, label="0d"),
        Sample((x,), {}, label="fro-all"),
        Sample((x,), {"p": "fro", "axis": (0, 1), "keepdims": True}, label="fro-2dims"),
        Sample((cube,), {"p": "fro", "axis": (-1, 0)}, label="fro-cube"),
        Sample((x,), {"p": 2, "axis": 1}, label="p=2"),
        Sample((x,), {"p": 1, "axis": 0, "keepdims": True}, label="p=1"),
        Sample((x,), {"p": INF, "axis": 1}, label="p=inf"),
        Sample((x,), {"p": -INF, "axis": -1}, label="p=-inf"),
        Sample((x,), {"p": 0, "axis": 1}, label="p=0"),
        Sample((x,), {"p": 3, "axis": 1}, label="p=3"),
        Sample((cube,), {"p": 1.5, "axis": (0, 2)}, label="p=1.5"),
        Sample((np.abs(x) + 0.2,), {"p": 0.5}, label="p=0.5"),
        Sample((np.abs(x) + 0.2,), {"p": -1, "axis": 0}, label="p=-1"),
        Sample((uniform((0, 3), seed="norm"),), {"axis": 0}, label="empty"),
        Sample((np.zeros((2, 3)),), {"axis": 1}, label="zeros", grad=False),
    ]


def _bool_samples(name: str) -> list[Sample]:
    x = uniform((3, 4), seed=name)
    x[0, :] = 0.0
    x[1, 1] = 0.0
    return [
        Sample((uniform((), seed=name),), {}, label="0d"),
        Sample((x,), {}, label="all"),
        Sample((x,), {"axis": 1}, label="axis1"),
        Sample((x,), {"axis": (0, 1), "keepdims": True}, label="axes"),
        Sample((x,), {"axis": -2, "keepdims": True}, label="axis-2-keepdims"),
        Sample((np.array([[0.0, np.nan], [0.0, 0.0]]),), {"axis": 1}, label="nan"),
        Sample((BOOLS,), {"axis": 0}, label="bool"),
        Sample((INTS,), {"axis": 1}, label="int32"),
        Sample((np.zeros((0, 3)),), {"axis": 0}, label="empty"),
    ]


def _torch_bool(name: str):
    def ref(torch, x, axis=None, keepdims=False):
        out = x
        for a in sorted({a % max(x.ndim, 1) for a in _axes(x, axis)}, reverse=True):
            out = getattr(torch, name)(out, dim=a, keepdim=True)
        out = getattr(torch, name)(out) if x.ndim == 0 else out
        if not keepdims:
            axes = {a % max(x.ndim, 1) for a in _axes(x, axis)}
            out = out.reshape([s for i, s in enumerate(x.shape) if i not in axes])
        return out

    return ref


SPECS: list[OpSpec] = [
    OpSpec(
        name="sum",
        fn=nb.sum,
        ref=lambda x, axis=None, keepdims=False: np.sum(x, axis=axis, keepdims=keepdims),
        samples=_samples("sum") + _int_samples(),
        family=FAMILY,
        torch_ref=lambda torch, x, axis=None, keepdims=False: torch.sum(
            x, dim=_axes(x, axis) if x.ndim else None, keepdim=keepdims
        ),
        dtypes=("float64", "float16"),
    ),
    OpSpec(
        name="mean",
        fn=nb.mean,
        ref=lambda x, axis=None, keepdims=False: np.mean(x, axis=axis, keepdims=keepdims).astype(
            x.dtype if x.dtype.kind == "f" else np.float32
        ),
        samples=_samples("mean", empty=False),
        family=FAMILY,
        torch_ref=lambda torch, x, axis=None, keepdims=False: torch.mean(
            x, dim=_axes(x, axis) if x.ndim else None, keepdim=keepdims
        ),
        dtypes=("float64",),
    ),
    _extremum("max", lambda x, axis=None, keepdims=False: np.max(x, axis=axis, keepdims=keepdims), "amax"),
    _extremum("min", lambda x, axis=None, keepdims=False: np.min(x, axis=axis, keepdims=keepdims), "amin"),
    _arg("argmax", _np_arg(np.argmax)),
    _arg("argmin", _np_arg(np.argmin)),
    OpSpec(
        name="prod",
        fn=nb.prod,
        ref=lambda x, axis=None, keepdims=False: np.prod(x, axis=axis, keepdims=keepdims),
        samples=_samples("prod", 0.5, 1.5)
        + [
            Sample((WITH_ZEROS,), {"axis": 1}, label="zeros-axis1"),
            Sample((WITH_ZEROS,), {"axis": 0, "keepdims": True}, label="zeros-axis0"),
            Sample((WITH_ZEROS,), {}, label="zeros-all"),
            Sample((np.array(0.0),), {}, label="0d-zero"),
        ]
        + _int_samples(),
        family=FAMILY,
        torch_ref=_torch_one_dim_at_a_time(lambda torch, t, a: torch.prod(t, a, keepdim=True)),
        dtypes=("float64",),
    ),
    OpSpec(
        name="var",
        fn=nb.var,
        ref=lambda x, axis=None, correction=1, keepdims=False: np.var(
            x, axis=axis, ddof=correction, keepdims=keepdims
        ).astype(x.dtype),
        samples=_var_samples("var"),
        family=FAMILY,
        torch_ref=lambda torch, x, axis=None, correction=1, keepdims=False: torch.var(
            x, dim=axis, correction=correction, keepdim=keepdims
        ),
        dtypes=("float64",),
    ),
    OpSpec(
        name="std",
        fn=nb.std,
        ref=lambda x, axis=None, correction=1, keepdims=False: np.std(
            x, axis=axis, ddof=correction, keepdims=keepdims
        ).astype(x.dtype),
        samples=_var_samples("std"),
        family=FAMILY,
        torch_ref=lambda torch, x, axis=None, correction=1, keepdims=False: torch.std(
            x, dim=axis, correction=correction, keepdim=keepdims
        ),
        dtypes=("float64",),
    ),
    OpSpec(
        name="logsumexp",
        fn=nb.logsumexp,
        ref=_np_logsumexp,
        samples=_samples("logsumexp", nan_at=(EMPTY_REDUCTION,))
        + [
            Sample((np.array([[1000.0, 999.0, -1000.0], [-3000.0, -3001.0, -2999.0]]),), {"axis": 1}, label="huge"),
            Sample((np.array([[-INF, 0.0, 1.0], [-INF, -INF, -INF]]),), {"axis": 1}, label="-inf", grad=False),
            Sample((np.array([[INF, 0.0], [1.0, 2.0]]),), {"axis": -1, "keepdims": True}, label="inf", grad=False),
        ],
        family=FAMILY,
        torch_ref=lambda torch, x, axis=None, keepdims=False: torch.logsumexp(x, dim=_axes(x, axis), keepdim=keepdims),
        dtypes=("float64",),
    ),
    OpSpec(
        name="norm",
        fn=nb.norm,
        ref=_np_norm,
        samples=_norm_samples(),
        family=FAMILY,
        torch_ref=lambda torch, x, p="fro", axis=None, keepdims=False: torch.norm(x, p=p, dim=axis, keepdim=keepdims),
        dtypes=("float64",),
    ),
    OpSpec(
        name="any",
        fn=nb.any,
        ref=lambda x, axis=None, keepdims=False: np.any(x, axis=axis, keepdims=keepdims),
        samples=_bool_samples("any"),
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch_bool("any"),
    ),
    OpSpec(
        name="all",
        fn=nb.all,
        ref=lambda x, axis=None, keepdims=False: np.all(x, axis=axis, keepdims=keepdims),
        samples=_bool_samples("all"),
        family=FAMILY,
        differentiable=False,
        torch_ref=_torch_bool("all"),
    ),
    OpSpec(
        name="cumsum",
        fn=nb.cumsum,
        ref=_np_scan(np.cumsum),
        samples=_scan_samples("cumsum"),
        family=FAMILY,
        torch_ref=lambda torch, x, axis: torch.cumsum(x, axis),
        dtypes=("float64", "float16"),
    ),
    OpSpec(
        name="cumprod",
        fn=nb.cumprod,
        ref=_np_scan(np.cumprod),
        samples=_scan_samples("cumprod"),
        family=FAMILY,
        torch_ref=lambda torch, x, axis: torch.cumprod(x, axis),
        dtypes=("float64",),
    ),
    OpSpec(
        name="softmax",
        fn=nb.softmax,
        ref=_np_softmax,
        samples=_softmax_samples("softmax") + _safe_softmax_samples(),
        family=FAMILY,
        covers=("softmax", "safe_softmax"),
        torch_ref=_torch_softmax,
        dtypes=("float64", "float16", "bfloat16"),
    ),
    OpSpec(
        name="log_softmax",
        fn=nb.log_softmax,
        ref=_np_log_softmax,
        samples=_softmax_samples("log_softmax"),
        family=FAMILY,
        torch_ref=lambda torch, x, axis=-1: torch.log_softmax(x, axis),
        dtypes=("float64", "float16"),
    ),
]


# -- composites: nan-ignoring reductions, aminmax, renorm, logcumsumexp --------------------------
def _composite(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


WITH_NANS = np.array([[1.5, NAN, 2.0, -3.0], [NAN, NAN, NAN, NAN], [0.5, -2.0, NAN, 3.0]])


def _np_nan(fn, floating: bool):
    def ref(x, axis=None, keepdims=False):
        with warnings.catch_warnings():  # all-nan slices
            warnings.simplefilter("ignore", RuntimeWarning)
            out = np.asarray(fn(x, axis=axis, keepdims=keepdims))
        return out.astype(x.dtype if x.dtype.kind == "f" or floating else np.int64)

    return ref


def _np_renorm(x, p, axis, maxnorm):
    axes = tuple(d for d in range(x.ndim) if d != axis % x.ndim)
    norms = np.sum(np.abs(x.astype(np.float64)) ** p, axis=axes, keepdims=True) ** (1.0 / p)
    return (x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)).astype(x.dtype)


def _np_logcumsumexp(x, axis):
    if x.ndim == 0:
        return x.copy()
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(x, axis=axis)


def _torch_nan(name: str):
    def ref(torch, x, axis=None, keepdims=False):
        return getattr(torch, name)(x, dim=_axes(x, axis) if x.ndim else None, keepdim=keepdims)

    return ref


_LOGCUMSUMEXP_SAMPLES = [
    Sample((uniform((), seed="lcse"),), {"axis": 0}, label="0d"),
    Sample((uniform((5,), seed="lcse"),), {"axis": 0}, label="(5,)"),
    Sample((uniform((3, 4), seed="lcse"),), {"axis": 1}, label="(3,4)-axis1"),
    Sample((uniform((3, 4), seed="lcse"),), {"axis": -2}, label="(3,4)-axis-2"),
    Sample((uniform((2, 9, 3), seed="lcse"),), {"axis": 1}, label="(2,9,3)-long"),
    Sample((uniform((0, 3), seed="lcse"),), {"axis": 0}, label="empty"),
    Sample(
        (np.array([[-1000.0, 0.0, 1000.0, -INF], [-INF, -INF, 2.0, INF]]),), {"axis": 1}, label="extremes", grad=False
    ),
]

SPECS += [
    OpSpec(
        name="nansum",
        fn=nb.nansum,
        ref=_np_nan(np.nansum, False),
        samples=_composite(
            _samples("nansum")
            + [Sample((WITH_NANS,), {"axis": 1}, label="nans"), Sample((WITH_NANS,), {}, label="nans-all")]
            + [Sample((INTS,), {"axis": 1}, label="int32")]
        ),
        family=FAMILY,
        covers=("sum", "where", "isnan"),
        torch_ref=_torch_nan("nansum"),
    ),
    OpSpec(
        name="nanmean",
        fn=nb.nanmean,
        ref=_np_nan(np.nanmean, True),
        samples=_composite(
            _samples("nanmean", nan_at=(EMPTY_REDUCTION,))
            + [Sample((WITH_NANS,), {"axis": 1}, label="nans", grad=False), Sample((WITH_NANS,), {}, label="nans-all")]
        ),
        family=FAMILY,
        covers=("sum", "where", "isnan", "div"),
        torch_ref=_torch_nan("nanmean"),
    ),
    OpSpec(
        name="aminmax",
        fn=nb.aminmax,
        ref=lambda x, axis=None, keepdims=False: (
            np.min(x, axis=axis, keepdims=keepdims),
            np.max(x, axis=axis, keepdims=keepdims),
        ),
        samples=_composite(
            [
                Sample((uniform((), seed="amm"),), {}, label="0d"),
                Sample((uniform((5,), seed="amm"),), {}, label="(5,)"),
                Sample((uniform((3, 4), seed="amm"),), {"axis": 1}, label="axis1"),
                Sample((uniform((3, 4), seed="amm"),), {"axis": -2, "keepdims": True}, label="axis-2-keepdims"),
                Sample((uniform((2, 3, 4), seed="amm"),), {"keepdims": True}, label="all-keepdims"),
                Sample((TIES,), {"axis": 1}, label="ties", grad=False),
                Sample((INTS,), {"axis": 0}, label="int32"),
            ]
        ),
        family=FAMILY,
        covers=("min", "max"),
        torch_ref=lambda torch, x, axis=None, keepdims=False: tuple(torch.aminmax(x, dim=axis, keepdim=keepdims)),
    ),
    OpSpec(
        name="renorm",
        fn=nb.renorm,
        ref=_np_renorm,
        samples=_composite(
            [
                Sample((uniform((3, 4), seed="renorm"), 2, 0, 1.0), label="p2-dim0"),
                Sample((uniform((3, 4), seed="renorm"), 1, 1, 2.0), label="p1-dim1"),
                Sample((uniform((2, 3, 4), seed="renorm"), 3, -1, 1.2), label="p3-dim-1"),
                Sample((uniform((2, 3), seed="renorm"), 2, 0, 100.0), label="below-max"),
            ]
        ),
        family=FAMILY,
        covers=("sum", "abs", "pow", "where", "mul", "div"),
        torch_ref=lambda torch, x, p, axis, maxnorm: torch.renorm(x, p, axis, maxnorm),
        rtol=1e-5,
        atol=1e-5,
    ),
    OpSpec(
        name="logcumsumexp",
        fn=nb.logcumsumexp,
        ref=_np_logcumsumexp,
        samples=_composite(_LOGCUMSUMEXP_SAMPLES),
        family=FAMILY,
        covers=("maximum", "abs", "exp", "log1p", "concatenate", "slice"),
        torch_ref=lambda torch, x, axis: torch.logcumsumexp(x, axis),
        dtypes=("float64",),
    ),
]
