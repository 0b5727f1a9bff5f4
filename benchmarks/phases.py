"""Where a training step's time goes on MAX, against PyTorch: the forward, the forward and
backward, and the whole step (with the optimizer update) of W1-W3, each as its own graph.

nabla's numbers are the cached MAX model of each phase executed alone (no Python between
executions), so they measure MAX's kernels for our lowerings; PyTorch's are its eager
phases. The difference between two phases is what the later one adds (the backward, the
update). A framework's three phases run alternately in one process, so the machine's drift
(15-30% within minutes here) moves them together. Each (framework, workload) runs in its own process; one JSON line per phase:
framework, workload, phase, median_ms. A first run compiles two new graphs per workload
(30-140 s each); later runs hit MAX's disk cache.

    python benchmarks/phases.py                    # W1-W3, nabla and torch
    python benchmarks/phases.py --workloads W3 --frameworks nabla
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from bench_common import PHASES, batches, check_descent, interleaved_ms, print_phases, train_step
from workloads import ModelSpy, nabla_workload

import nabla as nb

nb.set_executor("max")
HERE = Path(__file__).resolve().parent


def nabla_phases(workload: str) -> dict[str, float]:
    """Median ms of each phase's cached MAX model, executed alone."""
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    batch = batches(workload, 1)[0]
    x, y = nb.Tensor.from_numpy(batch.x), nb.Tensor.from_numpy(batch.y)
    params = list(model.parameters())

    def forward() -> None:
        with nb.no_grad():
            nb.evaluate(model(x))

    def forward_backward() -> None:
        for p in params:
            p.grad = None
        loss = loss_fn(model(x), y)
        loss.backward()
        nb.evaluate(loss, *[p.grad for p in params])

    def step() -> float:
        return train_step(model, opt, loss_fn, x, y)

    spies = []
    for fn in (forward, forward_backward, step):
        with ModelSpy() as spy:  # the model the phase runs, and its inputs
            warm = [fn() for _ in range(3)]  # the first call compiles (or loads) the phase's model
        spies.append(spy)
    check_descent(warm)
    return interleaved_ms({name: spy.run for name, spy in zip(PHASES, spies, strict=True)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="W1,W2,W3")
    parser.add_argument("--frameworks", default="nabla,torch")
    parser.add_argument("--one", nargs=2, metavar=("FRAMEWORK", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print_phases("nabla", args.one[1], nabla_phases(args.one[1]))
        return
    frameworks = args.frameworks.split(",")
    if "torch" in frameworks and importlib.util.find_spec("torch") is None:
        frameworks.remove("torch")
    failed = False
    for workload in args.workloads.split(","):
        for framework in frameworks:
            script = "phases.py" if framework == "nabla" else "phases_torch.py"
            cmd = [sys.executable, str(HERE / script), "--one", framework, workload]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                err = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print(json.dumps({"framework": framework, "workload": workload, "error": err}), flush=True)
                failed = True
            if lines:
                print("\n".join(lines), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
