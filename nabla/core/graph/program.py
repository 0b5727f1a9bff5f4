"""Program: a topologically ordered, slot-indexed copy of an evaluation's op DAG.

Both executors consume Programs. Collecting one from the live trace is also how an
evaluation computes its cache key, so a cache hit costs one walk and no compiler object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..common.devices import CPU_DEVICE, Device
from .tracing import ConcretizationError, tracing


class PerDevice(list):
    """A sharded value inside an executor: one entry per device position of the mesh.
    Devices holding the same piece share one object, so replicated work is done once."""


@dataclass(frozen=True)
class SpmdStep:
    """How a step runs on a mesh. A local step calls the op's kernel once per device with
    that device's kwargs (shapes differ on uneven splits); a collective step hands the op's
    kernel every device's values at once (`PerDevice` lists) and gets lists back."""

    num_devices: int
    kwargs: tuple[dict, ...] = ()  # per device position; equal dicts are one object
    local_avals: tuple = ()  # per device position: ((shape, dtype), ...) of the outputs
    collective: bool = False


@dataclass(frozen=True)
class Step:
    op: Any
    kwargs: dict  # adapted (physical) kwargs; kernels receive these
    args: tuple[int, ...]  # slots read
    outs: tuple[int, ...]  # slots written, one per op output
    out_avals: tuple  # ((physical shape, dtype), ...) as inferred at op-call time
    key: tuple = ()  # the op's structural key (name, frozen kwargs)
    spmd: SpmdStep | None = None


@dataclass
class Program:
    steps: list[Step]
    input_slots: list[int]
    input_types: list[tuple[Any, tuple[int, ...]]]  # (dtype, physical shape)
    output_slots: list[int]
    num_slots: int
    # slot -> index of the last step that reads it; lets executors free intermediates early.
    last_use: dict[int, int] = field(default_factory=dict)
    # Sharded inputs and outputs: per input, None or `piece_of` (device position -> piece);
    # per output, None or `piece_positions` (piece -> a device position holding it).
    input_layouts: list = field(default_factory=list)
    output_layouts: list = field(default_factory=list)
    # Per sharded input, the (dtype, local shape) of each piece (MAX graph input types).
    input_piece_types: list = field(default_factory=list)
    device: Device = CPU_DEVICE  # where it runs (see `program_device`)

    def __post_init__(self) -> None:
        for i, step in enumerate(self.steps):
            for s in step.args:
                self.last_use[s] = i
        for s in self.output_slots:
            self.last_use[s] = len(self.steps)


@dataclass
class Collected:
    """The result of walking the trace from a set of targets."""

    key: tuple
    inputs: list  # realized TensorImpls, in program input order
    targets: list  # TensorImpls to store results into, in program output order
    nodes: list  # OpNodes in topological order
    node_out_slots: list[tuple[int, ...]]
    node_arg_slots: list[tuple[int, ...]]
    input_slots: list[int]
    output_slots: list[int]
    num_slots: int
    device: Device = CPU_DEVICE

    def to_program(self) -> Program:
        steps = [
            Step(node.op, node.adapted_kwargs, args, outs, node.out_avals, node.struct_key, node.spmd)
            for node, args, outs in zip(self.nodes, self.node_arg_slots, self.node_out_slots, strict=True)
        ]
        input_types = [(impl.dtype, impl.physical_shape) for impl in self.inputs]
        program = Program(steps, self.input_slots, input_types, self.output_slots, self.num_slots)
        program.device = self.device
        if any(i.sharding is not None for i in self.inputs) or any(t.sharding is not None for t in self.targets):
            program.input_layouts = [None if i.sharding is None else i.sharding.piece_of for i in self.inputs]
            program.input_piece_types = [
                None
                if i.sharding is None
                else [(i.dtype, i.sharding.local_shape(i.physical_shape, p)) for p in i.sharding.piece_positions]
                for i in self.inputs
            ]
            program.output_layouts = [None if t.sharding is None else t.sharding.piece_positions for t in self.targets]
        return program


