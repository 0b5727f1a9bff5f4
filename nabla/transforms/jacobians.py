"""Jacobians and Hessians: jacrev (vmap of vjp over output basis vectors), jacfwd (vmap of jvp
over input basis vectors), hessian (jacfwd of jacrev) and linearize.

Every function here is built from vjp, jvp and vmap, so it composes with them (and with
`Tensor.backward()`): jacrev of a vmapped function, vmap of a jacobian, and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.common.pytree import leaf_paths, tree_flatten, tree_unflatten
from ..core.tensor.tensor import Tensor
from ..ops.creation import tensor
from ..ops.rearrange import moveaxis
from ..ops.view import reshape
from .grad import _vjp, argnums_tuple, jvp
from .vmap import vmap


def _flat_inputs(args: tuple, nums: tuple[int, ...], where: str) -> tuple[list[Tensor], list, list[str]]:
    """The leaves of the differentiated arguments (as float Tensors), their treedefs and names."""
    flat, defs, names = [], [], []
    for n in nums:
        leaves, d = tree_flatten(args[n])
        for x, path in zip(leaves, leaf_paths(args[n]), strict=True):
            x = x if isinstance(x, Tensor) else tensor(x)
            if not _dt.is_float(x.dtype):
                raise TypeError(
                    f"{where}: can only differentiate with respect to floating-point inputs, "
                    f"but args[{n}]{path} has dtype {x.dtype.name}"
                )
            flat.append(x)
            names.append(f"args[{n}]{path}")
        defs.append(d)
    return flat, defs, names


def _with_args(fn: Callable, args: tuple, kwargs: dict, nums: tuple[int, ...], defs: list) -> Callable:
    """`fn` as a function of the flat leaves of the arguments in `nums`."""

    def flat_fn(*leaves: Tensor) -> Any:
        full = list(args)
        start = 0
        for n, d in zip(nums, defs, strict=True):
            full[n] = tree_unflatten(d, list(leaves[start : start + d.num_leaves]))
            start += d.num_leaves
        return fn(*full, **kwargs)

    return flat_fn


def _basis(sizes: list[int], like: list[Tensor]) -> list[Tensor]:
    """Rows of the identity of size sum(sizes), split into one block per leaf: block k has shape
    (total, *shapes[k])."""
    eye = np.eye(sum(sizes), dtype=np.float64)
    blocks, start = [], 0
    for n, x in zip(sizes, like, strict=True):
        blocks.append(tensor(eye[:, start : start + n].reshape((sum(sizes), *x.shape)), x.dtype))
        start += n
    return blocks


def _regroup(per_out: list[list[Tensor]], out_def: Any, in_defs: list, single: bool) -> Any:
    """per_out[k][i]: Jacobian block of output leaf k w.r.t. input leaf i -> pytree: outputs
    outside, then (for several argnums) a tuple over argnums, each with its argument's structure."""
    result = []
    for blocks in per_out:
        start, per_arg = 0, []
        for d in in_defs:
            per_arg.append(tree_unflatten(d, blocks[start : start + d.num_leaves]))
            start += d.num_leaves
        result.append(per_arg[0] if single else tuple(per_arg))
    return tree_unflatten(out_def, result)


