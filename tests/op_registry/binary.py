"""Registry entries for nabla.ops.binary (elementwise, two operands, broadcasting)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "binary"

# (shape of x, shape of y): equal shapes, broadcasting both ways, scalars, 0-d.
SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)), ((5,), ()), ((4,), (2, 1, 4))]


def _samples(low: float = -2.0, high: float = 2.0, seed: str = "", scalar: float | None = 1.5) -> list[Sample]:
    out = [
        Sample((uniform(a, low, high, seed=seed + "x"), uniform(b, low, high, seed=seed + "y")), label=f"{a}x{b}")
        for a, b in SHAPES
    ]
    if scalar is not None:
        out.append(Sample((uniform((2, 3), low, high, seed=seed), scalar), label="tensor-scalar"))
        out.append(Sample((scalar, uniform((3,), low, high, seed=seed + "r")), label="scalar-tensor"))
    return out


def _torch_args(torch, *args):
    """PyTorch's functional forms of several binary ops want Tensors: wrap Python scalars as 0-d."""
    return [a if isinstance(a, torch.Tensor) else torch.tensor(a) for a in args]


def _result_dtype(args: tuple, float_result: bool = False) -> np.dtype:
    """PyTorch's result dtype for NumPy arrays and Python scalars (NumPy would widen int32 + float32)."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    scalars = [a for a in args if not isinstance(a, np.ndarray)]
    for kind in "fib":
        same = [a.dtype for a in arrays if a.dtype.kind == kind]
        if same:
            dtype = max(same, key=lambda d: d.itemsize)
            break
    if dtype.kind != "f" and any(isinstance(s, float) for s in scalars):
        dtype = np.dtype(np.float32)
    elif dtype.kind == "b" and any(isinstance(s, int) and not isinstance(s, bool) for s in scalars):
        dtype = np.dtype(np.int64)
    if float_result and dtype.kind != "f":
        dtype = np.dtype(np.float32)
    return dtype


def torch_like(np_fn, float_result: bool = False):
    """A NumPy reference whose result has PyTorch's promoted dtype."""

    def ref(*args):
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np_fn(*args)
        return out if out.dtype == np.bool_ else out.astype(_result_dtype(args, float_result))

    return ref


def _binary(name: str, ref, low: float = -2.0, high: float = 2.0, torch_name: str | None = None, **kw) -> OpSpec:
    return OpSpec(
        name=name,
        fn=kw.pop("fn", None) or getattr(nb, name),
        ref=ref,
        samples=kw.pop("samples", None) or _samples(low, high, seed=name),
        family=FAMILY,
        torch_ref=lambda torch, x, y, _n=torch_name or name: getattr(torch, _n)(*_torch_args(torch, x, y)),
        **kw,
    )


def _int_samples(seed: str) -> list[Sample]:
    """Integer operands (no derivative checks) and an integer/float mix (the float one is checked)."""
    rng = np.random.default_rng(len(seed))
    xi = rng.integers(-9, 10, size=(3, 4)).astype(np.int32)
    yi = rng.integers(1, 5, size=(4,)).astype(np.int64) * np.array([1, -1, 1, -1])
    return [
        Sample((xi, yi), label="int32xint64", grad=False),
        Sample((xi, 3), label="int-scalar", grad=False),
        Sample((xi, uniform((3, 4), 0.5, 2.0, seed=seed)), label="int-float"),
    ]


def _divisor_samples(seed: str) -> list[Sample]:
    """Dividends of both signs over divisors of both signs, kept away from 0 and from exact multiples."""
    x = uniform((3, 4), -6.0, 6.0, seed=seed + "x")
    y = uniform((3, 4), 0.5, 2.0, seed=seed + "y") * np.where(uniform((3, 4), seed=seed + "s") > 0, 1.0, -1.0)
    x = np.where(np.abs(x / y - np.round(x / y)) < 0.02, x + 0.1 * y, x)
    return [
        Sample((x, y), label="signs"),
        Sample((x, -1.5), label="negative-scalar-divisor"),
        Sample((x[0], y), label="broadcast"),
        Sample((np.array(4.7), np.array(-1.3)), label="0-d"),
        Sample(
            (np.array([5.0, -5.0, 5.0, -5.0, 6.0, -6.0]), np.array([3.0, 3.0, -3.0, -3.0, 3.0, -3.0])),
            label="exact",
            grad=False,
        ),  # fmt: skip
        *_int_samples(seed),
    ]


