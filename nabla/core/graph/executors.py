"""Executors behind one interface: NumPy (the reference and tier 0), MAX (compiled), and the
tiered `auto` executor (`tiered.py`) that runs on NumPy until MAX has compiled in the background.

An executor turns a Program into something runnable once (`prepare`: a compile for MAX, or a
load from the on-disk model store) and then runs it on input storages (`run`). The engine owns
the in-memory cache; executors own their session and their counters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from max import engine
from max.driver import CPU, Accelerator, Buffer, accelerator_count
from max.dtype import DType
from max.engine import InferenceSession
from max.graph import DeviceRef, Graph, Module, TensorType

from ..common.devices import CPU_DEVICE, Device, as_device
from ..common.dtypes import to_numpy_dtype
from ..common.workers import lower_worker_priority
from .artifacts import STORE
from .device_graphs import PlacedModel
from .program import PerDevice, Program, Step

_ITEM_DTYPES = (DType.float32, DType.int64, DType.float64, DType.int32)
_WORKER_CHECKS = 16


def storage_item(data: Any) -> Any:
    """The one value of a one-element storage as a Python number (`Tensor.item`): a host
    Buffer of a plain dtype is read directly (a loss read each step: 0.1 us, where the NumPy
    view costs 2 us and more when cold)."""
    if type(data) is Buffer and data.dtype in _ITEM_DTYPES and data.is_host:
        return data.item()
    return storage_to_numpy(data).reshape(()).item()


def storage_to_numpy(data: Any) -> np.ndarray:
    """A storage as a NumPy array: zero-copy, except bfloat16 buffers, which NumPy lacks and
    which widen exactly to float32 (the NumPy executor's bfloat16 storage)."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, Buffer):
        if not data.is_host:
            data = data.to(CPU())
        if data.dtype == DType.bfloat16:
            bits = data.view(DType.uint16, data.shape).to_numpy()
            return (bits.astype(np.uint32) << 16).view(np.float32)
        return data.to_numpy()
    raise TypeError(f"internal error: unknown storage {type(data).__name__}")


def round_to_bfloat16(array: np.ndarray) -> np.ndarray:
    """float32 values rounded (to nearest, ties to even) to those bfloat16 can hold."""
    array = np.asarray(array, np.float32)
    bits = array.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(array), array, rounded.view(np.float32))


