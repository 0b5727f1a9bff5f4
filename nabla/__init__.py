"""Nabla: a lazy tensor core that compiles to Modular's MAX engine.

Operations return promise tensors at once (shape and dtype known); everything pending is
computed as one graph when a value is needed, and a graph of the same structure is compiled
only once.

Example:
    >>> import nabla as nb
    >>> x = nb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> loss = (x @ x).relu().sum()
    >>> loss.backward()
    >>> x.grad.shape
    (2, 2)
"""

from . import amp, autograd, core, distributions, func, jit, linalg, ops, random, sparse, special, testing, transforms
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .core.common import (
    PyTreeDef,
    enable_grad,
    get_executor,
    is_grad_enabled,
    no_grad,
    register_pytree_node,
    set_auto_dynamic,
    set_eager_max_graph,
    set_executor,
    set_grad_enabled,
    set_log_recompiles,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from .core.common.dtypes import (
    SUPPORTED_DTYPES,
    bfloat16,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    uint8,
)
from .core.common.dtypes import bool_ as bool_
from .core.graph import (
    GRAPH,
    CachedModel,
    CacheInfo,
    ConcretizationError,
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
from .core.tensor import Device, Size, Tensor
from .core.tensor.printing import set_printoptions
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .sparse import sparse_coo_tensor, sparse_csr_tensor
from .torch_calculus import *  # noqa: F403
from .torch_calculus import __all__ as _torch_calculus_all
from .torch_distances import *  # noqa: F403
from .torch_distances import __all__ as _torch_distances_all
from .torch_foreach import *  # noqa: F403
from .torch_foreach import __all__ as _torch_foreach_all
from .torch_functions import *  # noqa: F403
from .torch_functions import __all__ as _torch_functions_all
from .torch_linalg import *  # noqa: F403
from .torch_linalg import __all__ as _torch_linalg_all
from .torch_names import *  # noqa: F403
from .torch_names import __all__ as _torch_names_all
from .torch_state import *  # noqa: F403
from .torch_state import __all__ as _torch_state_all
from .transforms import (
    CompiledFunction,
    CompileStats,
    compile,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    shard_map,
    trace,
    value_and_grad,
    vjp,
    vmap,
)

__version__ = "0.1.0"


def evaluate(*tensors: Tensor) -> None:
    """Compute the given tensors (and everything else pending) as one graph."""
    GRAPH.evaluate([t._impl for t in tensors])


def clear_cache() -> None:
    """Drop every compiled model held in memory (MAX's disk cache is untouched)."""
    GRAPH.clear_cache()


def reset_cache_info() -> None:
    """Zero the counters reported by `cache_info()`."""
    GRAPH.reset_counters()


__all__ = [
    "SUPPORTED_DTYPES",
    "CacheInfo",
    "CachedModel",
    "CompileStats",
    "CompiledFunction",
    "ConcretizationError",
    "Device",
    "PyTreeDef",
    "RecompileError",
    "Size",
    "Tensor",
    "amp",
    "autocast",
    "bfloat16",
    "bool_",
    "cache_info",
    "cached_models",
    "clear_cache",
    "clear_model_store",
    "compile",
    "core",
    "distributions",
    "enable_grad",
    "func",
    "evaluate",
    "float16",
    "float32",
    "float64",
    "get_autocast_dtype",
    "get_executor",
    "grad",
    "hessian",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_autocast_enabled",
    "is_grad_enabled",
    "jacfwd",
    "jacrev",
    "jvp",
    "linalg",
    "linearize",
    "model_store_info",
    "no_grad",
    "no_recompile",
    "ops",
    "promote_types",
    "register_pytree_node",
    "reset_cache_info",
    "set_auto_dynamic",
    "special",
    "set_cache_limit",
    "set_eager_max_graph",
    "set_executor",
    "set_printoptions",
    "sparse_coo_tensor",
    "sparse_csr_tensor",
    "set_grad_enabled",
    "set_log_recompiles",
    "set_model_store",
    "trace",
    "transforms",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "uint8",
    "value_and_grad",
    "vjp",
    "vmap",
    "wait_for_compiles",
    *_ops_all,
    *_torch_calculus_all,
    *_torch_distances_all,
    *_torch_foreach_all,
    *_torch_functions_all,
    *_torch_linalg_all,
    *_torch_state_all,
    *_torch_names_all,
]
