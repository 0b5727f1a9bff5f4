"""Training-step benchmarks W1-W4: nabla's PyTorch-style loop, the same step under
`nabla.compile`, the cached MAX model executed alone, and PyTorch (eager, and torch.compile
when it works here) in the same run.

Each (framework, mode, workload) runs in its own process, so peak RSS is its own, and prints
one JSON line: framework, mode, workload, first_step_s, median_step_ms, steps_per_s,
peak_rss_mb, compiles, first_loss, last_loss. The run fails if a training loss does not go down.

    python benchmarks/train_bench.py                 # everything
    python benchmarks/train_bench.py --workloads W1 --steps 100
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = {"nabla": ["loop", "compile", "model-only"], "torch": ["eager", "compile"]}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _batches(workload: str, steps: int) -> list:
    import workloads as W

    rng = np.random.default_rng(0)
    if workload == "W1":
        return [W.mlp_data(128, rng) for _ in range(min(steps, 20))]
    if workload == "W4":
        return [W.mlp_data(1024, rng) for _ in range(min(steps, 5))]
    if workload == "W2":
        return [W.image_data(64, rng) for _ in range(min(steps, 20))]
    corpus = W.text_corpus()
    return [W.text_data(corpus, 16, 64, rng) for _ in range(min(steps, 20))]


def _report(framework: str, mode: str, workload: str, times: list, losses: list, compiles: int | None) -> dict:
    warm = times[len(times) // 5 :] or times
    median = float(np.median(warm))
    return {
        "framework": framework,
        "mode": mode,
        "workload": workload,
        "first_step_s": round(times[0], 3),
        "median_step_ms": round(median * 1e3, 3),
        "steps_per_s": round(1.0 / median, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "compiles": compiles,
        "first_loss": None if not losses else round(float(losses[0]), 4),
        "last_loss": None if not losses else round(float(losses[-1]), 4),
    }


def run_nabla(mode: str, workload: str, steps: int) -> dict:
    import workloads as W

    import nabla as nb
    from nabla.core.graph import executors

    nb.manual_seed(0)
    model, opt, _, loss_fn = W.nabla_workload(workload)
    data = [(nb.Tensor.from_numpy(b.x), nb.Tensor.from_numpy(b.y)) for b in _batches(workload, steps)]

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if workload == "W4":
        model.eval()

        def infer(x, y):
            with nb.no_grad():
                out = model(x)
                nb.evaluate(out)
            return None

        step = infer
        if mode == "compile":
            model.compile()
    else:
        step = nb.compile(train_step) if mode == "compile" else train_step

    times, losses = [], []
    captured: list = []
    if mode == "model-only":
        original = executors.MaxExecutor.run

        def spy(self, prepared, inputs):
            captured[:] = [self, prepared, list(inputs)]
            return original(self, prepared, inputs)

        executors.MaxExecutor.run = spy
    for i in range(steps):
        x, y = data[i % len(data)]
        t0 = time.perf_counter()
        loss = step(x, y)
        if loss is not None:
            losses.append(loss.item())
        times.append(time.perf_counter() - t0)
    if mode == "model-only":
        executors.MaxExecutor.run = original
        executor, prepared, inputs = captured
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            executor.run(prepared, inputs)
            times.append(time.perf_counter() - t0)
    return _report("nabla", mode, workload, times, losses, nb.cache_info().compiles)


def run_torch(mode: str, workload: str, steps: int) -> dict:
    import torch
    import torch_workloads as T

    torch.manual_seed(0)
    model, opt, loss_fn = T.torch_workload(workload)
    data = [(torch.from_numpy(b.x), torch.from_numpy(b.y)) for b in _batches(workload, steps)]
    fwd = torch.compile(model) if mode == "compile" else model
    times, losses = [], []
    for i in range(steps):
        x, y = data[i % len(data)]
        t0 = time.perf_counter()
        if workload == "W4":
            with torch.no_grad():
                fwd(x)
        else:
            opt.zero_grad()
            loss = loss_fn(fwd(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        times.append(time.perf_counter() - t0)
    return _report("torch", mode, workload, times, losses, None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="W1,W2,W3,W4")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--frameworks", default="nabla,torch")
    parser.add_argument("--one", nargs=3, metavar=("FRAMEWORK", "MODE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        framework, mode, workload = args.one
        run = run_nabla if framework == "nabla" else run_torch
        print(json.dumps(run(mode, workload, args.steps)), flush=True)
        return
    failures = []
    for workload in args.workloads.split(","):
        for framework in args.frameworks.split(","):
            for mode in MODES[framework]:
                cmd = [sys.executable, __file__, "--steps", str(args.steps), "--one", framework, mode, workload]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
                if proc.returncode != 0 or not line.startswith("{"):
                    err = (proc.stderr.strip().splitlines() or ["?"])[-1]
                    print(json.dumps({"framework": framework, "mode": mode, "workload": workload, "error": err}))
                    continue
                print(line, flush=True)
                result = json.loads(line)
                if result["first_loss"] is not None and not result["last_loss"] < result["first_loss"]:
                    failures.append(f"{framework} {mode} {workload}: loss did not go down")
    if failures:
        raise SystemExit("; ".join(failures))


if __name__ == "__main__":
    main()
