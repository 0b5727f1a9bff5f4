"""call: a traced sub-program recorded as one op.

This is how a compiled function joins a lazy trace that autodiff differentiates: a module
compiled with `Module.compile` records its whole forward as one `call` op instead of hundreds
of ops, so a training step's Python cost no longer grows with the model. The step is still one
MAX graph: the call's kernel lowers the sub-program inline.

    abstract_eval   the sub-program's output avals (the argument avals are checked)
    kernel          the sub-program's steps lowered into the enclosing MAX graph, with
                    common-subexpression elimination across the calls of one graph build
    numpy_kernel    the sub-program run by the NumPy executor
    vjp_rule        another `call`: the sub-program's backward, traced once per set of
                    arguments that require grad. It recomputes the forward; CSE at lowering
                    merges that recomputation with the forward call of the same graph, so the
                    compiled step computes the forward once, as if every op had been recorded
    jvp_rule        none: compiled functions called under jvp or vmap run inline instead
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np

from ..core.autograd.engine import backward_on_trace
from ..core.common import dtypes as _dt
from ..core.graph.artifacts import NotPersistable, stable_text
from ..core.graph.executors import get_executor_impl, lower_steps, program_ops
from ..core.graph.program import Collected, Program, collect
from ..core.graph.symbolic import program_structure
from ..core.graph.tracing import trace_scope
from ..core.tensor.dispatch import register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation
from .creation import full
from .view import identity

__all__: list[str] = []  # internal: used by nabla.compile and Module.compile


class _LocalToken:
    """Names a sub-program whose structure has no stable text form (a custom kernel package):
    models that call it are kept in memory only, never stored on disk."""

    __slots__ = ()


_LOCAL_TOKENS: dict[tuple, _LocalToken] = {}


def _token(key: tuple) -> str | _LocalToken:
    """A sub-program's name in cache keys. A digest of its structure, so the name means the same
    program in every process: the on-disk model store keys models that call sub-programs by it."""
    try:
        return hashlib.sha256(stable_text(key).encode()).hexdigest()[:32]
    except NotPersistable:
        return _LOCAL_TOKENS.setdefault(key, _LocalToken())


class SubProgram:
    """A program traced on placeholders, run as the body of `call` ops.

    Args:
        collected: the trace, collected with `placeholders=True`; its targets are the outputs.
        arg_impls: the impls that the call's arguments stand for, in argument order. Trace
            inputs not among them (constants the trace captured) become extra arguments that
            `call` appends (`consts`).
    """

    def __init__(self, collected: Collected, arg_impls: list[TensorImpl]) -> None:
        position = {id(impl): k for k, impl in enumerate(arg_impls)}
        self.consts: list[TensorImpl] = []
        index = []
        for impl in collected.inputs:
            k = position.get(id(impl))
            if k is None:
                k = len(arg_impls) + len(self.consts)
                self.consts.append(impl)
            index.append(k)
        self.input_index = tuple(index)  # program input j reads call argument input_index[j]
        self.arg_impls = [*arg_impls, *self.consts]
        self.arg_avals = tuple((i.physical_shape, i.dtype) for i in self.arg_impls)
        self.out_avals = [(t.physical_shape, t.dtype) for t in collected.targets]
        self.outputs = list(collected.targets)  # keeps the trace alive: the vjp is traced from it
        self.program = collected.to_program()
        key = (collected.key, self.input_index, self.arg_avals)
        self.token = _token(key)
        self.ops = program_ops(self.program)  # every op it lowers, nested calls' included
        self._vjps: dict[tuple[bool, ...], SubProgram] = {}

    def forget_trace(self) -> None:
        """Drop the traced tensors (kept only to trace a vjp and read layouts): a sub-program
        cut from a live graph would otherwise keep that graph and its buffers alive."""
        self.outputs, self.arg_impls, self.consts = [], [], []

    def structural_key(self) -> tuple:
        return ("call", self.token)

    @property
    def interface(self) -> tuple:
        """How a call's arguments feed the program (symbolic programs merge sub-programs with
        the same interface)."""
        return self.input_index

    def with_program(self, program: Program, token: Any = None) -> SubProgram:
        """A copy that runs `program` (the same one with symbolic sizes: `nabla.core.graph.symbolic`)."""
        other = copy.copy(self)
        other.program, other._vjps = program, {}
        other.token = token if token is not None else _token(("symbolic", program_structure(program), self.input_index))
        return other

    def vjp(self, mask: tuple[bool, ...]) -> SubProgram:
        """The backward program for the arguments flagged in `mask`: it takes the call's
        arguments and one cotangent per float output, and returns one gradient per flagged
        argument."""
        joint = self._vjps.get(mask)
        if joint is None:
            joint = self._vjps[mask] = _trace_vjp(self, mask)
        return joint

    def __repr__(self) -> str:
        name = self.token[:8] if isinstance(self.token, str) else "local"
        return f"SubProgram({name}, {len(self.program.steps)} ops)"


def _trace_vjp(sub: SubProgram, mask: tuple[bool, ...]) -> SubProgram:
    float_outs = [o for o in sub.outputs if _dt.is_float(o.dtype)]
    wrt = [impl for impl, m in zip(sub.arg_impls, mask, strict=True) if m]
    with trace_scope():
        # Cotangent placeholders require grad so that this backward is itself differentiable.
        cots = [TensorImpl(o.physical_shape, o.dtype, device=o.device, requires_grad=True) for o in float_outs]
        found = backward_on_trace(float_outs, [Tensor(c) for c in cots], wrt, retain_graph=True, create_graph=True)
        grads = []
        for w in wrt:
            g = found[id(w)][1] if id(w) in found else full(w.physical_shape, 0, w.dtype)
            impl = g._impl
            grads.append(identity(g) if impl.is_realized or impl.output_refs is None else g)
        collected = collect([g._impl for g in grads], placeholders=True)
    return SubProgram(collected, [*sub.arg_impls, *cots])


class CallOp(Operation):
    """On sharded arguments the sub-program (traced on placeholders with the same layouts)
    runs as a whole on every device's values: its own steps carry their SPMD plans."""

    name = "call"
    always_tuple = True

    def inner_ops(self, kwargs: dict) -> list:
        return kwargs["sub"].ops

    def own_layouts(self, impls: list[TensorImpl], kwargs: dict) -> tuple[list, list]:
        sub = kwargs["sub"]
        return [a.sharding for a in sub.arg_impls], [o.sharding for o in sub.outputs]

    def abstract_eval(self, *avals: AVal, sub: SubProgram) -> list[AVal]:
        if tuple(avals) != sub.arg_avals:
            raise TypeError(f"internal error: call {sub} got arguments {avals}, traced with {sub.arg_avals}")
        return list(sub.out_avals)

    def kernel(self, *values: Any, sub: SubProgram) -> list:
        return lower_steps(sub.program, [values[k] for k in sub.input_index], cse=True)

    def numpy_kernel(self, *arrays: np.ndarray, sub: SubProgram) -> tuple:
        return tuple(get_executor_impl("numpy").run_values(sub.program, [arrays[k] for k in sub.input_index]))

    def vjp_rule(self, primals: list[Tensor], cotangents: list[Tensor], outputs: list, sub: SubProgram) -> list:
        mask = tuple(p._impl.requires_grad for p in primals)
        if not any(mask):
            return [None] * len(primals)
        float_cots = [c for c, (_, dt) in zip(cotangents, sub.out_avals, strict=True) if _dt.is_float(dt)]
        grads = iter(call(sub.vjp(mask), [*primals, *float_cots]))
        return [next(grads) if m else None for m in mask]

    def jvp_rule(self, primals: list[Tensor], tangents: list[Tensor], outputs: list, sub: SubProgram) -> list:
        raise NotImplementedError("internal error: a call op was recorded with tangents (it should run inline)")


_call = CallOp()


@register("backward_program")
def backward_program(grads: list[TensorImpl], boundary: set[int]) -> SubProgram:
    """A recorded backward as one sub-program: the ops that made `grads`, back to the tensors
    in `boundary` (ids: the forward tensors and seeds it reads), which become its arguments in
    the order first reached. A later backward of the same structure is then one `call` op."""
    collected = collect(grads, placeholders=True, boundary=boundary)
    return SubProgram(collected, list(collected.inputs))


@register("call")
def call(sub: SubProgram, args: list[Tensor]) -> tuple[Tensor, ...]:
    """Record `sub` as one op on `args` (plus the constants the trace captured)."""
    return _call(*args, *[Tensor._operand(c) for c in sub.consts], sub=sub)


@register("call_on_impls")
def call_on_impls(sub: SubProgram, impls: list[TensorImpl]) -> tuple[Tensor, ...]:
    """`call` on the arguments' impls (a replayed backward holds those, ~150 for W3)."""
    return _call.call_on_impls([*impls, *sub.consts], sub=sub)
