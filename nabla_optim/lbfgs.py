"""LBFGS: limited-memory BFGS with an optional strong-Wolfe line search (PyTorch's `torch.optim.LBFGS`).

Unlike the other optimizers, LBFGS is driven from the host, as in PyTorch: one `step` runs the
closure several times and decides what to compute next from the loss and gradient values. Only
the closure (forward and backward) runs as a graph: it reads the realized parameters, so every
evaluation has the same structure and compiles once. The flat vectors (gradient, search
direction, history) are host NumPy arrays in the parameters' dtype, and the L-BFGS direction and
the parameter moves are computed on them as eager PyTorch computes them on the CPU. Lazy vectors
would give each history length and each step size its own graph to compile.

The 0-d values PyTorch compares and interpolates on (directional derivatives, step sizes) are
NumPy scalars of the parameters' dtype: NumPy 2 rounds a Python float meeting a float32 scalar
to float32, as PyTorch does with a 0-d float32 tensor, so float32 runs take torch's branches.
The state keeps PyTorch's tensors (realized, wrapping those arrays without a copy).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.graph.tracing import tracing
from nabla_nn.parameter import Parameter

from .optimizer import Optimizer, ParamsT, check_lr, check_nonneg

__all__ = ["LBFGS"]

# A host scalar: a Python number, or a NumPy scalar where PyTorch has a 0-d tensor.
Scalar = float | int | np.floating
ObjFunc = Callable[[list[Tensor], Scalar, np.ndarray], tuple[float, np.ndarray, Scalar]]

# State entries that are flat vectors over all parameters, or lists of them (PyTorch's layout):
# the base class's per-parameter shape check does not apply, they are loaded here.
_FLAT_STATE = ("d", "prev_flat_grad", "old_dirs", "old_stps", "ro", "al")
# The state a step carries over to the next one, in PyTorch's order.
_CARRIED = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")
_GROUP_ERROR = "LBFGS doesn't support per-parameter options (parameter groups)"


def _host(x: Tensor | Scalar) -> Scalar:
    """A 0-d tensor's value as a NumPy scalar of its dtype (float32 for bfloat16); numbers as they are."""
    return x.numpy().reshape(())[()] if isinstance(x, Tensor) else x


def _store(value: np.ndarray | Scalar, dtype: Any) -> Tensor:
    """A host array or scalar as a realized tensor of `dtype` (no copy when it has that dtype)."""
    t = Tensor.from_numpy(np.asarray(value), dtype=dtype)
    return t if t.is_realized else t.realize()  # bfloat16 is made by a cast: realize it now


def _check_positive_int(name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Invalid {name} value: {value!r} (expected a positive integer)")
    return int(value)


def _cubic_interpolate(
    x1: Scalar,
    f1: Scalar,
    g1: Scalar,
    x2: Scalar,
    f2: Scalar,
    g2: Scalar,
    bounds: tuple[Scalar, Scalar] | None = None,
) -> Scalar:
    """Minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds`
    (PyTorch's port of polyinterp.lua); the midpoint of the bounds when the cubic has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


class _Bracket:
    """The line search's bracket: step sizes, losses, flat gradients and directional derivatives
    of its (one or two) end points, as PyTorch's four parallel lists."""

    def __init__(self, t: list, f: list, g: list, gtd: list) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, i: int, t: Scalar, f: float, g: np.ndarray, gtd: Scalar) -> None:
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd

    def low_high(self) -> tuple[int, int]:
        """Indices of the end with the lower loss and of the other one."""
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)


