"""PyTorch-style data loading: datasets and a DataLoader that yields nabla Tensors.

Batches are NumPy arrays wrapped as realized tensors (`Tensor.from_numpy`, no copy), so
they are graph inputs: every step of a training loop has the same graph structure and the
compiled model is reused. A `TensorDataset` is batched by indexing its arrays with one index
array per batch (no per-sample Python loop).

Example:
    >>> import numpy as np
    >>> from tqdm import tqdm
    >>> import nabla_nn as nn
    >>> from nabla_nn.data import DataLoader, TensorDataset
    >>> xs = np.random.rand(1000, 784).astype(np.float32)
    >>> ys = np.random.randint(0, 10, 1000)
    >>> loader = DataLoader(TensorDataset(xs, ys), batch_size=128, shuffle=True, seed=0)
    >>> for epoch in range(3):
    ...     bar = tqdm(loader, desc=f"epoch {epoch}")
    ...     for x, y in bar:
    ...         opt.zero_grad()
    ...         loss = nn.functional.cross_entropy(model(x), y)
    ...         loss.backward()
    ...         opt.step()
    ...         bar.set_postfix(loss=f"{loss.item():.4f}")
"""

from .dataloader import DataLoader, default_collate, get_worker_info
from .dataset import ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "get_worker_info",
    "random_split",
]
