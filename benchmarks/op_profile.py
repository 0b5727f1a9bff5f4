"""Where a workload's step model spends its time, op by op, on MAX.

The step's program (what one `opt.step()` evaluates) is flattened (the `call` ops the
backward records are inlined, their recomputed forward steps shared as in the real graph),
and every distinct (op, static arguments, input shapes) becomes one graph of a single
`max.graph.Module`: one compile for all of them. Each graph then runs alone on random
inputs (integer inputs are zeros, so indices stay in range). One JSON line per op kind, the
most expensive first: op, count, ms a step (each occurrence's median times its count),
and the shapes of its most expensive occurrence; a last line compares the sum with the
whole step model run alone.

Alone, an op pays for a graph launch (about 25 us) and loses the fusion with its neighbours
that the whole graph gets, so cheap elementwise ops read high; the heavy ops (matmuls,
attention, normalizations, reductions) are what this is for. With PyTorch installed,
`--torch` also prints torch's own profile of the same step (`op_profile_torch.py`: its
profiler's self CPU time per op). `--matmuls` adds one line per distinct matmul and linear
with its GFLOP/s on MAX and, with `--torch`, torch's on the same contiguous operands: what
MAX's matmul kernel itself costs, apart from the transposes around it.

    python benchmarks/op_profile.py --workload W3 [--torch] [--matmuls] [--top 25]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from bench_common import batches, matmul_flops, median_ms, train_step
from max.driver import Buffer
from max.dtype import DType
from max.graph import DeviceRef, Graph, Module, TensorType
from workloads import ModelSpy, nabla_workload

import nabla as nb
from nabla.core.graph import executors
from nabla.core.graph.executors import _LOWERING, _as_tuple, apply_step, custom_extensions

nb.set_executor("max")


def capture_program(workload: str):
    """The program of `workload`'s training step (the last one MAX prepared: the first step's; the
    second step runs the same model from the cache), and the step's model run alone."""
    seen = []
    original = executors.MaxExecutor.prepare

    def spy(executor, program, *args, **kwargs):
        seen.append(program)
        return original(executor, program, *args, **kwargs)

    executors.MaxExecutor.prepare = spy
    try:
        model, opt, _, loss_fn = nabla_workload(workload)
        data = [(nb.Tensor.from_numpy(b.x), nb.Tensor.from_numpy(b.y)) for b in batches(workload, 2)]
        with ModelSpy() as spy_model:
            for x, y in data:
                train_step(model, opt, loss_fn, x, y)
    finally:
        executors.MaxExecutor.prepare = original
    return seen[-1], spy_model.run


def flatten(program, avals: list | None = None, values: list | None = None, memo: dict | None = None) -> list:
    """[(step, input avals)] of every op the program lowers, `call`s inlined. Steps inside calls
    that repeat an emitted step on the same values are dropped, as `lower_steps(cse=True)` does."""
    env_aval: list = [None] * program.num_slots
    env_val: list = [None] * program.num_slots
    top = avals is None
    for k, slot in enumerate(program.input_slots):
        env_aval[slot] = tuple(program.input_types[k])[::-1] if top else avals[k]  # (shape, dtype)
        env_val[slot] = ("in", k) if top else values[k]
    memo = {} if memo is None else memo
    out: list = []
    for step in program.steps:
        args_aval = [env_aval[a] for a in step.args]
        args_val = [env_val[a] for a in step.args]
        sub = step.kwargs.get("sub") if step.op.name == "call" else None
        if sub is not None:
            index = sub.input_index
            inner = flatten(sub.program, [args_aval[k] for k in index], [args_val[k] for k in index], memo)
            out.extend(inner[0])
            results = inner[1]
        else:
            key = (step.key, tuple(args_val))
            if not top and key in memo:
                results = memo[key]
            else:
                results = [(id(step), i) for i in range(len(step.outs))]
                memo[key] = results
                out.append((step, args_aval))
        for slot, aval, value in zip(step.outs, step.out_avals, results, strict=True):
            env_aval[slot], env_val[slot] = (tuple(aval[0]), aval[1]), value
    return (out, [env_val[s] for s in program.output_slots]) if not top else out


def _dtype(dtype) -> DType:
    return dtype if isinstance(dtype, DType) else DType.from_numpy(np.dtype(dtype))


