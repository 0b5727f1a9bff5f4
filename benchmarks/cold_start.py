"""Zero-wait start: time to the first loss and to N steps, in a fresh process, for W1-W3.

Each measurement is a new Python process (so imports count) with its own cache directory
(`NABLA_CACHE_DIR`: nabla's model store and MAX's kernel cache):

  cold      empty caches, the auto executor: NumPy at once, MAX compiling in the background
  warm      the same caches again: the stored model is loaded at the first step
  blocking  empty caches, `NABLA_EXECUTOR=max`: compile before the first step (the old way)

One JSON line per run: first_loss_s and steps_s (the time to N steps, both from process
start); the loop then trains on until the compiled model takes over, and reports the step
that first ran it and when (switch_step, switch_s), compiled_step_ms (the median step on the
compiled model), compiles, loads, and the models in the store at start and end. The run fails
if a loss does not go down.

    python benchmarks/cold_start.py                          # W1-W3 cold and warm, W1 blocking
    python benchmarks/cold_start.py --workloads W1 --worker thread
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import batches
from workloads import nabla_workload

import nabla as nb
from nabla.core.graph.executors import get_executor_impl

HERE = Path(__file__).resolve().parent


def child(workload: str, steps: int, t0: float, data_file: str) -> dict:
    """Runs in the measured process: `t0` is the parent's clock just before it started this
    process, so the interpreter's start and the imports count. The batches were made by the
    parent (W3's synthetic corpus alone takes 0.9 s to generate) and are loaded from a file."""
    imported = time.time() - t0
    stored_at_start = nb.model_store_info().models
    executor = get_executor_impl(nb.get_executor())
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    with np.load(data_file) as f:
        data = [(nb.Tensor.from_numpy(f[f"x{i}"]), nb.Tensor.from_numpy(f[f"y{i}"])) for i in range(len(f.files) // 2)]

    def step(i: int) -> float:
        x, y = data[i % len(data)]
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    losses, first_loss_s, switch_step, switch_s, steps_s = [], None, None, None, None
    i = 0
    while i < steps or switch_step is None:  # train on until the compiled model takes over
        tier0_before = executor.stats.tier0_executions
        losses.append(step(i))
        i += 1
        if first_loss_s is None:
            first_loss_s = time.time() - t0
        if switch_step is None and executor.stats.tier0_executions == tier0_before:
            switch_step, switch_s = i, time.time() - t0
        if i == steps:
            steps_s = time.time() - t0
    compiled_ms = []
    for k in range(10):  # the compiled model's step time
        start = time.perf_counter()
        losses.append(step(i + k))
        compiled_ms.append(1000 * (time.perf_counter() - start))
    info = nb.cache_info()
    return {
        "import_s": round(imported, 3),
        "first_loss_s": round(first_loss_s, 3),
        "steps": steps,
        "steps_s": round(steps_s, 3),
        "switch_step": switch_step,
        "switch_s": round(switch_s, 3),
        "compiled_step_ms": round(sorted(compiled_ms)[len(compiled_ms) // 2], 2),
        "compiles": info.compiles,
        "loads": info.loads,
        "stored_models": [stored_at_start, nb.model_store_info().models],
        "first_loss": round(losses[0], 4),
        "last_loss": round(losses[-1], 4),
    }


def measure(workload: str, phase: str, cache: Path, steps: int, worker: str, data_file: Path) -> dict:
    env = {**os.environ, "NABLA_CACHE_DIR": str(cache), "NABLA_COMPILE_WORKER": worker}
    env.pop("MODULAR_CACHE_DIR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # imports read byte-compiled modules, as after pip install
    env["NABLA_EXECUTOR"] = "max" if phase == "blocking" else "auto"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", workload, "--steps", str(steps)]
    cmd += ["--data", str(data_file)]
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
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.t0, args.data)), flush=True)
        return
    # Byte-compile the packages first, as installing them does: a cold start is a cold cache of
    # compiled models, not Python compiling nabla's sources.
    root = HERE.parent
    compileall.compile_dir(root / "nabla", quiet=1)
    for pkg in ("nabla_nn", "nabla_optim"):
        compileall.compile_dir(root / pkg, quiet=1)
    failures = []
    for workload in args.workloads.split(","):
        with tempfile.TemporaryDirectory(prefix="nabla-cold-") as tmp:
            data_file = Path(tmp) / "data.npz"
            arrays = {}
            for i, b in enumerate(batches(workload, args.steps)):
                arrays[f"x{i}"], arrays[f"y{i}"] = b.x, b.y
            np.savez(data_file, **arrays)
            phases = ["cold", "warm"] + (["blocking"] if workload in args.blocking.split(",") else [])
            for phase in phases:
                cache = Path(tmp) / ("blocking" if phase == "blocking" else "shared")
                result = measure(workload, phase, cache, args.steps, args.worker, data_file)
                print(json.dumps(result), flush=True)
                if "error" in result or not result["last_loss"] < result["first_loss"]:
                    failures.append(f"{workload} {phase}")
    if failures:
        sys.exit(f"failed or loss did not go down: {', '.join(failures)}")


if __name__ == "__main__":
    main()
