"""The W1-W4 models in nabla (`torch_workloads.py` has the same models in PyTorch)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from max.driver import Buffer

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.graph import executors


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


class ModelSpy:
    """Context manager: remembers the cached MAX model each evaluation in the body runs, and its
    inputs; `run()` then executes the last one again alone (no Python between executions).

    Example:
        >>> with ModelSpy() as spy:
        ...     train_step(model, opt, loss_fn, x, y)
        >>> spy.run()
    """

    def __init__(self) -> None:
        self.captured: tuple = ()

    def __enter__(self) -> ModelSpy:
        self._original = original = executors.MaxExecutor.run

        def spy(executor, prepared, inputs):  # ~1 us a step
            self.captured = (executor, prepared, list(inputs))
            return original(executor, prepared, inputs)

        executors.MaxExecutor.run = spy
        return self

    def __exit__(self, *exc: object) -> None:
        executors.MaxExecutor.run = self._original

    def run(self) -> list:
        executor, prepared, inputs = self.captured
        return executor.run(prepared, inputs)

    def runner(self, batches: list[tuple]) -> Callable[[int], list]:
        """`run(i)`: the last model on its last inputs, with the batch tensors among them swapped
        for `batches[i % len(batches)]`'s, so that the model alone reads a fresh batch each run as
        the steps do (W4's 3 MB input read again from one buffer stays in cache)."""
        executor, prepared, inputs = self.captured
        where = {id(t._impl.data): j for batch in batches for j, t in enumerate(batch)}
        slots = [(k, where[id(v)]) for k, v in enumerate(inputs) if id(v) in where]

        def run(i: int) -> list:
            feed = list(inputs)
            for k, j in slots:
                feed[k] = batches[i % len(batches)][j]._impl.data
            out = executor.run(prepared, feed)
            if type(out[0]) is Buffer and not out[0].is_host:  # an accelerator's: wait, as the steps
                out[0].device.synchronize()  # do for their loss (else the next step waits for it)
            return out

        return run


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
