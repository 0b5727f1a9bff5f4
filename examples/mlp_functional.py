"""The MLP of `mlp_classifier.py`, JAX-style: parameters are a pytree, the step is a pure
function using `value_and_grad`, and `nabla.compile` turns it into one cached model.

    python examples/mlp_functional.py
"""

from __future__ import annotations

import numpy as np
from mlp_classifier import make_data

import nabla as nb
import nabla_nn.functional as F


def init_params(sizes: tuple[int, ...], seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "w": nb.tensor((rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32)),
            "b": nb.tensor(np.zeros(b, np.float32)),
        }
        for a, b in zip(sizes[:-1], sizes[1:], strict=True)
    ]


def forward(params: list[dict], x: nb.Tensor) -> nb.Tensor:
    for layer in params[:-1]:
        x = nb.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params: list[dict], x: nb.Tensor, y: nb.Tensor) -> nb.Tensor:
    return F.cross_entropy(forward(params, x), y)


@nb.compile
def train_step(params: list[dict], x: nb.Tensor, y: nb.Tensor, lr: float) -> tuple:
    loss, grads = nb.value_and_grad(loss_fn)(params, x, y)
    params = nb.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def main(steps: int = 300) -> None:
    x, y = make_data(8192)
    params = init_params((20, 128, 128, 5))
    rng = np.random.default_rng(0)
    for step in range(steps):
        idx = rng.integers(0, len(x), 128)
        lr = 0.1 * (1 - step / steps)  # a Python float input: changing it never recompiles
        params, loss = train_step(params, nb.tensor(x[idx]), nb.tensor(y[idx]), lr)
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step:4d} loss {loss.item():.4f}")
    print(train_step.stats)


if __name__ == "__main__":
    main()
