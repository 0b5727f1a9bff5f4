"""PyTorch side of `op_profile.py` (run as its own process): torch's profiler over five eager
steps of one workload, self CPU time per op and step, one JSON line per op, the most
expensive first. With `--matmuls` (op_profile.py passes nabla's matmuls), also torch's time
and GFLOP/s for each of those products on contiguous operands.

python benchmarks/op_profile_torch.py --workload W3 --top 25
"""

from __future__ import annotations

import argparse
import json

import torch
from bench_common import batches, matmul_flops, median_ms, train_step
from torch.profiler import ProfilerActivity, profile
from torch_workloads import torch_workload


def time_matmuls(workload: str, products: list) -> None:
    """torch's time and GFLOP/s for each (op, input shapes) of nabla's step: `matmul` as
    torch.matmul, `linear` as F.linear (with a bias where nabla's has one), on contiguous operands."""
    for op, shapes in products:
        fn = torch.matmul if op == "matmul" else torch.nn.functional.linear
        ms = median_ms(fn, *(torch.randn(s) for s in shapes), runs=40)
        flops = matmul_flops(op, shapes)
        line = {"framework": "torch", "workload": workload, "matmul": op, "shapes": shapes}
        print(json.dumps(line | {"ms": round(ms, 3), "gflops": round(flops / ms / 1e6, 1)}))


def profile_torch(workload: str, top: int, steps: int = 5) -> None:
    torch.manual_seed(0)
    model, opt, loss_fn = torch_workload(workload)
    data = [(torch.from_numpy(b.x), torch.from_numpy(b.y)) for b in batches(workload, 2 * steps)]
    for x, y in data[:steps]:  # warm-up
        train_step(model, opt, loss_fn, x, y)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in data[steps:]:
            train_step(model, opt, loss_fn, x, y)
    for event in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:top]:
        row = {"framework": "torch", "workload": workload, "op": event.key, "count": event.count // steps}
        print(json.dumps(row | {"ms": round(event.self_cpu_time_total / steps / 1e3, 3)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", default="W3")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--matmuls", help="JSON list of [op, input shapes] to time as torch computes them")
    args = parser.parse_args()
    profile_torch(args.workload, args.top)
    if args.matmuls:
        time_matmuls(args.workload, json.loads(args.matmuls))
