"""torch.random's names: `manual_seed`, `seed`, `initial_seed`, `get_rng_state`,
`set_rng_state` (the functions `nabla.` already has at top level) and `fork_rng`.

nabla has one global generator for every device, so `fork_rng` saves and restores that one
generator whatever `devices` lists.

Example:
    >>> nabla.random.manual_seed(0)
    >>> with nabla.random.fork_rng():
    ...     a = nabla.rand(3)       # draws inside the block...
    >>> b = nabla.rand(3)           # ...do not advance the stream outside it: b equals a
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from .ops.random_state import default_generator, manual_seed
from .torch_state import get_rng_state, initial_seed, seed, set_rng_state

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(
    devices: Iterable[Any] | None = None, enabled: bool = True, device_type: str | None = None
) -> Iterator[None]:
    """torch.random.fork_rng: a block whose random draws leave the global generator as it
    found it (its state is restored on exit, exception or not).

    Args:
        devices: the devices whose generators to fork; accepted for torch compatibility
            (nabla's one generator serves every device and is always forked).
        enabled: False makes the block a no-op (torch's switch for disabling the fork
            without re-indenting code).
        device_type: accepted for torch compatibility, as `devices`.

    Example:
        >>> with nabla.random.fork_rng(devices=[]):
        ...     noise = nabla.randn(4)
    """
    if devices is not None:
        list(devices)  # torch traverses it; a generator argument is consumed the same way
    if not enabled:
        yield
        return
    state = default_generator._state()
    try:
        yield
    finally:
        default_generator._restore(state)
