"""Samplers (PyTorch's `torch.utils.data.sampler`): the order in which a DataLoader visits a
map-style dataset's indices, and batch samplers that group them.

Randomness is NumPy's. A sampler given `generator=` (a `numpy.random.Generator`, a
`nabla.Generator`, or a `torch.Generator` whose `initial_seed()` seeds ours) advances it
epoch after epoch, as torch's does; without one, each epoch draws its seed from nabla's global generator, so
`nabla.manual_seed` makes the order repeat, as `torch.manual_seed` does for torch's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from nabla.ops.random_state import Generator, generator_arg

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


def numpy_rng(generator: Any, seed: int | None, who: str) -> np.random.Generator | Generator | None:
    """The generator `generator=` names (a NumPy or nabla one, or a NumPy one seeded by a
    torch.Generator's seed), one seeded with `seed`, or None: draw from nabla's global
    generator (see `epoch_rng`)."""
    if generator is None:
        return None if seed is None else np.random.default_rng(seed)
    if seed is not None:
        raise TypeError(f"{who}: pass seed= or generator=, not both")
    if isinstance(generator, np.random.Generator | Generator):  # (a nabla one: drawn from each epoch)
        return generator
    if callable(getattr(generator, "initial_seed", None)):  # a torch.Generator
        return np.random.default_rng(generator.initial_seed())
    raise TypeError(
        f"{who}: generator must be a nabla.Generator, numpy.random.Generator or torch.Generator, "
        f"got {type(generator).__name__}"
    )


def epoch_rng(rng: np.random.Generator | Generator | None) -> np.random.Generator:
    """A NumPy generator for one epoch: `rng` itself, or one seeded from a nabla generator
    (nabla's global one for None: torch draws each epoch's seed from its default generator
    the same way)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(int(generator_arg(rng, "sampler").next_seed_array()[0]))


def _positive_int(value: Any, who: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"{who}: {name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


def _bool(value: Any, who: str, name: str, error: type[Exception] = ValueError) -> bool:
    if not isinstance(value, bool):  # (torch raises a TypeError for RandomSampler's, else ValueError)
        raise error(f"{who}: {name} should be a boolean value, but got {name}={value!r}")
    return value


class Sampler:
    """Base class: an iterable of dataset indices (define `__iter__`, and `__len__` if known)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError("Subclasses of Sampler should implement __iter__.")


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1 in order.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a new permutation every epoch, or draws with replacement.

    Args:
        data_source: the dataset (only its length is read).
        replacement: draw `num_samples` indices independently (with repeats).
        num_samples: how many indices an epoch yields (default: the dataset's length); without
            replacement, more than the length repeats whole permutations, as torch's.
        generator: a NumPy or torch generator (see the module docstring).

    Example:
        >>> sorted(RandomSampler(range(4), generator=np.random.default_rng(0)))
        [0, 1, 2, 3]
    """

    def __init__(
        self, data_source: Sized, replacement: bool = False, num_samples: int | None = None, generator: Any = None
    ) -> None:
        self.data_source = data_source
        self.replacement = _bool(replacement, "RandomSampler", "replacement", TypeError)
        self._num_samples = None if num_samples is None else _positive_int(num_samples, "RandomSampler", "num_samples")
        self.generator = generator
        self._rng = numpy_rng(generator, None, "RandomSampler")
        _positive_int(self.num_samples, "RandomSampler", "num_samples")  # (an empty data_source too, as torch)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng = len(self.data_source), epoch_rng(self._rng)
        if self.replacement:
            yield from rng.integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order every epoch.

    Args:
        indices: the dataset indices to visit.
        generator: a NumPy or torch generator (see the module docstring).

    Example:
        >>> sorted(SubsetRandomSampler([5, 7, 9]))
        [5, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator
        self._rng = numpy_rng(generator, None, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        for i in epoch_rng(self._rng).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices drawn with probabilities proportional to `weights` (unnormalized).

    Args:
        weights: one non-negative weight per index (a sequence, array or Tensor).
        num_samples: how many indices an epoch yields.
        replacement: draw with repeats (the default); without, `num_samples` must not exceed
            the number of weights (indices of zero weight come after all others, as torch's).
        generator: a NumPy or torch generator (see the module docstring).

    Example:
        >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], 3))
        [1, 1, 1]
    """

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True, generator: Any = None) -> None:
        self.num_samples = _positive_int(num_samples, "WeightedRandomSampler", "num_samples")
        self.replacement = _bool(replacement, "WeightedRandomSampler", "replacement")
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"WeightedRandomSampler: weights should be a 1d sequence but given weights have shape {w.shape}"
            )
        if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
            raise RuntimeError("WeightedRandomSampler: weights must be finite, non-negative and not all zero")
        if not replacement and num_samples > len(w):
            raise RuntimeError(
                f"WeightedRandomSampler: cannot draw num_samples={num_samples} indices without replacement "
                f"from {len(w)} weights"
            )
        self.weights = w
        self.generator = generator
        self._rng = numpy_rng(generator, None, "WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        rng = epoch_rng(self._rng)
        if self.replacement:
            draws = rng.choice(len(self.weights), size=self.num_samples, p=self.weights / self.weights.sum())
        else:  # torch's multinomial: the smallest exponential / weight keys (zero weights come last)
            with np.errstate(divide="ignore"):
                keys = rng.exponential(size=len(self.weights)) / self.weights
            draws = np.argsort(keys, kind="stable")[: self.num_samples]
        return iter(draws.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size` (a DataLoader's
    `batch_sampler=`).

    Args:
        sampler: any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop the last batch if it is smaller than `batch_size`.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batch_size = _positive_int(batch_size, "BatchSampler", "batch_size")
        self.drop_last = _bool(drop_last, "BatchSampler", "drop_last")

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
