"""Models that run on an accelerator, optionally replayed as device graphs.

A step model on a GPU is launch-bound: W1's runs about a hundred small kernels, and MAX's
`execute` took 0.56 ms of an H200's step where torch's whole eager step took 1.1. MAX 26.7 can
capture a model's launches once as a device graph (`Model.capture`, CUDA graphs) and replay
them as one (`Model.replay`). With `NABLA_DEVICE_GRAPHS=1` a placed model is captured on the
second run of an input signature and replayed after that.

Replay reads the input buffers it captured and writes the output buffers it returned then
(MAX's serving pipelines copy each request into the captured inputs the same way), so a run
copies its inputs in and its outputs out, each as one batched copy: a result is the caller's
own buffer, not one the next replay overwrites (a loop keeps its losses; the next step's
parameters are the last step's results).

Status: the bookkeeping is tested with a fake model (tests/test_device_graphs.py); MAX's side
has not yet run on a GPU (`benchmarks/device_graph_probe.py` measures it), so it is off by
default.
"""

from __future__ import annotations

import warnings
from typing import Any

from max.driver import Buffer, batch_inplace_copy

from ..common.config import CONFIG
from ..common.devices import Device

CAPTURE_ON_RUN = 2  # a model run once (a one-off expression) is not worth a graph's memory
_FAILED = object()  # graphs[...] for a signature MAX could not capture


class PlacedModel:
    """A compiled model that runs on an accelerator: its inputs are copied there first; with
    device graphs on, repeated runs replay a captured device graph (`DeviceGraph`)."""

    __slots__ = ("device", "graphs", "model", "runs")

    def __init__(self, model: Any, device: Device) -> None:
        self.model, self.device = model, device
        self.graphs: dict[tuple, Any] = {}  # input shapes -> DeviceGraph, or _FAILED
        self.runs: dict[tuple, int] = {}  # input shapes -> runs without a graph so far

    def run(self, buffers: list, execute: Any) -> list:
        """The model's results for `buffers` (on its device); `execute(model, buffers)` runs
        it without a graph."""
        if not CONFIG.device_graphs:
            return execute(self.model, buffers)
        shapes = tuple([tuple(b.shape) for b in buffers])  # (a symbolic model: one graph per size)
        graph = self.graphs.get(shapes)
        if graph is None:
            runs = self.runs[shapes] = self.runs.get(shapes, 0) + 1
            if runs < CAPTURE_ON_RUN:
                return execute(self.model, buffers)
            graph = self.graphs[shapes] = DeviceGraph.capture(self.model, buffers, len(self.graphs)) or _FAILED
        return execute(self.model, buffers) if graph is _FAILED else graph.run(buffers)


class DeviceGraph:
    """One captured device graph of a model: its own input buffers, which each run fills, and
    the output buffers each replay writes, which each run copies out."""

    __slots__ = ("inputs", "key", "model", "outputs")

    def __init__(self, model: Any, key: int, inputs: list, outputs: list) -> None:
        self.model, self.key, self.inputs, self.outputs = model, key, inputs, outputs

    @classmethod
    def capture(cls, model: Any, buffers: list, key: int) -> DeviceGraph | None:
        """The graph of `model` run on buffers shaped as `buffers` (its key among the model's
        graphs: `key`), or None with a warning where MAX can not capture it."""
        try:
            inputs = [Buffer(b.dtype, b.shape, device=b.device) for b in buffers]
            batch_inplace_copy(inputs, buffers)  # (should capture run the kernels: real indices)
            outputs = model.capture(key, *inputs)
        except Exception as err:  # capture is best-effort in MAX: run the model as before
            warnings.warn(
                f"nabla: MAX could not capture this model as a device graph ({err}); it runs without one",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        return cls(model, key, inputs, list(outputs))

    def run(self, buffers: list) -> list:
        batch_inplace_copy(self.inputs, buffers)
        self.model.replay(self.key, *self.inputs)
        results = [Buffer(o.dtype, o.shape, device=o.device) for o in self.outputs]
        batch_inplace_copy(results, self.outputs)
        return results
