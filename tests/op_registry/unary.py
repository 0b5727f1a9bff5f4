"""Registry entries for nabla.ops.unary (elementwise, one input)."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, away_from, uniform

FAMILY = "unary"


def _samples(low: float = -2.0, high: float = 2.0, kinks: tuple[float, ...] = (), seed: str = "") -> list[Sample]:
    """The standard shapes: scalar, vector, matrix, 3-D, and an empty tensor."""
    out = []
    for shape in [(), (5,), (3, 4), (2, 3, 2), (0, 3)]:
        x = uniform(shape, low, high, seed=seed)
        out.append(Sample((away_from(x, kinks) if kinks else x,), label=str(shape)))
    return out


def _unary(name: str, ref, low: float = -2.0, high: float = 2.0, kinks: tuple[float, ...] = (), **kw) -> OpSpec:
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=ref,
        samples=_samples(low, high, kinks, seed=name),
        family=FAMILY,
        torch_ref=lambda torch, x, _n=name: getattr(torch, _n)(x),
        **kw,
    )


SPECS: list[OpSpec] = [
    _unary("neg", np.negative, aliases=("negative",)),
    _unary("exp", np.exp, dtypes=("float64", "float16", "bfloat16")),
    _unary("log", np.log, 0.1, 3.0),
    _unary("sqrt", np.sqrt, 0.1, 3.0),
    _unary("tanh", np.tanh),
    _unary("relu", lambda x: np.maximum(x, 0), kinks=(0.0,)),
    _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
]
