"""The write-through of views, a mixin of `Tensor`: a tensor taken from another (`x[0]`,
`x.reshape(...)`, `x.T`, `x.data`, ...) remembers its base, and an in-place op on it (a
functional update under the hood) also updates the base, as storage sharing does in PyTorch.
Also how an in-place op replaces a tensor's value (`_replace_impl`, `_restride`, `_adopt`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..common import dtypes as _dt
from ..common.context import enable_grad, is_grad_enabled
from ..graph.engine import GRAPH
from ..graph.tracing import note_mutation
from .dispatch import OPS

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor


class ViewMethods:
    """View bookkeeping and in-place value replacement (mixed into `Tensor`, which holds the
    `_view` slot)."""

    __slots__ = ()

    def _as_view_of(self, base: Tensor, kind: str, arg: Any) -> Tensor:
        """Remember that self was taken from `base` (kind "index", "reshape", "permute",
        "diagonal", "unfold" or "alias" for `.data`/`detach()`), so an in-place op on self writes
        through to base."""
        if self is base:  # the op changed nothing and handed back its input (`x[:]`, `x.reshape(x.shape)`)
            self = base._same_value()
        self._view = (base, base._impl, kind, arg, _layout(base))
        return self

    def _is_view(self) -> bool:
        """Whether self was taken from another tensor (PyTorch's name): in-place ops write through."""
        return getattr(self, "_view", None) is not None

    def _sync_view(self) -> None:
        """Before an in-place op: a view whose base changed since takes the base's current
        value (storage is shared in PyTorch). Reads of a view are not refreshed."""
        view = getattr(self, "_view", None)
        if view is None:
            return
        base, seen, kind, arg, marker = view
        base._sync_view()
        later = _later_steps(base, marker)
        if later is None:  # the base got new storage (`.data = ...`): this view keeps the old one
            self._view = None
        elif base._impl is not seen:
            self._impl = _VIEW_OF[kind](_undo(base, later), arg)._impl
            self._view = (base, base._impl, kind, arg, marker)

    def _write_through(self, what: str, autodiff: bool = True) -> None:
        """Write self's new value into its base. `autodiff=False`: the write bypasses autodiff
        (it came through `.data` or `detach()` somewhere along the chain: `w[1].data.fill_(1)`
        writes into the parameter `w`, as in PyTorch)."""
        base, _, kind, arg, marker = self._view
        later = _later_steps(base, marker)
        if later is None:  # (see _sync_view)
            self._view = None
            return
        if kind == "alias":  # `.data` and `detach()` bypass autodiff, as in PyTorch
            base._replace_impl(_redo(OPS.detach(self), later), what, autodiff=False)
        else:
            autodiff = autodiff and not (kind == "chain" and arg[0][0] == "alias")
            new = _BASE_FROM[kind](_undo(base, later), self, arg)
            base._replace_impl(_redo(new, later), what, autodiff=autodiff)
        self._view = (base, base._impl, kind, arg, marker)

    def _restride(self, what: str, kind: str, arg: Any) -> Tensor:
        """A shape-changing in-place op (`unsqueeze_`, `t_`, ...): self becomes the view `kind`
        ("reshape" to shape `arg`, "permute" by `arg`) of its value. PyTorch changes only the
        tensor's metadata, so a view stays a view of its base (writes still go through)."""
        if self._impl.is_leaf and self._impl.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{what}: a leaf tensor that requires grad is used in an in-place operation")
        self._sync_view()
        shape = tuple(self.shape)
        self._take_value(_VIEW_OF[kind](self, arg))
        # views taken of self before keep their layout (PyTorch changed only self's metadata)
        swaps, steps = _layout(self)
        self._layout = (swaps, (*steps, (kind, arg, shape)))
        view = getattr(self, "_view", None)
        if view is not None:  # the chain of views from the base: reads and writes compose
            base, seen, kind0, arg0, marker = view
            chain = (arg0 if kind0 == "chain" else ((kind0, arg0),)) + ((kind, arg),)
            self._view = (base, seen, "chain", chain, marker)
        return self

    def _swap_storage(self) -> None:
        """`.data = value` gives self new storage: views taken before keep the old one."""
        self._layout = (_layout(self)[0] + 1, ())

    def _replace_impl(self, new: Tensor, what: str, autodiff: bool = True) -> Tensor:
        """In-place ops are functional updates: this facade now points at the new value (and
        a view's base at its new value)."""
        if autodiff and self._impl.is_leaf and self._impl.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{what}: a leaf tensor that requires grad is used in an in-place operation")
        if new.shape != self.shape:
            raise RuntimeError(f"{what}: result shape {new.shape} does not match the tensor's shape {self.shape}")
        if new._impl.batch_dims > self._impl.batch_dims:  # (as torch.func.vmap refuses it)
            raise RuntimeError(
                f"vmap: {what} is not possible because the tensor is not mapped over but the value written "
                "into it is (it would need a different value per batch element); use the out-of-place op"
            )
        self._take_value(new if new.dtype == self.dtype else OPS.cast(new, self.dtype), not autodiff)
        if getattr(self, "_view", None) is not None:
            self._write_through(what, autodiff)
        return self

    def _take_value(self, new: Tensor, outside_autodiff: bool = False) -> None:
        """Point this facade at `new`'s value, recorded as a mutation, as PyTorch's in-place
        ops keep a tensor's place in autodiff:
        - a leaf that requires grad (a parameter updated under no_grad) stays one;
        - a value that is another tensor's leaf (`buf.copy_(w)`) is reached through an op, so
          the gradient still goes to that leaf;
        - an overwritten non-leaf keeps its history (`rebind`): zero gradient for an op that
          replaced it (`y.zero_()`, `y.copy_(v)`: its leaves get zeros, not None, as torch), the
          gradient passed through for a write outside autodiff (`y.data.round_()`, or under
          no_grad); a value with history gets the gradient as well."""
        old, value = self._impl, new._impl
        if old.requires_grad and old.is_leaf:
            new = OPS.detach(new)
            new._impl.requires_grad = True
        elif old.requires_grad and new.shape == self.shape and new.dtype == self.dtype and not _reads(value, old):
            passes = outside_autodiff or not is_grad_enabled()
            with enable_grad():
                new = OPS.rebind(type(self)(old), new, passes)
        elif value.requires_grad and value.is_leaf:
            new = OPS.identity(new)
        note_mutation(self)
        self._impl = new._impl
        if not new._impl.is_realized:
            GRAPH.add_unrealized(self)
        if self._impl.requires_grad:
            self._impl.facade = weakref.ref(self)

    def _adopt(self, value: Tensor) -> Tensor:
        """Point this facade at `value`'s impl, keeping `requires_grad` (no op recorded).

        For library code that owns `value` outright (an optimizer's fused update output): the
        impl is shared, so `value` must not be used afterwards. It must not carry autodiff
        history (`value` comes from a non-differentiable op, or no_grad)."""
        impl = value._impl
        if impl.requires_grad and not impl.is_leaf:
            raise RuntimeError("_adopt: value carries autodiff history; use .data = value")
        self._install(impl)
        return self


def _layout(t: Tensor) -> tuple[int, tuple]:
    """(storage swaps, in-place restrides since the last swap) of t: a view records its base's,
    and finds what happened to the base since (`_later_steps`)."""
    return getattr(t, "_layout", None) or (0, ())


def storage_owner(t: Tensor) -> tuple[Tensor, int]:
    """The tensor whose storage `t` shares (the base at the end of its chain of views) and
    that storage's generation (`.data = value` gives a tensor new storage; a view taken
    before keeps the old one, so it stops the walk)."""
    while True:
        view = getattr(t, "_view", None)
        if view is None:
            return t, _layout(t)[0]
        base, _, _, _, marker = view
        if _later_steps(base, marker) is None:
            return base, marker[0]
        t = base


def _later_steps(base: Tensor, marker: tuple[int, tuple]) -> tuple | None:
    """The restrides of `base` since a view recorded `marker`; None if its storage changed."""
    swaps, steps = _layout(base)
    return None if swaps != marker[0] else steps[len(marker[1]) :]


def _undo(base: Tensor, later: tuple) -> Tensor:
    """base's value in the layout it had before the restrides `later`."""
    for kind, arg, shape in reversed(later):
        base = OPS.reshape(base, shape) if kind == "reshape" else OPS.permute(base, _inverse(arg))
    return base


def _redo(value: Tensor, later: tuple) -> Tensor:
    for kind, arg, _ in later:
        value = _VIEW_OF[kind](value, arg)
    return value


def _inverse(perm: tuple) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(perm))


