"""Dynamic dims for `nabla.compile`: one model for every size of a declared dim.

Shapes in a trace are concrete ints, and the function may compute more of them in Python
(`x.reshape(x.shape[0], -1)`). So the function is traced at the real size and again with each
dynamic dim one and two larger; every int that changes between the traces must change by the
same step (it is affine in the size: `c + a * n`) and becomes a symbolic expression. MAX gets
symbolic input dims and `Dim` expressions in the op arguments; the NumPy executor substitutes
the sizes on each call. Anything that cannot be expressed (a float such as 1/n, a different op
sequence) raises SymbolicProgramError and the caller specializes per size instead, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from max.graph import Dim

from ..core.graph.artifacts import digest
from ..core.graph.opnode import freeze
from ..core.graph.program import Program

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


def _merge(base: Any, probes: dict[str, list[Any]], sizes: dict[str, int], where: str) -> Any:
    """Walk kwargs/shapes of the base trace and the probes together; varying ints -> SymInt."""
    if isinstance(base, tuple | list):
        for vs in probes.values():
            for v in vs:
                if not isinstance(v, tuple | list) or len(v) != len(base):
                    raise SymbolicProgramError(f"{where}: {base!r} -> {v!r} changes structure with the size")
        items = [
            _merge(b, {n: [v[i] for v in vs] for n, vs in probes.items()}, sizes, where) for i, b in enumerate(base)
        ]
        return type(base)(items) if isinstance(base, tuple) else items
    if isinstance(base, dict):
        items = {}
        for k, b in base.items():
            items[k] = _merge(b, {n: [v.get(k) for v in vs] for n, vs in probes.items()}, sizes, f"{where} {k}")
        return items
    coeffs = []
    for name, vs in probes.items():
        if all(v == base and type(v) is type(base) for v in vs):
            continue
        if not _integral(base) or not all(_integral(v) and type(v) is type(base) for v in vs):
            raise SymbolicProgramError(f"{where}: value {base!r} -> {vs[0]!r} depends on the size of {name!r}")
        steps = [v - base for v in vs]
        a = steps[0]
        if any(s != a * k for s, k in zip(steps, PROBE_STEPS, strict=True)):
            raise SymbolicProgramError(f"{where}: value {base!r} is not an affine function of the size of {name!r}")
        coeffs.append((name, int(a)))
    if not coeffs:
        return base
    const = int(base) - sum(a * sizes[n] for n, a in coeffs)
    return SymInt(const, tuple(coeffs), isinstance(base, float))


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
        return value

    return resolve


@dataclass
class DynamicPlan:
    program: Program  # kwargs, input shapes and output avals may hold SymInts
    sizes: dict[str, int]  # sizes at the first trace
    locate: dict[str, tuple[int, int]]  # name -> (program input index, physical dim) to read it from
    compiles: int = 0
    _specialized: dict | None = None

    def prepare(self, executor: Any) -> Any:
        if not executor.makes_max_models:
            self._specialized = {}
            return self
        structure = _structure(self.program)
        key = (executor.name, structure)
        model = _MODELS.get(key)
        if model is not None:  # the same symbolic program, traced again (e.g. a rebound global)
            return model
        resolve = _resolver(SymInt.to_dim)
        name = digest(structure, [st.op for st in self.program.steps])
        if executor.tiered:  # NumPy per size now, the symbolic MAX model once compiled
            self._specialized = {}
            model = executor.prepare(self.program, resolve, name=name, hot=True)
        else:
            try:
                model = executor.prepare(self.program, resolve, name=name)
            except Exception as err:  # a kernel that needs static sizes, or MAX rejects the graph
                msg = f"MAX could not build the symbolic model ({type(err).__name__}: {err})"
                raise SymbolicProgramError(msg) from err
        self.compiles += 1
        _MODELS[key] = model
        return model

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
            resolve = _resolver(lambda s: s.value(sizes))
            steps = [
                replace(st, kwargs=resolve(st.kwargs), out_avals=resolve(st.out_avals)) for st in self.program.steps
            ]
            program = Program(
                steps,
                self.program.input_slots,
                resolve(self.program.input_types),
                self.program.output_slots,
                self.program.num_slots,
            )
            self._specialized[key] = program
        return executor.run_tier0(program, storages) if executor.tiered else executor.run(program, storages)


_MODELS: dict[tuple, Any] = {}  # symbolic programs compiled in this process, by structure


def _structure(program: Program) -> tuple:
    steps = tuple((st.op.name, freeze(st.kwargs), st.args, st.outs) for st in program.steps)
    inputs = tuple((dtype, freeze(shape)) for dtype, shape in program.input_types)
    return steps, inputs, tuple(program.input_slots), tuple(program.output_slots)


def make_symbolic(base: Any, sizes: dict[str, int], probes: list[tuple[str, list]]) -> DynamicPlan:
    """Merge the base trace with, per dynamic dim, the traces at size+1 and size+2."""
    by_name: dict[str, list] = {}
    for name, collected in probes:
        by_name.setdefault(name, []).append(collected)
    for name, cs in by_name.items():
        for c in cs:
            if [n.op.name for n in c.nodes] != [n.op.name for n in base.nodes]:
                raise SymbolicProgramError(f"the sequence of ops changes with the size of {name!r}")
            if c.node_arg_slots != base.node_arg_slots or c.output_slots != base.output_slots:
                raise SymbolicProgramError(f"the data flow between ops changes with the size of {name!r}")
            if len(c.inputs) != len(base.inputs):
                raise SymbolicProgramError(f"the number of inputs changes with the size of {name!r}")
    program = base.to_program()
    steps = []
    for i, step in enumerate(program.steps):
        where = f"op {i} ({step.op.name})"
        kwargs = _merge(
            step.kwargs, {n: [c.nodes[i].adapted_kwargs for c in cs] for n, cs in by_name.items()}, sizes, where
        )
        avals = _merge(
            step.out_avals, {n: [c.nodes[i].out_avals for c in cs] for n, cs in by_name.items()}, sizes, where
        )
        steps.append(replace(step, kwargs=kwargs, out_avals=avals))
    input_types = []
    locate: dict[str, tuple[int, int]] = {}
    for k, (dtype, shape) in enumerate(program.input_types):
        merged = _merge(
            shape, {n: [c.inputs[k].physical_shape for c in cs] for n, cs in by_name.items()}, sizes, f"input {k}"
        )
        for d, s in enumerate(merged):
            if isinstance(s, SymInt) and s.const == 0 and len(s.coeffs) == 1 and s.coeffs[0][1] == 1:
                locate.setdefault(s.coeffs[0][0], (k, d))
        input_types.append((dtype, merged))
    missing = set(sizes) - set(locate)
    if missing:
        raise SymbolicProgramError(f"no input carries the dynamic dims {sorted(missing)}")
    symbolic = Program(steps, program.input_slots, input_types, program.output_slots, program.num_slots)
    return DynamicPlan(symbolic, dict(sizes), locate)
