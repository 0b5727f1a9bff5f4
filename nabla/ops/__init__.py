"""The op library: one module per op family, each op's forward, MAX lowering, NumPy kernel,
VJP and JVP side by side."""

from . import base, binary, cast, control_flow, creation, linalg, reduction, unary, view
from .base import Operation
from .binary import (
    add,
    div,
    eq,
    equal,
    ge,
    greater,
    greater_equal,
    gt,
    le,
    less,
    less_equal,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    not_equal,
    pow,
    sub,
)
from .cast import astype, cast
from .control_flow import where
from .creation import (
    arange,
    asarray,
    from_numpy,
    full,
    full_like,
    manual_seed,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    tensor,
    uniform,
    zeros,
    zeros_like,
)
from .linalg import matmul
from .reduction import amax, amin, argmax, argmin, max, mean, min, sum
from .unary import exp, log, neg, negative, relu, sigmoid, sqrt, tanh
from .view import (
    broadcast_shapes,
    broadcast_to,
    detach,
    expand_dims,
    flatten,
    identity,
    permute,
    reshape,
    squeeze,
    swapaxes,
    transpose,
    unsqueeze,
    view,
)

__all__ = [n for n in dir() if not n.startswith("_")]
