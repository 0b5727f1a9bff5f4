"""Level 0 of the core: dtypes, configuration, autodiff modes, pytrees. Depends on nothing in nabla."""

from . import dtypes
from .config import CONFIG, get_executor, set_auto_dynamic, set_eager_max_graph, set_executor, set_log_recompiles
from .context import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .pytree import (
    PyTreeDef,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = [
    "CONFIG",
    "PyTreeDef",
    "dtypes",
    "enable_grad",
    "get_executor",
    "is_grad_enabled",
    "no_grad",
    "register_pytree_node",
    "set_auto_dynamic",
    "set_eager_max_graph",
    "set_executor",
    "set_grad_enabled",
    "set_log_recompiles",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]
