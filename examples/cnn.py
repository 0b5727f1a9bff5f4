"""A small CNN trained PyTorch-style (Conv2d, BatchNorm2d, MaxPool2d, SGD with momentum) on
generated 28x28 images: bright horizontal vs vertical vs diagonal strokes.

    python examples/cnn.py
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla_nn.data import DataLoader, TensorDataset


def make_images(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    images = rng.normal(0, 0.3, (n, 1, 28, 28)).astype(np.float32)
    pos = rng.integers(4, 24, n)
    for i, (label, p) in enumerate(zip(labels, pos, strict=True)):
        if label == 0:
            images[i, 0, p, 4:24] += 1.5
        elif label == 1:
            images[i, 0, 4:24, p] += 1.5
        else:
            images[i, 0, np.arange(4, 24), np.arange(4, 24)] += 1.5
    return images, labels.astype(np.int64)


class CNN(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 7 * 7, classes))

    def forward(self, x: nb.Tensor) -> nb.Tensor:
        return self.classifier(self.features(x))


def main(epochs: int = 2) -> None:
    nb.manual_seed(0)
    x, y = make_images(2048)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, drop_last=True, seed=0)
    model = CNN()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        bar = tqdm(loader, desc=f"epoch {epoch}")
        for xb, yb in bar:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.4f}")
    model.eval()
    xt, yt = make_images(512, seed=1)
    with nb.no_grad():
        accuracy = (model(nb.tensor(xt)).argmax(-1).numpy() == yt).mean()
    print(f"test accuracy {accuracy:.3f}; {nb.cache_info()}")


if __name__ == "__main__":
    main()
