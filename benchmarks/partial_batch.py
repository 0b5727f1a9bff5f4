"""A PyTorch-style loop whose batches change size (a partial last batch): what it compiles, and
how fast the symbolic model runs against the model compiled for the full batch.

The loop trains on full batches, then on batches cut to `--cut` rows (that second size merges
the two traces into one model with a symbolic batch dim), then on a third size that runs on the
symbolic model with no compile. Then full and cut steps alternate, so the machine's drift moves
both medians together. One JSON line per workload: seconds until each model was ready,
compiles, the two medians, and the first and last loss (the run fails unless it went down).

    python benchmarks/partial_batch.py --workloads W1,W3
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from bench_common import batches, check_descent, timed, train_step
from workloads import nabla_workload

import nabla as nb

nb.set_executor("max")  # compile before running: the times below are the compiled models'
CUTS = {"W1": (100, 37), "W2": (50, 17), "W3": (11, 5)}  # the partial size, then a third size


def run(workload: str, rounds: int) -> dict:
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(workload)
    cut, third = CUTS[workload]
    data = batches(workload, 4)

    def cut_to(n: int | None) -> list:  # realized tensors (a lazy slice would be an op of the step)
        return [(nb.Tensor.from_numpy(b.x[:n]), nb.Tensor.from_numpy(b.y[:n])) for b in data]

    full, part = cut_to(None), cut_to(cut)
    losses = []

    def steps(tensors: list, n: int) -> list:
        step = lambda d: losses.append(train_step(model, opt, loss_fn, *d))  # noqa: E731
        return [timed(step, tensors[i % len(tensors)]) for i in range(n)]

    ready = {"full_s": sum(steps(full, 3)), "cut_s": sum(steps(part, 3))}
    compiles = nb.cache_info().compiles
    ready["third_s"] = sum(steps(cut_to(third), 3))
    medians: dict[str, list] = {"full": [], "cut": []}
    for _ in range(rounds):
        for name, tensors in (("full", full), ("cut", part)):
            medians[name].append(float(np.median(steps(tensors, 10))) * 1e3)
    check_descent(losses)
    return {
        "workload": workload,
        "batch": int(full[0][0].shape[0]),
        "cut": cut,
        "third": third,
        **{k: round(v, 3) for k, v in ready.items()},
        "compiles_after_cut": compiles,
        "compiles": nb.cache_info().compiles,
        "loads": nb.cache_info().loads,  # models read from the on-disk store instead
        "full_step_ms": round(float(np.median(medians["full"])), 3),
        "cut_step_ms": round(float(np.median(medians["cut"])), 3),
        "first_loss": round(losses[0], 4),
        "last_loss": round(losses[-1], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="W1,W3")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    for workload in args.workloads.split(","):
        nb.clear_cache()
        nb.reset_cache_info()
        print(json.dumps(run(workload, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
