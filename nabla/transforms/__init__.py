"""Function transforms: grad, value_and_grad, vjp, jvp, vmap, jacrev, jacfwd, hessian, linearize, compile,
shard_map."""

from .compile import CompiledFunction, CompileStats, compile
from .grad import grad, jvp, value_and_grad, vjp
from .jacobians import hessian, jacfwd, jacrev, linearize
from .shard_map import shard_map
from .trace import TracedGraph, trace
from .vmap import vmap

__all__ = [
    "CompileStats",
    "CompiledFunction",
    "TracedGraph",
    "compile",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "shard_map",
    "trace",
    "value_and_grad",
    "vjp",
    "vmap",
]
