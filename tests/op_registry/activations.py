"""Registry entries for nabla.ops.activations (relu, gelu, sigmoid, softplus, ...)."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec
from .unary import (
    INF,
    NAN,
    _edge,
    _f64,
    _gelu,
    _hardtanh,
    _ints,
    _logsigmoid,
    _samples,
    _sigmoid,
    _softplus,
    _torch_f,
    _unary,
)

FAMILY = "activations"


def _act(name: str, ref, *args, **kw) -> OpSpec:
    return _unary(name, ref, *args, family=FAMILY, **kw)


SPECS: list[OpSpec] = [
    _act(
        "relu",
        lambda x: np.maximum(x, 0),
        kinks=(0.0,),
        extra=(_ints(), _edge(-INF, INF, NAN, 0.0)),
    ),
    _act(
        "sigmoid",
        _f64(_sigmoid),
        -4.0,
        4.0,
        extra=(_edge(-100.0, 100.0, -1000.0, 0.0, label="extremes"),),
        dtypes=("float64", "float16"),
    ),
    _act(
        "relu6",
        lambda x: np.clip(x, 0.0, 6.0),
        -2.0,
        8.0,
        kinks=(0.0, 6.0),
        extra=(_edge(-INF, INF, NAN, 0.0, 6.0),),
        torch_ref=_torch_f("relu6"),
    ),
    OpSpec(
        name="hardtanh",
        fn=nb.hardtanh,
        ref=_hardtanh,
        samples=_samples(kinks=(-1.0, 1.0), seed="hardtanh")
        + _samples(-3.0, 3.0, kinks=(-0.5, 2.0), seed="hardtanh2", min_val=-0.5, max_val=2.0)[1:3]
        + [_edge(-INF, INF, NAN, -1.0, 1.0)],
        family=FAMILY,
        torch_ref=_torch_f("hardtanh"),
    ),
    OpSpec(
        name="leaky_relu",
        fn=nb.leaky_relu,
        ref=lambda x, negative_slope=0.01: np.where(x > 0, x, x * x.dtype.type(negative_slope)),
        samples=_samples(kinks=(0.0,), seed="leaky")
        + _samples(kinks=(0.0,), seed="leaky2", negative_slope=0.2)[1:3]
        + [_edge(-INF, INF, NAN, 0.0)],
        family=FAMILY,
        torch_ref=_torch_f("leaky_relu"),
    ),
    OpSpec(
        name="elu",
        fn=nb.elu,
        ref=_f64(lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))),
        samples=_samples(-3.0, 3.0, kinks=(0.0,), seed="elu")
        + _samples(-3.0, 3.0, kinks=(0.0,), seed="elu2", alpha=0.5)[1:3]
        + [_edge(-100.0, 100.0, -INF, NAN, 0.0)],
        family=FAMILY,
        torch_ref=_torch_f("elu"),
    ),
    OpSpec(
        name="gelu",
        fn=nb.gelu,
        ref=_f64(_gelu),
        samples=_samples(-4.0, 4.0, seed="gelu")
        + _samples(-4.0, 4.0, seed="gelu-tanh", approximate="tanh")[:4]
        + [_edge(-10.0, 10.0, NAN), _edge(-10.0, 10.0, NAN, label="edge tanh", approximate="tanh")],
        family=FAMILY,
        torch_ref=_torch_f("gelu"),
        dtypes=("float64", "float16", "bfloat16"),
    ),
    _act(
        "silu",
        _f64(lambda x: x * _sigmoid(x)),
        -4.0,
        4.0,
        extra=(_edge(-100.0, 100.0, 0.0),),
        torch_ref=_torch_f("silu"),
    ),
    _act(
        "mish",
        _f64(lambda x: x * np.tanh(np.logaddexp(0.0, x))),
        -3.0,
        3.0,
        extra=(_edge(-100.0, 100.0, 30.0, 0.0),),
        torch_ref=_torch_f("mish"),
    ),
    OpSpec(
        name="softplus",
        fn=nb.softplus,
        ref=_f64(_softplus),
        samples=_samples(-3.0, 3.0, seed="softplus")
        + _samples(-3.0, 3.0, kinks=(1.5,), seed="softplus2", beta=2.0, threshold=3.0)[1:4]
        + [_edge(100.0, -100.0, 20.5, 19.5, -1000.0, label="stability")],
        family=FAMILY,
        torch_ref=_torch_f("softplus"),
        dtypes=("float64", "float16", "bfloat16"),
    ),
    _act(
        "logsigmoid",
        _f64(_logsigmoid),
        -4.0,
        4.0,
        extra=(_edge(-100.0, 100.0, -1000.0, 0.0, label="stability"),),
        torch_ref=_torch_f("logsigmoid"),
    ),
    _act(
        "hardsigmoid",
        _f64(lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0),
        -5.0,
        5.0,
        kinks=(-3.0, 3.0),
        extra=(_edge(-3.0, 3.0, -INF, INF, NAN),),
        torch_ref=_torch_f("hardsigmoid"),
    ),
    _act(
        "hardswish",
        _f64(lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0),
        -5.0,
        5.0,
        kinks=(-3.0, 3.0),
        extra=(_edge(-3.0, 3.0, -100.0, 100.0),),
        torch_ref=_torch_f("hardswish"),
    ),
]