def jacrev(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of `fn` by reverse mode: one VJP per output element, vectorized with vmap.

    The result for an output of shape `S_out` and an input of shape `S_in` has shape
    `S_out + S_in`. Pytrees of outputs map to pytrees of Jacobians; a tuple `argnums` gives a
    tuple per output (JAX's layout).

    Example:
        >>> J = nabla.jacrev(lambda x: nabla.sin(x) * 2)(nabla.ones(3))
        >>> J.shape
        (3, 3)
    """

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = argnums_tuple(argnums, len(args), "jacrev")
        flat, defs, names = _flat_inputs(args, nums, "jacrev")
        flat_fn = _with_args(fn, args, kwargs, nums, defs)
        result = _vjp(flat_fn, tuple(flat), has_aux, "jacrev", names)
        out = result[0]
        out_leaves, out_def = tree_flatten(out)
        sizes = [o.numel() for o in out_leaves]
        shapes = [o.shape for o in out_leaves]
        basis = _basis(sizes, out_leaves)

        def pull(*cots: Tensor) -> tuple:
            # The one forward's pullback, so fn runs once (its random draws and side effects
            # happen once, as in torch.func and JAX); it traces fn again itself only if fn has
            # vmaps of its own, whose levels would collide with this one.
            return result[1](tree_unflatten(out_def, list(cots)))

        grads = vmap(pull, randomness="same")(*basis)  # per input leaf: (total, *S_in)
        per_out, start = [], 0
        for n, shape in zip(sizes, shapes, strict=True):
            per_out.append([reshape(g[start : start + n], (*shape, *g.shape[1:])) for g in grads])
            start += n
        jac = _regroup(per_out, out_def, defs, isinstance(argnums, int))
        return (jac, result[2]) if has_aux else jac

    return wrapped


def jacfwd(
    fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *, randomness: str = "same"
) -> Callable:
    """The Jacobian of `fn` by forward mode: one JVP per input element, vectorized with vmap.

    Same result layout as `jacrev` (`S_out + S_in` per output and input); cheaper when inputs
    are smaller than outputs. `randomness` is that vmap's: "same" (every column sees the same
    random draws, as one evaluation of `fn`), "different", or "error" (torch.func.jacfwd's
    default: a random op in `fn` raises).

    Example:
        >>> nabla.jacfwd(lambda x: x * x)(nabla.tensor([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    if randomness not in ("different", "same", "error"):
        raise ValueError(f"jacfwd: randomness must be 'different', 'same' or 'error', got {randomness!r}")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = argnums_tuple(argnums, len(args), "jacfwd")
        flat, defs, _ = _flat_inputs(args, nums, "jacfwd")
        flat_fn = _with_args(fn, args, kwargs, nums, defs)
        sizes = [x.numel() for x in flat]
        basis = _basis(sizes, flat)

        def push(*tangents: Tensor) -> Any:
            out = jvp(flat_fn, tuple(flat), tangents, has_aux=has_aux)
            return (out[1], out[2]) if has_aux else out[1]

        # fn runs once, unbatched, inside the vmap: with randomness="same" every column (and
        # aux) sees the same random draws, as one evaluation of fn does
        pushed = vmap(push, out_axes=(0, None) if has_aux else 0, randomness=randomness)(*basis)
        tangents, aux = pushed if has_aux else (pushed, None)
        tan_leaves, out_def = tree_flatten(tangents)
        per_out = []
        for t in tan_leaves:  # (total, *S_out)
            out_shape = t.shape[1:]
            t = moveaxis(t, 0, -1)
            blocks, start = [], 0
            for x, n in zip(flat, sizes, strict=True):
                blocks.append(reshape(t[..., start : start + n], (*out_shape, *x.shape)))
                start += n
            per_out.append(blocks)
        jac = _regroup(per_out, out_def, defs, isinstance(argnums, int))
        return (jac, aux) if has_aux else jac

    return wrapped


def hessian(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Hessian of scalar `fn`: `jacfwd(jacrev(fn))` (forward-over-reverse), shape `S_in + S_in`.

    Example:
        >>> H = nabla.hessian(lambda x: (x ** 3).sum())(nabla.tensor([1.0, 2.0]))
        >>> H.numpy()   # diag(6 x)
        array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """
    return jacfwd(jacrev(fn, argnums), argnums)


def linearize(fn: Callable, *primals: Any) -> tuple[Any, Callable]:
    """Return `(fn(*primals), f_jvp)` where `f_jvp(*tangents)` is the JVP at `primals`.

    Each call of `f_jvp` records the forward computation again (it is lazy and cached as one
    graph structure, so a repeated call compiles nothing new).
    """
    out = fn(*primals)

    def f_jvp(*tangents: Any) -> Any:
        return jvp(fn, primals, tangents)[1]

    return out, f_jvp
