"""The per-step fast paths keep their meaning: cache keys stay exact, `item()` reads a MAX
buffer's value directly, a layer's error names its path with hooks on, a hook-free module
call is the forward."""

from __future__ import annotations

import math

import numpy as np
import pytest
from max.driver import Buffer

import nabla as nb
import nabla_nn as nn
from nabla.core.graph.executors import input_buffers, storage_item
from nabla.core.graph.opnode import freeze


def test_freeze_keeps_float_signs_and_nan_apart():
    assert freeze((0.0,)) != freeze((-0.0,))
    assert freeze({"v": 0.0}) != freeze({"v": -0.0})
    assert freeze((math.nan,)) == freeze((math.nan,))
    assert hash(freeze(((1, "a"), ("b", 2.5))))  # nested tuples become hashable keys


def test_freeze_returns_tuples_of_exact_values_as_they_are():
    key = (1, "mean", None, True, nb.float32)
    assert freeze(key) is key
    assert freeze([3, 4]) == (3, 4)
    assert freeze({"b": 1, "a": (2, 3)}) == (("a", (2, 3)), ("b", 1))
    with pytest.raises(TypeError, match="not hashable"):
        freeze({"f": object()})


@pytest.mark.parametrize(
    "value", [np.float32(1.5), np.int64(-7), np.float64(0.1), np.int32(3), np.bool_(True), np.float16(2.0)]
)
def test_storage_item_matches_numpy_for_buffers_and_arrays(value):
    array = np.array(value)
    expected = array.item()
    assert storage_item(array) == expected
    if array.dtype != np.bool_:  # Buffer.from_numpy cannot view a 0-d bool array
        got = storage_item(Buffer.from_numpy(array.reshape(1)))
        assert got == expected and type(got) is type(expected)


def test_item_reads_a_buffer_backed_tensor_and_counts_the_host_read():
    t = nb.Tensor(nb.Tensor.from_numpy(np.array([2.25], np.float32))._impl.share())
    t._impl.data = Buffer.from_numpy(np.array([2.25], np.float32))
    reads = nb.core.graph.engine.GRAPH.host_reads
    assert t.item() == 2.25
    assert nb.core.graph.engine.GRAPH.host_reads == reads + 1
    with pytest.raises(ValueError, match="one-element"):
        nb.ones(2).item()


def test_layer_error_names_its_path_with_hooks_on_the_way():
    model = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.ReLU(), nn.Linear(5, 2)))
    calls = []
    model[1].register_forward_pre_hook(lambda m, args: calls.append("pre"))
    with pytest.raises(ValueError, match=r"^1\.1 \(Linear in_features=5 .*got input \(3, 8\), expected \(\*, 5\)"):
        model(nb.ones(3, 4))
    assert calls == ["pre"]


def test_module_call_without_hooks_is_the_forward():
    class Twice(nn.Module):
        def forward(self, x, *, scale=2.0):
            return x * scale

    m = Twice()
    np.testing.assert_allclose(m(nb.ones(2), scale=3.0).numpy(), [3.0, 3.0])
    handle = m.register_forward_hook(lambda mod, args, out: out + 1)
    np.testing.assert_allclose(m(nb.ones(2)).numpy(), [3.0, 3.0])
    handle.remove()
    np.testing.assert_allclose(m(nb.ones(2)).numpy(), [2.0, 2.0])


def test_an_array_handed_to_max_as_a_buffer_reads_back_as_that_array():
    # A model's NumPy input becomes a zero-copy Buffer once; reading the Buffer back would wait
    # on MAX's hazard tracking (80-120 us), so the value reads as the original array.
    a = np.arange(6, dtype=np.int64)
    t = nb.Tensor.from_numpy(a)
    [buffer] = input_buffers([t._impl])
    assert type(buffer) is Buffer and t._impl.data is buffer
    assert t.numpy() is a
    t._impl.set_realized(np.zeros(6, np.int64))  # new storage (an optimizer's new learning rate)
    assert t.numpy() is not a and not t.numpy().any()


def test_many_live_pending_tensors_are_swept_a_logarithmic_number_of_times(monkeypatch):
    """A long RNN's backward holds many unevaluated tensors alive: sweeping the pending table
    for dead entries on every op past the threshold made that quadratic."""
    sweeps = []
    original = nb.GRAPH.pending_impls
    monkeypatch.setattr(nb.GRAPH, "_sweep_at", 100)
    monkeypatch.setattr(nb.GRAPH, "sweep_min", 100)
    monkeypatch.setattr(nb.GRAPH, "pending_impls", lambda: sweeps.append(1) or original())
    x = nb.ones(2)
    keep = [x + float(i) for i in range(1000)]
    assert 3 <= len(sweeps) <= 5  # past 100, 200, 400, 800 live entries (it was one per op past 100)
    assert len(keep) == 1000
