"""SPMD sharding: meshes, layouts and the factor-based propagation of layouts through ops.

Level 4 of the core (common < graph < tensor < sharding < autograd): pure layout math, no
ops. The ops layer (`nabla/ops/communication.py`) turns its decisions into collectives.
"""

from .mesh import DeviceMesh
from .propagation import OpShardingRule, Propagation, propagate
from .reshard import ReshardStep, plan_reshard
from .spec import PARTIAL_OPS, DimSpec, P, ShardingSpec, as_spec, split_range

__all__ = [
    "PARTIAL_OPS",
    "DeviceMesh",
    "DimSpec",
    "OpShardingRule",
    "P",
    "Propagation",
    "ReshardStep",
    "ShardingSpec",
    "as_spec",
    "plan_reshard",
    "propagate",
    "split_range",
]