def build(entries: list, extensions: list) -> Module:
    module = Module()
    device = DeviceRef.CPU()
    for n, (step, avals) in enumerate(entries):
        types = [TensorType(_dtype(dt), shape, device=device) for shape, dt in avals]
        with Graph(f"op_{n}", input_types=types, module=module, custom_extensions=extensions) as graph:
            _LOWERING.memo, _LOWERING.producers, _LOWERING.scratch, _LOWERING.device = {}, {}, {}, device
            try:
                args = [v.tensor for v in graph.inputs]
                results = apply_step(step, args, lambda a, kw, _p, op=step.op: _as_tuple(op.kernel(*a, **kw)))
            finally:
                _LOWERING.memo = _LOWERING.producers = _LOWERING.scratch = _LOWERING.device = None
            graph.output(*results)
    return module


def random_input(shape: tuple, dtype, rng: np.random.Generator) -> Buffer:
    np_dtype = _dtype(dtype).to_numpy()
    if np.issubdtype(np_dtype, np.floating):
        return Buffer.from_numpy(rng.standard_normal(shape).astype(np_dtype))
    return Buffer.from_numpy(np.zeros(shape, np_dtype))


def profile_nabla(workload: str, top: int) -> None:
    program, run_model = capture_program(workload)
    steps = flatten(program)
    groups: dict = defaultdict(list)
    for step, avals in steps:
        groups[(step.key, tuple(avals))].append((step, avals))
    unique = [members[0] for members in groups.values()]
    start = time.perf_counter()
    executor = executors.get_executor_impl("max")
    session = executor.session
    extensions = custom_extensions(program)  # nabla's kernel package, where the step uses it
    models = session.init_all(session.compile(build(unique, extensions), custom_extensions=extensions or None))
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    per_op: dict = defaultdict(lambda: {"count": 0, "ms": 0.0, "worst": (0.0, None)})
    timed: list[tuple[str, list, int, float]] = []  # (op, input shapes, count, ms) per distinct op
    for n, members in enumerate(groups.values()):
        step, avals = members[0]
        model = models[f"op_{n}"]
        inputs = [random_input(shape, dt, rng) for shape, dt in avals]
        ms = median_ms(model.execute, *inputs, warmup=3)
        timed.append((step.op.name, [list(s) for s, _ in avals], len(members), ms))
        entry = per_op[step.op.name]
        entry["count"] += len(members)
        entry["ms"] += ms * len(members)
        if ms > entry["worst"][0]:
            entry["worst"] = (ms, [list(s) for s, _ in avals])
    ranked = sorted(per_op.items(), key=lambda item: -item[1]["ms"])
    for name, entry in ranked[:top]:
        worst_ms, shapes = entry["worst"]
        print(
            json.dumps(
                {
                    "framework": "nabla",
                    "workload": workload,
                    "op": name,
                    "count": entry["count"],
                    "ms": round(entry["ms"], 3),
                    "worst_ms": round(worst_ms, 3),
                    "worst_shapes": shapes,
                }
            )
        )
    total = sum(entry["ms"] for entry in per_op.values())
    model_ms = median_ms(run_model, warmup=3)
    print(
        json.dumps(
            {
                "framework": "nabla",
                "workload": workload,
                "ops": len(steps),
                "distinct": len(unique),
                "sum_of_ops_ms": round(total, 3),
                "model_ms": round(model_ms, 3),
                "compile_s": round(compile_s, 1),
            }
        )
    )
    return timed


def report_matmuls(workload: str, timed: list) -> list:
    """One JSON line per distinct matmul of the step: shapes, count, ms and GFLOP/s on MAX; returns
    the (op, shapes) list, for torch to time the same products."""
    rows = [(op, shapes, count, ms, matmul_flops(op, shapes)) for op, shapes, count, ms in timed]
    rows = sorted([r for r in rows if r[4]], key=lambda r: -r[2] * r[3])
    for op, shapes, count, ms, flops in rows:
        line = {"framework": "nabla", "workload": workload, "matmul": op, "shapes": shapes, "count": count}
        print(json.dumps(line | {"ms": round(ms, 3), "gflops": round(flops / ms / 1e6, 1)}))
    return [(op, shapes) for op, shapes, *_ in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="W3", choices=["W1", "W2", "W3"])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--torch", action="store_true", help="also print torch's profile of the same step")
    parser.add_argument(
        "--matmuls", action="store_true", help="also each matmul's GFLOP/s (with --torch: torch's on the same shapes)"
    )
    args = parser.parse_args()
    timed = profile_nabla(args.workload, args.top)
    products = report_matmuls(args.workload, timed) if args.matmuls else []
    if args.torch:  # its own process, as MAX and torch in one process slow each other
        script = Path(__file__).with_name("op_profile_torch.py")
        extra = ["--matmuls", json.dumps(products)] if products else []
        cmd = [sys.executable, str(script), "--workload", args.workload, "--top", str(args.top), *extra]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
