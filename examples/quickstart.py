"""Quickstart: lazy tensors, one compiled graph for forward + backward, cache hits after warm-up.

Fits y = 3x - 2 with plain gradient descent written against nabla's core.
"""

import time

import numpy as np

import nabla as nb


def main() -> None:
    rng = np.random.default_rng(0)
    w = nb.zeros(1, 1, requires_grad=True)
    b = nb.zeros(1, requires_grad=True)
    lr = 0.1
    nb.evaluate(w, b)  # parameter init runs on the host: no compile
    start = time.perf_counter()
    for step in range(60):
        x_np = rng.uniform(-1, 1, size=(32, 1)).astype(np.float32)
        x, y = nb.tensor(x_np), nb.tensor(3 * x_np - 2)
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with nb.no_grad():
            w_new, b_new = w - lr * w.grad, b - lr * b.grad
        w = w_new.detach().requires_grad_()
        b = b_new.detach().requires_grad_()
        nb.evaluate(w, b)  # realize the step: parameters become graph inputs of the next one
        if step % 20 == 0 or step == 59:
            print(f"step {step:2d}  loss {loss.item():.5f}")
    info = nb.cache_info()
    print(f"w={w.item():.3f} b={b.item():.3f}  ({time.perf_counter() - start:.1f} s)")
    print(f"compiles={info.compiles} hits={info.hits} graph_builds={info.graph_builds} executions={info.executions}")


if __name__ == "__main__":
    main()
