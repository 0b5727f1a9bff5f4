"""What MAX's device graphs (`Model.capture` / `Model.replay`, CUDA graphs) would save the
PyTorch-style loop's step model on an accelerator, and how replay treats its buffers.

The loop's cached step model (W1 by default) is run three ways, each waiting for its results:
`execute` as the loop runs it, `replay` of a graph captured on the first batch's buffers, and
`replay` after copying a new batch and the current state into the captured input buffers (what
a loop would have to do: replay reads the buffers it captured, and writes the outputs it
returned at capture). Checks printed with the timings: whether replay on the captured buffers
equals `execute` on them, and whether replay after the copies equals `execute` on the new
inputs. One JSON line per measurement; needs an accelerator.

    python benchmarks/device_graph_probe.py [W1|W4] [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from bench_common import batches, warm_median
from max.driver import CPU, Accelerator, Buffer, accelerator_count
from workloads import ModelSpy, nabla_workload

import nabla as nb

nb.set_executor("max")


def _timed_ms(fn, steps: int) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(warm_median(times) * 1e3, 4)


def _values(buffers: list) -> list[np.ndarray]:
    return [b.to(CPU()).to_numpy() for b in buffers]


def _close(got: list, expected: list) -> bool:
    return all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(_values(got), expected, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", nargs="?", default="W1", choices=["W1", "W4"])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="gpu", help="gpu (cpu only checks this script: MAX captures no CPU graph)")
    args = parser.parse_args()
    if args.device != "cpu" and not accelerator_count():
        raise SystemExit("device_graph_probe: no accelerator on this machine")
    gpu = CPU() if args.device == "cpu" else Accelerator(0)
    nb.manual_seed(0)
    model, opt, _, loss_fn = nabla_workload(args.workload)
    model.to(args.device)
    data = [
        (nb.Tensor.from_numpy(b.x).to(args.device), nb.Tensor.from_numpy(b.y).to(args.device))
        for b in batches(args.workload, 4)
    ]
    with ModelSpy() as spy:
        for x, y in data[:3]:
            if args.workload == "W4":
                with nb.no_grad():
                    model(x).numpy()
            else:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                loss.item()
    _, placed, inputs = spy.captured
    first = [d if type(d) is Buffer else Buffer.from_numpy(np.asarray(d)).to(gpu) for d in inputs]
    engine_model = getattr(placed, "model", placed)  # an accelerator's PlacedModel holds it

    def execute() -> None:
        engine_model.execute(*first)
        gpu.synchronize()

    report = {"workload": args.workload, "inputs": len(first), "execute_ms": _timed_ms(execute, args.steps)}
    try:
        captured_out = engine_model.capture(1, *first)
        gpu.synchronize()
    except Exception as err:  # capture is best-effort in MAX: report why it failed
        print(json.dumps(report | {"capture_error": f"{type(err).__name__}: {err}"[:500]}))
        return
    expected = _values(engine_model.execute(*first))
    engine_model.replay(1, *first)
    gpu.synchronize()
    report["replay_equals_execute"] = _close(captured_out, expected)

    def replay() -> None:
        engine_model.replay(1, *first)
        gpu.synchronize()

    report["replay_ms"] = _timed_ms(replay, args.steps)
    # A new batch: copy it into the captured buffers, replay, compare with execute on it.
    where = {id(t._impl.data): j for batch in data for j, t in enumerate(batch)}
    new_inputs = [data[3][where[id(d)]]._impl.data if id(d) in where else b for d, b in zip(inputs, first, strict=True)]
    expected_new = _values(engine_model.execute(*new_inputs))
    copies = [(dst, src) for dst, src in zip(first, new_inputs, strict=True) if dst is not src]

    def copy_and_replay() -> None:
        for dst, src in copies:
            dst.inplace_copy_from(src)
        engine_model.replay(1, *first)
        gpu.synchronize()

    copy_and_replay()
    report["replay_after_copy_equals_execute"] = _close(captured_out, expected_new)
    report["copy_and_replay_ms"] = _timed_ms(copy_and_replay, args.steps)
    report["copies"] = len(copies)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
