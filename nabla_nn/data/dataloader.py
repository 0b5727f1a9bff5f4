"""The DataLoader (PyTorch's `torch.utils.data.DataLoader`, single process) and collation
(`default_collate`, and `default_convert` for unbatched samples)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import epoch_rng, numpy_rng

__all__ = ["DataLoader", "default_collate", "get_worker_info"]


def get_worker_info() -> None:
    """torch.utils.data.get_worker_info: the current worker process's info, or None in the
    main process. nabla's DataLoader always loads in the main process (`num_workers` is
    accepted and ignored), so this is always None: an IterableDataset that splits its stream
    by worker sees a single worker.

    Example:
        >>> get_worker_info() is None
        True
    """
    return None


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, as PyTorch's `default_collate` does.

    Tensors and NumPy arrays are stacked along a new first dimension (into a Tensor); Python
    floats become a float64 tensor, ints an int64 tensor (float32 if a float is among them,
    as `torch.tensor` infers), bools a bool tensor, NumPy scalars
    keep their dtype; strings stay a list; dicts, tuples, lists and namedtuples are collated
    field by field (tuples come back as lists, like PyTorch).

    Example:
        >>> x, y = default_collate([(np.zeros(3, np.float32), 1), (np.ones(3, np.float32), 0)])
        >>> x.shape, y.dtype.name
        ((2, 3), 'int64')
    """
    if not batch:
        raise ValueError("default_collate: got an empty batch")
    elem = batch[0]
    if isinstance(elem, str | bytes):  # before np.generic: np.str_ is both
        return list(batch)
    if isinstance(elem, Tensor | np.ndarray | np.generic):
        return _stack(batch)
    if isinstance(elem, bool | int | float):
        return Tensor.from_numpy(np.asarray(batch, dtype=_number_dtype(elem, batch)))
    if isinstance(elem, Mapping):  # (an OrderedDict stays one, as in PyTorch)
        out = {key: default_collate([sample[key] for sample in batch]) for key in elem}
        return _same_mapping(elem, out)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        return [default_collate(list(field)) for field in zip(*batch, strict=True)]
    raise TypeError(
        f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; found {type(elem).__name__}"
    )


def _same_mapping(like: Mapping, values: dict) -> Any:
    """`values` as a mapping of `like`'s type when it can be built from a dict, else a dict."""
    try:
        return type(like)(values)
    except TypeError:
        return values


def _number_dtype(first: Any, batch: Sequence[Any]) -> type:
    """PyTorch's dtype for a batch of Python numbers: float64 when the first is a float (it
    asks for it), else what `torch.tensor(batch)` infers: float32 if any is a float (an int
    batch with a 2.5 in it is not truncated), int64 if any is an int, else bool."""
    if isinstance(first, float):
        return np.float64
    if any(isinstance(x, float) for x in batch):
        return np.float32
    return np.bool_ if all(isinstance(x, bool) for x in batch) else np.int64


def _stack(batch: Sequence[Any]) -> Tensor:
    arrays = [x.numpy() if isinstance(x, Tensor) else np.asarray(x) for x in batch]
    # PyTorch's promotion across the samples (an int sample beside a float one is not truncated)
    dtypes = [
        x.dtype if isinstance(x, Tensor) else _dt.from_numpy_dtype(a.dtype) for x, a in zip(batch, arrays, strict=True)
    ]
    dtype = functools.reduce(_dt.promote_types, dtypes)
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise RuntimeError(
                f"default_collate: stack expects each tensor to be equal size, but got {list(arrays[0].shape)} "
                f"at entry 0 and {list(a.shape)} at entry {i}"
            )
    return Tensor.from_numpy(np.stack(arrays), dtype=dtype)


def _convert(sample: Any) -> Any:
    """Without batching (`batch_size=None`), PyTorch's `default_convert`: NumPy arrays and
    scalars become Tensors (string and object arrays stay), containers are walked, and a plain
    tuple comes back as a list."""
    if isinstance(sample, np.ndarray | np.generic) and sample.dtype.kind not in "SUO":
        return Tensor.from_numpy(np.asarray(sample))
    if isinstance(sample, Mapping):
        return {k: _convert(v) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(_convert(v) for v in sample))
    if isinstance(sample, list | tuple):
        return [_convert(v) for v in sample]
    return sample


