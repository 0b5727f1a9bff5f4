"""Where W2's step time goes: each of nabla's MAX lowerings for the CNN's tensors, timed alone.

Every kernel becomes one graph of a single `max.graph.Module` (one compile for all of them),
then each graph runs alone. Where nabla's own Mojo kernels apply (`nabla/ops/mojo/`: the conv
weight gradients, and the pool gradient's NHWC form that W2's graph uses), they are what runs. With PyTorch installed the same operation runs in torch too (for
max_pool2d_grad, torch's forward and backward: it keeps no gradient kernel of its own). One
JSON line per kernel: kernel, shapes, nabla_ms, torch_ms (median of 30 runs).

On an accelerator (`--device gpu`) the lowerings are those a GPU's graph gets (MAX's graph
ops: nabla's Mojo kernels are CPU-only, and the NHWC pool kernel's case is left out), and each
run waits for its results, on both sides.

Run: .venv/bin/python benchmarks/w2_kernels.py [--device gpu]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time

import numpy as np
from bench_common import median_ms
from max.driver import CPU, Accelerator, Buffer
from max.dtype import DType
from max.engine import InferenceSession
from max.graph import DeviceRef, Graph, Module, TensorType

from nabla.ops import mojo_kernels
from nabla.ops.conv import _conv2d, _conv_transpose2d
from nabla.ops.conv_grad import _conv2d_weight_grad
from nabla.ops.pooling import _max_pool2d, _max_pool2d_grad, _mx_tiles_grad_nhwc
from nabla.ops.reduction import _sum

CONV = {"stride": (1, 1), "padding": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1}
POOL = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "dilation": (1, 1)}


def _torch_fns(torch):
    F, G = torch.nn.functional, torch.nn.grad

    def pool_grad(x, g):
        x = x.detach().requires_grad_()
        F.max_pool2d(x, 2).backward(g)
        return x.grad

    return {
        "conv2d": lambda x, w: F.conv2d(x, w, padding=1),
        "conv_transpose2d": lambda g, w: F.conv_transpose2d(g, w, padding=1),
        "conv2d_weight_grad": lambda x, g: G.conv2d_weight(x, (g.shape[1], x.shape[1], 3, 3), g, padding=1),
        "max_pool2d": lambda x: F.max_pool2d(x, 2),
        "max_pool2d_grad": pool_grad,
        "max_pool2d_grad_nhwc": lambda x, g: pool_grad(x.permute(0, 3, 1, 2), g),  # x given NHWC
        "sum(0,2,3)": lambda g: g.sum((0, 2, 3)),
    }


# (name, nabla lowering, input shapes): W2 at batch 64 (conv1 1->32 at 28x28, conv2 32->64 at 14x14)
CASES = [
    ("conv2d", lambda x, w: _conv2d.kernel(x, w, **CONV), [(64, 1, 28, 28), (32, 1, 3, 3)]),
    ("conv2d", lambda x, w: _conv2d.kernel(x, w, **CONV), [(64, 32, 14, 14), (64, 32, 3, 3)]),
    ("conv_transpose2d", lambda g, w: _conv_transpose2d.kernel(g, w, **CONV), [(64, 64, 14, 14), (64, 32, 3, 3)]),
    (
        "conv2d_weight_grad",
        lambda x, g: _conv2d_weight_grad.kernel(x, g, kernel=(3, 3), **CONV),
        [(64, 1, 28, 28), (64, 32, 28, 28)],
    ),
    (
        "conv2d_weight_grad",
        lambda x, g: _conv2d_weight_grad.kernel(x, g, kernel=(3, 3), **CONV),
        [(64, 32, 14, 14), (64, 64, 14, 14)],
    ),
    ("max_pool2d", lambda x: _max_pool2d.kernel(x, **POOL), [(64, 32, 28, 28)]),
    ("max_pool2d", lambda x: _max_pool2d.kernel(x, **POOL), [(64, 64, 14, 14)]),
    ("max_pool2d_grad", lambda x, g: _max_pool2d_grad.kernel(x, g, **POOL), [(64, 32, 28, 28), (64, 32, 14, 14)]),
    ("max_pool2d_grad", lambda x, g: _max_pool2d_grad.kernel(x, g, **POOL), [(64, 64, 14, 14), (64, 64, 7, 7)]),
    # inside W2's graph x has an NHWC twin: the tile gradient's NHWC form (nabla's Mojo kernel)
    (
        "max_pool2d_grad_nhwc",
        lambda x, g: _mx_tiles_grad_nhwc(x, g, (2, 2), (0, 0, 0, 0)),
        [(64, 28, 28, 32), (64, 32, 14, 14)],
    ),
    ("sum(0,2,3)", lambda g: _sum.kernel(g, axes=(0, 2, 3), keepdims=False), [(64, 32, 28, 28)]),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    on_gpu = parser.parse_args().device == "gpu"
    driver_device = Accelerator(0) if on_gpu else CPU()
    device = DeviceRef.GPU(0) if on_gpu else DeviceRef.CPU()
    extensions = [] if on_gpu else list(mojo_kernels.extensions())  # (CPU-only kernels)
    cases = [c for c in CASES if not (on_gpu and c[0] == "max_pool2d_grad_nhwc")]
    module = Module()
    for i, (_, lower, shapes) in enumerate(cases):
        types = [TensorType(DType.float32, s, device=device) for s in shapes]
        with Graph(f"k{i}", input_types=types, module=module, custom_extensions=extensions) as graph:
            graph.output(lower(*[v.tensor for v in graph.inputs]))
    session = InferenceSession(devices=[driver_device])
    t0 = time.perf_counter()
    models = session.init_all(session.compile(module, custom_extensions=extensions or None))
    print(json.dumps({"compile_s": round(time.perf_counter() - t0, 1), "graphs": len(cases), "device": str(device)}))
    torch = importlib.import_module("torch") if importlib.util.find_spec("torch") else None
    rng = np.random.default_rng(0)
    for i, (name, _, shapes) in enumerate(cases):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        buffers = [Buffer.from_numpy(a).to(driver_device) for a in arrays]
        model = models[f"k{i}"]

        def run(*args: Buffer, model=model) -> None:
            model.execute(*args)
            driver_device.synchronize()

        row = {"kernel": name, "shapes": shapes, "nabla_ms": round(median_ms(run, *buffers), 3)}
        if torch is not None and (not on_gpu or torch.cuda.is_available()):
            fn = _torch_fns(torch)[name]

            def torch_run(*args, fn=fn) -> None:
                fn(*args)
                if on_gpu:
                    torch.cuda.synchronize()

            with torch.no_grad() if not name.startswith("max_pool2d_grad") else torch.enable_grad():
                tensors = [torch.from_numpy(a).to("cuda" if on_gpu else "cpu") for a in arrays]
                row["torch_ms"] = round(median_ms(torch_run, *tensors), 3)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
