"""Function transforms: grad, value_and_grad, vjp, jvp, vmap, jacrev, jacfwd, hessian, linearize, compile."""

from .compile import CompiledFunction, CompileStats, compile
from .grad import grad, jvp, value_and_grad, vjp
from .jacobians import hessian, jacfwd, jacrev, linearize
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
    "trace",
    "value_and_grad",
    "vjp",
    "vmap",
]