def _compare(name: str, ref) -> OpSpec:
    samples = _samples(seed="cmp")
    # ties matter for comparisons
    samples.append(Sample((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])), label="ties"))
    samples.append(Sample((np.array([[1, 5, -2]], np.int32), np.array([[1], [3]], np.int64)), label="int"))
    # (nabla.equal is torch.equal, a bool; the elementwise op is nabla.eq = nabla.ops.equal)
    fn = nb.ops.equal if name == "equal" else None
    return _binary(name, ref, samples=samples, differentiable=False, torch_name={"equal": "eq"}.get(name, name), fn=fn)


def _ties(seed: str) -> list[Sample]:
    x = uniform((2, 3), seed=seed)
    return [
        *_samples(seed=seed),
        Sample((x, x.copy()), label="all-ties", grad=False),
        Sample((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])), label="some-ties", grad=False),
        Sample((np.array([1, -2, 3], np.int32), np.array([0, -2, 4], np.int32)), label="int", grad=False),
    ]


def _np_pow(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.power(x, y)


def _pow_special_sample() -> Sample:
    """Every pair of special operands (C's pow): on MAX these must never reach its pow kernel."""
    special = np.array([-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan])
    x, y = np.meshgrid(special, np.concatenate([special, [-1.5, 1.5, 1 / 3]]), indexing="ij")
    return Sample((x.copy(), y.copy()), label="special-values", grad=False)


BOOLS_X = np.array([[True, False, True, False]])
BOOLS_Y = np.array([[True], [False]])


def _logical(name: str, ref) -> OpSpec:
    samples = [
        Sample((BOOLS_X, BOOLS_Y), label="bool"),
        Sample((np.array([0.0, 1.5, -2.0, 0.0]), np.array([0, 0, 3, 7], np.int32)), label="float-int"),
        Sample((uniform((2, 3), seed=name), np.zeros(())), label="0-d"),
        Sample((BOOLS_X, True), label="bool-scalar"),
    ]
    return _binary(name, ref, samples=samples, differentiable=False)


INTS_X = np.array([[0, -1, 5, -6], [2**31 - 1, -(2**31), 12345, -9]], np.int32)
INTS_Y = np.array([[-1, 3, -6, 0], [7, -(2**31), -12345, 2**30]], np.int32)


def _bitwise(name: str, ref) -> OpSpec:
    samples = [
        Sample((BOOLS_X, BOOLS_Y), label="bool"),
        Sample((BOOLS_X, False), label="bool-scalar"),
        # integers: the bits one at a time on MAX (tests/test_bits.py compiles them)
        Sample((INTS_X, INTS_Y), label="int32", max=False),
        Sample((INTS_X.astype(np.int64) * 3, INTS_Y.astype(np.int64)), label="int64", max=False),
        Sample((INTS_X, 6), label="int-scalar", max=False),
    ]
    return _binary(name, ref, samples=samples, differentiable=False)


SPECS: list[OpSpec] = [
    _binary("add", np.add, dtypes=("float64", "float16", "bfloat16")),
    _binary("sub", np.subtract),
    _binary("mul", np.multiply, dtypes=("float64", "float16", "bfloat16")),
    _binary("div", np.divide, 0.5, 2.0, covers=("div",)),
    _binary("pow", _np_pow, samples=_samples(0.5, 2.0, seed="pow") + [_pow_special_sample()]),
    _binary("maximum", np.maximum, samples=_ties("maximum")),
    _binary("minimum", np.minimum, samples=_ties("minimum")),
    _compare("equal", np.equal),
    _compare("not_equal", np.not_equal),
    _compare("greater", np.greater),
    _compare("greater_equal", np.greater_equal),
    _compare("less", np.less),
    _compare("less_equal", np.less_equal),
    _binary("floor_divide", torch_like(np.floor_divide), samples=_divisor_samples("floor_divide")),
    _binary("remainder", torch_like(np.remainder), samples=_divisor_samples("remainder"), rtol=1e-5, atol=1e-5),
    _binary("fmod", torch_like(np.fmod), samples=_divisor_samples("fmod"), rtol=1e-5, atol=1e-5),
    _binary(
        "atan2",
        torch_like(np.arctan2, float_result=True),
        samples=[
            *_samples(seed="atan2"),
            Sample(
                (np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0]), np.array([0.0, 0.0, -0.0, -0.0, 0.0, -0.0])),
                label="signed-zeros",
                grad=False,
            ),  # fmt: skip
            Sample(
                (np.array([np.inf, -np.inf, 1.0, np.nan]), np.array([np.inf, 2.0, -np.inf, 1.0])),
                label="inf-nan",
                grad=False,
            ),  # fmt: skip
            Sample((np.array([[3, -4]], np.int32), np.array([[0.0], [-2.5]])), label="int-float"),
        ],
        dtypes=("float64", "float16", "bfloat16"),
    ),
    _logical("logical_and", np.logical_and),
    _logical("logical_or", np.logical_or),
    _logical("logical_xor", np.logical_xor),
    _bitwise("bitwise_and", np.bitwise_and),
    _bitwise("bitwise_or", np.bitwise_or),
    _bitwise("bitwise_xor", np.bitwise_xor),
    OpSpec(
        name="bitwise_not",
        fn=nb.bitwise_not,
        ref=np.invert,
        samples=[
            Sample((BOOLS_X,), label="bool"),
            Sample((np.array(True),), label="0-d"),
            Sample((INTS_X,), label="int32", max=False),
        ],
        family=FAMILY,
        covers=("logical_xor", "neg", "sub"),
        differentiable=False,
        torch_ref=lambda torch, x: torch.bitwise_not(x),
    ),
]
for _spec, _aliases in zip(SPECS[7:13], [("eq",), ("ne",), ("gt",), ("ge",), ("lt",), ("le",)], strict=True):
    _spec.aliases = _aliases
