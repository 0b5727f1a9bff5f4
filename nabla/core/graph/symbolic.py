"""Symbolic programs: one model for every size of a dim.

Shapes in a trace are concrete ints, and user code may compute more of them in Python
(`x.reshape(x.shape[0], -1)`). Two sources of traces at several sizes:
- `nabla.compile(dynamic_dims=...)` traces the function at the real size and again with each
  dynamic dim one and two larger (`make_symbolic`);
- the engine, when an evaluation misses the cache and an earlier one ran the same ops on inputs
  that differ in one dim's size (a partial last batch, another sequence length), merges the two
  traces (`make_symbolic_pair`, PyTorch's automatic dynamic shapes).
Every int that changes between the traces must change by the same step per unit of size (it is
affine in the size: `c + a * n`) and becomes a symbolic expression. MAX gets symbolic input dims
and `Dim` expressions in the op arguments; the NumPy executor substitutes the sizes on each call.
Anything that cannot be expressed (a float such as 1/n, a different op sequence) raises
SymbolicProgramError and the caller specializes per size instead, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from max.graph import Dim

from .artifacts import digest
from .opnode import freeze
from .program import Collected, Program

PROBE_STEPS = (1, 2)


class SymbolicProgramError(ValueError):
    """The traces do not describe one program with symbolic sizes."""


@dataclass(frozen=True)
class SymInt:
    """`const + sum(coeff * size[name])` for the dynamic sizes; `is_float` for a float-valued
    argument such as the element count a mean divides by."""

    const: int
    coeffs: tuple[tuple[str, int], ...]
    is_float: bool = False

    def value(self, sizes: dict[str, int]) -> Any:
        v = self.const + sum(a * sizes[n] for n, a in self.coeffs)
        return float(v) if self.is_float else v

    def to_dim(self) -> Any:
        """A MAX `Dim` expression (kernels turn float-valued ones into tensors)."""
        dim: Any = Dim(self.const)
        for name, a in self.coeffs:
            dim = dim + Dim(name) * a if a != 1 else dim + Dim(name)
        return dim

    def structural_key(self) -> tuple:
        return ("sym", self.const, self.coeffs)


def _merge(
    base: Any, probes: dict[str, list[Any]], sizes: dict[str, int], where: str, offsets: tuple = PROBE_STEPS
) -> Any:
    """Walk kwargs/shapes of the base trace and the probes together; varying ints -> SymInt.
    A probe of a size traces it at `sizes[name] + offsets[k]` (k: the probe's position)."""
    if isinstance(base, tuple | list):
        for vs in probes.values():
            for v in vs:
                if not isinstance(v, tuple | list) or len(v) != len(base):
                    raise SymbolicProgramError(f"{where}: {base!r} -> {v!r} changes structure with the size")
        items = [
            _merge(b, {n: [v[i] for v in vs] for n, vs in probes.items()}, sizes, where, offsets)
            for i, b in enumerate(base)
        ]
        return type(base)(items) if isinstance(base, tuple) else items
    if isinstance(base, dict):
        items = {}
        for k, b in base.items():
            probed = {n: [v.get(k) for v in vs] for n, vs in probes.items()}
            items[k] = _merge(b, probed, sizes, f"{where} {k}", offsets)
        return items
    if _nested(base):
        if not all(_nested(v) and v.interface == base.interface for vs in probes.values() for v in vs):
            raise SymbolicProgramError(f"{where}: its program changes structure with the size")
        nested = {n: [v.program for v in vs] for n, vs in probes.items()}
        return base.with_program(_merge_program(base.program, nested, sizes, where, offsets))
    coeffs = []
    for name, vs in probes.items():
        if all(v == base and type(v) is type(base) for v in vs):
            continue
        if not _integral(base) or not all(_integral(v) and type(v) is type(base) for v in vs):
            raise SymbolicProgramError(f"{where}: value {base!r} -> {vs[0]!r} depends on the size of {name!r}")
        steps = [v - base for v in vs]
        a = steps[0] // offsets[0]
        if any(s != a * k for s, k in zip(steps, offsets, strict=True)):
            raise SymbolicProgramError(f"{where}: value {base!r} is not an affine function of the size of {name!r}")
        coeffs.append((name, int(a)))
    if not coeffs:
        return base
    const = int(base) - sum(a * sizes[n] for n, a in coeffs)
    return SymInt(const, tuple(coeffs), isinstance(base, float))


def _nested(value: Any) -> bool:
    """An op argument holding a program of its own (the `call` op's SubProgram). It exposes
    `program`, `interface` (how the op's arguments feed that program) and `with_program(p)`
    (a copy running `p`), so that merging and resolving reach into it."""
    return isinstance(getattr(value, "program", None), Program) and hasattr(value, "with_program")


def _merge_program(base: Program, probes: dict[str, list[Program]], sizes: dict, where: str, offsets: tuple) -> Program:
    """`_merge` over every step of a program and its input types (the steps' keys follow)."""
    flow = [(st.args, st.outs) for st in base.steps], base.input_slots, base.output_slots
    for name, ps in probes.items():
        for p in ps:
            if [st.op for st in p.steps] != [st.op for st in base.steps]:
                raise SymbolicProgramError(f"{where} the sequence of ops changes with the size of {name!r}".lstrip())
            if ([(st.args, st.outs) for st in p.steps], p.input_slots, p.output_slots) != flow:
                raise SymbolicProgramError(
                    f"{where} the data flow between ops changes with the size of {name!r}".lstrip()
                )
            if len(p.input_types) != len(base.input_types):
                raise SymbolicProgramError(f"{where} the number of inputs changes with the size of {name!r}".lstrip())
    steps = []
    for i, step in enumerate(base.steps):
        at = f"{where} op {i} ({step.op.name})".lstrip()
        kwargs = _merge(
            step.kwargs, {n: [p.steps[i].kwargs for p in ps] for n, ps in probes.items()}, sizes, at, offsets
        )
        avals = _merge(
            step.out_avals, {n: [p.steps[i].out_avals for p in ps] for n, ps in probes.items()}, sizes, at, offsets
        )
        steps.append(replace(step, kwargs=kwargs, out_avals=avals, key=(step.op.name, freeze(kwargs))))
    types = _merge(
        base.input_types,
        {n: [p.input_types for p in ps] for n, ps in probes.items()},
        sizes,
        f"{where} inputs".lstrip(),
        offsets,
    )
    return Program(steps, base.input_slots, types, base.output_slots, base.num_slots, device=base.device)


def _instance(sym: Any, value: Any, sizes: dict[str, int]) -> bool:
    """Whether `value` (from a concrete trace) is `sym` (merged) at `sizes`."""
    if isinstance(sym, SymInt):
        return type(value) is (float if sym.is_float else int) and sym.value(sizes) == value
    if isinstance(sym, tuple | list):
        return (
            type(value) is type(sym) and len(value) == len(sym) and all(map(_instance, sym, value, [sizes] * len(sym)))
        )
    if isinstance(sym, dict):
        return (
            type(value) is dict and value.keys() == sym.keys() and all(_instance(sym[k], value[k], sizes) for k in sym)
        )
    if _nested(sym):
        return (
            _nested(value) and value.interface == sym.interface and program_instance(sym.program, value.program, sizes)
        )
    return type(value) is type(sym) and freeze(value) == freeze(sym)


def program_instance(sym: Program, program: Program, sizes: dict[str, int]) -> bool:
    """Whether the concrete `program` is the symbolic `sym` at `sizes`, step by step."""
    if len(sym.steps) != len(program.steps) or (sym.input_slots, sym.output_slots) != (
        program.input_slots,
        program.output_slots,
    ):
        return False
    for a, b in zip(sym.steps, program.steps, strict=True):
        if a.op is not b.op or a.args != b.args or a.outs != b.outs or a.spmd is not None or b.spmd is not None:
            return False
        if not (_instance(a.kwargs, b.kwargs, sizes) and _instance(a.out_avals, b.out_avals, sizes)):
            return False
    return _instance(sym.input_types, program.input_types, sizes)


def _integral(v: Any) -> bool:
    """Ints, and floats holding whole numbers (a mean's element count)."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def _resolver(fn: Any) -> Any:
    def resolve(value: Any) -> Any:
        if isinstance(value, SymInt):
            return fn(value)
        if isinstance(value, tuple):
            return tuple(resolve(v) for v in value)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if _nested(value):
            return value.with_program(resolve_program(value.program, resolve), value.token)
        return value

    return resolve


def resolve_program(program: Program, resolve: Any) -> Program:
    """`program` with `resolve` (see `_resolver`) applied to its steps' kwargs and output
    shapes and to its input types."""
    steps = [replace(st, kwargs=resolve(st.kwargs), out_avals=resolve(st.out_avals)) for st in program.steps]
    types = resolve(program.input_types)
    return Program(steps, program.input_slots, types, program.output_slots, program.num_slots, device=program.device)


@dataclass
class DynamicPlan:
    program: Program  # kwargs, input shapes and output avals may hold SymInts
    sizes: dict[str, int]  # sizes at the first trace
    locate: dict[str, tuple[int, int]]  # name -> (program input index, physical dim) to read it from
    compiles: int = 0
    _specialized: dict | None = None

    def prepare(self, executor: Any, hot: bool = True) -> Any:
        """The symbolic model (the auto executor's TieredModel). `hot`: compile at once; else
        when the model has run as often as the auto executor waits for."""
        if not executor.makes_max_models:
            self._specialized = {}
            return self
        structure = program_structure(self.program)
        key = (executor.name, structure)
        model = _MODELS.get(key)
        if model is not None:  # the same symbolic program, traced again (e.g. a rebound global)
            return model
        resolve = _resolver(SymInt.to_dim)
        name = digest(structure, [st.op for st in self.program.steps])
        if executor.tiered:  # NumPy per size now, the symbolic MAX model once compiled
            self._specialized = {}
            model = executor.prepare(self.program, resolve, name=name, hot=hot)
        else:
            try:
                model = executor.prepare(self.program, resolve, name=name)
            except Exception as err:  # a kernel that needs static sizes, or MAX rejects the graph
                msg = f"MAX could not build the symbolic model ({type(err).__name__}: {err})"
                raise SymbolicProgramError(msg) from err
        self.compiles += 1
        _MODELS[key] = model
        return model

    def matches(self, program: Program) -> bool:
        """Whether the concrete `program` is this symbolic one at the size its inputs carry
        (one dynamic dim, as `make_symbolic_pair` makes)."""
        ((name, (k, d)),) = self.locate.items()
        if len(program.input_types) != len(self.program.input_types) or len(program.input_types[k][1]) <= d:
            return False
        return program_instance(self.program, program, {name: program.input_types[k][1][d]})

    def run(self, executor: Any, prepared: Any, storages: list, values: list, sources: list) -> list:
        if executor.tiered:
            model = executor.model_for(prepared)
            if model is not None:
                return executor.run_compiled(prepared, model, storages)
        elif executor.compiles:
            return executor.run(prepared, storages)
        sizes = {n: int(storages[i].shape[d]) for n, (i, d) in self.locate.items()}
        key = tuple(sorted(sizes.items()))
        program = self._specialized.get(key)
        if program is None:
            program = self._specialized[key] = resolve_program(self.program, _resolver(lambda s: s.value(sizes)))
        return executor.run_tier0(program, storages) if executor.tiered else executor.run(program, storages)


_MODELS: dict[tuple, Any] = {}  # symbolic programs compiled in this process, by structure


def program_structure(program: Program) -> tuple:
    steps = tuple((st.op.name, freeze(st.kwargs), st.args, st.outs) for st in program.steps)
    inputs = tuple((dtype, freeze(shape)) for dtype, shape in program.input_types)
    return steps, inputs, tuple(program.input_slots), tuple(program.output_slots)


def make_symbolic(base: Any, sizes: dict[str, int], probes: list[tuple[str, list]]) -> DynamicPlan:
    """Merge the base trace with, per dynamic dim, the traces at size+1 and size+2."""
    programs: dict[str, list[Program]] = {}
    for name, collected in probes:
        programs.setdefault(name, []).append(collected.to_program())
    symbolic = _merge_program(base.to_program(), programs, sizes, "", PROBE_STEPS)
    locate: dict[str, tuple[int, int]] = {}
    for k, (_, shape) in enumerate(symbolic.input_types):
        for d, s in enumerate(shape):
            if isinstance(s, SymInt) and s.const == 0 and len(s.coeffs) == 1 and s.coeffs[0][1] == 1:
                locate.setdefault(s.coeffs[0][0], (k, d))
    missing = set(sizes) - set(locate)
    if missing:
        raise SymbolicProgramError(f"no input carries the dynamic dims {sorted(missing)}")
    return DynamicPlan(symbolic, dict(sizes), locate)


def family_key(collected: Collected) -> tuple:
    """What two traces of one program at different sizes share: the ops, the data flow and
    the inputs' dtypes and ranks (`make_symbolic_pair` then checks everything else)."""
    return (
        tuple(n.op.name for n in collected.nodes),
        tuple(collected.node_arg_slots),
        tuple(collected.output_slots),
        tuple((i.dtype, len(i.physical_shape)) for i in collected.inputs),
        collected.device,
    )


def make_symbolic_pair(first: Program, second: Program, name: str = "n") -> DynamicPlan:
    """Merge two traces of one program whose inputs differ in the size of one dim (every
    input dim that differs goes from the same n1 to the same n2): each int that differs must be
    `c + a * n` with an integer a, fitted on the two sizes. A third size runs on the result
    only if its own trace is the instance (`DynamicPlan.matches`)."""
    if any(st.spmd is not None for st in (*first.steps, *second.steps)) or first.input_layouts:
        raise SymbolicProgramError("sharded programs are specialized per size")
    if len(first.input_types) != len(second.input_types):
        raise SymbolicProgramError(f"the number of inputs changes with the size of {name!r}")
    changed = {
        (a, b)
        for (_, s1), (_, s2) in zip(first.input_types, second.input_types, strict=True)
        for a, b in zip(s1, s2, strict=True)
        if a != b
    }
    if len(changed) != 1:
        what = ", ".join(f"{a} -> {b}" for a, b in sorted(changed)) or "none"
        raise SymbolicProgramError(f"input dims must change from one size to one other size, got {what}")
    ((n1, n2),) = changed
    symbolic = _merge_program(first, {name: [second]}, {name: n1}, "", (n2 - n1,))
    k, d = next(
        (k, d) for k, (_, s) in enumerate(symbolic.input_types) for d, v in enumerate(s) if isinstance(v, SymInt)
    )
    return DynamicPlan(symbolic, {name: n1}, {name: (k, d)})


def run_prepared(executor: Any, prepared: Any, inputs: list) -> list:
    """Run a model from the engine's cache: a `SizedProgram` runs its symbolic model (or its
    fallback), anything else goes to the executor."""
    if type(prepared) is SizedProgram:
        return prepared.run(executor, inputs)
    return executor.run(prepared, inputs)


class SizedProgram:
    """A symbolic model run at one size: what the engine caches for an evaluation that a
    symbolic model serves. `program` is the concrete trace (the auto executor's tier 0 runs it
    while the symbolic model compiles)."""

    __slots__ = ("prepared", "program", "name", "fallback")

    def __init__(self, prepared: Any, program: Program, name: str) -> None:
        self.prepared, self.program, self.name = prepared, program, name
        self.fallback = None  # this size's own model, if MAX could not compile the symbolic one

    @property
    def state(self) -> str:  # `nabla.cached_models()`: the symbolic model's
        return getattr(self.fallback or self.prepared, "state", "ready")

    @property
    def runs(self) -> int:
        return getattr(self.fallback or self.prepared, "runs", 0)

    def run(self, executor: Any, inputs: list) -> list:
        if executor.tiered:
            if self.prepared.failed:  # the background compile failed: specialize this size
                if self.fallback is None:
                    self.fallback = executor.prepare(self.program, name=self.name)
                return executor.run(self.fallback, inputs)
            model = executor.model_for(self.prepared)
            if model is not None:
                return executor.run_compiled(self.prepared, model, inputs)
            return executor.run_tier0(self.program, inputs)
        return executor.run(self.prepared, inputs)
