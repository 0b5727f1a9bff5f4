"""Function transforms in a few lines: per-example gradients, Jacobians, a Hessian, and a
compiled training step whose batch size may change without recompiling.

Run: .venv/bin/python examples/transforms.py   (NABLA_EXECUTOR=numpy never compiles; the
default runs on NumPy while MAX compiles in the background)
"""

import numpy as np

import nabla as nb


def loss(params, x, y):
    h = nb.tanh(x @ params["w1"] + params["b1"])
    return ((h @ params["w2"] - y) ** 2).mean()


def train_step(params, x, y, lr):
    value, grads = nb.value_and_grad(loss)(params, x, y)
    return {k: params[k] - lr * grads[k] for k in params}, value


def main() -> None:
    rng = np.random.default_rng(0)
    params = {
        "w1": nb.tensor(rng.standard_normal((3, 16)).astype(np.float32) * 0.5),
        "b1": nb.zeros(16),
        "w2": nb.tensor(rng.standard_normal((16, 1)).astype(np.float32) * 0.5),
    }

    def batch(n):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        return nb.tensor(x), nb.tensor(np.sin(x.sum(1, keepdims=True)).astype(np.float32))

    # Per-example gradients: grad of the loss of one example, vectorized over the batch.
    x, y = batch(8)
    per_example = nb.vmap(nb.grad(loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
    print("per-example grad of w1:", per_example["w1"].shape)  # (8, 3, 16)

    # Jacobians both ways agree; the Hessian is forward-over-reverse.
    f = lambda v: nb.sin(v) * v.sum()  # noqa: E731
    v = nb.tensor([0.1, 0.2, 0.3])
    print("jacrev == jacfwd:", np.allclose(nb.jacrev(f)(v).numpy(), nb.jacfwd(f)(v).numpy(), atol=1e-6))
    print("hessian of sum(v**3):", np.diag(nb.hessian(lambda u: (u**3).sum())(v).numpy()))  # 6 v

    # One compiled model for every batch size; learning rate and data are inputs.
    step = nb.compile(train_step, dynamic_dims={1: 0, 2: 0})
    for i in range(300):
        params, value = step(params, *batch(64 if i % 4 else 37), 0.1)
        if i % 100 == 0:
            print(f"step {i:3d}  loss {value.item():.4f}")
    print(f"step {i:3d}  loss {value.item():.4f}")
    print("compile stats:", step.stats)
    print(nb.trace(loss)(params, *batch(4)))


if __name__ == "__main__":
    main()
