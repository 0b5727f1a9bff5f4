"""JAX side of `train_bench.py` (run as its own process): one workload per call, the step as a
JAX user writes it: `jax.jit` of value_and_grad plus the optax update, parameters and
optimizer state donated, and the loss read with `float()` every step (as `loss.item()` is in
the nabla and PyTorch loops).

python benchmarks/train_bench_jax.py jit W1 --steps 60
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import optax
from bench_common import batches, report
from jax_workloads import cross_entropy, jax_workload


def run(mode: str, workload: str, steps: int) -> dict:
    apply, params, opt = jax_workload(workload, jax.random.key(0))
    data = [(jax.device_put(b.x), jax.device_put(b.y)) for b in batches(workload, steps)]
    times, losses = [], []
    if workload == "W4":
        forward = jax.jit(apply)
        for i in range(steps):
            x, _ = data[i % len(data)]
            t0 = time.perf_counter()
            forward(params, x).block_until_ready()
            times.append(time.perf_counter() - t0)
        return report("jax", mode, workload, times, losses, forward._cache_size())

    def loss_fn(params, x, y):
        return cross_entropy(apply(params, x), y)

    def train_step(params, state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    step = jax.jit(train_step, donate_argnums=(0, 1))  # parameters and state updated in place
    state = opt.init(params)
    for i in range(steps):
        x, y = data[i % len(data)]
        t0 = time.perf_counter()
        params, state, loss = step(params, state, x, y)
        losses.append(float(loss))
        times.append(time.perf_counter() - t0)
    return report("jax", mode, workload, times, losses, step._cache_size())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["jit"])
    parser.add_argument("workload", choices=["W1", "W2", "W3", "W4"])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    print(json.dumps(run(args.mode, args.workload, args.steps)), flush=True)
