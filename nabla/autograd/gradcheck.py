"""torch.autograd.gradcheck's checks (`nabla.autograd.gradcheck`, `gradgradcheck`): the
Jacobian nabla's autodiff gives a function is compared with central finite differences.

The numerical Jacobian perturbs one input element at a time by +-eps (in the input's dtype,
so float64 inputs are what make the check meaningful: others get torch's warning) and
evaluates the function twice; the analytical one is one vector-Jacobian product per output
element (`nabla.autograd.grad` with one-hot `grad_outputs`), all computed as one graph. They
must agree elementwise within `atol + rtol * |numerical|` (torch's `allclose`). Jacobians are
laid out as torch's: one row per input element, one column per output element.

Example:
    >>> x = nabla.tensor([1.0, 2.0], dtype=nabla.float64, requires_grad=True)
    >>> nabla.autograd.gradcheck(lambda t: (t**3).sum(), (x,))
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.autograd.engine import tensor_grad
from ..core.common import dtypes as _dt
from ..core.tensor import Tensor
from ..ops import tensor as _tensor
from ..ops import zeros_like
from ..transforms.grad import jvp as _jvp
from ..transforms.vmap import vmap

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """A gradient check failed (torch.autograd.gradcheck.GradcheckError)."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, list | tuple) else (x,)


def _differentiable(outputs: tuple) -> list[int]:
    """Positions of the outputs that carry autodiff history (torch's `_differentiable_outputs`)."""
    return [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]


def _check_inputs(inputs: tuple) -> list[int]:
    """Positions of the inputs to differentiate; torch's warning for those not in float64."""
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the them have "
            "requires_grad=True."
        )
    for i in wrt:
        if inputs[i].dtype != _dt.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or complex. This "
                "check will likely fail if all the inputs are not of double precision floating point or complex. ",
                UserWarning,
                stacklevel=3,
            )
    return wrt


def _values(func: Callable, inputs: tuple, picked: list[int]) -> list[np.ndarray]:
    """The outputs at `picked` as flat float64 arrays (computed together)."""
    outs = _as_tuple(func(*inputs))
    return [np.asarray(outs[i].numpy(), dtype=np.float64).reshape(-1) for i in picked]


def _numerical(func: Callable, inputs: tuple, wrt: list[int], picked: list[int], sizes: list[int], eps: float) -> list:
    """J[j][i]: (numel(input wrt[j]), numel(output picked[i])) by central differences. The
    perturbed inputs keep `requires_grad`, as torch's (a function may call autograd itself)."""
    jac = []
    for j in wrt:
        x = inputs[j]
        base = np.array(x.detach().numpy())
        blocks = [np.zeros((base.size, n)) for n in sizes]
        for k in range(base.size):
            cols = []
            for step in (eps, -eps):
                moved = base.copy()
                moved.flat[k] += step  # in the input's dtype, as torch perturbs the tensor itself
                arg = _tensor(moved, dtype=x.dtype, requires_grad=x.requires_grad)
                cols.append(_values(func, (*inputs[:j], arg, *inputs[j + 1 :]), picked))
            for block, plus, minus in zip(blocks, *cols, strict=True):
                block[k] = (plus - minus) / (2 * eps)
        jac.append(blocks)
    return jac


def _one_hot(out: Tensor, m: int) -> Tensor:
    rows = np.zeros(out.numel(), dtype=np.float64)
    rows[m] = 1.0
    return _tensor(rows.reshape(tuple(out.shape)), dtype=out.dtype)


def _analytical(outs: list[Tensor], xs: list[Tensor], check_grad_dtypes: bool) -> list:
    """J[j][i] from one backward per output element: row m of output i's Jacobian."""
    grads = []  # grads[i][m][j]: lazy, computed as one graph below
    for out in outs:
        rows = []
        for m in range(out.numel()):
            g = tensor_grad([out], xs, [_one_hot(out, m)], retain_graph=True, allow_unused=True)
            rows.append(g)
        grads.append(rows)
    for rows in grads:
        for g in rows:
            for x, gx in zip(xs, g, strict=True):
                if gx is not None and check_grad_dtypes and gx.dtype != x.dtype:
                    raise GradcheckError(f"Gradient has dtype mismatch: expected {x.dtype.name}, got {gx.dtype.name}")
    jac = [[np.zeros((x.numel(), out.numel())) for out in outs] for x in xs]
    for i, rows in enumerate(grads):
        for m, g in enumerate(rows):
            for j, gx in enumerate(g):
                if gx is not None:
                    jac[j][i][:, m] = np.asarray(gx.numpy(), dtype=np.float64).reshape(-1)
    return jac


