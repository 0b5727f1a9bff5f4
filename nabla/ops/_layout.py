"""NHWC twins: a convolution network's activations stay in MAX's layout inside one graph build.

Tensors are NCHW, as in PyTorch; MAX's conv2d, conv2d_transpose and the fast pooling forms
work on NHWC. A permute costs about 1 ns an element on CPU (1.7 ms for W2's 64x32x28x28
activation, twice an elementwise op on it), so permuting in and out at every convolution cost
W2 more than its elementwise ops. Instead:

    to_nchw(y_nhwc)  a lowering that has an NHWC result returns its NCHW permute and remembers
                     the NHWC value as that value's twin
    nhwc(v)          a lowering that wants NHWC asks for v's twin: the remembered one, or one
                     re-emitted through the elementwise ops, fills and broadcasts v was computed
                     by (each on its inputs' twins); None when v has no permute-free NHWC form
    as_nhwc(v)       the twin, else the permute

A value's NCHW form that nothing reads is dead code, which MAX drops. Twins live as long as the
MAX graph being built (`lowering_scratch`); outside a build `nhwc` finds none.
"""

from __future__ import annotations

from typing import Any

from max.graph import ops

from ..core.graph.executors import lowering_scratch, producer
from .base import shape_of

NHWC = (0, 2, 3, 1)  # an NCHW value's axes in NHWC order
NCHW = (0, 3, 1, 2)
_MAX_DEPTH = 64  # elementwise ops re-emitted on twins, at most, behind one value


class _Stats:
    hits = 0  # `nhwc` calls answered with a twin: permutes not emitted (tests read it)


STATS = _Stats()


def _twins() -> dict | None:
    scratch = lowering_scratch()
    return None if scratch is None else scratch.setdefault("nhwc", {})


def to_nchw(y: Any) -> Any:
    """MAX: the NCHW permute of the NHWC value `y`, with `y` remembered as its twin."""
    out = ops.permute(y, list(NCHW))
    twins = _twins()
    if twins is not None:
        twins[id(out)] = (out, y)  # out kept: its id stays unique
    return out


def nhwc(v: Any, depth: int = 0) -> Any | None:
    """MAX: the NHWC form of the 4-D NCHW value `v` without a permute of `v`, or None."""
    twins = _twins()
    if twins is None or v.rank != 4:
        return None
    hit = twins.get(id(v))
    if hit is not None and hit[0] is v:
        twin = hit[1]
    else:
        twin = _rebuild(v, depth) if depth < _MAX_DEPTH else None
        twins[id(v)] = (v, twin)  # also a miss: each value is looked into once
    STATS.hits += twin is not None and depth == 0
    return twin


def as_nhwc(v: Any) -> Any:
    """MAX: the NHWC form of the 4-D NCHW value `v`: its twin, else a permute."""
    twin = nhwc(v)
    return ops.permute(v, list(NHWC)) if twin is None else twin


def _permuted(shape: tuple) -> tuple:
    return tuple(shape[a] for a in NHWC)


def _rebuild(v: Any, depth: int) -> Any | None:
    """`v`'s computation re-emitted in NHWC, where it is elementwise, a fill or a broadcast."""
    found = producer(v)
    if found is None:
        return None
    step, index, args = found
    op, kwargs = step.op, step.kwargs
    if op.name == "full":
        return op.kernel(**{**kwargs, "shape": _permuted(kwargs["shape"])})
    if op.name == "broadcast_to":  # its input is smaller than v: permuting it is cheap
        x = ops.reshape(args[0], kwargs["expand"]) if kwargs.get("expand") else args[0]
        x = ops.reshape(x, (1,) * (4 - x.rank) + shape_of(x))
        return ops.broadcast_to(ops.permute(x, list(NHWC)), _permuted(kwargs["shape"]))
    if getattr(op, "sharding_rule", None) != "elementwise" or getattr(op, "position_dependent", False):
        return None
    if any(a.rank != 4 or shape_of(a) != shape_of(v) for a in args):
        return None
    twins = [nhwc(a, depth + 1) for a in args]
    if any(t is None for t in twins):
        return None
    out = op.kernel(*twins, **kwargs)
    return out[index] if isinstance(out, tuple | list) else out
