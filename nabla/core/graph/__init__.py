"""Level 1 of the core: OpNode, Programs, executors and the ComputeGraph engine."""

from .engine import GRAPH, CacheInfo, ComputeGraph, ExecutorStats, RecompileError, cache_info, no_recompile
from .executors import storage_to_buffer, storage_to_numpy
from .opnode import OpNode, freeze
from .tracing import ConcretizationError

__all__ = [
    "GRAPH",
    "CacheInfo",
    "ComputeGraph",
    "ConcretizationError",
    "ExecutorStats",
    "OpNode",
    "RecompileError",
    "cache_info",
    "freeze",
    "no_recompile",
    "storage_to_buffer",
    "storage_to_numpy",
]
