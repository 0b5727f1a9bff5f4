"""The lazy tensor core, in strict import levels: common < graph < tensor < sharding < autograd."""

from . import autograd, common, graph, sharding, tensor
from .graph import GRAPH, CacheInfo, ComputeGraph, OpNode, RecompileError, cache_info, no_recompile
from .tensor import Device, Tensor, TensorImpl

__all__ = [
    "GRAPH",
    "CacheInfo",
    "ComputeGraph",
    "Device",
    "OpNode",
    "RecompileError",
    "Tensor",
    "TensorImpl",
    "autograd",
    "cache_info",
    "common",
    "graph",
    "no_recompile",
    "sharding",
    "tensor",
]
