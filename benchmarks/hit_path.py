"""Cost of a cache hit beyond the model's own execution (target: under 0.2 ms).

Prints one JSON line per measurement. The graph is small on purpose (a few elementwise ops on
a 64x64 tensor) so the model's own run is tiny and the engine's overhead dominates.

Run: .venv/bin/python benchmarks/hit_path.py
"""

import json
import time

import numpy as np

import nabla as nb
from nabla.core.graph import GRAPH, storage_to_buffer
from nabla.core.graph.program import collect

nb.set_executor("max")  # compiled steady state (cold_start.py measures the default auto executor)


def step(x: nb.Tensor) -> nb.Tensor:
    return ((x * 2.0 + 1.0).tanh() * x).relu()


def main(iters: int = 2000) -> None:
    rng = np.random.default_rng(0)
    data = [rng.normal(size=(64, 64)).astype(np.float32) for _ in range(8)]
    step(nb.tensor(data[0])).numpy()  # warm-up: the one compile (or load from the model store)
    info = nb.cache_info()
    assert info.compiles + info.loads == 1

    # 1) op dispatch (recording the lazy ops) and 2) evaluate() on a cache hit (collect, key,
    # lookup, run, store), timed separately within each iteration. Each step is evaluated
    # before the next is built: every live pending tensor joins an evaluation.
    dispatch = evaluate = 0.0
    for k in range(iters):
        t0 = time.perf_counter()
        y = step(nb.tensor(data[k % 8]))
        t1 = time.perf_counter()
        GRAPH.evaluate([y._impl])
        t2 = time.perf_counter()
        dispatch += t1 - t0
        evaluate += t2 - t1
    dispatch /= iters
    evaluate /= iters

    # 3) the model's own execution on the same inputs
    y = step(nb.tensor(data[0]))
    model = GRAPH._cache[("max", collect([y._impl]).key)][1]
    buffers = [storage_to_buffer(d) for d in data]
    t0 = time.perf_counter()
    for k in range(iters):
        model.execute(buffers[k % 8])
    execute = (time.perf_counter() - t0) / iters

    # 4) the same step through nabla.compile: a hit only feeds the buffer and runs the model
    compiled = nb.compile(step)
    inputs = [nb.tensor(d) for d in data]
    compiled(inputs[0])
    t0 = time.perf_counter()
    for k in range(iters):
        compiled(inputs[k % 8])
    compiled_call = (time.perf_counter() - t0) / iters
    assert compiled.stats.compiles <= 1 and compiled.stats.misses == 1

    info = nb.cache_info()
    for name, value in (
        ("compiled_call_ms", compiled_call * 1e3),
        ("compiled_overhead_ms", (compiled_call - execute) * 1e3),
        ("op_dispatch_per_step_ms", dispatch * 1e3),
        ("evaluate_hit_ms", evaluate * 1e3),
        ("model_execute_ms", execute * 1e3),
        ("hit_overhead_ms", (evaluate - execute) * 1e3),
    ):
        print(json.dumps({"benchmark": "hit_path", "metric": name, "value": round(value, 4), "ops_per_step": 6}))
    print(json.dumps({"benchmark": "hit_path", "metric": "compiles", "value": info.compiles, "hits": info.hits}))
    assert info.compiles <= 2, "the hit path compiled again"


if __name__ == "__main__":
    main()
