"""Random state: `Generator` (torch.Generator), the global `default_generator` that
`manual_seed` seeds, and the seed inputs random ops read.

A generator is a (seed, counter) pair: each random op call hashes the two into its own 64-bit
seed, passed to the graph as a uint64 input, so a graph with random ops keeps one structure
(and one compiled model) while drawing fresh numbers on every run. Random ops take
`generator=` for an independent stream; `nabla.compile` refills each traced seed input from
the generator the op drew from, and restores every generator after tracing.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ..core.common.devices import as_device
from ..core.graph.tracing import note_seed
from ..core.tensor.tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed"]

_TORCH_DEFAULT_SEED = 67280421310721  # a new torch.Generator's seed
_LIVE: weakref.WeakSet[Generator] = weakref.WeakSet()  # every user generator, for restoring


def _seed_arg(seed: Any, who: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"{who}: seed must be an int, got {seed!r}")
    return int(seed) & 0xFFFFFFFFFFFFFFFF  # torch takes negative seeds modulo 2**64


class Generator:
    """An independent stream of random numbers (PyTorch's `torch.Generator`).

    Args:
        device: where its draws are used (accepted for torch compatibility; draws are made
            where the random op runs).

    Example:
        >>> g = nabla.Generator().manual_seed(0)
        >>> a = nabla.randn(3, generator=g)
        >>> g.manual_seed(0)
        >>> bool((nabla.randn(3, generator=g) == a).all())
        True
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = as_device(device)
        self._lock = threading.Lock()
        self._seed, self._counter = _TORCH_DEFAULT_SEED, 0
        _LIVE.add(self)

    def manual_seed(self, seed: int) -> Generator:
        """Seed the stream (the same seed repeats the same numbers); returns self."""
        value = _seed_arg(seed, "manual_seed")
        with self._lock:
            self._seed, self._counter = value, 0
        return self

    def seed(self) -> int:
        """Seed with a fresh nondeterministic value and return it."""
        value = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed of the last `manual_seed` or `seed`."""
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a (2,) int64 tensor (seed bits, draws so far); `set_state` restores it."""
        bits = np.array([self._seed], np.uint64).view(np.int64)[0]
        return Tensor.from_numpy(np.array([bits, self._counter], np.int64))

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state from `get_state`; returns self."""
        state = np.asarray(new_state.numpy() if isinstance(new_state, Tensor) else new_state).reshape(-1)
        if state.shape != (2,) or state.dtype.kind not in "iu":
            raise ValueError(f"set_state: expected the (2,) int64 tensor get_state returns, got {new_state!r}")
        seed = int(np.array([state[0]], np.int64).view(np.uint64)[0])
        self._restore((seed, int(state[1])))
        return self

    def next_seed(self) -> int:
        """The seed of the next random op call (advances the stream)."""
        with self._lock:
            self._counter += 1
            mixed = np.random.SeedSequence([self._seed, self._counter]).generate_state(2, np.uint32)
        return (int(mixed[0]) << 32) | int(mixed[1])

    def next_seed_array(self) -> np.ndarray:
        return np.array([self.next_seed()], dtype=np.uint64)

    def _state(self) -> tuple[int, int]:
        return self._seed, self._counter

    def _restore(self, state: tuple[int, int]) -> None:
        with self._lock:
            self._seed, self._counter = state

    def __repr__(self) -> str:
        return f"<nabla.Generator seed={self._seed} device={self.device}>"


default_generator = Generator()
default_generator.manual_seed(0)
_LIVE.discard(default_generator)  # (restored on its own, first)


def manual_seed(seed: int) -> Generator:
    """Seed nabla's global generator (random ops after this repeat the same values); returns
    it, as torch's."""
    return default_generator.manual_seed(seed)


def generator_arg(generator: Any, op: str) -> Generator:
    """The generator a random op's `generator=` names (the global one for None)."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be a nabla.Generator, got {type(generator).__name__}")
    return generator


def seed_tensor(generator: Generator | None = None) -> Tensor:
    """A random op's seed input, drawn from `generator` (the global one for None)."""
    gen = default_generator if generator is None else generator
    seed = Tensor.from_numpy(gen.next_seed_array())
    note_seed(seed._impl, gen.next_seed_array)  # a compiled function refills it on every call
    return seed


def rng_state() -> tuple[int, int]:
    """The global generator's (seed, counter)."""
    return default_generator._state()


def set_rng_state(state: tuple[int, int]) -> None:
    default_generator._restore(state)


def all_rng_states() -> list[tuple[Generator, tuple[int, int]]]:
    """Every generator's state: compile restores them after tracing, so the first compiled
    call draws the numbers an uncompiled call would."""
    return [(default_generator, default_generator._state())] + [(g, g._state()) for g in list(_LIVE)]


def restore_rng_states(states: list[tuple[Generator, tuple[int, int]]]) -> None:
    for gen, state in states:
        gen._restore(state)


def next_seed_array() -> np.ndarray:
    """A fresh seed from the global generator (what `nabla.compile` feeds a random op's seed
    input on each call, and what host-side draws such as `nabla_nn.init` seed NumPy with)."""
    return default_generator.next_seed_array()