class _StrongWolfe:
    """PyTorch's `_strong_wolfe` (its port of lswolfe.lua): a bracketing phase, then a zoom
    phase refining the bracket until a point satisfies the strong Wolfe conditions.

    `obj_func(x, t, d) -> (f, g, gtd)` evaluates the loss (a Python float), the flat gradient
    (a host array) and the directional derivative (a host scalar) at `x + t * d`.
    """

    def __init__(
        self,
        obj_func: ObjFunc,
        x: list[Tensor],
        d: np.ndarray,
        f: float,
        gtd: Scalar,
        c1: float,
        c2: float,
        tolerance_change: float,
        max_ls: int,
    ) -> None:
        self.obj_func, self.x, self.d, self.f, self.gtd = obj_func, x, d, f, gtd
        self.c1, self.c2, self.tolerance_change, self.max_ls = c1, c2, tolerance_change, max_ls
        self.func_evals = 0  # PyTorch's ls_func_evals
        self.iters = 0  # PyTorch's ls_iter (the first evaluation is not an iteration)

    def run(self, t: Scalar, g: np.ndarray) -> tuple[float, np.ndarray, Scalar, int]:
        """Returns (loss, flat gradient, step size, function evaluations) of the point found."""
        f_new, g_new, gtd_new = self._evaluate(t)
        bracket, done = self._bracket_phase(t, g, f_new, g_new, gtd_new)
        low = self._zoom_phase(bracket, done, np.abs(self.d).max())
        return bracket.f[low], bracket.g[low], bracket.t[low], self.func_evals

    def _evaluate(self, t: Scalar) -> tuple[float, np.ndarray, Scalar]:
        self.func_evals += 1
        return self.obj_func(self.x, t, self.d)

    def _armijo_fails(self, t: Scalar, f_new: float) -> bool:
        return f_new > (self.f + self.c1 * t * self.gtd)

    def _curvature_holds(self, gtd_new: Scalar) -> bool:
        return abs(gtd_new) <= -self.c2 * self.gtd

    def _bracket_phase(
        self, t: Scalar, g: np.ndarray, f_new: float, g_new: np.ndarray, gtd_new: Scalar
    ) -> tuple[_Bracket, bool]:
        """Extrapolate until an interval contains a point satisfying the Wolfe conditions;
        returns it and whether its (single) point already satisfies them."""
        t_prev, f_prev, g_prev, gtd_prev = 0, self.f, g, self.gtd
        while self.iters < self.max_ls:
            if self._armijo_fails(t, f_new) or (self.iters > 1 and f_new >= f_prev):
                return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]), False
            if self._curvature_holds(gtd_new):
                return _Bracket([t], [f_new], [g_new], [gtd_new]), True
            if gtd_new >= 0:
                return _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]), False
            bounds = (t + 0.01 * (t - t_prev), t * 10)
            t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=bounds)
            t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
            t = t_next
            f_new, g_new, gtd_new = self._evaluate(t)
            self.iters += 1
        # out of evaluations: bracket from the start point (PyTorch leaves its gtd list unset)
        return _Bracket([0, t], [self.f, f_new], [g, g_new], [self.gtd, gtd_new]), False

    def _zoom_phase(self, bracket: _Bracket, done: bool, d_norm: Scalar) -> int:
        """Shrink `bracket` until its low end satisfies the Wolfe conditions; returns that end."""
        insuf_progress = False
        low, high = bracket.low_high()
        while not done and self.iters < self.max_ls:
            if abs(bracket.t[1] - bracket.t[0]) * d_norm < self.tolerance_change:
                break  # the bracket is too small
            t, insuf_progress = self._zoom_trial(bracket, insuf_progress)
            f_new, g_new, gtd_new = self._evaluate(t)
            self.iters += 1
            if self._armijo_fails(t, f_new) or f_new >= bracket.f[low]:
                # not sufficiently lower than the low end: the new point becomes the high end
                bracket.set(high, t, f_new, g_new, gtd_new)
                low, high = (0, 1) if bracket.f[0] <= bracket.f[1] else (1, 0)
                continue
            if self._curvature_holds(gtd_new):
                done = True
            elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:
                # the old low end becomes the high end
                bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low], bracket.gtd[low])
            bracket.set(low, t, f_new, g_new, gtd_new)
        return low

    @staticmethod
    def _zoom_trial(bracket: _Bracket, insuf_progress: bool) -> tuple[Scalar, bool]:
        """The next trial step: the cubic's minimizer, moved 10% of the bracket's width away
        from an end it comes too close to twice in a row (or reaches)."""
        t = _cubic_interpolate(bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1], bracket.gtd[1])
        hi, lo = max(bracket.t), min(bracket.t)
        eps = 0.1 * (hi - lo)
        if min(hi - t, t - lo) < eps:  # (as PyTorch's test, so that a nan t is kept)
            if insuf_progress or t >= hi or t <= lo:
                return (hi - eps if abs(t - hi) < abs(t - lo) else lo + eps), False
            return t, True
        return t, False


