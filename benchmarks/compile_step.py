"""A compiled MLP training step (nabla.compile) against the same step through the lazy engine.

Both run on MAX. The lazy path records every op and hashes the trace on each step (a model
cache hit); the compiled path only feeds buffers to the one model. The batch dim is dynamic,
so the last, smaller batch of an epoch does not recompile. Prints one JSON line per measurement
and checks that the loss goes down and that nothing recompiles after warm-up.

Run: .venv/bin/python benchmarks/compile_step.py
"""

import json
import time

import numpy as np

import nabla as nb

nb.set_executor("max")  # compiled steady state (cold_start.py measures the default auto executor)


def loss_fn(params, x, y):
    h = nb.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return -(nb.log_softmax(logits, axis=-1) * y).sum(axis=-1).mean()


def train_step(params, x, y, lr):
    loss, grads = nb.value_and_grad(loss_fn)(params, x, y)
    return {k: params[k] - lr * grads[k] for k in params}, loss


def _data(rng, n, d_in, classes, true_w):
    x = rng.standard_normal((n, d_in)).astype(np.float32)
    labels = np.argmax(x @ true_w, axis=-1)
    return nb.tensor(x), nb.tensor(np.eye(classes, dtype=np.float32)[labels])


def main(steps: int = 200, batch: int = 128, d_in: int = 64, hidden: int = 128, classes: int = 10) -> None:
    rng = np.random.default_rng(0)
    true_w = rng.standard_normal((d_in, classes)).astype(np.float32)

    def init():
        r = np.random.default_rng(1)
        return {
            "w1": nb.tensor(r.standard_normal((d_in, hidden)).astype(np.float32) * 0.1),
            "b1": nb.zeros(hidden),
            "w2": nb.tensor(r.standard_normal((hidden, classes)).astype(np.float32) * 0.1),
            "b2": nb.zeros(classes),
        }

    batches = [_data(rng, batch if k % 10 else batch // 2 + 3, d_in, classes, true_w) for k in range(20)]
    step = nb.compile(train_step, dynamic_dims={1: 0, 2: 0})
    results = {}
    for mode in ("compiled", "lazy"):
        params = init()
        fn = step if mode == "compiled" else train_step
        t0 = time.perf_counter()
        for k in (0, 1, 0, 1):  # warm-up: both batch sizes, twice (steady-state graphs of the lazy path)
            params, loss = fn(params, *batches[k], 0.5 if mode == "compiled" else nb.tensor(np.float32(0.5)))
            nb.evaluate(loss, *params.values())
        warm = time.perf_counter() - t0
        first = loss.item()
        t0 = time.perf_counter()
        for k in range(steps):
            lr = 0.5 / (1 + 0.01 * k)
            # The lazy engine bakes Python floats into the graph: a changing rate must be a tensor.
            params, loss = fn(params, *batches[k % 20], lr if mode == "compiled" else nb.tensor(np.float32(lr)))
            if mode == "lazy":
                nb.evaluate(loss, *params.values())  # one graph per step, as a training loop would
        last = loss.item()
        per_step = (time.perf_counter() - t0) / steps
        results[mode] = per_step
        print(json.dumps({"benchmark": "compile_step", "mode": mode, "metric": "warmup_s", "value": round(warm, 3)}))
        print(
            json.dumps(
                {"benchmark": "compile_step", "mode": mode, "metric": "step_ms", "value": round(per_step * 1e3, 4)}
            )
        )
        print(
            json.dumps(
                {
                    "benchmark": "compile_step",
                    "mode": mode,
                    "metric": "loss",
                    "first": round(first, 4),
                    "last": round(last, 4),
                }
            )
        )
        assert last < 0.5 * first, f"{mode}: loss did not go down ({first} -> {last})"
    print(
        json.dumps(
            {
                "benchmark": "compile_step",
                "metric": "stats",
                **{k: v for k, v in vars(step.stats).items() if k != "recompile_reasons"},
            }
        )
    )
    print(
        json.dumps(
            {
                "benchmark": "compile_step",
                "metric": "speedup_vs_lazy",
                "value": round(results["lazy"] / results["compiled"], 2),
            }
        )
    )
    # one model: compiled, or loaded from the model store by a later run
    assert step.stats.compiles <= 1 and step.stats.misses == 1, step.stats


if __name__ == "__main__":
    main()