def collect(targets: list, *, placeholders: bool = False, boundary: set[int] | None = None) -> Collected:
    """Walk unrealized impls back to realized inputs, assigning slots in DFS post-order.

    The key records each node's structural key and the slots it reads, each input's dtype
    and shape, and the target slots: two evaluations share a key exactly when they compute
    the same thing from inputs of the same types. With `placeholders` (nabla.compile), impls
    with neither data nor recipe become inputs too; otherwise they mean a traced value was read.
    `boundary` (ids of impls) cuts the walk: those impls are inputs whatever made them (a
    recorded backward collected as a sub-program of the forward tensors it reads).
    """
    # Every evaluation (each training step's cache lookup) walks its trace here, so the walk
    # is written for speed: one stack level per node being expanded (an iterator over its
    # arguments, resumed after a child is expanded), the targets being level 0; impls and
    # nodes are dict keys themselves (identity hashing, no id() calls); attributes are read directly.
    slot_of: dict[Any, int] = {}  # input impl -> slot
    node_slots: dict[Any, tuple[int, ...]] = {}  # OpNode -> output slots
    key_inputs: list = []
    key_nodes: list = []
    nodes: list = []
    node_out_slots: list[tuple[int, ...]] = []
    node_arg_slots: list[tuple[int, ...]] = []
    cut = boundary if boundary is not None else ()
    next_slot = 0
    device = CPU_DEVICE  # an accelerator an input lives on (a CPU copy of it is computed there)
    # (arguments left, their slots so far, their node, the parent's argument that node makes)
    stack: list = [(iter(targets), [], None, None)]
    while True:
        rest, slots, node, made = stack[-1]
        for arg in rest:
            slot = slot_of.get(arg)
            if slot is not None:
                slots.append(slot)
                continue
            child = arg.output_refs
            if arg.data is None and child is not None and (not cut or id(arg) not in cut):
                outs = node_slots.get(child)
                if outs is None:  # expand it first, then come back for the next argument
                    stack.append((iter(child.args), [], child, arg))
                    break
                slots.append(outs[arg.output_index])
                continue
            if arg.data is None and not placeholders and id(arg) not in cut:
                if tracing():
                    raise ConcretizationError()
                raise RuntimeError(
                    "this tensor has no value: it was made while a compiled function was traced (a "
                    "placeholder a hook, closure or global kept), and has no data outside the trace; "
                    "return it from the function instead"
                )
            slot_of[arg] = next_slot
            slots.append(next_slot)
            if arg.device is not CPU_DEVICE:
                device = arg.device
            sharding = arg.sharding
            key_inputs.append(
                (next_slot, arg.dtype, arg.physical_shape, None if sharding is None else sharding.structural_key())
            )
            next_slot += 1
        else:  # every argument has its slot
            stack.pop()
            arg_slots = tuple(slots)
            if node is None:  # level 0: the targets
                break
            outs = tuple(range(next_slot, next_slot + len(node._refs)))
            next_slot += len(outs)
            node_slots[node] = outs
            nodes.append(node)
            node_out_slots.append(outs)
            node_arg_slots.append(arg_slots)
            key_nodes.append((node.struct_key, arg_slots))
            stack[-1][1].append(outs[made.output_index])  # the parent's argument, done

    key = (tuple(key_nodes), tuple(key_inputs), arg_slots)
    device = program_device(targets, device)
    if device is not CPU_DEVICE:  # the same computation on an accelerator is another model
        key += (device,)
    return Collected(
        key,
        list(slot_of),  # inputs, in slot order
        list(targets),
        nodes,
        node_out_slots,
        node_arg_slots,
        [k[0] for k in key_inputs],
        list(arg_slots),
        next_slot,
        device,
    )


def program_device(targets: list, inputs_device: Device = CPU_DEVICE) -> Device:
    """Where a program runs: on the accelerator of a target on one (an op's output is on an
    accelerator whenever an input is, so every computation there reaches such a target), else
    on the accelerator of an input (a value copied to the CPU), else on the CPU."""
    for t in targets:
        if t.device is not CPU_DEVICE:
            return t.device
    return inputs_device


def describe_key_difference(new: tuple, old: tuple) -> str:
    """Say, in words, the first way a new cache key differs from a cached one."""
    new_nodes, new_inputs, new_outs = new[:3]
    old_nodes, old_inputs, old_outs = old[:3]
    if new[3:] != old[3:]:
        return f"device {old[3] if old[3:] else CPU_DEVICE} -> {new[3] if new[3:] else CPU_DEVICE}"
    for i, (a, b) in enumerate(zip(new_inputs, old_inputs, strict=False)):
        if a[1:] != b[1:]:
            parts = []
            if a[1] != b[1]:
                parts.append(f"dtype {b[1].name} -> {a[1].name}")
            if a[2] != b[2]:
                parts.append(f"shape {b[2]} -> {a[2]}")
            if a[3] != b[3]:
                parts.append(f"sharding {b[3]} -> {a[3]}")
            return f"input {i}: " + ", ".join(parts)
    if len(new_inputs) != len(old_inputs):
        return f"number of inputs {len(old_inputs)} -> {len(new_inputs)}"
    for i, (a, b) in enumerate(zip(new_nodes, old_nodes, strict=False)):
        if a != b:
            (na, ka), (nb, kb) = a[0], b[0]
            if na != nb:
                return f"op {i}: {nb} -> {na}"
            if ka != kb:
                return f"op {i} ({na}): arguments {dict(kb)} -> {dict(ka)}"
            return f"op {i} ({na}): reads different values"
    if len(new_nodes) != len(old_nodes):
        return f"number of ops {len(old_nodes)} -> {len(new_nodes)}"
    if len(new_outs) != len(old_outs):
        return (
            f"number of tensors to compute {len(old_outs)} -> {len(new_outs)} "
            "(an unevaluated tensor that is still referenced joins the evaluation)"
        )
    return "outputs differ"