def _strong_wolfe(
    obj_func: ObjFunc,
    x: list[Tensor],
    t: Scalar,
    d: np.ndarray,
    f: float,
    g: np.ndarray,
    gtd: Scalar,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, np.ndarray, Scalar, int]:
    """Line search along `d` from `x` (PyTorch's signature); returns (f, g, t, evaluations)."""
    return _StrongWolfe(obj_func, x, d, f, gtd, c1, c2, tolerance_change, max_ls).run(t, g)


def _load_flat(value: Any, dtype: Any) -> Any:
    """A loaded flat vector (or list of them, None entries kept) as realized tensors of `dtype`,
    floating values cast to it as PyTorch casts state to the parameter's dtype."""
    if isinstance(value, list | tuple):
        return [_load_flat(v, dtype) for v in value]
    if value is None or isinstance(value, numbers.Number):
        return value
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if array.dtype.kind != "f":
        return Tensor.from_numpy(np.array(array, copy=True))
    return _store(np.array(array, _dt.to_numpy_dtype(dtype), copy=True), dtype)


class LBFGS(Optimizer):
    """L-BFGS (PyTorch's `torch.optim.LBFGS`, same defaults, iterations and state).

    Each `step(closure)` runs up to `max_iter` L-BFGS iterations, calling `closure` (which
    clears the gradients, computes the loss, calls `backward()` and returns the loss) to
    re-evaluate the model. The parameters are handled as one flat vector, so there must be a
    single param group. LBFGS reads the loss and gradient values on the host to decide each
    iteration (as PyTorch does), so it cannot run inside `nabla.compile`.

    Args:
        params: parameters to optimize (one group; per-group options are not supported).
        lr: learning rate, the step size of the first trial of each iteration (default 1).
        max_iter: maximal number of iterations per `step` (default 20).
        max_eval: maximal number of closure evaluations per `step` (default `max_iter * 5 // 4`).
        tolerance_grad: stop when the largest gradient entry is at most this (default 1e-7).
        tolerance_change: stop when the loss or the parameters change less (default 1e-9).
        history_size: number of past updates kept to approximate the Hessian (default 100).
        line_search_fn: "strong_wolfe" or None (fixed steps of size `lr`).

    State (kept on the first parameter, as PyTorch does): "func_evals", "n_iter", "d", "t",
    "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss", "al".

    Example:
        >>> opt = nabla_optim.LBFGS(model.parameters(), history_size=10, line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = loss_fn(model(x), y)
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        lr = check_lr(lr)
        max_iter = _check_positive_int("max_iter", max_iter)
        max_eval = _check_positive_int("max_eval", max_iter * 5 // 4 if max_eval is None else max_eval)
        check_nonneg("tolerance_grad", tolerance_grad)
        check_nonneg("tolerance_change", tolerance_change)
        history_size = _check_positive_int("history_size", history_size)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"Invalid line_search_fn: {line_search_fn!r} (only 'strong_wolfe' or None)")
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError(_GROUP_ERROR)

    @property
    def _params(self) -> list[Parameter]:
        return self.param_groups[0]["params"]

    # -- flat vectors over all parameters (host arrays) ------------------------------------
    def _gather_flat_grad(self) -> np.ndarray:
        """All gradients as one new array of the parameters' dtype; reading the first computes
        everything pending (the closure's loss too: one graph)."""
        views = []
        for p in self._params:
            dtype = _dt.to_numpy_dtype(p.dtype)
            g = p.grad
            views.append(np.zeros(p.numel(), dtype) if g is None else g.numpy().reshape(-1).astype(dtype, copy=False))
        return np.concatenate(views)

    def _add_grad(self, step_size: Scalar, update: np.ndarray) -> None:
        """Move every parameter by `step_size * update` (PyTorch's `p.add_(update, alpha=t)`): new
        realized values, so the next closure reads them as inputs of the same graph."""
        offset = 0
        for p in self._params:
            numel = p.numel()
            moved = p.numpy() + update[offset : offset + numel].reshape(p.shape) * float(step_size)
            value = _store(moved, p.dtype)
            p.data = value if value.device == p.device else value.to(p.device)
            offset += numel

    def _clone_param(self) -> list[Tensor]:
        # Realized storage is never mutated: `.data` of a realized parameter is a snapshot.
        return [p.data for p in self._params]

    def _set_param(self, params_data: list[Tensor]) -> None:
        for p, pdata in zip(self._params, params_data, strict=True):
            p.data = pdata

    # -- closure evaluations ----------------------------------------------------------------
    def _closure_and_grad(self, closure: Callable[[], Any]) -> tuple[Any, np.ndarray]:
        with nb.enable_grad():
            orig_loss = closure()
        return orig_loss, self._gather_flat_grad()

    def _evaluate(self, closure: Callable[[], Any], tolerance_grad: float) -> tuple[Any, float, np.ndarray, bool]:
        """Run the closure; returns (its loss, as a float, the flat gradient, whether the
        gradient is below `tolerance_grad`), computed by one graph."""
        orig_loss, flat_grad = self._closure_and_grad(closure)
        return orig_loss, float(orig_loss), flat_grad, bool(np.abs(flat_grad).max() <= tolerance_grad)

    def _directional_evaluate(
        self, closure: Callable[[], Any], x: list[Tensor], t: Scalar, d: np.ndarray
    ) -> tuple[float, np.ndarray, Scalar]:
        """Loss, flat gradient and directional derivative at `x + t * d` (one graph); the
        parameters are left at `x`."""
        self._add_grad(t, d)
        orig_loss, flat_grad = self._closure_and_grad(closure)
        loss = float(orig_loss)
        self._set_param(x)
        return loss, flat_grad, flat_grad.dot(d)

    # -- the L-BFGS direction -----------------------------------------------------------------
    def _update_memory(self, state: dict[str, Any], flat_grad: np.ndarray, history_size: int) -> None:
        """Add the last step and gradient change to the history (if the curvature is positive)."""
        dtype = self._params[0].dtype
        y = flat_grad - state["prev_flat_grad"].numpy()
        s = state["d"].numpy() * float(state["t"])
        ys = y.dot(s)
        if ys > 1e-10:
            old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
            if len(old_dirs) == history_size:  # limited memory: drop the oldest
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(_store(y, dtype))
            old_stps.append(_store(s, dtype))
            ro.append(_store(1.0 / ys, dtype))
            state["H_diag"] = _store(ys / y.dot(y), dtype)  # scale of the initial inverse Hessian

    def _two_loop(self, state: dict[str, Any], flat_grad: np.ndarray, history_size: int) -> np.ndarray:
        """The inverse Hessian approximation times the negative gradient (two-loop recursion)."""
        dtype = self._params[0].dtype
        old_dirs = [v.numpy() for v in state["old_dirs"]]
        old_stps = [v.numpy() for v in state["old_stps"]]
        ro = [_host(v) for v in state["ro"]]
        if "al" not in state:
            state["al"] = [None] * history_size
        al: list[Any] = [None] * len(old_dirs)
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q = q - old_dirs[i] * al[i]
            state["al"][i] = _store(al[i], dtype)
        r = q * _host(state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r = r + old_stps[i] * (al[i] - be_i)
        return r

    def _direction(self, state: dict[str, Any], flat_grad: np.ndarray, history_size: int) -> np.ndarray:
        if state["n_iter"] == 1:
            state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return -flat_grad
        self._update_memory(state, flat_grad, history_size)
        return self._two_loop(state, flat_grad, history_size)

    @staticmethod
    def _initial_step(state: dict[str, Any], flat_grad: np.ndarray, d: np.ndarray, lr: Scalar) -> Scalar:
        """The first trial step size."""
        if state["n_iter"] == 1:  # a gradient-descent step of length at most lr
            return min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
        return lr

    # -- moving along the direction -----------------------------------------------------------
    def _move(
        self,
        closure: Callable[[], Any],
        t: Scalar,
        d: np.ndarray,
        loss: float,
        flat_grad: np.ndarray,
        gtd: Scalar,
        max_ls: int,
        last: bool,
    ) -> tuple[Scalar, float, np.ndarray, bool, int]:
        """Step along `d` by `t` or by a line search from it; returns (step size, loss, flat
        gradient, whether the gradient is below tolerance_grad, closure evaluations)."""
        group = self.param_groups[0]
        line_search_fn, tolerance_grad = group["line_search_fn"], group["tolerance_grad"]
        if line_search_fn is not None:
            if line_search_fn != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            obj_func = functools.partial(self._directional_evaluate, closure)
            # (as PyTorch, the line search keeps its own tolerance_change, c1 and c2)
            loss, flat_grad, t, evals = _strong_wolfe(
                obj_func, self._clone_param(), t, d, loss, flat_grad, gtd, max_ls=max_ls
            )
            self._add_grad(t, d)
            return t, loss, flat_grad, bool(np.abs(flat_grad).max() <= tolerance_grad), evals
        self._add_grad(t, d)
        if last:  # (PyTorch: no use re-evaluating in the last iteration, in a stochastic setting)
            return t, loss, flat_grad, False, 0
        _, loss, flat_grad, opt_cond = self._evaluate(closure, tolerance_grad)
        return t, loss, flat_grad, opt_cond, 1

    def _stalled(self, d: np.ndarray, t: Scalar, loss: float, prev_loss: float) -> bool:
        """PyTorch's lack-of-progress tests: the step or the loss change below tolerance_change."""
        tolerance_change = self.param_groups[0]["tolerance_change"]
        if np.abs(d * float(t)).max() <= tolerance_change:
            return True
        return abs(loss - prev_loss) < tolerance_change

    # -- step -------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Run up to `max_iter` L-BFGS iterations (at most `max_eval` closure evaluations).

        Args:
            closure: required; clears the gradients, computes the loss, calls `backward()` and
                returns the loss. It runs with grad enabled.

        Returns:
            The closure's loss at the first evaluation of the step, as PyTorch's.
        """
        return super().step(closure)

    def _step(self, closure: Callable[[], Any] | None = None) -> Any:
        if closure is None:
            raise TypeError(
                "LBFGS.step() missing required argument 'closure': a function that clears the gradients, "
                "computes the loss, calls loss.backward() and returns the loss"
            )
        if tracing():
            raise RuntimeError(
                "LBFGS.step() cannot run inside nabla.compile: it reads the loss and gradient values on the "
                "host (.item()) in every iteration to decide what to compute next; call it outside the "
                "compiled function (a compiled closure is fine)"
            )
        if len(self.param_groups) != 1:
            raise ValueError(f"{_GROUP_ERROR}, got {len(self.param_groups)} groups")
        with nb.no_grad():
            orig_loss = self._run(closure)
            pending = [p for p in self._params if not p.is_realized]
            if pending:  # the last fixed step is not re-evaluated: compute it now, as other optimizers do
                nb.evaluate(*pending)
        return orig_loss

    def _run(self, closure: Callable[[], Any]) -> Any:
        """PyTorch's `LBFGS.step` body; the state is updated as it goes rather than at the end."""
        group = self.param_groups[0]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval, history_size = group["max_iter"], group["max_eval"], group["history_size"]
        # LBFGS's state is global; PyTorch keeps it on the first parameter (load_state_dict casts it)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss, loss, flat_grad, opt_cond = self._evaluate(closure, group["tolerance_grad"])
        current_evals = 1
        state["func_evals"] += 1
        if opt_cond:
            return orig_loss
        n_iter = 0
        dtype = self._params[0].dtype
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            d = self._direction(state, flat_grad, history_size)
            state["d"], state["prev_flat_grad"], state["prev_loss"] = _store(d, dtype), _store(flat_grad, dtype), loss
            t = state["t"] = self._initial_step(state, flat_grad, d, lr)
            gtd = flat_grad.dot(d)
            if gtd > -group["tolerance_change"]:
                break  # the directional derivative is below tolerance
            t, loss, flat_grad, opt_cond, evals = self._move(
                closure, t, d, loss, flat_grad, gtd, max_eval - current_evals, last=n_iter == max_iter
            )
            state["t"] = t
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if self._stalled(d, t, loss, state["prev_loss"]):
                break
        return orig_loss

    # -- state dict ---------------------------------------------------------------------------
    def _load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The base class loads the numbers and 0-d tensors; the flat vectors and history lists
        (not of any parameter's shape) are loaded here, cast to the parameters' dtype."""
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict):
            super()._load_state_dict(state_dict)  # raises, naming what is missing
            return
        per_param = {k: {n: v for n, v in s.items() if n not in _FLAT_STATE} for k, s in state_dict["state"].items()}
        super()._load_state_dict({**state_dict, "state": per_param})
        order = [k for g in state_dict["param_groups"] for k in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        for key, saved in state_dict["state"].items():
            p = params[order.index(key)]
            for name in _FLAT_STATE:
                if name in saved:
                    self.state[p][name] = _load_flat(saved[name], p.dtype)
