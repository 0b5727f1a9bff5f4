"""PyTorch side of `train_bench.py` (run as its own process): one (mode, workload) per call.

python benchmarks/train_bench_torch.py eager W1 --steps 60
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from bench_common import batches, report
from torch_workloads import torch_workload

DEVICE = "cuda" if os.environ.get("BENCH_DEVICE", "cpu") == "gpu" else "cpu"


def run(mode: str, workload: str, steps: int) -> dict:
    torch.manual_seed(0)
    model, opt, loss_fn = torch_workload(workload)
    model.to(DEVICE)
    data = [(torch.from_numpy(b.x).to(DEVICE), torch.from_numpy(b.y).to(DEVICE)) for b in batches(workload, steps)]
    fwd = torch.compile(model) if mode == "compile" else model
    if workload == "W4":
        model.eval()
    times, losses = [], []
    for i in range(steps):
        x, y = data[i % len(data)]
        t0 = time.perf_counter()
        if workload == "W4":
            with torch.no_grad():
                out = fwd(x)
                if out.is_cuda:  # wait for the result
                    out.cpu()
        else:
            opt.zero_grad()
            loss = loss_fn(fwd(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        times.append(time.perf_counter() - t0)
    return report("torch", mode, workload, times, losses, None) | {"device": os.environ.get("BENCH_DEVICE", "cpu")}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["eager", "compile"])
    parser.add_argument("workload", choices=["W1", "W2", "W3", "W4"])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    print(json.dumps(run(args.mode, args.workload, args.steps)), flush=True)
