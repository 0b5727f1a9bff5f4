"""`DistributedSampler` (PyTorch's `torch.utils.data.distributed`): each of `num_replicas`
data-parallel workers visits its own share of a dataset's indices.

The shares follow torch's rules exactly: the index list (shuffled or not) is padded by
repeating its start (or truncated, with `drop_last`) to `total_size = num_samples *
num_replicas`, and replica `rank` takes every `num_replicas`-th index from position `rank`.
The shuffled order comes from NumPy's generator seeded with `seed + epoch`, so every replica
computes the same permutation (torch's own generator gives another order).

nabla has sharding meshes but no process groups, so `num_replicas` and `rank` default to a
single replica (1 and 0) where torch would ask the initialized process group (and raise
without one); pass them to split a dataset across workers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any

import numpy as np

from .sampler import Sampler, _bool

__all__ = ["DistributedSampler"]


def _int(value: Any, name: str, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or (low is not None and value < low):
        bound = "" if low is None else f" >= {low}"
        raise ValueError(f"DistributedSampler: {name} must be an integer{bound}, got {name}={value!r}")
    return int(value)


class DistributedSampler(Sampler):
    """The indices of one data-parallel replica (torch's `DistributedSampler`).

    Args:
        dataset: the dataset (only its length is read).
        num_replicas: how many replicas share the dataset (default 1: nabla has no process
            group to ask).
        rank: this replica's index in [0, num_replicas) (default 0).
        shuffle: a new permutation every epoch (seeded by `seed + epoch`; call `set_epoch`).
        seed: the shuffle's base seed; must be the same on every replica.
        drop_last: drop the tail that does not divide evenly (else pad by repeating indices).

    Example:
        >>> s = DistributedSampler(range(10), num_replicas=4, rank=1, shuffle=False)
        >>> list(s), len(s)
        ([1, 5, 9], 3)
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.num_replicas = 1 if num_replicas is None else _int(num_replicas, "num_replicas", 1)
        self.rank = 0 if rank is None else _int(rank, "rank")
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"Invalid rank {self.rank}, rank should be in the interval [0, {self.num_replicas - 1}]")
        self.dataset = dataset
        self.epoch = 0
        self.shuffle = _bool(shuffle, "DistributedSampler", "shuffle")
        self.drop_last = _bool(drop_last, "DistributedSampler", "drop_last")
        self.seed = _int(seed, "seed", 0)
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:  # torch's rule: every replica gets as many
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:  # pad with the first indices (repeated if too few) to total_size
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch (call before each epoch): with `shuffle`, it picks the permutation, the
        same on every replica."""
        self.epoch = int(epoch)