def _plain(dataset: Dataset, base: type) -> bool:
    """Whether `dataset` reads samples as `base` does: no subclass overrides `__getitem__` or
    defines `__getitems__` (the DataLoader's array-indexing fast path would skip them)."""
    cls = type(dataset)
    return cls.__getitem__ is base.__getitem__ and getattr(cls, "__getitems__", None) is None


class DataLoader:
    """Iterate over a dataset in batches (PyTorch's `torch.utils.data.DataLoader`, single process).

    Args:
        dataset: a map-style dataset (`__getitem__`, and `__len__` unless a sampler gives the order)
            or an IterableDataset.
        batch_size: samples per batch; None yields samples one by one, unbatched.
        shuffle: visit samples in a new random order every epoch (every `iter(loader)`); None
            is False (PyTorch's default).
        drop_last: drop the last batch if it is smaller than `batch_size`.
        seed: seed of the loader's `numpy.random.default_rng`; the same seed gives the same
            sequence of epoch orders. Without seed or generator, each epoch's order is drawn
            from nabla's global generator (`nabla.manual_seed` repeats it, as torch's).
        collate_fn: turns a list of samples into a batch (default: `default_collate`).
        sampler: an iterable of dataset indices giving each epoch's order (instead of shuffle);
            read lazily, so it may be a generator or endless (`len(loader)` then raises
            TypeError, as in PyTorch).
        batch_sampler: an iterable of index lists, one per batch (instead of batch_size,
            shuffle, sampler and drop_last).
        generator: a `numpy.random.Generator` to shuffle with (instead of seed), or a
            `torch.Generator`, whose `initial_seed()` seeds ours.
        num_workers, pin_memory, timeout, worker_init_fn, prefetch_factor, persistent_workers:
            PyTorch's worker-process settings, accepted for compatibility; samples are always
            loaded in this process (as torch does with num_workers=0).

    A `TensorDataset` (or a `Subset` of one) with the default `collate_fn` is batched by
    indexing its arrays with each batch's index array (a batch is a copy, never a view of the
    arrays); other datasets, a subclass that overrides `__getitem__`, and indices that are not
    ints are read sample by sample (`dataset[i]` with the sampler's index as it is) and collated.

    Example:
        >>> from tqdm import tqdm
        >>> loader = DataLoader(TensorDataset(xs, ys), batch_size=64, shuffle=True, seed=0)
        >>> len(loader)  # batches per epoch
        16
        >>> for epoch in range(10):
        ...     with tqdm(loader, desc=f"epoch {epoch}") as bar:
        ...         for x, y in bar:
        ...             loss = train_step(x, y)
        ...             bar.set_postfix(loss=f"{loss.item():.4f}")
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        drop_last: bool = False,
        seed: int | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        *,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[Sequence[int]] | None = None,
        generator: np.random.Generator | None = None,
        num_workers: int = 0,
        pin_memory: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ) -> None:
        shuffle = False if shuffle is None else shuffle
        if not isinstance(num_workers, int | np.integer) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative int, got {num_workers!r}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError(
                "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
            )
        if batch_sampler is not None:
            batch_size = None  # batches come from the batch sampler
        if batch_size is not None and (
            not isinstance(batch_size, int | np.integer) or isinstance(batch_size, bool) or batch_size <= 0
        ):
            raise ValueError(
                f"DataLoader: batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None disables batching and is mutually exclusive with drop_last")
        if not isinstance(shuffle, bool | int | np.integer | np.bool_):  # (torch takes any truthy value, 1 too)
            raise TypeError(f"DataLoader: shuffle must be a bool, got {shuffle!r}")
        shuffle = bool(shuffle)
        if isinstance(dataset, IterableDataset) and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(
                "DataLoader with IterableDataset: the stream decides the order; shuffle, sampler and batch_sampler "
                "are not allowed"
            )
        if not isinstance(dataset, IterableDataset) and not hasattr(dataset, "__getitem__"):
            # (`__len__` is needed only without a sampler: len() raises then, as in PyTorch)
            raise TypeError(
                f"DataLoader: dataset must define __getitem__ (and __len__) or be an IterableDataset, "
                f"got {type(dataset).__name__}"
            )
        self.dataset = dataset
        self.batch_size = None if batch_size is None else int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers = int(num_workers)
        self._rng = numpy_rng(generator, seed, "DataLoader")

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        # (a stream without a length raises TypeError here, as in torch; it never has a sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            yield from self._stream()
            return
        fast = self._fast_source()
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self._batch(list(indices), fast)
            return
        if self.sampler is not None:
            yield from self._sampled(fast)
            return
        n = len(self.dataset)
        order = epoch_rng(self._rng).permutation(n) if self.shuffle else None
        if self.batch_size is None:
            for i in range(n) if order is None else order:
                yield self._single(int(i))
            return
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            stop = min(start + self.batch_size, n)
            yield self._batch(slice(start, stop) if order is None else order[start:stop], fast)

    def _sampled(self, fast: Callable[[Any], list[Tensor]] | None) -> Iterator[Any]:
        """Batches in the sampler's order, read from it lazily (it may be a generator, or endless).
        Its indices reach `dataset[...]` as they are (a list from a BatchSampler, a string key),
        as in PyTorch."""
        indices = iter(self.sampler)
        if self.batch_size is None:
            for i in indices:
                yield self._single(i)
            return
        while chunk := list(itertools.islice(indices, self.batch_size)):
            if len(chunk) < self.batch_size and self.drop_last:
                return
            yield self._batch(chunk, fast)

    def _single(self, index: int) -> Any:
        item = self.dataset[index]
        return _convert(item) if self.collate_fn is None else self.collate_fn(item)

    def _stream(self) -> Iterator[Any]:
        """Batches of an IterableDataset, taken from its stream in order."""
        samples = iter(self.dataset)
        if self.batch_size is None:
            for item in samples:
                yield _convert(item) if self.collate_fn is None else self.collate_fn(item)
            return
        while batch := list(itertools.islice(samples, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield (self.collate_fn or default_collate)(batch)

    def _batch(self, index: slice | np.ndarray | list, fast: Callable[[Any], list[Tensor]] | None) -> Any:
        """One batch: `index` is a slice or an index array of our own order, or the list of
        indices a sampler gave (passed to `dataset[...]` unchanged unless they are all ints)."""
        if fast is not None:
            if isinstance(index, list):
                rows = np.asarray(index) if index else np.zeros(0, np.int64)
                if rows.ndim == 1 and rows.dtype.kind in "iu":
                    return fast(rows)
            else:
                return fast(index)
        if isinstance(index, slice):
            index = range(*index.indices(len(self.dataset)))
        elif isinstance(index, np.ndarray):
            index = index.tolist()  # (our own order: Python ints, as torch's samplers give)
        return (self.collate_fn or default_collate)([self.dataset[i] for i in index])

    def _fast_source(self) -> Callable[[Any], list[Tensor]] | None:
        """Batching by array indexing, for a TensorDataset or a Subset (chain) of one, when no
        subclass overrides the `__getitem__` it bypasses (nor adds torch's `__getitems__`)."""
        if self.collate_fn is not None:
            return None
        dataset, index_map = self.dataset, None
        while isinstance(dataset, Subset):
            if not _plain(dataset, Subset):
                return None
            indices = np.asarray(dataset.indices)
            if indices.ndim != 1 or (indices.size and indices.dtype.kind not in "iu"):
                return None
            indices = indices.astype(np.int64, copy=False)
            index_map = indices if index_map is None else indices[index_map]
            dataset = dataset.dataset
        if not isinstance(dataset, TensorDataset) or not _plain(dataset, TensorDataset):
            return None
        if index_map is None:  # (a slice of rows is copied once: the batch is not a view of the arrays)
            return functools.partial(dataset._batch, copy=True)
        return lambda index: dataset._batch(index_map[index])

    def __repr__(self) -> str:
        return (
            f"DataLoader(dataset={type(self.dataset).__name__}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last})"
        )