def _forward_ad(func: Callable, inputs: tuple, wrt: list[int], picked: list[int], sizes: list[int]) -> list:
    """J[j][i] from one forward-mode product (nabla.jvp) per input element."""
    primals = [inputs[j].detach() for j in wrt]

    def fn(*xs: Tensor) -> tuple:
        args = list(inputs)
        for j, x in zip(wrt, xs, strict=True):
            args[j] = x
        outs = _as_tuple(func(*args))
        return tuple(outs[i] for i in picked)

    jac = []
    for j, p in enumerate(primals):
        blocks = [np.zeros((p.numel(), n)) for n in sizes]
        for k in range(p.numel()):
            tangents = [zeros_like(q) for q in primals]
            tangents[j] = _one_hot(p, k)
            _, dy = _jvp(fn, tuple(primals), tuple(tangents))
            for block, d in zip(blocks, dy, strict=True):
                block[k] = np.asarray(d.numpy(), dtype=np.float64).reshape(-1)
        jac.append(blocks)
    return jac


def _show(jac: np.ndarray, dtype: Any) -> str:
    return repr(_tensor(jac, dtype=dtype))


def _compare(
    numerical: list,
    analytical: list,
    wrt: list[int],
    picked: list[int],
    atol: float,
    rtol: float,
    what: str,
    dtype: Any,
) -> None:
    for j, (num_blocks, ana_blocks) in enumerate(zip(numerical, analytical, strict=True)):
        for i, (n, a) in enumerate(zip(num_blocks, ana_blocks, strict=True)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"{what} mismatch for output {picked[i]} with respect to input {wrt[j]},\n"
                    f"numerical:{_show(n, dtype)}\nanalytical:{_show(a, dtype)}\n"
                )


def _check_zero_grad_outputs(outs: list[Tensor], xs: list[Tensor]) -> None:
    """torch's check_undefined_grad, as nabla can ask it: zero `grad_outputs` must give zero
    (or no) gradients."""
    zeros = [zeros_like(o) for o in outs]
    for j, g in enumerate(tensor_grad(outs, xs, zeros, retain_graph=True, allow_unused=True)):
        if g is not None and np.any(np.asarray(g.numpy()) != 0):
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads: the gradient for input {j} is "
                "nonzero for zero grad_outputs"
            )


def _check_batched(outs: list[Tensor], xs: list[Tensor], analytical: list) -> None:
    """torch's check_batched_grad: the backward vmapped over one-hot cotangents (what
    `autograd.grad(..., is_grads_batched=True)` runs) gives the same rows."""
    for i, out in enumerate(outs):
        eye = _tensor(np.eye(out.numel()).reshape((out.numel(), *out.shape)), dtype=out.dtype)

        def rows(g: Tensor, out: Tensor = out) -> tuple:
            return tensor_grad([out], xs, [g], retain_graph=True, materialize_grads=True)

        try:
            batched = vmap(rows)(eye)
        except Exception as err:  # (torch reports any failure of the batched backward this way)
            raise GradcheckError(f"While computing batched gradients, got: {err}") from err
        for j, g in enumerate(batched):
            got = np.asarray(g.numpy(), np.float64).reshape(out.numel(), -1).T
            if not np.allclose(got, analytical[j][i]):
                raise GradcheckError(
                    f"Batched gradient mismatch for output {i} with respect to input {j},\n"
                    f"batched:{got!r}\nper row:{analytical[j][i]!r}\n"
                )


def gradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """torch.autograd.gradcheck: whether the gradients nabla computes for `func` at `inputs`
    match finite differences.

    Args:
        func: takes the inputs, returns a Tensor or a sequence of Tensors.
        inputs: a Tensor or a sequence (non-tensors are passed through); those with
            `requires_grad=True` are checked, and should be float64.
        eps: the finite-difference step.
        atol, rtol: the tolerances, elementwise: |analytical - numerical| <= atol + rtol * |numerical|.
        raise_exception: raise GradcheckError on failure (else return False).
        check_undefined_grad: zero grad_outputs must give zero gradients (nabla has no
            undefined gradients; this is what it can check of torch's).
        check_grad_dtypes: each gradient must have its input's dtype.
        check_batched_grad: the vmapped backward (`is_grads_batched=True`) must agree.
        check_forward_ad: also compare forward mode (`nabla.jvp`) with finite differences.
        check_backward_ad: compare reverse mode (the default).
        nondet_tol, check_batched_forward_grad, fast_mode, masked: accepted for torch's
            signature; nabla's backward is deterministic, and the slow (exact) mode always runs.

    Returns:
        True when every check passes.

    Example:
        >>> x = nabla.tensor([[0.5, -1.0]], dtype=nabla.float64, requires_grad=True)
        >>> nabla.autograd.gradcheck(nabla.sin, x)
        True
    """
    try:
        _gradcheck(
            func,
            _as_tuple(inputs),
            eps,
            atol,
            rtol,
            check_undefined_grad,
            check_grad_dtypes,
            check_batched_grad,
            check_forward_ad,
            check_backward_ad,
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _gradcheck(
    func: Callable,
    inputs: tuple,
    eps: float,
    atol: float,
    rtol: float,
    undefined: bool,
    dtypes: bool,
    batched: bool,
    forward: bool,
    backward: bool,
) -> None:
    wrt = _check_inputs(inputs)
    outputs = _as_tuple(func(*inputs))
    picked = _differentiable(outputs)
    if not picked:  # nothing to differentiate: finite differences must say the same
        everything = [i for i, o in enumerate(outputs) if isinstance(o, Tensor)]
        sizes = [outputs[i].numel() for i in everything]
        for blocks in _numerical(func, inputs, wrt, everything, sizes, eps):
            if any(np.any(np.abs(b) > atol) for b in blocks):
                raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    outs = [outputs[i] for i in picked]
    xs = [inputs[j] for j in wrt]
    sizes = [o.numel() for o in outs]
    dtype = outs[0].dtype if _dt.is_float(outs[0].dtype) else _dt.float64
    numerical = _numerical(func, inputs, wrt, picked, sizes, eps)
    if backward:
        analytical = _analytical(outs, xs, dtypes)
        _compare(numerical, analytical, wrt, picked, atol, rtol, "Jacobian", dtype)
        if undefined:
            _check_zero_grad_outputs(outs, xs)
        if batched:
            _check_batched(outs, xs, analytical)
    if forward:
        tangents = _forward_ad(func, inputs, wrt, picked, sizes)
        _compare(numerical, tangents, wrt, picked, atol, rtol, "Jacobian computed with forward mode", dtype)


def gradgradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """torch.autograd.gradgradcheck: `gradcheck` of the gradient itself, i.e. of
    `(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)`.

    Args:
        func, inputs: as for `gradcheck`.
        grad_outputs: the cotangents (one per differentiable output; they must require grad to
            be checked too). Default: random values in [-1, 1) (a fixed seed), requiring grad.
        check_fwd_over_rev: forward mode over the backward (gradcheck's check_forward_ad).
        check_rev_over_rev: reverse mode over the backward (the default).
        The rest: as for `gradcheck` (gen_non_contig_grad_outputs is accepted: nabla's values
        are always contiguous).

    Returns:
        True when every check passes.

    Example:
        >>> x = nabla.tensor([0.5, 2.0], dtype=nabla.float64, requires_grad=True)
        >>> nabla.autograd.gradgradcheck(lambda t: t**3, (x,))
        True
    """
    tupled = _as_tuple(inputs)
    outputs = _as_tuple(func(*tupled))
    outs = [outputs[i] for i in _differentiable(outputs)]
    cotangents = _random_like(outs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(cotangents) != len(outs):
        raise ValueError(
            f"gradgradcheck: grad_outputs has {len(cotangents)} entries, func has {len(outs)} differentiable outputs"
        )
    count = len(cotangents)

    def new_func(*args: Any) -> tuple:
        ins, gs = args[:-count] if count else args, args[len(args) - count :]
        result = _as_tuple(func(*ins))
        diff = [result[i] for i in _differentiable(result)]
        xs = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
        grads = tensor_grad(diff, xs, list(gs), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        new_func,
        (*tupled, *cotangents),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
    )


def _random_like(outs: list[Tensor]) -> tuple:
    """torch's default grad_outputs: uniform in [-1, 1), requiring grad (seeded: repeatable)."""
    rng = np.random.default_rng(0)
    return tuple(_tensor(rng.uniform(-1.0, 1.0, tuple(o.shape)), dtype=o.dtype, requires_grad=True) for o in outs)