for _spec in SPECS:
    if _spec.name.startswith("bitwise_") and _spec.name != "bitwise_not":
        _spec.covers = ("logical_" + _spec.name.removeprefix("bitwise_"), "integer_bitwise")


# -- composites (torch's other two-operand functions): their primitives run on MAX already ------
def _composite(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


def _np_heaviside(x, values):
    x, values = np.asarray(x), np.asarray(values)
    return np.where(x == 0, values, (x > 0).astype(np.result_type(x, values)))


def _special_pairs() -> Sample:
    a = np.array([-np.inf, -np.inf, np.inf, np.inf, np.nan, 1.0, 0.0, -0.0, 2.0])
    b = np.array([-np.inf, np.inf, np.inf, 3.0, 1.0, np.nan, -0.0, 0.0, -np.inf])
    return Sample((a, b), label="special", grad=False)


def _composite_binary(name: str, ref, low=-2.0, high=2.0, extra=(), covers=(), **kw) -> OpSpec:
    spec = _binary(name, ref, low, high, samples=_composite(_samples(low, high, seed=name) + list(extra)), **kw)
    spec.covers = covers or (name,)
    return spec


def _int_pairs(seed: str) -> list[Sample]:
    rng = np.random.default_rng(len(seed) + 7)
    xi = rng.integers(-30, 31, size=(3, 4)).astype(np.int64)
    yi = rng.integers(-12, 13, size=(4,)).astype(np.int64)
    return [
        Sample((xi, yi), label="int64", grad=False),
        Sample(
            (np.array([0, 0, 7, -7, 12, 2**40], np.int64), np.array([0, 5, 0, 21, -18, 2**20 * 3])),
            label="edges",
            grad=False,
        ),
        Sample((xi.astype(np.int32), 6), label="int32-scalar", grad=False),
    ]


_ELEMENTWISE = ("abs", "maximum", "minimum", "log1p", "exp", "where", "add", "sub", "mul", "div")
SPECS += [
    _composite_binary(
        "logaddexp", torch_like(np.logaddexp, True), -4.0, 4.0, extra=(_special_pairs(),), covers=_ELEMENTWISE
    ),
    _composite_binary(
        "logaddexp2", torch_like(np.logaddexp2, True), -4.0, 4.0, extra=(_special_pairs(),), covers=_ELEMENTWISE
    ),
    _composite_binary("hypot", torch_like(np.hypot, True), extra=(_special_pairs(),), covers=_ELEMENTWISE + ("sqrt",)),
    _composite_binary(
        "copysign",
        torch_like(np.copysign, True),
        extra=(
            _special_pairs(),
            Sample((np.array([[3, -4]]), np.array([[-1.0], [0.0]])), label="int-float", grad=False),
        ),
        covers=("abs", "mul", "where", "less", "equal", "div"),
    ),
    _composite_binary(
        "heaviside",
        torch_like(_np_heaviside),
        extra=(Sample((np.array([-1.5, 0.0, 2.0, 0.0]), np.array([0.5, 0.25, 0.5, 1.0])), label="zeros"),),
        covers=("equal", "greater", "where"),
        differentiable=False,
    ),
    _composite_binary(
        "fmax", torch_like(np.fmax), extra=(_special_pairs(), *_int_samples("fmax")[:2]), covers=("where", "isnan")
    ),
    _composite_binary(
        "fmin", torch_like(np.fmin), extra=(_special_pairs(), *_int_samples("fmin")[:2]), covers=("where", "isnan")
    ),
    _composite_binary(
        "float_power",
        lambda x, y: np.float_power(np.asarray(x, np.float64), np.asarray(y, np.float64)),
        0.5,
        2.0,
        extra=(Sample((np.array([[2, 3]], np.int64), -2), label="int-negative-int", grad=False),),
        covers=("pow", "cast"),
    ),
    _composite_binary(
        "ldexp",
        torch_like(lambda x, e: x * np.power(2.0, e), True),
        extra=(Sample((uniform((3, 4), seed="ldexp-i"), np.array([-3, 0, 2, 5])), label="int-exponent"),),
        covers=("mul", "pow"),
    ),
    _binary(
        "isclose",
        np.isclose,
        samples=_composite(
            [
                Sample(
                    (
                        np.array([1.0, 1.0 + 1e-6, 1.0, np.inf, np.inf, np.nan]),
                        np.array([1.0, 1.0, 1.1, np.inf, -np.inf, np.nan]),
                    ),
                    label="close",
                ),
                Sample(
                    (uniform((3, 4), seed="ic"), uniform((4,), seed="ic2")),
                    {"rtol": 0.5, "atol": 0.1},
                    label="tolerances",
                ),
                Sample(
                    (np.array([np.nan, 1.0, np.nan]), np.array([np.nan, np.nan, 2.0])),
                    {"equal_nan": True},
                    label="equal_nan",
                ),
                Sample((np.array([3, 5, -2], np.int64), np.array([3, 6, -2], np.int64)), {"atol": 0.5}, label="int"),
            ]
        ),
        differentiable=False,
    ),
    _binary("gcd", np.gcd, samples=_composite(_int_pairs("gcd")), differentiable=False),
    _binary("lcm", np.lcm, samples=_composite(_int_pairs("lcm")[:1] + _int_pairs("lcm")[2:]), differentiable=False),
]
SPECS[-3].torch_ref = lambda torch, x, y, **kw: torch.isclose(*_torch_args(torch, x, y), **kw)
SPECS[-3].covers = ("abs", "sub", "mul", "add", "less_equal", "equal", "isfinite", "isnan", "logical_or")
for _spec in SPECS[-2:]:
    _spec.covers = ("while_loop", "remainder", "not_equal", "where", "abs", "any")


def _np_addc(op):
    def ref(x, t1, t2, value=1):
        return torch_like(lambda a, b, c: a + value * op(b, c))(x, t1, t2)

    return ref


SPECS += [
    OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=_np_addc(op),
        samples=_composite(
            [
                Sample(
                    (
                        uniform((3, 4), seed=name),
                        uniform((3, 4), 0.5, 2.0, seed=name + "1"),
                        uniform((4,), 0.5, 2.0, seed=name + "2"),
                    ),
                    label="broadcast",
                ),
                Sample(
                    (
                        uniform((2, 3), seed=name),
                        uniform((2, 1), 0.5, 2.0, seed=name),
                        uniform((3,), 0.5, 2.0, seed=name),
                    ),
                    {"value": -0.5},
                    label="value",
                ),
                Sample(
                    (uniform((), seed=name), uniform((3,), 0.5, 2.0, seed=name), uniform((), 0.5, 2.0, seed=name)),
                    {"value": 2},
                    label="0-d",
                ),
            ]
        ),
        family=FAMILY,
        covers=("add", "mul", "div") if name == "addcdiv" else ("add", "mul"),
        torch_ref=lambda torch, x, t1, t2, _n=name, **kw: getattr(torch, _n)(x, t1, t2, **kw),
    )
    for name, op in (("addcmul", np.multiply), ("addcdiv", np.divide))
]
for _spec in SPECS:  # PyTorch's other names of the same functions
    _spec.aliases += {"mul": ("multiply",), "sub": ("subtract",), "div": ("divide", "true_divide")}.get(_spec.name, ())
    _spec.aliases += {"atan2": ("arctan2",)}.get(_spec.name, ())
