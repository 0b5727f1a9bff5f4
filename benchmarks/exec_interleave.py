"""How the time of one cached MAX model execution depends on what runs between executions.

The W1 training step's model (captured from the PyTorch-style loop) is executed back-to-back,
after 3 ms of busy Python, after a 3 ms sleep, and after 3 ms of allocating Python. One JSON
line per case. On a 2-core machine, busy Python between executions makes the same model run
slower: part of the gap between the eager loop and "MAX model alone" in train_bench.py.

    python benchmarks/exec_interleave.py
"""

from __future__ import annotations

import json
import time

import numpy as np
from bench_common import batches, train_step
from workloads import ModelSpy, nabla_workload

import nabla as nb

nb.set_executor("max")  # compiled steady state (cold_start.py measures the default auto executor)


def _capture_w1_model() -> tuple:
    model, opt, _, loss_fn = nabla_workload("W1")
    x, y = (nb.Tensor.from_numpy(a) for a in (batches("W1", 1)[0].x, batches("W1", 1)[0].y))
    with ModelSpy() as spy:
        for _ in range(3):
            train_step(model, opt, loss_fn, x, y)
    return spy.captured


def _busy(ms: float) -> None:
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        pass


def _allocate(ms: float) -> None:
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        [{"i": i} for i in range(200)]


def main(runs: int = 40) -> None:
    executor, prepared, inputs = _capture_w1_model()
    gaps = {"back-to-back": None, "busy python 3ms": _busy, "sleep 3ms": lambda ms: time.sleep(ms / 1e3)}
    gaps["allocating python 3ms"] = _allocate
    for name, gap in gaps.items():
        times = []
        for _ in range(runs):
            if gap is not None:
                gap(3.0)
            t0 = time.perf_counter()
            executor.run(prepared, inputs)
            times.append(time.perf_counter() - t0)
        print(
            json.dumps(
                {
                    "workload": "W1",
                    "between_executions": name,
                    "median_execute_ms": round(float(np.median(times[5:])) * 1e3, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
