"""Zero-wait start: time to the first loss and to N steps, in a fresh process, for W1-W3.

Each measurement is a new Python process (so imports count) with its own cache directory
(`NABLA_CACHE_DIR`: nabla's model store and MAX's kernel cache):

  cold      empty caches, the auto executor: NumPy at once, MAX compiling in the background
  warm      the same caches again: the stored model is loaded at the first step
  blocking  empty caches, `NABLA_EXECUTOR=max`: compile before the first step (the old way)

One JSON line per run: first_loss_s and steps_s (from process start), the step that first ran
the compiled model and when (switch_step, switch_s), compiles, loads, and after the steps
(cold and blocking) compile_done_s, when the background compile finished, and compiled_step_ms,
the median step on the compiled model. The run fails if a loss does not go down.

    python benchmarks/cold_start.py                          # W1-W3 cold and warm, W1 blocking
    python benchmarks/cold_start.py --workloads W1 --worker thread
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import batches
from workloads import nabla_workload

import nabla as nb
from nabla.core.graph.executors import get_executor_impl


def child(workload: str, steps: int, t0: float) -> dict:
    """Runs in the measured process: `t0` is the parent's clock just before it started this
    process, so the interpreter's start and the imports count."""
    imported = time.time() - t0
    executor = get_executor_impl(nb.get_executor())
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    data = [(nb.Tensor.from_numpy(b.x), nb.Tensor.from_numpy(b.y)) for b in batches(workload, steps)]

    def step(i: int) -> float:
        x, y = data[i % len(data)]
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    losses, first_loss_s, switch_step, switch_s = [], None, None, None
    for i in range(steps):
        tier0_before = executor.stats.tier0_executions
        losses.append(step(i))
        if first_loss_s is None:
            first_loss_s = time.time() - t0
        if switch_step is None and executor.stats.tier0_executions == tier0_before:
            switch_step, switch_s = i + 1, time.time() - t0
    steps_s = time.time() - t0
    nb.wait_for_compiles()
    compile_done_s = time.time() - t0
    compiled_ms = []
    for i in range(10):  # after the compile: the compiled model's step time
        start = time.perf_counter()
        losses.append(step(steps + i))
        compiled_ms.append(1000 * (time.perf_counter() - start))
    info = nb.cache_info()
    return {
        "import_s": round(imported, 3),
        "first_loss_s": round(first_loss_s, 3),
        "steps": steps,
        "steps_s": round(steps_s, 3),
        "switch_step": switch_step,
        "switch_s": None if switch_s is None else round(switch_s, 3),
        "compile_done_s": round(compile_done_s, 3),
        "compiled_step_ms": round(sorted(compiled_ms)[len(compiled_ms) // 2], 2),
        "compiles": info.compiles,
        "loads": info.loads,
        "first_loss": round(losses[0], 4),
        "last_loss": round(losses[-1], 4),
    }


def measure(workload: str, phase: str, cache: Path, steps: int, worker: str) -> dict:
    env = {**os.environ, "NABLA_CACHE_DIR": str(cache), "NABLA_COMPILE_WORKER": worker}
    env.pop("MODULAR_CACHE_DIR", None)
    env["NABLA_EXECUTOR"] = "max" if phase == "blocking" else "auto"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", workload, "--steps", str(steps)]
    t0 = time.time()
    proc = subprocess.run([*cmd, "--t0", repr(t0)], capture_output=True, text=True, env=env)
    line = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode != 0 or not line.startswith("{"):
        err = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"workload": workload, "phase": phase, "error": err}
    return {"workload": workload, "phase": phase, "worker": worker, **json.loads(line)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="W1,W2,W3")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--blocking", default="W1", help="workloads also measured with blocking compiles")
    parser.add_argument("--worker", default="process", choices=["process", "thread"])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.t0)), flush=True)
        return
    failures = []
    for workload in args.workloads.split(","):
        with tempfile.TemporaryDirectory(prefix="nabla-cold-") as tmp:
            phases = ["cold", "warm"] + (["blocking"] if workload in args.blocking.split(",") else [])
            for phase in phases:
                cache = Path(tmp) / ("blocking" if phase == "blocking" else "shared")
                result = measure(workload, phase, cache, args.steps, args.worker)
                print(json.dumps(result), flush=True)
                if "error" in result or not result["last_loss"] < result["first_loss"]:
                    failures.append(f"{workload} {phase}")
    if failures:
        sys.exit(f"failed or loss did not go down: {', '.join(failures)}")


if __name__ == "__main__":
    main()
