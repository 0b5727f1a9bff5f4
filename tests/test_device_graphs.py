"""Device graphs (`nabla/core/graph/device_graphs.py`) with a fake MAX model: when a placed
model is captured, that each run copies its inputs into the captured buffers and its results
out of them, and the fallbacks. MAX's own capture needs a GPU (benchmarks/device_graph_probe.py)."""

from __future__ import annotations

import numpy as np
import pytest
from max.driver import CPU, Buffer
from max.dtype import DType

from nabla.core.common import config
from nabla.core.common.config import CONFIG
from nabla.core.common.devices import as_device
from nabla.core.graph import executors
from nabla.core.graph.device_graphs import PlacedModel

GPU0 = as_device("gpu:0")


class FakeModel:
    """`max.engine.Model` as device graphs use it, computing x * 2 + w: `execute`, and
    `capture` / `replay` with a device graph's semantics (replay reads the input buffers it
    captured and writes the output buffers capture returned)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.executes, self.replays, self.graphs = fail, 0, 0, {}

    @staticmethod
    def _values(x: Buffer, w: Buffer) -> Buffer:
        return Buffer.from_numpy(x.to_numpy() * 2.0 + w.to_numpy())

    def execute(self, x: Buffer, w: Buffer) -> list:
        self.executes += 1
        return [self._values(x, w)]

    def capture(self, key: int, *inputs: Buffer) -> list:
        if self.fail:
            raise RuntimeError("No graph-capture devices available for this model")
        outputs = [Buffer(DType.float32, inputs[0].shape, device=CPU())]
        self.graphs[key] = (inputs, outputs)
        return outputs

    def replay(self, key: int, *inputs: Buffer) -> None:
        captured, outputs = self.graphs[key]
        assert all(a is b for a, b in zip(captured, inputs, strict=True))  # only its own buffers
        self.replays += 1
        outputs[0].inplace_copy_from(self._values(*captured))


def _buffers(x: float, shape: tuple = (2, 3)) -> list[Buffer]:
    return [Buffer.from_numpy(np.full(shape, x, np.float32)), Buffer.from_numpy(np.ones(shape, np.float32))]


@pytest.fixture
def graphs_on(monkeypatch):
    monkeypatch.setattr(CONFIG, "device_graphs", True)


def test_a_repeated_model_is_replayed_and_every_result_stays_the_callers(graphs_on):
    fake = FakeModel()
    placed = PlacedModel(fake, GPU0)
    results = [placed.run(_buffers(float(k)), executors._execute)[0] for k in range(4)]
    assert fake.executes == 1 and fake.replays == 3 and list(fake.graphs) == [0]  # captured on run 2
    for k, r in enumerate(results):  # a later replay did not overwrite an earlier result
        np.testing.assert_array_equal(r.to_numpy(), np.full((2, 3), 2.0 * k + 1.0))
    assert all(r is not fake.graphs[0][1][0] for r in results)
    placed.run(_buffers(1.0, (4,)), executors._execute)  # another size: its own runs, its own graph
    placed.run(_buffers(1.0, (4,)), executors._execute)
    assert list(fake.graphs) == [0, 1] and fake.executes == 2


def test_a_model_max_can_not_capture_runs_as_before(graphs_on):
    fake = FakeModel(fail=True)
    placed = PlacedModel(fake, GPU0)
    with pytest.warns(RuntimeWarning, match="could not capture this model as a device graph"):
        results = [placed.run(_buffers(float(k)), executors._execute)[0] for k in range(4)]
    assert fake.executes == 4 and fake.replays == 0
    np.testing.assert_array_equal(results[3].to_numpy(), np.full((2, 3), 7.0))


def test_device_graphs_are_off_by_default(monkeypatch):
    monkeypatch.delenv("NABLA_DEVICE_GRAPHS", raising=False)
    assert not config._from_env().device_graphs
    monkeypatch.setattr(CONFIG, "device_graphs", False)
    fake = FakeModel()
    placed = PlacedModel(fake, GPU0)
    for k in range(3):
        placed.run(_buffers(float(k)), executors._execute)
    assert fake.executes == 3 and not fake.graphs


def test_the_max_executor_runs_a_placed_model_through_its_graph(graphs_on, monkeypatch):
    monkeypatch.setitem(executors._DRIVER_DEVICES, GPU0, CPU())  # the "accelerator" is the CPU
    fake = FakeModel()
    placed, executor = PlacedModel(fake, GPU0), executors.get_executor_impl("max")
    for k in range(3):  # host inputs (NumPy) are copied to the model's device first
        (out,) = executor.run(placed, [np.full((2, 3), float(k), np.float32), np.ones((2, 3), np.float32)])
        np.testing.assert_array_equal(out.to_numpy(), np.full((2, 3), 2.0 * k + 1.0))
    assert fake.executes == 1 and fake.replays == 2
