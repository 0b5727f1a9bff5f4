"""The op conformance registry: every public op of `nabla.ops`, with sample inputs.

One module per op family adds its entries to `REGISTRY` (a list of `OpSpec`). `NOT_OPS`
lists public names that are not ops (data constructors, helpers) and so have no entry.
"""

from __future__ import annotations

from . import (
    activations,
    attention,
    bessel,
    binary,
    bits,
    cast,
    control_flow,
    conv,
    creation,
    cumulative,
    custom,
    gather_scatter,
    indexing,
    linalg,
    linalg_host,
    normalization,
    orthogonal_polynomials,
    reduction,
    sorting,
    special,
    statistics,
    unary,
    view,
)
from .spec import OpSpec, Sample

FAMILY_MODULES = (
    activations, attention, bessel, binary, bits, cast, control_flow, conv, creation, cumulative, custom, gather_scatter, indexing, linalg, linalg_host,
    normalization, orthogonal_polynomials, reduction, sorting, special, statistics, unary, view,
)  # fmt: skip
REGISTRY: list[OpSpec] = [spec for module in FAMILY_MODULES for spec in module.SPECS]

# Public names of nabla.ops that are not ops: data constructors and pure helpers.
NOT_OPS = {
    "Operation", "tensor", "asarray", "from_numpy", "manual_seed", "Generator", "default_generator", "broadcast_shapes",
    "result_type",
}  # fmt: skip
# Transforms' own primitives, not public ops: vmap's (nabla/ops/batching.py; tests/test_vmap.py
# checks their values and VJP/JVP rules through vmap) and `call`, a compiled sub-program run as
# one op (nabla/ops/call.py; tests/test_compile_call.py checks it against op-by-op recording).
TRANSFORM_OPS = {"move_to_batch", "move_from_batch", "broadcast_batch", "call"}
# Autodiff's own identities, never called by name: `rebind` (an in-place write's value in a
# non-leaf's place) and `detach_trace` (grad's results); tests/test_inplace_autograd.py checks them.
TRANSFORM_OPS |= {"rebind", "detach_trace"}
# The communication family (nabla/ops/communication.py, and `window` in nabla/ops/spmd.py) needs
# a mesh and, for collectives, a shard_map; tests/test_sharding.py checks every one of them
# (values, gradients, errors) against the unsharded computation, and test_sharding_max.py
# compiles them on MAX.
SHARDING_OPS = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute", "broadcast", "axis_index",
    "shard", "reshard", "unshard", "shard_slice", "relabel", "window",
}  # fmt: skip
NOT_OPS |= {"DeviceMesh", "DimSpec", "P", "ShardingSpec"}  # layout types, not ops

# MAX conformance: families compiled together, one graph (one compile) per group.
MAX_GROUPS = {
    "elementwise": ("unary", "activations", "binary", "cast"),
    "reductions": ("reduction", "sorting", "linalg", "normalization"),
    "shapes": ("view", "indexing", "creation"),
    "nn": ("conv", "control_flow", "custom"),
    "attention": ("attention",),
    "special": ("special",),
    "bits": ("bits",),
    "bessel": ("special_bessel",),
}

__all__ = ["FAMILY_MODULES", "MAX_GROUPS", "NOT_OPS", "SHARDING_OPS", "TRANSFORM_OPS", "REGISTRY", "OpSpec", "Sample"]
