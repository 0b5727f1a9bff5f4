"""Training-step benchmarks W1-W4 (see `bench_common.py`): nabla's PyTorch-style loop (plain and
after `model.compile()`), the same step under `nabla.compile`, the cached MAX model executed alone,
PyTorch (eager and torch.compile) and JAX (`jax.jit` with optax), when installed, in the same run.

Each (framework, mode, workload) runs in its own process, so peak RSS is its own, and prints
one JSON line: framework, mode, workload, first_step_s, median_step_ms, steps_per_s,
peak_rss_mb, compiles, first_loss, last_loss. After each workload, one more line gives the
issue's targets as ratios (`target_ratios`). With `--rounds N` every process runs N times,
round by round (nabla, torch, jax, nabla, ...), so that the machine's drift (15-30% within
minutes here) reaches every framework alike; the ratios then use each mode's median round and
add `loop_vs_torch_best_by_round`. nabla's step modes add paired_step_ms,
paired_model_ms and overhead (their ratio): the step and the MAX model it runs, timed
alternately in one process. The run fails if a training loss does not go down.

    python benchmarks/train_bench.py                       # everything
    python benchmarks/train_bench.py --workloads W1 --frameworks nabla --steps 100
    python benchmarks/train_bench.py --device gpu          # models and batches on accelerator 0
    python benchmarks/train_bench.py --modes loop,eager    # only these modes
    python benchmarks/train_bench.py --workloads W3 --rounds 3 --modes loop,eager,jit
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from bench_common import batches, interleaved_ms, report, timed
from workloads import ModelSpy, nabla_workload

import nabla as nb

nb.set_executor("max")  # compiled steady state (cold_start.py measures the default auto executor)

HERE = Path(__file__).resolve().parent
# loop: the PyTorch-style loop; module-compile: the same loop after `model.compile()` (the
# forward is one recorded op, its gradient one more); compile: the whole step under
# `nabla.compile`; model-only: the loop's cached MAX model executed alone.
MODES = {"nabla": ["loop", "module-compile", "compile", "model-only"], "torch": ["eager", "compile"], "jax": ["jit"]}
SCRIPTS = {"nabla": "train_bench.py", "torch": "train_bench_torch.py", "jax": "train_bench_jax.py"}
DEVICE = os.environ.get("BENCH_DEVICE", "cpu")  # set by --device for every framework's process


def _step_fn(model, opt, loss_fn, workload: str):
    if workload == "W4":
        model.eval()

        def infer(x, y):
            with nb.no_grad():
                out = model(x)
                nb.evaluate(out)
                if out.is_cuda:  # wait for the result, as the PyTorch side synchronizes
                    out.numpy()

        return infer

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return train_step


def run(mode: str, workload: str, steps: int) -> dict:
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    model.to(DEVICE)
    data = [
        (nb.Tensor.from_numpy(b.x).to(DEVICE), nb.Tensor.from_numpy(b.y).to(DEVICE)) for b in batches(workload, steps)
    ]
    step = _step_fn(model, opt, loss_fn, workload)
    if mode == "module-compile" or (mode == "compile" and workload == "W4"):
        model.compile()
    elif mode == "compile":
        step = nb.compile(step)
    losses: list = []

    def run_step(i: int) -> None:
        x, y = data[i % len(data)]
        loss = step(x, y)
        if loss is not None:
            losses.append(loss.item())

    with ModelSpy() as spy:  # remember the model the steps run, and its inputs
        times = [timed(run_step, i) for i in range(steps)]
    model_run = spy.runner(data)  # the model alone, on the steps' batches in turn
    if mode == "model-only":
        times = [timed(model_run, i) for i in range(steps)]
        return report("nabla", mode, workload, times, losses, nb.cache_info().compiles) | {"device": DEVICE}
    result = report("nabla", mode, workload, times, losses, nb.cache_info().compiles) | {"device": DEVICE}
    # The step and its model alone, alternated in this process: a ratio the machine's drift
    # does not move as it moves separate runs.
    order, model_order = iter(range(steps)), iter(range(steps))
    paired = interleaved_ms(
        {"step": lambda: run_step(next(order)), "model": lambda: model_run(next(model_order))}, runs=steps
    )
    result |= {"paired_step_ms": round(paired["step"], 3), "paired_model_ms": round(paired["model"], 3)}
    return result | {"overhead": round(paired["step"] / paired["model"], 3)}


def target_ratios(workload: str, results: dict[tuple[str, str], dict]) -> dict:
    """The issue's targets for one workload, as ratios of median step times from this run (each
    at most 1 when met; a framework not installed gives None): the PyTorch-style loop against
    PyTorch's faster mode and against jax.jit, against the step under `nabla.compile`, and its
    paired overhead over the MAX model alone."""

    def ms(framework: str, *modes: str) -> float | None:
        times = [results[framework, m]["median_step_ms"] for m in modes if (framework, m) in results]
        return min(times) if times else None

    loop = results["nabla", "loop"]

    def ratio(other: float | None, limit: float = 1.0) -> float | None:
        return None if other is None else round(loop["median_step_ms"] / (other * limit), 3)

    return {
        "workload": workload,
        "targets": "ratio <= 1 meets each",
        "loop_vs_torch_best": ratio(ms("torch", "eager", "compile")),
        "loop_vs_jax_jit": ratio(ms("jax", "jit")),
        "loop_vs_1.1x_compile": ratio(ms("nabla", "compile"), 1.1),
        "overhead_vs_1.1": None if "overhead" not in loop else round(loop["overhead"] / 1.1, 3),
    }


def median_round(rounds: list[dict]) -> dict:
    """The round whose median step time is the median of the rounds' (the lower middle one)."""
    return sorted(rounds, key=lambda r: r["median_step_ms"])[(len(rounds) - 1) // 2]


def run_process(framework: str, mode: str, workload: str, steps: int) -> dict | None:
    """One (framework, mode, workload) in its own process: its JSON line, printed, or None."""
    tail = ["--one", mode, workload] if framework == "nabla" else [mode, workload]
    cmd = [sys.executable, str(HERE / SCRIPTS[framework]), "--steps", str(steps), *tail]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode != 0 or not line.startswith("{"):
        err = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(json.dumps({"framework": framework, "mode": mode, "workload": workload, "error": err}))
        return None
    print(line, flush=True)
    return json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="W1,W2,W3,W4")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--frameworks", default="nabla,torch,jax")
    parser.add_argument("--modes", default="", help="only these modes, e.g. loop,eager (default: all)")
    parser.add_argument("--device", default=DEVICE, help="cpu or gpu: where every framework runs")
    parser.add_argument("--rounds", type=int, default=1, help="run every process this many times, round by round")
    parser.add_argument("--one", nargs=2, metavar=("MODE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(*args.one, args.steps)), flush=True)
        return
    os.environ["BENCH_DEVICE"] = args.device
    frameworks = [f for f in args.frameworks.split(",") if f == "nabla" or importlib.util.find_spec(f) is not None]
    failures = []
    for workload in args.workloads.split(","):
        runs = [(f, m) for f in frameworks for m in MODES[f] if not args.modes or m in args.modes.split(",")]
        rounds: dict[tuple[str, str], list[dict]] = {}
        for _ in range(args.rounds):
            for framework, mode in runs:
                result = run_process(framework, mode, workload, args.steps)
                if result is None:
                    continue
                rounds.setdefault((framework, mode), []).append(result)
                if result["first_loss"] is not None and not result["last_loss"] < result["first_loss"]:
                    failures.append(f"{framework} {mode} {workload}: loss did not go down")
        if ("nabla", "loop") in rounds:
            ratios = target_ratios(workload, {key: median_round(r) for key, r in rounds.items()})
            if args.rounds > 1:
                by_round = [
                    target_ratios(workload, {key: r[i] for key, r in rounds.items() if i < len(r)})
                    for i in range(len(rounds["nabla", "loop"]))
                ]
                ratios["loop_vs_torch_best_by_round"] = [r["loop_vs_torch_best"] for r in by_round]
                ratios["loop_vs_jax_jit_by_round"] = [r["loop_vs_jax_jit"] for r in by_round]
            print(json.dumps(ratios), flush=True)
    if failures:
        raise SystemExit("; ".join(failures))


if __name__ == "__main__":
    main()
