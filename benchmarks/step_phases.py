"""Where the PyTorch-style loop's step time goes, on the CPU or an accelerator: the Python of
each phase of `opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); opt.step();
loss.item()`, what `opt.step()` spends collecting the trace and placing inputs, MAX's own
`execute`, and the cached model alone (which waits for an accelerator's results, as the step
does for its loss). W4 (inference) times its forward, evaluation and read-back instead.

Prints one JSON line per workload: median ms per phase after warm-up, then (with --profile)
cProfile's top functions by own time. Fails if a training loss does not go down.

`python` is the step's own Python (the step less MAX's `execute`, step by step). With `--warm`,
`python_warm` is the same Python when no model runs between the steps (each `execute` hands back
the last results at once): the difference is what the model's run costs the Python after it
(caches refilled, the core woken), not work of ours.

    python benchmarks/step_phases.py W1
    python benchmarks/step_phases.py W3 --warm
    python benchmarks/step_phases.py W1 --device gpu --steps 300 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections.abc import Callable

from bench_common import batches, warm_median
from workloads import ModelSpy, nabla_workload

import nabla as nb
from nabla.core.graph import engine, executors

nb.set_executor("max")
TIMES: dict[str, list[float]] = {}


def _lap(name: str, start: float) -> float:
    now = time.perf_counter()
    TIMES.setdefault(name, []).append(now - start)
    return now


def _timing(module: object, name: str) -> None:
    """Time every call of `module.name` under its own name."""
    fn = getattr(module, name)

    def timed(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _lap(name, start)

    setattr(module, name, timed)


def step_fn(workload: str, device: str, losses: list) -> tuple[Callable[[int], None], list]:
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    model.to(device)
    data = [(nb.Tensor.from_numpy(b.x).to(device), nb.Tensor.from_numpy(b.y).to(device)) for b in batches(workload, 8)]
    if workload == "W4":
        model.eval()

        def infer(i: int) -> None:
            x, _ = data[i % len(data)]
            t = time.perf_counter()
            with nb.no_grad():
                out = model(x)
                t = _lap("forward", t)
                nb.evaluate(out)
                t = _lap("evaluate", t)
                out.numpy()
                _lap("read", t)

        return infer, data

    def train(i: int) -> None:
        x, y = data[i % len(data)]
        t = time.perf_counter()
        opt.zero_grad()
        t = _lap("zero_grad", t)
        out = model(x)
        t = _lap("forward", t)
        loss = loss_fn(out, y)
        del out  # (held, the logits would be one more output: another model than the loop's)
        t = _lap("loss", t)
        loss.backward()
        t = _lap("backward", t)
        opt.step()
        t = _lap("opt.step", t)
        losses.append(loss.item())
        _lap("item", t)

    return train, data


def _warm_python(step: Callable[[int], None], steps: int) -> list[float]:
    """Step times with MAX's `execute` answering from the previous step's results (no model
    runs, so nothing evicts the Python's data from the caches): the step's Python alone."""
    timed_execute = executors._execute  # (the `_timing` wrapper: it keeps the real one)
    last: list = []

    def replay(model: object, buffers: list) -> list:
        if not last:
            last.extend(timed_execute(model, buffers))
        return list(last)

    executors._execute = replay
    times = []
    try:
        for i in range(steps):
            start = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - start)
    finally:
        executors._execute = timed_execute
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=["W1", "W2", "W3", "W4"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="also print cProfile's top 25 functions")
    parser.add_argument("--warm", action="store_true", help="also time the Python with no model run between steps")
    args = parser.parse_args()
    losses: list[float] = []
    step, data = step_fn(args.workload, args.device, losses)
    start = time.perf_counter()
    with ModelSpy() as spy:
        for i in range(3):
            step(i)
    warmup_s = time.perf_counter() - start
    _timing(engine, "collect")
    _timing(engine, "input_buffers")
    _timing(executors, "_execute")
    TIMES.clear()
    for i in range(args.steps):
        start = time.perf_counter()
        step(i)
        _lap("step", start)
    model_run = spy.runner(data)
    for i in range(args.steps):
        start = time.perf_counter()
        model_run(i)
        _lap("model_alone", start)
    steps_execute = TIMES["_execute"][: len(TIMES["step"])]  # (the model alone's runs come after)
    TIMES["python"] = [s - e for s, e in zip(TIMES["step"], steps_execute, strict=True)]
    medians = {name: round(warm_median(t) * 1e3, 4) for name, t in TIMES.items()}
    if args.warm:
        trained = len(losses)
        medians["python_warm"] = round(warm_median(_warm_python(step, args.steps)) * 1e3, 4)
        del losses[trained:]  # (the replayed steps' losses are the last real step's)
    print(json.dumps({"workload": args.workload, "device": args.device, "warmup_s": round(warmup_s, 2)} | medians))
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [step(i) for i in range(100)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    if losses and not losses[-1] < losses[0]:
        raise SystemExit(f"{args.workload}: the loss did not go down ({losses[0]:.4f} -> {losses[-1]:.4f})")


if __name__ == "__main__":
    main()
