"""Datasets (PyTorch's `torch.utils.data.dataset`): map-style `Dataset`s (`TensorDataset`,
`Subset`, `ConcatDataset`), streams (`IterableDataset`, `ChainDataset`) and `random_split`."""

from __future__ import annotations

import abc
import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from nabla import Tensor

from .sampler import epoch_rng, numpy_rng

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: `dataset[i]` is the i-th sample, `len(dataset)` the number of samples.

    As in PyTorch, only `__getitem__` is needed (`__len__` is optional: a DataLoader over a
    dataset without one needs a sampler or batch_sampler).

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 10
        ...     def __getitem__(self, i):
        ...         return np.float32(i), np.float32(i * i)
        >>> x, y = next(iter(DataLoader(Squares(), batch_size=4)))
        >>> y.numpy()
        array([0., 1., 4., 9.], dtype=float32)
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset, abc.ABC):
    """A stream of samples (PyTorch's `IterableDataset`): define `__iter__`. A DataLoader
    batches the stream in order (no shuffle or sampler: the stream decides the order).

    Example:
        >>> class Counter(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(5))
        >>> [b.numpy().tolist() for b in DataLoader(Counter(), batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """

    @abc.abstractmethod
    def __iter__(self) -> Iterator[Any]: ...

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Several IterableDatasets one after another (PyTorch's `ChainDataset`; also `a + b`).

    Args:
        datasets: the streams, in order.

    Example:
        >>> class Count(IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(self.n))
        >>> list(ChainDataset([Count(2), Count(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__} at position {i}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class ConcatDataset(Dataset):
    """Several map-style datasets one after another (PyTorch's `ConcatDataset`; also `a + b`).

    Args:
        datasets: the datasets, in order.

    Example:
        >>> both = ConcatDataset([TensorDataset(np.arange(3)), TensorDataset(np.arange(10, 12))])
        >>> len(both), int(both[3][0])
        (5, 10)
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} samples")
        index %= n
        k = bisect.bisect_right(self.cumulative_sizes, index)
        return self.datasets[k][index - (self.cumulative_sizes[k - 1] if k else 0)]


class TensorDataset(Dataset):
    """Samples are rows of the given arrays: `dataset[i] == (tensors[0][i], tensors[1][i], ...)`.

    Args:
        *tensors: nabla Tensors or NumPy arrays with the same first dimension. NumPy arrays
            are kept (not copied) when C-contiguous; Tensors are read once, here.

    Example:
        >>> ds = TensorDataset(np.zeros((5, 3), np.float32), np.arange(5))
        >>> x, y = ds[2]
        >>> x.shape, int(y)
        ((3,), 2)
    """

    def __init__(self, *tensors: Tensor | np.ndarray) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self._arrays: list[np.ndarray] = []
        self._dtypes: list[Any] = []
        for i, t in enumerate(tensors):
            if isinstance(t, Tensor):
                self._dtypes.append(t.dtype)  # bfloat16 is read as float32 and cast back per batch
                array = t.numpy()
            elif isinstance(t, np.ndarray):
                self._dtypes.append(None)
                array = t
            else:
                raise TypeError(
                    f"TensorDataset: argument {i} must be a Tensor or a NumPy array, got {type(t).__name__}"
                )
            if array.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is 0-d; every tensor needs a first (sample) dimension")
            self._arrays.append(np.ascontiguousarray(array))
        sizes = [a.shape[0] for a in self._arrays]
        if len(set(sizes)) > 1:
            raise ValueError(f"TensorDataset: size mismatch between tensors: first dimensions are {sizes}")

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return tuple(self._wrap(i, a) for i, a in enumerate(self._arrays))

    def _wrap(self, i: int, array: np.ndarray) -> Tensor:
        return Tensor.from_numpy(np.asarray(array), dtype=self._dtypes[i])

    def _batch(self, index: Any, copy: bool = False) -> list[Tensor]:
        """Rows `index` (an index array or a slice) of every tensor, one indexing op each; `copy`:
        a slice's rows are copied, not a view of the arrays (a DataLoader's batch is its own)."""
        if copy and isinstance(index, slice):
            return [self._wrap(i, a[index].copy()) for i, a in enumerate(self._arrays)]
        return [self._wrap(i, a[index]) for i, a in enumerate(self._arrays)]

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(self._batch(index))

    def __len__(self) -> int:
        return self._arrays[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order.

    Args:
        dataset: the dataset to take samples from.
        indices: positions in `dataset`.

    Example:
        >>> evens = Subset(TensorDataset(np.arange(10)), [0, 2, 4])
        >>> len(evens), int(evens[1][0])
        (3, 2)
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int] | np.ndarray) -> None:
        self.dataset = dataset
        # a list of Python ints, as torch's random_split gives (an array's values become ints)
        self.indices = np.asarray(indices).reshape(-1).tolist() if isinstance(indices, np.ndarray) else list(indices)
        positions = np.asarray(self.indices)
        if positions.size and positions.dtype.kind not in "iu":
            raise TypeError(f"Subset: indices must be ints, got {positions.dtype} values such as {self.indices[0]!r}")
        n = len(dataset)
        if positions.size and (positions.min() < -n or positions.max() >= n):
            raise IndexError(f"Subset: indices must lie in [-{n}, {n}) for a dataset of {n} samples")

    def __getitem__(self, index: int | list[int]) -> Any:
        if isinstance(index, list):  # a batch of positions, passed on as one list (as PyTorch's)
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset, lengths: Sequence[int | float], seed: int | None = None, *, generator: Any = None
) -> list[Subset]:
    """Split `dataset` into non-overlapping random subsets of the given lengths.

    Args:
        dataset: the dataset to split.
        lengths: sample counts summing to `len(dataset)`, or fractions summing to 1 (the
            remainder of the floors goes one sample each to the first subsets, as in PyTorch).
        seed: seed of `numpy.random.default_rng`; the same seed gives the same split.
        generator: instead of seed, a `numpy.random.Generator`, or a `torch.Generator` (its
            `initial_seed()` seeds ours: the same split every time, not torch's split).
            Without either, the seed comes from nabla's global generator (`nabla.manual_seed`).

    Example:
        >>> train, val = random_split(TensorDataset(np.arange(10)), [0.8, 0.2], seed=0)
        >>> len(train), len(val)
        (8, 2)
    """
    if seed is not None and not isinstance(seed, int | np.integer) and generator is None:
        seed, generator = None, seed  # torch's third positional argument is the generator
    n = len(dataset)
    lengths = [x.item() if isinstance(x, np.generic) else x for x in lengths]  # np.int64(8) -> 8
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1.0):
        if any(not 0.0 <= x <= 1.0 for x in lengths):
            raise ValueError(f"random_split: fractions must lie in [0, 1], got {lengths}")
        counts = [math.floor(n * x) for x in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths sum to {sum(lengths)}, the dataset has {n} samples")
    order = epoch_rng(numpy_rng(generator, seed, "random_split")).permutation(n)
    bounds = np.cumsum([0, *lengths])
    return [Subset(dataset, order[a:b].tolist()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
