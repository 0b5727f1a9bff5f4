"""torch.func's names for nabla's transforms: `nabla.func.vmap`, `grad`, `grad_and_value`,
`jacrev`, `jacfwd`, `hessian`, `vjp`, `jvp`, `linearize`, `stack_module_state` and
`functional_call`, which is `nabla_nn.utils.stateless.functional_call`: modules are the layer
above this one, so nabla_nn registers it here when it is imported.

The transforms take torch.func's keywords and defaults (`vmap(f, in_dims, out_dims,
randomness="error", chunk_size=None)`, `jacfwd(..., randomness="error")`, `jvp(...,
strict=False)`); `nabla.vmap`, `nabla.jacfwd`, ... keep JAX's (`in_axes`, `out_axes`).

Example:
    >>> from nabla import func
    >>> func.grad_and_value(lambda x: (x * x).sum())(nabla.tensor([1.0, 2.0]))[0].tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .ops.shape import stack
from .transforms.grad import grad, value_and_grad, vjp
from .transforms.grad import jvp as _jax_jvp
from .transforms.jacobians import jacfwd as _jax_jacfwd
from .transforms.jacobians import jacrev as _jax_jacrev
from .transforms.jacobians import linearize
from .transforms.vmap import vmap as _jax_vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "vjp",
    "vmap",
]

_MODULE_LAYER: dict[str, Callable] = {}  # what nabla_nn registers (`register_functional_call`)


def register_functional_call(fn: Callable) -> None:
    """Called by nabla_nn on import: the implementation of `functional_call`."""
    _MODULE_LAYER["functional_call"] = fn


def functional_call(
    module: Any,
    parameter_and_buffer_dicts: Any = None,
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """torch.func.functional_call: `module(*args, **kwargs)` with its named parameters and
    buffers replaced by the given tensors (see `nabla_nn.utils.stateless.functional_call`).

    Example:
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> g = nabla.func.grad(lambda p: nabla.func.functional_call(model, p, (x,)).sum())(params)
    """
    impl = _MODULE_LAYER.get("functional_call")
    if impl is None:
        raise RuntimeError("nabla.func.functional_call: modules come from nabla_nn; import nabla_nn first")
    return impl(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict)


def grad_and_value(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: `(gradient, value)` (with `has_aux`: `(gradient, (value, aux))`),
    the reverse of `value_and_grad`'s order."""
    both = value_and_grad(fn, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> tuple:
        value, gradient = both(*args, **kwargs)
        return gradient, value

    return wrapped


def _check_chunk_size(chunk_size: int | None, where: str) -> None:
    """torch's check: `chunk_size` is None or a positive int."""
    if chunk_size is None:
        return
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size <= 0:
        raise ValueError(f"{where}: chunk_size should be None or greater than 0. (got {chunk_size!r})")


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """torch.func.vmap: `nabla.vmap(func, in_axes=in_dims, out_axes=out_dims, randomness=...)`.

    `chunk_size` is checked (None or a positive int) and otherwise has no effect: in torch it
    only bounds memory by running the batch `chunk_size` elements at a time, and the whole
    batch at once gives the same values (random draws with randomness="different" are
    independent either way).

    Args:
        func: the function to vectorize; takes and returns pytrees of Tensors.
        in_dims: the mapped dim of each positional argument: an int, None (not mapped), or a
            pytree prefix of the arguments with ints/None as leaves.
        out_dims: where the mapped dim goes in each output (same forms).
        randomness: "error" (torch's default: a random op inside `func` raises),
            "different" (independent draws per batch element) or "same".
        chunk_size: accepted for torch's signature (see above).

    Example:
        >>> per_sample = nabla.func.vmap(nabla.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    """
    _check_chunk_size(chunk_size, "vmap")
    return _jax_vmap(func, in_axes=in_dims, out_axes=out_dims, randomness=randomness)


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """torch.func.jacrev: the Jacobian of `func` by reverse mode (`nabla.jacrev`).

    `chunk_size` (checked: None or a positive int) and `_preallocate_and_copy` are torch's
    memory knobs and do not change the result; all rows are computed in one vmap.

    Args:
        func: the function; returns a Tensor or a pytree of Tensors (`(output, aux)` with has_aux).
        argnums: the positional argument(s) to differentiate.
        has_aux: `func` returns `(output, aux)`; the result is then `(jacobian, aux)`.
        chunk_size: see above.
        _preallocate_and_copy: see above.

    Example:
        >>> nabla.func.jacrev(nabla.sin)(nabla.zeros(3)).shape
        (3, 3)
    """
    _check_chunk_size(chunk_size, "jacrev")
    return _jax_jacrev(func, argnums, has_aux)


def jacfwd(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """torch.func.jacfwd: the Jacobian of `func` by forward mode (`nabla.jacfwd`), whose
    columns are computed under a vmap with the given `randomness`.

    Args:
        func: the function; returns a Tensor or a pytree of Tensors (`(output, aux)` with has_aux).
        argnums: the positional argument(s) to differentiate.
        has_aux: `func` returns `(output, aux)`; the result is then `(jacobian, aux)`.
        randomness: "error" (torch's default: a random op inside `func` raises), "same"
            (every column sees the same draws, one evaluation of `func`) or "different".

    Example:
        >>> nabla.func.jacfwd(lambda x: x * x)(nabla.tensor([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    return _jax_jacfwd(func, argnums, has_aux, randomness=randomness)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """torch.func.hessian: `jacfwd(jacrev(func, argnums), argnums)`, with torch's defaults
    (a random op inside `func` raises, as torch's jacfwd's randomness="error").

    Args:
        func: a function returning a scalar Tensor.
        argnums: the positional argument(s) to differentiate.

    Example:
        >>> nabla.func.hessian(lambda x: (x**3).sum())(nabla.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(
    func: Callable,
    primals: Any,
    tangents: Any,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple:
    """torch.func.jvp: `(func(*primals), J @ tangents)` (plus `aux` with has_aux).

    Args:
        func: the function; its positional arguments are the primals.
        primals: a tuple of arguments (pytrees of Tensors).
        tangents: a tuple of the same structure, shapes and dtypes.
        strict: raise, as torch does, when an output does not depend on the primals (its
            tangent would be zeros).
        has_aux: `func` returns `(output, aux)`; the result is then `(output, tangent, aux)`.

    Example:
        >>> y, dy = nabla.func.jvp(nabla.sin, (x,), (nabla.ones_like(x),))   # dy = cos(x)
    """
    return _jax_jvp(func, primals, tangents, has_aux=has_aux, strict=strict)


def stack_module_state(models: Sequence[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """torch.func.stack_module_state: the parameters and the buffers of same-structured modules,
    each stacked along a new leading dim, for a vmap over `functional_call` (model ensembling).

    Returns `(params, buffers)`, dicts in the modules' `named_parameters()` / `named_buffers()`
    order. A stacked parameter is a new leaf that requires grad (when the modules' parameters
    do); buffers and frozen parameters are stacked without grad.

    torch's recipe takes its functional base from `copy.deepcopy(models[0]).to("meta")`;
    nabla has no meta device (`Module.to("meta")` raises), so keep the deepcopy of a real
    module as the base: `functional_call` replaces its tensors with the given ones anyway.

    Args:
        models: a non-empty sequence (or ModuleList) of modules of one class and structure,
            all in training mode or all in eval mode.

    Example:
        >>> params, buffers = nabla.func.stack_module_state(models)
        >>> base = copy.deepcopy(models[0])          # (torch: `.to("meta")`)
        >>> fmodel = lambda p, b, x: nabla.func.functional_call(base, (p, b), (x,))
        >>> out = nabla.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    """
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        modes = ["train" if m.training else "eval" for m in models]
        raise RuntimeError(f"stack_module_state: Expected all models to have the same training/eval mode, got {modes}.")
    kind = type(models[0])
    for i, m in enumerate(models):
        if type(m) is not kind:
            raise RuntimeError(
                "stack_module_state: Expected all models to be of the same class, "
                f"got {kind.__name__} (models[0]) and {type(m).__name__} (models[{i}])."
            )
    params = _stack_named([dict(m.named_parameters()) for m in models], "parameters")
    buffers = _stack_named([dict(m.named_buffers()) for m in models], "buffers")
    return params, buffers


def _stack_named(per_model: list[dict[str, Any]], what: str) -> dict[str, Any]:
    """Stack each name's tensors across models (in models[0]'s order), checking the models
    have the same names and shapes."""
    first = per_model[0]
    for i, named in enumerate(per_model[1:], start=1):
        if list(named) != list(first):
            raise RuntimeError(
                f"stack_module_state: Expected all models to have the same {what}, got "
                f"{list(first)} (models[0]) and {list(named)} (models[{i}])."
            )
    return {name: _stacked_leaf([named[name] for named in per_model], name) for name in first}


def _stacked_leaf(tensors: list[Any], name: str) -> Any:
    """torch's construct_stacked_leaf: the stack, a new leaf requiring grad if all do."""
    wants = {bool(t.requires_grad) for t in tensors}
    if len(wants) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(
            f"stack_module_state: Expected {name} to have one shape in every model, got {sorted(shapes)}"
        )
    result = stack([t.detach() for t in tensors])
    return result.requires_grad_() if wants == {True} else result
