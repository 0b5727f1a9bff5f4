"""The MAX executor on an accelerator: values computed there equal the NumPy executor's, stay on
the device between steps, and come back to the host only when read. Needs an accelerator (CI
has none; tests/test_devices.py checks the placement rules everywhere). With one,
`NABLA_TEST_DEVICE=gpu` also runs tests/test_conformance_max.py and test_nn_training_max.py there.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from max.driver import accelerator_count

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh, P
from nabla.core.common.config import CONFIG
from nabla.ops import mojo_kernels

USES_MAX = True
pytestmark = pytest.mark.skipif(accelerator_count() == 0, reason="needs an accelerator (MAX finds none)")
# MAX's float32 matmul on an H100 differs from NumPy's by up to about 1e-3 relative (measured:
# 7e-4 after a softmax), where the CPU agrees to float32 rounding.
TOL = 2e-3


def _on_device(t: nb.Tensor) -> bool:
    data = t._impl.data
    pieces = data if type(data) is tuple else (data,)
    return all(not getattr(p, "is_host", True) for p in pieces)


def _cases(device: str) -> list:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
    x, w = nb.tensor(a, device=device), nb.tensor(b)  # a CPU operand joins the accelerator's computation
    img = nb.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32), device=device)
    k = nb.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    return [
        nb.softmax(x @ w, axis=1),
        nb.cumsum(x, 0) + nb.arange(5, dtype=nb.float32),  # a range made in the graph
        nb.zeros((6, 5)) + x.max(axis=0),
        nb.sort(x, 1)[0],
        x[nb.tensor(np.array([4, 0, 4]))] * 2.0,
        F.max_pool2d(F.conv2d(img, k, padding=1), 2),
        F.layer_norm(x, (5,)),
        nb.cast(x, nb.bfloat16) * 3.0,
    ]


def test_ops_on_the_accelerator_match_numpy_and_stay_there():
    nb.set_executor("numpy")
    want = [o.numpy() for o in _cases("gpu")]
    nb.set_executor("max")
    nb.reset_cache_info()
    got = _cases("gpu")
    nb.evaluate(*got)
    assert nb.cache_info().compiles == 1
    assert all(o.device == nb.Device("gpu", 0) and _on_device(o) for o in got)
    for g, w in zip(got, want, strict=True):
        tol = 1e-2 if g.dtype == nb.bfloat16 else TOL
        np.testing.assert_allclose(g.float().numpy(), w.astype(np.float32), rtol=tol, atol=tol)
    back = got[0].cpu()
    assert back.device == nb.Device("cpu", 0) and back._impl.data.is_host


def _step_fn(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def test_compiled_training_step_on_the_accelerator():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((16, 12)).astype(np.float32) for _ in range(4)]
    ys = [rng.integers(0, 4, 16) for _ in range(4)]
    results = {}
    for executor in ("numpy", "max"):
        nb.set_executor(executor)
        nb.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4)).to("gpu")
        opt = optim.AdamW(model.parameters(), lr=1e-2)
        step = nb.compile(_step_fn(model, opt))
        losses = [step(nb.tensor(x, device="gpu"), nb.tensor(y)).item() for x, y in zip(xs, ys, strict=True)]
        results[executor] = losses, [p.numpy() for p in model.parameters()]
        if executor == "max":
            assert step.stats.compiles == 1 and all(_on_device(p) for p in model.parameters())
    np.testing.assert_allclose(results["max"][0], results["numpy"][0], rtol=TOL)
    for g, w in zip(results["max"][1], results["numpy"][1], strict=True):
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL)


def test_conv_net_loop_on_the_accelerator_uses_graph_ops():
    """W2's conv net in the plain loop on the GPU: its convolution weight and pooling gradients
    take MAX's graph ops there (nabla's Mojo kernels are CPU-only), and it matches NumPy."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, 1, 12, 12)).astype(np.float32) for _ in range(3)]
    ys = [rng.integers(0, 5, 4) for _ in range(3)]
    results = {}
    for executor in ("numpy", "max"):
        nb.set_executor(executor)
        nb.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 3 * 3, 5),
        ).to("gpu")  # fmt: skip
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        step, placed = _step_fn(model, opt), sum(mojo_kernels.STATS.values())
        nb.reset_cache_info()
        losses = [step(nb.tensor(x, device="gpu"), nb.tensor(y)).item() for x, y in zip(xs, ys, strict=True)]
        results[executor] = losses, [p.numpy() for p in model.parameters()]
        if executor == "max":
            assert sum(mojo_kernels.STATS.values()) == placed  # no kernel in the GPU's graphs
            info = nb.cache_info()  # one step model (compiled, or read from the model store)
            assert info.compiles + info.loads == 1 and info.hits == 2
            assert all(_on_device(p) for p in model.parameters())
    np.testing.assert_allclose(results["max"][0], results["numpy"][0], rtol=TOL)
    for g, w in zip(results["max"][1], results["numpy"][1], strict=True):
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL)


def test_sharded_values_on_the_accelerator():
    """A simulated mesh on one accelerator: every piece lives there, collectives are in the graph."""
    mesh = DeviceMesh("g2", (2,), ("x",))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)

    def cases():
        x = nb.shard(nb.tensor(a, device="gpu"), mesh, P("x", None))
        w = nb.shard(nb.tensor(b, device="gpu"), mesh, P(None, "x"))
        return [nb.relu(x @ w), nb.reshard(x, P(None, "x")), x.sum(axis=0), nb.softmax(x, 0)]

    nb.set_executor("numpy")
    want = [o.numpy() for o in cases()]
    nb.set_executor("max")
    got = cases()
    nb.evaluate(*got)
    assert all(_on_device(o) for o in got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=TOL, atol=TOL)


def test_device_graphs_replay_the_loop_as_execute_runs_it(monkeypatch):
    """NABLA_DEVICE_GRAPHS: the plain Adam loop replayed as a device graph (captured on its
    second step) computes the same losses and parameters as the same loop run by execute. A
    failed capture (a warning, then execute) fails the test."""
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((16, 12)).astype(np.float32) for _ in range(5)]
    ys = [rng.integers(0, 4, 16) for _ in range(5)]
    nb.set_executor("max")
    results = {}
    for graphs in (False, True):
        monkeypatch.setattr(CONFIG, "device_graphs", graphs)
        nb.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4)).to("gpu")
        opt = optim.Adam(model.parameters(), lr=1e-2)
        step = _step_fn(model, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            losses = [
                step(nb.tensor(x, device="gpu"), nb.tensor(y, device="gpu")).item() for x, y in zip(xs, ys, strict=True)
            ]
        results[graphs] = losses, [p.numpy() for p in model.parameters()]
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-6)
    for a, b in zip(results[True][1], results[False][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