def _scatter_back(base: Tensor, view: Tensor, positions: np.ndarray) -> Tensor:
    """The base with the view's values written at `positions` (the flat index in base of each
    view element): the write-through of views that are no slice or reshape."""
    flat = OPS.setitem(OPS.reshape(base, (-1,)), OPS.tensor(positions.reshape(-1)), OPS.reshape(view, (-1,)))
    return OPS.reshape(flat, base.shape)


def _unfold_back(base: Tensor, view: Tensor, arg: tuple[int, int, int]) -> Tensor:
    """The base with an unfold view's writes. Windows that overlap (step < size) share base
    elements, as they share storage in PyTorch: an element takes the value written to it in a
    window that changed it (their mean if several did), so an unchanged window's old copy does
    not undo the write."""
    positions = _unfold_positions(base, arg)
    if arg[2] >= arg[1]:  # no overlap: every element is in at most one window
        return _scatter_back(base, view, positions)
    changed = OPS.not_equal(view, OPS.unfold(base, *arg))
    flat_positions = OPS.tensor(positions.reshape(-1))
    zeros = OPS.zeros_like(OPS.reshape(base, (-1,)))

    def per_element(values: Tensor) -> Tensor:
        return OPS.reshape(OPS.scatter_add(zeros, 0, flat_positions, OPS.reshape(values, (-1,))), base.shape)

    count = per_element(OPS.cast(changed, base.dtype))
    total = per_element(OPS.where(changed, view, OPS.zeros_like(view)))
    divisor = OPS.maximum(count, OPS.ones_like(count))  # (elements no window changed keep base's)
    mean = OPS.div(total, divisor, rounding_mode=None if _dt.is_float(base.dtype) else "floor")
    return OPS.where(OPS.greater(count, 0), OPS.cast(mean, base.dtype), base)


