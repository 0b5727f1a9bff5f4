"""Hook registries shared by tensors and modules: one handle type whose `remove()` unregisters."""

from __future__ import annotations

import itertools
from typing import Any


class RemovableHandle:
    """Returned by `register_hook`, `register_forward_hook` and the like: `handle.remove()`
    unregisters the hook (also on leaving a `with handle:` block), as in PyTorch.

    Example:
        >>> handle = x.register_hook(lambda g: g * 2)
        >>> handle.remove()
    """

    _ids = itertools.count()

    def __init__(self, hooks: dict, on_remove: Any = None) -> None:
        self._hooks = hooks
        self._on_remove = on_remove
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        if self._hooks.pop(self.id, None) is not None and self._on_remove is not None:
            self._on_remove()

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def add_hook(hooks: dict, hook: Any, *, prepend: bool = False, on_remove: Any = None) -> RemovableHandle:
    """Register `hook` in the ordered dict `hooks` (first, with `prepend`); returns its handle."""
    handle = RemovableHandle(hooks, on_remove)
    hooks[handle.id] = hook
    if prepend:
        hooks_items = list(hooks.items())
        hooks.clear()
        hooks.update([hooks_items[-1], *hooks_items[:-1]])
    return handle
