"""Data-parallel training (PyTorch's DDP) of an MLP classifier on a simulated 4-device mesh.

Every parameter is replicated on the mesh and every batch is split along its first dimension,
so each device runs the model on a quarter of the batch. Sharding propagates through the ops:
the gradients come out as per-device partial sums and the optimizer's update all-reduces
them, all inside the one cached model each step runs.

    python examples/data_parallel.py
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
from nabla_nn.parallel import count_collectives, shard_batch, shard_module


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points in 20-D labelled by a fixed random teacher network (5 classes)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    teacher = np.random.default_rng(42).standard_normal((20, 5)).astype(np.float32)
    return x, np.argmax(np.tanh(x @ teacher) + 0.1 * x[:, :5], axis=1).astype(np.int64)


def communication(loss: nb.Tensor, model: nn.Module) -> str:
    """The collectives of one step: recorded in forward + backward, plus the all-reduce the
    optimizer's update runs for each gradient that is still a partial sum."""
    grads = [p.grad for p in model.parameters()]
    recorded = dict(count_collectives(loss, *grads))
    in_update = sum(1 for g in grads if g.sharding is not None and g.sharding.partial)
    return f"forward + backward {recorded or 'none'}; opt.step() {in_update} gradient all_reduce(s)"


def main(steps: int = 30, batch_size: int = 64) -> None:
    nb.manual_seed(0)
    mesh = DeviceMesh("mesh", (4,), ("dp",))
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5))
    shard_module(model, mesh)  # no plan: every parameter replicated on the mesh
    opt = optim.Adam(model.parameters(), lr=3e-3)  # after sharding: its state follows the layouts
    x, y = make_data(steps * batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, drop_last=True, seed=0)
    bar = tqdm(loader, desc="data parallel")
    for i, batch in enumerate(bar):
        xb, yb = shard_batch(batch, mesh, "dp")  # each device gets batch_size / 4 rows
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        if i == 0:
            per_step = communication(loss, model)  # the same every step: one cached model
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}")
    print(f"batch {tuple(xb.shape)} as {xb.sharding}: device 0 holds {xb.local_shape(0)}")
    for name, p in model.named_parameters():
        print(f"  {name:9s} {str(tuple(p.shape)):9s} {p.sharding}")
    print(f"communication per step: {per_step}")
    info = nb.cache_info()
    print(f"compiles {info.compiles}, cache hits {info.hits}")


if __name__ == "__main__":
    main()
