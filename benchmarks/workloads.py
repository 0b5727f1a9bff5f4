"""The issue-5 workloads, defined once for nabla and (when installed) PyTorch.

W1 MLP 784-512-512-10, ReLU, cross-entropy, Adam, batch 128
W2 CNN on 28x28x1 (conv3x3 32, relu, maxpool2, conv3x3 64, relu, maxpool2, linear 10), batch 64, SGD momentum
W3 transformer LM (vocab 256, d_model 128, 4 heads, 2 layers, MLP 512, seq 64, batch 16), AdamW
W4 W1's forward at batch 1024 (inference)

Data is synthetic and learnable (labels from a fixed random teacher; text from a tiny grammar),
so every run can check that the loss goes down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim


@dataclass
class Batch:
    x: np.ndarray
    y: np.ndarray


def mlp_data(n: int, rng: np.random.Generator) -> Batch:
    x = rng.standard_normal((n, 784)).astype(np.float32)
    teacher = np.random.default_rng(123).standard_normal((784, 10)).astype(np.float32)
    return Batch(x, np.argmax(x @ teacher, axis=1).astype(np.int64))


def image_data(n: int, rng: np.random.Generator) -> Batch:
    x = rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    teacher = np.random.default_rng(321).standard_normal((196, 10)).astype(np.float32)
    pooled = x.reshape(n, 14, 2, 14, 2).mean(axis=(2, 4)).reshape(n, 196)
    return Batch(x, np.argmax(pooled @ teacher, axis=1).astype(np.int64))


def text_corpus(length: int = 200_000, seed: int = 0) -> np.ndarray:
    """Bytes from a tiny grammar ("the cat sat on the mat. ..."): predictable enough to learn."""
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "every bird"]
    verbs = ["sat on", "looked at", "ran past", "jumped over", "sang to"]
    objects = ["the mat", "a tree", "the river", "her house", "the moon"]
    words = []
    while sum(len(w) for w in words) < length:
        words.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}. ")
    return np.frombuffer("".join(words).encode()[:length], dtype=np.uint8).astype(np.int64)


def text_data(corpus: np.ndarray, batch: int, seq: int, rng: np.random.Generator) -> Batch:
    starts = rng.integers(0, len(corpus) - seq - 1, batch)
    idx = starts[:, None] + np.arange(seq + 1)[None, :]
    chunk = corpus[idx]
    return Batch(chunk[:, :-1], chunk[:, 1:])


# -- nabla models ------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (784, 512, 512, 10)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x: nb.Tensor) -> nb.Tensor:
        return self.layers(x)


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64 * 7 * 7, 10)

    def forward(self, x: nb.Tensor) -> nb.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(x.flatten(1))


class CharLM(nn.Module):
    def __init__(self, vocab: int = 256, d_model: int = 128, nhead: int = 4, layers: int = 2, seq: int = 64) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("positions", nb.Tensor.from_numpy(np.arange(seq, dtype=np.int64)), persistent=False)
        mask = np.triu(np.full((seq, seq), -np.inf, np.float32), 1)
        self.register_buffer("causal", nb.Tensor.from_numpy(mask), persistent=False)

    def forward(self, idx: nb.Tensor) -> nb.Tensor:
        h = self.tok(idx) + self.pos(self.positions)
        h = self.encoder(h, mask=self.causal)
        return self.head(self.norm(h))


def lm_loss(logits: nb.Tensor, targets: nb.Tensor) -> nb.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def nabla_workload(name: str) -> tuple[nn.Module, optim.Optimizer | None, object, object]:
    """(model, optimizer, batch sampler, loss function) for a workload."""
    if name in ("W1", "W4"):
        model = MLP()
        return model, optim.Adam(model.parameters(), lr=1e-3), None, F.cross_entropy
    if name == "W2":
        model = CNN()
        return model, optim.SGD(model.parameters(), lr=0.01, momentum=0.9), None, F.cross_entropy
    if name == "W3":
        model = CharLM()
        return model, optim.AdamW(model.parameters(), lr=1e-3), None, lm_loss
    raise ValueError(name)