def bfloat16_buffer(array: np.ndarray) -> Buffer:
    """A float32 array (the NumPy executor's bfloat16 storage) as a bfloat16 buffer."""
    bits = (round_to_bfloat16(array).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return Buffer.from_numpy(bits.reshape(-1)).view(DType.bfloat16, array.shape)


def bfloat16_inputs(program: Program, inputs: list) -> list:
    """Inputs for a compiled model: values of bfloat16 tensors that the NumPy executor computed
    are float32 arrays; the model takes bfloat16 buffers."""
    out = list(inputs)
    for i, (dtype, _) in enumerate(program.input_types):
        if dtype == DType.bfloat16:
            d = out[i]
            out[i] = tuple(map(_as_bfloat16, d)) if type(d) is tuple else _as_bfloat16(d)
    return out


def _as_bfloat16(data: Any) -> Any:
    return bfloat16_buffer(data) if isinstance(data, np.ndarray) else data


# The zero-copy view that `Buffer.from_numpy` ends in, for the arrays it takes as they are
# (contiguous, writeable, not bool). Private to MAX (pinned in pyproject.toml): without it,
# the public call.
_FROM_DLPACK = getattr(Buffer, "_from_dlpack", None)


def storage_to_buffer(data: Any) -> Buffer:
    if isinstance(data, Buffer):
        return data
    if type(data) is np.ndarray and _FROM_DLPACK is not None and data.dtype.kind in "fiuc":
        flags = data.flags  # each step's batch: MAX's Buffer.from_numpy is 3 Python calls more
        if flags.c_contiguous and flags.writeable:
            return _FROM_DLPACK(data)
    array = np.asarray(data, order="C")
    if array.dtype == np.bool_ and array.ndim == 0:
        # MAX's Buffer.from_numpy cannot view a 0-d bool array; go through a 1-element uint8 buffer.
        return Buffer.from_numpy(array.reshape(1).view(np.uint8)).view(DType.bool, ())
    return Buffer.from_numpy(array)


_DRIVER_DEVICES: dict[Device, Any] = {}


def driver_device(device: Device) -> Any:
    """MAX's driver device for a nabla Device; a clear error when it is not there."""
    found = _DRIVER_DEVICES.get(device)
    if found is None:
        if device.is_accelerator:
            count = accelerator_count()
            if device.index >= count:
                raise ValueError(f"device {device} is not available: MAX finds {count} accelerator(s) on this machine")
            found = Accelerator(device.index)
        else:
            found = CPU()
        _DRIVER_DEVICES[device] = found
    return found


def available_device(spec: Any, who: str) -> Device:
    """The Device `spec` names ("gpu:1", "cuda", ...), checked to be on this machine; an error
    names `who` (the user's call)."""
    try:
        device = as_device(spec)
        if device.is_accelerator:
            driver_device(device)
    except ValueError as err:
        raise ValueError(f"{who}: {err}") from None
    return device


def device_ref(device: Device) -> DeviceRef:
    return DeviceRef.GPU(device.index) if device.is_accelerator else DeviceRef.CPU()


def to_device(data: Any, device: Device) -> Any:
    """A storage (or a tuple of pieces) moved to `device`: a Buffer there for an accelerator, a
    host storage (NumPy array or host Buffer) for the CPU. What is there already is returned."""
    if type(data) is tuple:
        return tuple(to_device(d, device) for d in data)
    if not device.is_accelerator:
        return data.to(CPU()) if type(data) is Buffer and not data.is_host else data
    target = driver_device(device)
    buffer = data if type(data) is Buffer else storage_to_buffer(data)
    return buffer if not buffer.is_host and buffer.device == target else buffer.to(target)


def placed_storage(data: Any, device: Device) -> Any:
    """A program's result for a target on `device`: results of an accelerator's program stay
    there unless the target is a CPU tensor (CPU tensors hold host storage only)."""
    return data if device.is_accelerator else to_device(data, device)


def input_buffers(impls: list, device: Device = CPU_DEVICE) -> list:
    """The storages of a model's input impls as Buffers. NumPy storage is swapped for its
    zero-copy Buffer view in the impl itself, so a tensor that feeds many evaluations (an
    optimizer's hyperparameter, a batch used again) converts once, not every step. On an
    accelerator, a tensor that lives there keeps its copy on the device the same way (a
    parameter goes up once); CPU tensors are copied up for each run."""
    if device.is_accelerator:
        return [_device_input(impl, device) for impl in impls]
    out = []
    for impl in impls:
        data = impl.data
        if type(data) is np.ndarray and impl.dtype is not DType.bfloat16:  # bfloat16: float32 arrays
            buffer = impl.data = storage_to_buffer(data)
            impl.host = (buffer, data)
            data = buffer
        out.append(data)
    return out


def storage_on(data: Any, dtype: DType, device: Device) -> Any:
    """`to_device` for a tensor's storage of `dtype`: a bfloat16 tensor's host storage (float32
    arrays, NumPy has no bfloat16) becomes a bfloat16 Buffer on an accelerator."""
    on_host_as_float32 = device.is_accelerator and dtype is DType.bfloat16
    return to_device(_as_bfloat16_storage(data) if on_host_as_float32 else data, device)


def _device_input(impl: Any, device: Device) -> Any:
    data = impl.data
    if type(data) is Buffer and impl.device is device and not data.is_host:
        return data  # (the common case, every input every step: a tensor that lives there)
    moved = storage_on(data, impl.dtype, device)
    if moved is not data and impl.device is device:
        if type(data) is np.ndarray:
            impl.host = (moved, data)
        impl.data = moved
    return moved


def _as_bfloat16_storage(data: Any) -> Any:
    return tuple(map(_as_bfloat16, data)) if type(data) is tuple else _as_bfloat16(data)


def host_array(impl: Any) -> np.ndarray:
    """A realized unsharded impl's value as NumPy. A Buffer that `input_buffers` made from an
    array reads back as that array: reading the Buffer itself (`to_numpy`) waits on MAX's
    hazard tracking, 80-120 us after an execution (a training loop reading its targets)."""
    data, host = impl.data, impl.host
    if host is not None and host[0] is data:
        return host[1]
    return storage_to_numpy(data)


def host_values(impl: Any) -> np.ndarray | None:
    """`host_array` when the host holds the value: None for a tensor on an accelerator (unless
    it keeps the host array it was copied from), whose read would copy it back and wait for the
    device. Eager checks of index values skip those, as PyTorch's CUDA kernels check indices on
    the device: on a GPU such a read cost W1's step 50 us, and W3's two."""
    host = impl.host
    if impl.device.is_accelerator and (host is None or host[0] is not impl.data):
        return None
    return host_array(impl)


def lowered_ops(ops_and_kwargs: Any) -> list:
    """Every op that lowering these (op, kwargs) pairs emits, in first-use order: an op that
    runs a sub-program (`call`) names the sub-program's ops with `inner_ops(kwargs)`."""
    found: dict[int, Any] = {}
    for op, kwargs in ops_and_kwargs:
        found.setdefault(id(op), op)
        inner = getattr(op, "inner_ops", None)
        if inner is not None:
            for o in inner(kwargs):
                found.setdefault(id(o), o)
    return list(found.values())


def program_ops(program: Program) -> list:
    return lowered_ops((step.op, step.kwargs) for step in program.steps)


def custom_extensions(program: Program) -> list[Path]:
    """Kernel packages (compiled Mojo) that the program's custom ops need, in first-use order;
    those of the ops inside its `call`s included. nabla's own package (`builtin_extensions`,
    nabla/ops/mojo_kernels.py) holds CPU kernels only: an accelerator's program never loads it."""
    paths: list[Path] = []
    on_accelerator = program.device.is_accelerator
    for op in program_ops(program):
        if on_accelerator and getattr(op, "builtin_extensions", False):
            continue
        for path in getattr(op, "custom_extensions", ()):
            if path not in paths:
                paths.append(path)
    return paths


def expand_inputs(program: Program, inputs: list) -> list:
    """Sharded inputs arrive as their distinct pieces; executors work on per-device lists."""
    if not program.input_layouts:
        return inputs
    return [
        data if layout is None else PerDevice(data[p] for p in layout)
        for data, layout in zip(inputs, program.input_layouts, strict=True)
    ]


def compress_outputs(program: Program, outputs: list) -> list:
    """Per-device output lists back to one storage per distinct piece (a tuple)."""
    if not program.output_layouts:
        return outputs
    return [
        value if positions is None else tuple(value[p] for p in positions)
        for value, positions in zip(outputs, program.output_layouts, strict=True)
    ]


def apply_step(step: Step, args: list, call: Any) -> tuple:
    """Run one step: `call(args, kwargs, position)` returns the op's outputs as a tuple.

    On a mesh a local step runs per device; devices whose inputs and kwargs are the same
    objects (replicated pieces) share one call. A collective step gets the per-device lists.
    """
    spmd = step.spmd
    if spmd is None or spmd.collective:
        return call(args, step.kwargs, None)
    memo: dict = {}
    outs: list[PerDevice] = [PerDevice() for _ in step.outs]
    for position in range(spmd.num_devices):
        dev_args = [a[position] if type(a) is PerDevice else a for a in args]
        kwargs = spmd.kwargs[position]
        key = (tuple(map(id, dev_args)), id(kwargs))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (call(dev_args, kwargs, position), dev_args)  # args kept: ids stay unique
        for out, value in zip(outs, hit[0], strict=True):
            out.append(value)
    return tuple(outs)


def _as_tuple(result: Any) -> tuple:
    return tuple(result) if isinstance(result, tuple | list) and type(result) is not PerDevice else (result,)


@dataclass
class ExecutorStats:
    compiles: int = 0  # MAX compilations started (finished, or running in the background)
    loads: int = 0  # compiled models read from the on-disk store instead of compiled
    hits: int = 0
    misses: int = 0
    graph_builds: int = 0
    executions: int = 0
    tier0_executions: int = 0  # auto executor: runs on NumPy while no compiled model was ready

    def used(self) -> bool:
        return any(vars(self).values())


class Executor:
    name: str = "?"
    compiles = False  # whether prepare() invokes a compiler
    tiered = False  # whether prepare() returns a TieredModel (see tiered.py)

    def __init__(self) -> None:
        self.stats = ExecutorStats()

    @property
    def makes_max_models(self) -> bool:
        """Whether its models are (or become) compiled MAX models: storable on disk, worth
        keeping out of trivial programs."""
        return self.compiles or self.tiered

    def prepare(self, program: Program, resolve: Any = None, name: str | None = None, hot: bool = False) -> Any:
        """`resolve`: symbolic sizes to MAX dims (compile's dynamic dims); `name`: the model
        store's name for this program, or None when it must not be stored; `hot`: the program
        will run many times (a compiled function), so a tiered executor compiles it at once."""
        raise NotImplementedError

    def run(self, prepared: Any, inputs: list) -> list:
        raise NotImplementedError


class NumpyExecutor(Executor):
    """Replays a Program with each op's NumPy kernel. The semantics reference for tests."""

    name = "numpy"

    def prepare(self, program: Program, resolve: Any = None, name: str | None = None, hot: bool = False) -> Program:
        return program

    def run(self, program: Program, inputs: list) -> list:
        arrays = [tuple(map(storage_to_numpy, d)) if type(d) is tuple else storage_to_numpy(d) for d in inputs]
        return compress_outputs(program, self.run_values(program, expand_inputs(program, arrays)))

    def run_values(self, program: Program, values: list) -> list:
        """Run on arrays (per-device lists for sharded values), returning the same kind."""
        env: list[Any] = [None] * program.num_slots
        for slot, data in zip(program.input_slots, values, strict=True):
            env[slot] = data
        last_use = program.last_use
        # Overflow, 0/0 and the like give inf and nan silently, as on MAX and in PyTorch (the
        # reference path must not warn where the compiled one cannot).
        with np.errstate(all="ignore"):
            for i, step in enumerate(program.steps):
                results = apply_step(step, [env[a] for a in step.args], self._caller(step))
                for slot, value in zip(step.outs, results, strict=True):
                    env[slot] = value
                for a in step.args:  # free intermediates after their last reader
                    if last_use.get(a) == i:
                        env[a] = None
        return [env[s] for s in program.output_slots]

    @staticmethod
    def _caller(step: Step) -> Any:
        def call(args: list, kwargs: dict, position: int | None) -> tuple:
            results = _as_tuple(step.op.numpy_kernel(*args, **kwargs))
            if step.spmd is None:
                return tuple(_checked(step, v, a) for v, a in zip(results, step.out_avals, strict=True))
            if position is not None:
                avals = step.spmd.local_avals[position]
                return tuple(_checked(step, v, a) for v, a in zip(results, avals, strict=True))
            return tuple(  # collective: per-device lists (or one value, leaving the mesh)
                PerDevice(_checked(step, v[p], step.spmd.local_avals[p][k]) for p in range(len(v)))
                if type(v) is PerDevice
                else _checked(step, v, step.out_avals[k])
                for k, v in enumerate(results)
            )

        return call


def _checked(step: Step, value: Any, aval: tuple) -> np.ndarray:
    shape, dtype = aval
    arr = np.asarray(value, dtype=to_numpy_dtype(dtype))
    if dtype == DType.bfloat16:  # computed in float32, stored with bfloat16's precision
        arr = round_to_bfloat16(arr)
    if arr.shape != shape:
        raise RuntimeError(
            f"internal error: {step.op.name} NumPy kernel produced shape {arr.shape}, shape inference said {shape}"
        )
    return arr


class _Lowering(threading.local):
    """Per-thread state of the MAX graph being built; all None outside a build."""

    memo: dict | None = None  # call sub-programs' common subexpressions
    producers: dict | None = None  # id(value) -> (step, output index, input values, value)
    scratch: dict | None = None  # lowerings' own per-build state (nabla/ops/_layout.py)
    device: DeviceRef | None = None  # where the graph being built runs


_LOWERING = _Lowering()


def producer(value: Any) -> tuple[Step, int, list] | None:
    """The step that emitted `value` into the MAX graph being built, which of its outputs it
    is, and the step's input values; None outside a build or for graph inputs. Lets a lowering
    re-emit a value's computation in another layout (nabla/ops/_layout.py)."""
    found = _LOWERING.producers.get(id(value)) if _LOWERING.producers is not None else None
    return None if found is None or found[3] is not value else found[:3]


def graph_device() -> DeviceRef:
    """The device of the MAX graph being built: where a lowering puts values it makes from
    nothing (constants, ranges, random draws)."""
    return _LOWERING.device if _LOWERING.device is not None else DeviceRef.CPU()


def lowering_scratch() -> dict | None:
    """A dict that lives as long as the MAX graph being built (None outside a build)."""
    return _LOWERING.scratch


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
            results = apply_step(step, args, lambda a, kw, _p, op=step.op: _as_tuple(op.kernel(*a, **kw)))
            if memo is not None:  # the args stay referenced, so their ids cannot be reused by new values
                memo[key] = (results, args)
            producers = _LOWERING.producers
            if producers is not None and step.spmd is None:  # values kept, so their ids stay unique
                for index, value in enumerate(results):
                    producers[id(value)] = (step, index, args, value)
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
        super().__init__()
        self._sessions: dict[Device, Any] = {}
        self._lock = threading.RLock()  # session creation and model initialization
        self._compile_lock = threading.Lock()  # MAX compiles one model at a time anyway
        self._graph_counter = 0
        self._worker_checks = _WORKER_CHECKS  # executions left that look for MAX's workers

    @property
    def session(self) -> Any:
        return self.session_for(CPU_DEVICE)

    def session_for(self, device: Device) -> Any:
        """The inference session that compiles and runs models on `device` (one per device)."""
        session = self._sessions.get(device)
        if session is None:
            with self._lock:
                session = self._sessions.get(device)
                if session is None:
                    session = self._sessions[device] = InferenceSession(devices=[driver_device(device)])
        return session

    def build_module(self, program: Program, resolve: Any = None) -> Any:
        """`resolve` maps symbolic sizes in input shapes and op kwargs to MAX dims (compile's
        dynamic dims); without it everything is static."""
        device = device_ref(program.device)
        module = Module()
        pieces = program.input_piece_types or [None] * len(program.input_types)
        types = [
            TensorType(dtype, resolve(shape) if resolve else shape, device=device)
            for entry, piece_types in zip(program.input_types, pieces, strict=True)
            for dtype, shape in (piece_types or [entry])
        ]
        self._graph_counter += 1
        extensions = custom_extensions(program)
        with Graph(
            f"nabla_{self._graph_counter}", input_types=types, module=module, custom_extensions=extensions
        ) as graph:
            if resolve is not None:
                program = replace(program, steps=[replace(st, kwargs=resolve(st.kwargs)) for st in program.steps])
            _LOWERING.memo, _LOWERING.producers, _LOWERING.scratch, _LOWERING.device = {}, {}, {}, device
            try:
                outputs = lower_steps(program, _group_inputs(program, [v.tensor for v in graph.inputs]))
            finally:
                _LOWERING.memo = _LOWERING.producers = _LOWERING.scratch = _LOWERING.device = None
            graph.output(*[v for out in compress_outputs(program, outputs) for v in _pieces(out)])
        return module

    def prepare(self, program: Program, resolve: Any = None, name: str | None = None, hot: bool = False) -> Any:
        model = self.load_stored(program, name)
        if model is not None:
            self.stats.loads += 1
            return model
        module = self.build_module(program, resolve)
        compiled = self.compile_module(module, custom_extensions(program), program.device)
        self.stats.compiles += 1
        STORE.save(compiled, name)
        return self.load(compiled, program)

    def compile_module(self, module: Any, extensions: list, device: Device = CPU_DEVICE) -> Any:
        """Compile a built module (MAX compiles one model at a time per process)."""
        session = self.session_for(device)
        with self._compile_lock:
            return session.compile(module, custom_extensions=extensions or None)

    def load(self, compiled: Any, program: Program) -> Any:
        """Initialize a compiled artifact as the runnable model for `program`."""
        with self._lock:
            models = self.session_for(program.device).init_all(compiled)
        model = next(iter(models.values()))
        on = program.device if program.device.is_accelerator else None
        if not program.output_layouts and not program.input_layouts:
            return model if on is None else PlacedModel(model, on)
        return _ShardedModel(model, [None if p is None else len(p) for p in program.output_layouts], on)

    def load_stored(self, program: Program, name: str | None) -> Any:
        """The model from the on-disk store, or None (absent, or unreadable: then removed)."""
        path = STORE.find(name)
        if path is None:
            return None
        try:
            return self.load(engine.read(path), program)
        except Exception:  # a damaged or foreign file: compile instead, and drop it
            path.unlink(missing_ok=True)
            return None

    def run(self, model: Any, inputs: list) -> list:
        if self._worker_checks:  # until MAX's workers, named a moment after they start, are all found
            self._worker_checks = 0 if lower_worker_priority() else self._worker_checks - 1
        if isinstance(model, _ShardedModel):
            on = model.device
            flat = [storage_to_buffer(p) if on is None else to_device(p, on) for d in inputs for p in _pieces(d)]
            return model.regroup(_execute(model.model, flat))
        if type(model) is PlacedModel:  # (an accelerator's Buffer is this model's: one device a program)
            on = model.device
            return model.run([d if type(d) is Buffer and not d.is_host else to_device(d, on) for d in inputs], _execute)
        return _execute(model, [d if type(d) is Buffer else storage_to_buffer(d) for d in inputs])


def _execute(model: Any, buffers: list) -> list:
    """`Model.execute` without its Python loop that checks and converts each argument (ours are
    contiguous Buffers already): 45 us of CPU a W1 step, about 2% of its step time. The method
    is private to MAX (pinned to 26.7 in pyproject.toml); without it, the public call."""
    execute = getattr(model, "_execute_device_tensors", None)
    return execute(buffers) if execute is not None else model.execute(*buffers)


def _pieces(value: Any) -> tuple:
    return value if type(value) is tuple else (value,)


def _group_inputs(program: Program, values: list) -> list:
    """Flat graph inputs (one per piece of a sharded input) back to one value per input."""
    if not program.input_layouts:
        return values
    grouped, i = [], 0
    for layout in program.input_layouts:
        n = 1 if layout is None else max(layout) + 1
        grouped.append(values[i] if layout is None else tuple(values[i : i + n]))
        i += n
    return expand_inputs(program, grouped)


class _ShardedModel:
    """A compiled model whose flat outputs regroup into one tuple of pieces per sharded output;
    `device`: the accelerator it runs on (every piece lives there), or None."""

    def __init__(self, model: Any, out_counts: list, device: Device | None = None) -> None:
        self.model, self.out_counts, self.device = model, out_counts, device

    def regroup(self, flat: list) -> list:
        out, i = [], 0
        for n in self.out_counts:
            out.append(flat[i] if n is None else tuple(flat[i : i + n]))
            i += 1 if n is None else n
        return out


_EXECUTORS: dict[str, Executor] = {"numpy": NumpyExecutor(), "max": MaxExecutor()}


def register_executor(executor: Executor) -> None:
    _EXECUTORS[executor.name] = executor


def get_executor_impl(name: str) -> Executor:
    return _EXECUTORS[name]


def all_executors() -> list[Executor]:
    return list(_EXECUTORS.values())
