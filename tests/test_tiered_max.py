"""The auto executor on MAX: a background compile (in the worker process, and in a thread)
switches a repeated evaluation to the compiled model with equal values, and the stored model
lets a later run (here: an emptied in-memory cache) load instead of compiling."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import nabla as nb
from nabla.core.graph import GRAPH
from nabla.core.graph.executors import get_executor_impl

USES_MAX = True

# A different op per mode, so each mode compiles its own structure.
CASES = {"process": (nb.tanh, np.tanh), "thread": (nb.sin, np.sin)}


@pytest.fixture
def auto():
    GRAPH.clear_cache()
    nb.set_executor("auto")
    nb.reset_cache_info()
    yield get_executor_impl("auto")
    GRAPH.clear_cache()


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_background_compile_switches_to_max_and_the_next_run_loads_it(auto, mode, monkeypatch):
    monkeypatch.setattr(auto.service, "mode", mode)
    fn, ref = CASES[mode]
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(4)]

    def step(d: np.ndarray) -> np.ndarray:
        return (fn(nb.Tensor.from_numpy(d) * 3.0 - 1.0) * 2.0).numpy()

    outs = [step(data[0]), step(data[1])]  # tier 0; the second evaluation starts the compile
    assert nb.cache_info().compiles == 1
    assert nb.wait_for_compiles(timeout=600)
    outs.append(step(data[2]))  # the compiled model
    info = nb.cache_info()
    assert info.tier0_executions == 2 and info.executions == 3
    tm = next(iter(GRAPH._cache.values()))[1]
    assert (tm.state, tm.switched_at) == ("compiled", 3)
    for d, out in zip(data, outs, strict=False):
        np.testing.assert_allclose(out, ref(d * 3.0 - 1.0) * 2.0, rtol=1e-5, atol=1e-6)
    assert nb.model_store_info().models >= 1

    GRAPH.clear_cache()  # as if the program ran again: the stored model is loaded, not compiled
    nb.set_executor("max")
    nb.reset_cache_info()
    np.testing.assert_allclose(step(data[3]), ref(data[3] * 3.0 - 1.0) * 2.0, rtol=1e-5, atol=1e-6)
    info = nb.cache_info().per_executor["max"]
    assert (info.loads, info.compiles) == (1, 0)


def test_bfloat16_values_cross_between_the_tiers(auto):
    """Tier 0 keeps bfloat16 values as float32 arrays rounded to bfloat16; the compiled model
    takes and returns bfloat16 buffers; both feed each other and agree exactly here."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    w = nb.Tensor.from_numpy(rng.standard_normal(6).astype(np.float32)).to(nb.bfloat16)
    nb.evaluate(w)  # made on tier 0: a float32 array holding bfloat16 values

    def step(d: np.ndarray) -> nb.Tensor:
        out = nb.Tensor.from_numpy(d).to(nb.bfloat16) * w + 1.0
        nb.evaluate(out)  # a bfloat16 result: a float32 array on tier 0, a bfloat16 buffer compiled
        return out

    outs = [step(data[0]), step(data[1])]
    assert nb.wait_for_compiles(timeout=600)
    outs.append(step(data[2]))  # the compiled model, fed w's tier-0 float32 array
    (entry,) = [m for m in nb.cached_models() if len(m.inputs) == 2]
    assert (entry.state, entry.runs) == ("compiled", 3)
    tw = torch.tensor(w.to(nb.float32).numpy()).bfloat16()
    for d, out in zip(data, outs, strict=True):  # read back on tier 0, from either storage
        np.testing.assert_array_equal(
            out.to(nb.float32).numpy(), (torch.tensor(d).bfloat16() * tw + 1.0).float().numpy()
        )


EXITS_WHILE_BUILDING = """
import numpy as np, nabla as nb, nabla_nn as nn, nabla_nn.functional as F, nabla_optim as optim
layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
model = nn.Sequential(layer, nn.Flatten(), nn.Linear(4 * 16, 3))
opt = optim.Adam(model.parameters(), lr=1e-2)
x, y = nb.tensor(np.ones((2, 4, 16), np.float32)), nb.tensor(np.zeros(2, np.int64))
for _ in range(2):  # the second step starts building the MAX model on the dispatcher thread
    opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
print("done")
"""


def test_exiting_while_a_background_compile_is_under_way_is_clean():
    """Python exiting while the dispatcher thread is inside MAX's C++ (building the module)
    used to abort the process ("exception not rethrown"); now exit waits for that stretch."""
    env = {**os.environ, "NABLA_EXECUTOR": "auto", "NABLA_ARTIFACTS": "0"}  # no stored model: it must build
    proc = subprocess.run([sys.executable, "-c", EXITS_WHILE_BUILDING], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done" and "not rethrown" not in proc.stderr


def test_dynamic_dims_run_on_tier0_per_size_then_on_one_symbolic_model(auto):
    """`nabla.compile(..., dynamic_dims=...)` under auto: tier 0 specializes per batch size
    while the one symbolic MAX model compiles; then every size runs that model."""

    def step(w, x):
        return nb.tanh(x @ w).sum(axis=1)

    f = nb.compile(step, dynamic_dims={1: 0})
    rng = np.random.default_rng(3)
    w = nb.tensor(rng.standard_normal((4, 2)).astype(np.float32))
    sizes = [5, 7, 5]
    xs = [rng.standard_normal((n, 4)).astype(np.float32) for n in sizes + [7, 5]]
    outs = [f(w, nb.tensor(x)).numpy() for x in xs[:3]]
    assert nb.cache_info().compiles == 1 and f.stats.compiles == 1  # hot: compiling since the first call
    assert nb.wait_for_compiles(timeout=600)
    tier0 = nb.cache_info().tier0_executions
    outs += [f(w, nb.tensor(x)).numpy() for x in xs[3:]]
    assert nb.cache_info().tier0_executions == tier0  # both sizes on the symbolic model
    for x, out in zip(xs, outs, strict=True):
        np.testing.assert_allclose(out, np.tanh(x @ w.numpy()).sum(1), rtol=1e-5, atol=1e-6)
