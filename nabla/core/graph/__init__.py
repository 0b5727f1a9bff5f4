"""Level 1 of the core: OpNode, Programs, executors and the ComputeGraph engine."""

from .engine import (
    GRAPH,
    CachedModel,
    CacheInfo,
    ComputeGraph,
    RecompileError,
    cache_info,
    cached_models,
    clear_model_store,
    model_store_info,
    no_recompile,
    set_cache_limit,
    set_model_store,
    wait_for_compiles,
)
from .executors import ExecutorStats, storage_to_buffer, storage_to_numpy
from .opnode import OpNode, freeze
from .tracing import ConcretizationError

__all__ = [
    "GRAPH",
    "CacheInfo",
    "CachedModel",
    "ComputeGraph",
    "ConcretizationError",
    "ExecutorStats",
    "OpNode",
    "RecompileError",
    "cache_info",
    "cached_models",
    "clear_model_store",
    "freeze",
    "model_store_info",
    "no_recompile",
    "set_cache_limit",
    "set_model_store",
    "storage_to_buffer",
    "storage_to_numpy",
    "wait_for_compiles",
]