def _positions(base: Tensor) -> np.ndarray:
    return np.arange(base.numel(), dtype=np.int64).reshape(base.shape)


def _unfold_positions(base: Tensor, arg: tuple[int, int, int]) -> np.ndarray:
    dim, size, step = arg
    windows = np.lib.stride_tricks.sliding_window_view(_positions(base), size, axis=dim)
    return windows[(slice(None),) * dim + (slice(None, None, step),)]


# A view's value from its base's, and the base's new value from the view's (write-through).
_VIEW_OF = {
    "index": lambda base, index: OPS.getitem(base, index),
    "reshape": lambda base, shape: OPS.reshape(base, shape),
    "permute": lambda base, perm: OPS.permute(base, perm),
    "alias": lambda base, _: OPS.detach(base),
    "diagonal": lambda base, arg: OPS.diagonal(base, *arg),
    "unfold": lambda base, arg: OPS.unfold(base, *arg),
}
_BASE_FROM = {
    "index": lambda base, view, index: OPS.setitem(base, index, view),
    "reshape": lambda base, view, _: OPS.reshape(view, base.shape),
    "permute": lambda base, view, perm: OPS.permute(view, _inverse(perm)),
    "alias": lambda base, view, _: OPS.detach(view),
    "diagonal": lambda base, view, arg: _scatter_back(base, view, np.diagonal(_positions(base), *arg)),
    "unfold": _unfold_back,
}


def _chain_view(base: Tensor, steps: tuple) -> Tensor:
    """A view of a view (a view changed by `t_()`, `unsqueeze_()`): each step from the base."""
    for kind, arg in steps:
        base = _VIEW_OF[kind](base, arg)
    return base


def _chain_base(base: Tensor, view: Tensor, steps: tuple) -> Tensor:
    """The base's new value from a chained view's: each step's write-through, from the last."""
    values = [base]
    for kind, arg in steps[:-1]:
        values.append(_VIEW_OF[kind](values[-1], arg))
    for (kind, arg), value in zip(reversed(steps), reversed(values), strict=True):
        view = _BASE_FROM[kind](value, view, arg)
    return view


_VIEW_OF["chain"] = _chain_view
_BASE_FROM["chain"] = _chain_base


def _reads(value: Any, old: Any) -> bool:
    """Whether the differentiable op that made `value` took `old` as an argument (`y.add_(v)`),
    so the gradient already reaches it; a value computed without it (`y.copy_(v)`) needs `rebind`."""
    node = value.output_refs
    return value.requires_grad and node is not None and any(a is old for a in node.args)
