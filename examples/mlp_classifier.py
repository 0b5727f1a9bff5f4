"""Train an MLP classifier PyTorch-style: Module, DataLoader, Adam, tqdm progress.

Every step (forward, backward, Adam update, loss) is ONE cached model. The first steps run at
once on NumPy while MAX compiles that model in the background; later steps run the compiled
model, and a second run of the script loads it from the on-disk model store.

    python examples/mlp_classifier.py
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla_nn.data import DataLoader, TensorDataset


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points in 20-D labelled by a fixed random teacher network (5 classes)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    teacher = np.random.default_rng(42).standard_normal((20, 5)).astype(np.float32)
    return x, np.argmax(np.tanh(x @ teacher) + 0.1 * x[:, :5], axis=1).astype(np.int64)


class MLP(nn.Module):
    def __init__(self, d_in: int = 20, hidden: int = 128, classes: int = 5) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: nb.Tensor) -> nb.Tensor:
        return self.head(self.net(x))


def main(epochs: int = 3) -> None:
    nb.manual_seed(0)
    x, y = make_data(8192)
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True, drop_last=True, seed=0)
    model = MLP()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        bar = tqdm(loader, desc=f"epoch {epoch}")
        for xb, yb in bar:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()  # forward + backward + update: one cached model
            bar.set_postfix(loss=f"{loss.item():.4f}")  # already computed: no extra work
    model.eval()
    xt, yt = make_data(2048, seed=1)
    with nb.no_grad():
        accuracy = (model(nb.tensor(xt)).argmax(-1).numpy() == yt).mean()
    info = nb.cache_info()
    print(f"test accuracy {accuracy:.3f}; compiles {info.compiles}, cache hits {info.hits}")


if __name__ == "__main__":
    main()
