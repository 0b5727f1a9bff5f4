"""Two executors behind one interface: MAX (compiled, the default) and NumPy (the reference).

An executor turns a Program into something runnable once (`prepare`, a compile for MAX) and
then runs it on input storages (`run`). The engine owns caching; executors own nothing but
their session.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from max.driver import CPU, Buffer
from max.dtype import DType
from max.engine import InferenceSession
from max.graph import DeviceRef, Graph, Module, TensorType

from ..common.dtypes import to_numpy_dtype
from .program import Program


def storage_to_numpy(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, Buffer):
        if data.dtype == DType.bfloat16:
            raise TypeError("bfloat16 buffers cannot be viewed as NumPy arrays; cast to float32 first")
        if not data.is_host:
            data = data.to(CPU())
        return data.to_numpy()
    raise TypeError(f"internal error: unknown storage {type(data).__name__}")


def storage_to_buffer(data: Any) -> Buffer:
    if isinstance(data, Buffer):
        return data
    array = np.asarray(data, order="C")
    if array.dtype == np.bool_ and array.ndim == 0:
        # MAX's Buffer.from_numpy cannot view a 0-d bool array; go through a 1-element uint8 buffer.
        return Buffer.from_numpy(array.reshape(1).view(np.uint8)).view(DType.bool, ())
    return Buffer.from_numpy(array)


def custom_extensions(program: Program) -> list[Path]:
    """Kernel packages (compiled Mojo) that the program's custom ops need, in first-use order."""
    paths: list[Path] = []
    for step in program.steps:
        for path in getattr(step.op, "custom_extensions", ()):
            if path not in paths:
                paths.append(path)
    return paths


class Executor:
    name: str = "?"
    compiles = False  # whether prepare() invokes a compiler

    def prepare(self, program: Program) -> Any:
        raise NotImplementedError

    def run(self, prepared: Any, inputs: list) -> list:
        raise NotImplementedError


class NumpyExecutor(Executor):
    """Replays a Program with each op's NumPy kernel. The semantics reference for tests."""

    name = "numpy"

    def prepare(self, program: Program) -> Program:
        return program

    def run(self, program: Program, inputs: list) -> list:
        env: list[Any] = [None] * program.num_slots
        for slot, data in zip(program.input_slots, inputs, strict=True):
            env[slot] = storage_to_numpy(data)
        last_use = program.last_use
        for i, step in enumerate(program.steps):
            result = step.op.numpy_kernel(*[env[a] for a in step.args], **step.kwargs)
            results = result if isinstance(result, tuple | list) else (result,)
            for slot, value, (shape, dtype) in zip(step.outs, results, step.out_avals, strict=True):
                arr = np.asarray(value, dtype=to_numpy_dtype(dtype))
                if arr.shape != shape:
                    raise RuntimeError(
                        f"internal error: {step.op.name} NumPy kernel produced shape {arr.shape}, "
                        f"shape inference said {shape}"
                    )
                env[slot] = arr
            for a in step.args:  # free intermediates after their last reader
                if last_use.get(a) == i:
                    env[a] = None
        return [env[s] for s in program.output_slots]


class _Lowering(threading.local):
    memo: dict | None = None  # set while a MAX graph is being built


_LOWERING = _Lowering()


def lower_steps(program: Program, input_values: list, *, cse: bool = False) -> list:
    """Emit a program's steps into the MAX graph being built and return its output values.

    With `cse` (sub-programs of `call` ops) a step whose op, static arguments and input values
    match one already emitted in this graph build reuses that step's values. This is how a
    compiled module's backward, which recomputes the forward, shares the forward's values.
    """
    memo = (_LOWERING.memo if _LOWERING.memo is not None else {}) if cse else None
    env: list[Any] = [None] * program.num_slots
    for slot, value in zip(program.input_slots, input_values, strict=True):
        env[slot] = value
    for step in program.steps:
        args = [env[a] for a in step.args]
        key = (step.key, tuple(map(id, args))) if memo is not None else None
        hit = memo.get(key) if memo is not None else None
        if hit is not None:
            results = hit[0]
        else:
            result = step.op.kernel(*args, **step.kwargs)
            results = tuple(result) if isinstance(result, tuple | list) else (result,)
            if memo is not None:  # the args stay referenced, so their ids cannot be reused by new values
                memo[key] = (results, args)
        for slot, value in zip(step.outs, results, strict=True):
            env[slot] = value
    return [env[s] for s in program.output_slots]


class MaxExecutor(Executor):
    """Builds a MAX graph from a Program inside a `max.graph.Module` and compiles it.

    Compiling a Module (rather than `session.load(graph)`) lets MAX's disk cache answer a
    repeated structure in milliseconds.
    """

    name = "max"
    compiles = True

    def __init__(self) -> None:
        self._session = None
        self._lock = threading.Lock()
        self._graph_counter = 0

    @property
    def session(self) -> Any:
        if self._session is None:
            self._session = InferenceSession(devices=[CPU()])
        return self._session

    def build_module(self, program: Program, resolve: Any = None) -> Any:
        """`resolve` maps symbolic sizes in input shapes and op kwargs to MAX dims (compile's
        dynamic dims); without it everything is static."""
        device = DeviceRef.CPU()
        module = Module()
        types = [
            TensorType(dtype, resolve(shape) if resolve else shape, device=device)
            for dtype, shape in program.input_types
        ]
        self._graph_counter += 1
        extensions = custom_extensions(program)
        with Graph(
            f"nabla_{self._graph_counter}", input_types=types, module=module, custom_extensions=extensions
        ) as graph:
            if resolve is not None:
                program = replace(program, steps=[replace(st, kwargs=resolve(st.kwargs)) for st in program.steps])
            _LOWERING.memo = {}
            try:
                outputs = lower_steps(program, [value.tensor for value in graph.inputs])
            finally:
                _LOWERING.memo = None
            graph.output(*outputs)
        return module

    def prepare(self, program: Program, resolve: Any = None) -> Any:
        module = self.build_module(program, resolve)
        with self._lock:
            compiled = self.session.compile(module, custom_extensions=custom_extensions(program) or None)
            models = self.session.init_all(compiled)
        return next(iter(models.values()))

    def run(self, model: Any, inputs: list) -> list:
        return model.execute(*[storage_to_buffer(d) for d in inputs])


_EXECUTORS: dict[str, Executor] = {"numpy": NumpyExecutor(), "max": MaxExecutor()}


def get_executor_impl(name: str) -> Executor:
    return _EXECUTORS[name]
