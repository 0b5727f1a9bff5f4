"""Registry entries for nabla.ops.binary (elementwise, two operands, broadcasting)."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "binary"

# (shape of x, shape of y): equal shapes, broadcasting both ways, scalars, 0-d.
SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)), ((5,), ())]


def _samples(low: float = -2.0, high: float = 2.0, seed: str = "", scalar: float | None = 1.5) -> list[Sample]:
    out = [
        Sample((uniform(a, low, high, seed=seed + "x"), uniform(b, low, high, seed=seed + "y")), label=f"{a}x{b}")
        for a, b in SHAPES
    ]
    if scalar is not None:
        out.append(Sample((uniform((2, 3), low, high, seed=seed), scalar), label="tensor-scalar"))
    return out


def _binary(name: str, ref, low: float = -2.0, high: float = 2.0, torch_name: str | None = None, **kw) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=kw.pop("samples", None) or _samples(low, high, seed=name),
        family=FAMILY,
        torch_ref=lambda torch, x, y, _n=torch_name or name: getattr(torch, _n)(x, y),
        **kw,
    )


def _compare(name: str, ref) -> OpSpec:
    samples = _samples(seed="cmp")
    # ties matter for comparisons
    samples.append(Sample((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])), label="ties"))
    return _binary(name, ref, samples=samples, differentiable=False, torch_name={"equal": "eq"}.get(name, name))


SPECS: list[OpSpec] = [
    _binary("add", np.add, dtypes=("float64", "float16", "bfloat16")),
    _binary("sub", np.subtract),
    _binary("mul", np.multiply),
    _binary("div", np.divide, 0.5, 2.0, covers=("div",)),
    _binary("pow", np.power, 0.5, 2.0),
    _binary("maximum", np.maximum),
    _binary("minimum", np.minimum),
    _compare("equal", np.equal),
    _compare("not_equal", np.not_equal),
    _compare("greater", np.greater),
    _compare("greater_equal", np.greater_equal),
    _compare("less", np.less),
    _compare("less_equal", np.less_equal),
]
for _spec, _aliases in zip(SPECS[7:], [("eq",), ("ne",), ("gt",), ("ge",), ("lt",), ("le",)], strict=True):
    _spec.aliases = _aliases
