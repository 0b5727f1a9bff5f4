"""PyTorch side of `phases.py` (run as its own process): eager forward, forward+backward and
step of one workload.

python benchmarks/phases_torch.py --one torch W3
"""

from __future__ import annotations

import argparse

import torch
from bench_common import PHASES, batches, check_descent, interleaved_ms, print_phases, train_step
from torch_workloads import torch_workload


def torch_phases(workload: str) -> dict[str, float]:
    """Median ms of each phase in PyTorch eager."""
    torch.manual_seed(0)
    model, opt, loss_fn = torch_workload(workload)
    batch = batches(workload, 1)[0]
    x, y = torch.from_numpy(batch.x), torch.from_numpy(batch.y)

    def forward() -> None:
        with torch.no_grad():
            model(x)

    def forward_backward() -> None:
        model.zero_grad()
        loss_fn(model(x), y).backward()

    def step() -> float:
        return train_step(model, opt, loss_fn, x, y)

    for fn in (forward, forward_backward):
        fn()
    check_descent([step() for _ in range(5)])
    return interleaved_ms(dict(zip(PHASES, (forward, forward_backward, step), strict=True)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", nargs=2, metavar=("FRAMEWORK", "WORKLOAD"), required=True)
    workload = parser.parse_args().one[1]
    print_phases("torch", workload, torch_phases(workload))
