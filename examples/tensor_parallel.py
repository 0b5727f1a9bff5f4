"""Megatron-style tensor-parallel training of an MLP classifier on a simulated 4-device mesh.

Each residual block's first Linear is column-parallel (its output features split over the
devices) and its second row-parallel (its input features split), so the hidden activations
never leave their device: one all-reduce per block forward (the row-parallel partial sums)
and one backward (the block's input gradient). `shard_module` lays the parameters out by name
patterns; everything else is replicated.

    python examples/tensor_parallel.py
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh
from nabla_nn.data import DataLoader, TensorDataset
from nabla_nn.parallel import colwise, count_collectives, rowwise, shard_module


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points in 20-D labelled by a fixed random teacher network (5 classes)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    teacher = np.random.default_rng(42).standard_normal((20, 5)).astype(np.float32)
    return x, np.argmax(np.tanh(x @ teacher) + 0.1 * x[:, :5], axis=1).astype(np.int64)


class Block(nn.Module):
    """x + fc2(gelu(fc1(x))): a residual MLP block, as in a transformer."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x: nb.Tensor) -> nb.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


def main(steps: int = 30, batch_size: int = 64) -> None:
    nb.manual_seed(0)
    mesh = DeviceMesh("mesh", (4,), ("tp",))
    model = nn.Sequential(nn.Linear(20, 64), Block(64, 256), Block(64, 256), nn.Linear(64, 5))
    shard_module(model, mesh, {"*.fc1": colwise("tp"), "*.fc2": rowwise("tp")})
    opt = optim.Adam(model.parameters(), lr=3e-3)  # after sharding: its state follows the layouts
    x, y = make_data(steps * batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, drop_last=True, seed=0)
    bar = tqdm(loader, desc="tensor parallel")
    for i, (xb, yb) in enumerate(bar):  # the batch stays whole: every device sees all of it
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        if i == 0:  # the same every step: one cached model
            grads = [p.grad for p in model.parameters()]
            per_step = dict(count_collectives(loss, *grads))
            in_update = sum(1 for g in grads if g.sharding is not None and g.sharding.partial)
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}")
    for name, p in model.named_parameters():
        print(f"  {name:14s} {str(tuple(p.shape)):10s} {p.sharding}  device 0 holds {p.local_shape(0)}")
    print(f"communication per step: forward + backward {per_step}; opt.step() {in_update} all_reduce(s)")
    info = nb.cache_info()
    print(f"compiles {info.compiles}, cache hits {info.hits}")


if __name__ == "__main__":
    main()
