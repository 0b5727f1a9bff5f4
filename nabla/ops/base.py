"""Operation: the base class of every op, and the `__call__` pipeline they all share.

An op class keeps its pieces side by side (as JAX's lax.py does):
    abstract_eval   shape/dtype inference on physical shapes; raises on bad input; no MAX
    kernel          the MAX lowering (max.graph ops on TensorValues)
    numpy_kernel    the NumPy reference implementation
    vjp_rule        reverse-mode rule, written with nabla ops (so it is itself differentiable)
    jvp_rule        forward-mode rule
    sharding_rule   factor notation for SPMD propagation ("m k, k n -> m n"), or a
                    `sharding_rule_for` method for rules that depend on kwargs; without
                    either, sharded inputs are gathered and the op runs replicated
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import threading
from collections.abc import Callable
from typing import Any

from max.graph import DeviceRef, Graph, Module, StaticDim, Weight

from ..core.autograd.replay import TAPE
from ..core.common import dtypes as _dt
from ..core.common.config import CONFIG
from ..core.common.context import is_grad_enabled
from ..core.graph.engine import GRAPH
from ..core.graph.opnode import OpNode, freeze
from ..core.graph.tracing import TRACE
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.dispatch import OPS, register
from ..core.tensor.impl import CPU_DEVICE, TensorImpl
from ..core.tensor.tensor import Tensor

AVal = tuple[tuple[int, ...], Any]  # (physical shape, dtype)


_TORCH_NAMES = {"dim": "axis", "keepdim": "keepdims", "input": "x", "other": "y"}


def torch_names(fn: Callable) -> Callable:
    """Let a NumPy-style function (`axis=`, `keepdims=`, `x=`, `y=`) also take PyTorch's keyword
    names (`dim=`, `keepdim=`, `input=`, `other=`), so `nabla.sum(x, dim=1)` and
    `nabla.add(x, other=y)` work as in torch."""
    params = inspect.signature(fn).parameters
    aliases = {a: b for a, b in _TORCH_NAMES.items() if b in params and a not in params}
    if not aliases:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias in aliases.keys() & kwargs.keys():
                name = aliases[alias]
                if name in kwargs:
                    raise TypeError(f"{fn.__name__}: pass either {alias}= or {name}=, not both")
                kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    return wrapper


def with_dtype(x: Any, dtype: Any) -> Any:
    """torch's `dtype=` of reductions and softmaxes: the input cast to it first (None: as is)."""
    return x if dtype is None or not hasattr(x, "_impl") else OPS.cast(x, dtype)


def public(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator for an op family's public functions: PyTorch keyword aliases, and registration
    in the dispatch table so Tensor methods reach the function as `OPS.<name>`."""

    def deco(fn: Callable) -> Callable:
        return register(name or fn.__name__)(torch_names(fn))

    return deco


def shape_of(value: Any) -> tuple:
    """A MAX value's shape for kernels: ints for static dims, `Dim`s for symbolic ones (a
    `nabla.compile` dynamic dim), which MAX's shape arguments accept as they are."""
    return tuple(int(d) if isinstance(d, StaticDim) else d for d in value.shape)


class _JvpState(threading.local):
    """Forward mode bookkeeping. Tangents are keyed by jvp level (nested jvps get higher
    levels); while the rule for level L runs, its ops carry only levels below L, so the
    tangent of a tangent is computed and levels never mix (no perturbation confusion)."""

    def __init__(self) -> None:
        self.limit = float("inf")
        self.zeros: set[int] = set()  # ids of the zero tangents handed to the running rule


_JVP = _JvpState()
_JVP_LEVELS = itertools.count(1)


def new_jvp_level() -> int:
    return next(_JVP_LEVELS)


def is_zero_tangent(t: Tensor) -> bool:
    """In a jvp_rule: whether this tangent stands for an input that has none (a constant)."""
    return id(t) in _JVP.zeros


class Operation:
    """Base class. Subclasses set `name` and implement the pieces listed in the module doc."""

    name: str = "?"
    differentiable = True  # False: outputs never require grad (comparisons, argmax, detach)
    # False: the op's gradient needs no input or output value (add, reshape, sum, pad: torch's
    # nodes without saved tensors), so a second backward through it is allowed, as in torch;
    # backward without retain_graph releases only the nodes that do.
    saves_values = True
    host_constant = False  # True: input-free creation op, cheap to compute on the host
    # True: vjp_rule gets None (not zeros) for an output without a cotangent, so it can skip
    # that output's terms (eigh's vector term is 0/0 at repeated eigenvalues, as torch skips it)
    none_cotangents = False
    always_tuple = False  # multi-output ops that may return a single tensor still return a tuple
    sharding_rule: str | None = None  # "m k, k n -> m n", or "elementwise"; see sharding_rule_for
    partial_ok: str | tuple[int, ...] | None = None  # partial sums pass through: "additive" or positions
    # Products (mul, matmul, conv): c * (a1 + a2) = c*a1 + c*a2 fails for c = inf when some a_i
    # is 0 (nan where the sum is inf), so a partial passes only when the others are finite constants.
    scales_partials = False
    # Whether `sharding_rule_for` describes physical shapes including vmap's batch dims (vmap's
    # own ops, which move dims in and out of the batch prefix); other rules are written for
    # logical shapes and get the batch dims prepended.
    physical_rule = False
    collective = False  # communication ops place their own outputs (nabla/ops/communication.py)
    # Whether a device's kernel depends on where its piece lies in the global tensor (tril's
    # mask): its `local_kwargs` then also gets the pieces' offsets (other ops pay nothing).
    position_dependent = False
    # False: its VJP runs Python that must run each backward (module backward hooks): a
    # backward through it is never replayed (nabla/core/autograd/replay.py).
    replayable = True

    # -- the pipeline -----------------------------------------------------------------------
    def __call__(self, *args: Tensor, **kwargs: Any) -> Any:
        outs, node, args, sharded, has_tangent = self.bind(args, kwargs)
        if sharded or has_tangent:
            tensors = self._finish(outs, node, args, sharded, has_tangent)
        elif len(outs) == 1 and not self.always_tuple:  # most ops
            return Tensor(outs[0])
        else:
            tensors = [Tensor(o) for o in outs]
        return tensors[0] if len(tensors) == 1 and not self.always_tuple else tuple(tensors)

    def write_into(self, facades: list[Tensor], args: tuple, kwargs: dict, *, pending: bool = True) -> None:
        """Apply the op to `args` and point each of `facades` at its output, in order (an
        optimizer's fused update writing its parameters and state; no output tensors are made
        for that). The op must not be differentiable: the facades keep their `requires_grad`.
        `pending=False` when the caller evaluates the facades at once (an optimizer's step):
        they are then not tracked as pending results, which the next evaluation would only find
        computed already (W3's AdamW writes 160 tensors a step)."""
        outs, node, args, sharded, has_tangent = self.bind(args, kwargs)
        if sharded or has_tangent:  # steps 7 and 8 work on output tensors
            for facade, out in zip(facades, self._finish(outs, node, args, sharded, has_tangent), strict=True):
                facade._adopt(out)
            return
        Tensor._install_all(facades, outs, pending)

    def _finish(self, outs: list, node: OpNode, args: tuple, sharded: bool, has_tangent: bool) -> list[Tensor]:
        """Steps 7 and 8 of an op call on sharded or forward-mode operands: the output tensors."""
        tensors = [Tensor(o) for o in outs]
        # 7. auto-reduction of partial sums (sharding layer; a no-op on unsharded tensors)
        if sharded:
            tensors = self.apply_auto_reduction(tensors)
        # 8. forward-mode tangents
        if has_tangent:
            _apply_jvp(self, list(args), tensors, node.rule_kwargs)
        return tensors

    def bind(self, args: tuple, kwargs: dict) -> tuple[list[TensorImpl], OpNode, tuple, bool, bool]:
        """Steps 1-6 of an op call: (output impls, their OpNode, the arguments as the op took
        them, whether any is sharded, whether any has a forward-mode tangent)."""
        # Every op call of a training step runs this, so it is written for speed (one pass
        # over the inputs, no work for features not in use); the numbered steps are the pipeline.
        impls = [a._impl for a in args]
        # 1. metadata: vmap depth, autodiff recording, forward-mode tangents, layouts
        batch_dims, requires_grad, has_tangent, sharded = _scan(impls, self.collective)
        if batch_dims and len(args) > 1:
            args = tuple(OPS.align_batch(list(args)))  # one batch prefix for all operands (vmap)
            impls = [a._impl for a in args]
            batch_dims, requires_grad, has_tangent, sharded = _scan(impls, self.collective)
        state = TRACE.state
        if state is not None:  # nabla.compile: remember who holds captured tensors
            for a in args:
                if a._impl.data is not None or a._impl.seq < state.start_seq:
                    # (not a value an in-place op of the trace put there: `g.data = zeros` is a constant)
                    before = state.mutated.get(id(a))
                    if before is None or before[1] is a._impl:
                        state.facades.setdefault(id(a._impl), a)
        outs, node = self._record(impls, kwargs, batch_dims, requires_grad, sharded, state)
        return outs, node, args, sharded, has_tangent

    def call_on_impls(self, impls: list[TensorImpl], **kwargs: Any) -> Any:
        """`self(*tensors, **kwargs)` for library code that holds the inputs' impls (a replayed
        backward's `call` reads ~150 forward tensors): no operand facade per input. Inputs
        under vmap, sharded or with tangents, and traces, take the facades' path."""
        batch_dims, requires_grad, has_tangent, sharded = _scan(impls, self.collective)
        if batch_dims or has_tangent or sharded or TRACE.state is not None:
            return self(*[Tensor._operand(i) for i in impls], **kwargs)
        outs, _ = self._record(impls, kwargs, 0, requires_grad, False, None)
        if len(outs) == 1 and not self.always_tuple:
            return Tensor(outs[0])
        return tuple([Tensor(o) for o in outs])

    def _record(
        self, impls: list, kwargs: dict, batch_dims: int, requires_grad: bool, sharded: bool, state: Any
    ) -> tuple[list[TensorImpl], OpNode]:
        """Steps 2-6 of an op call on its inputs' impls: the output impls and their OpNode."""
        traced = requires_grad and self.differentiable and is_grad_enabled()
        # 2. adapt logical kwargs to physical ones (axes shift by batch_dims)
        adapted = self.adapt_kwargs(impls, kwargs, batch_dims)
        # 3. (before hashing so that bad input fails first) physical shapes; never builds MAX nodes
        try:
            avals = self.compute_physical_shape(impls, adapted)
        except (ValueError, TypeError) as err:
            raise type(err)(str(err)) from None  # keep the user's frame closest to the error
        # 4. structural key for the model cache
        struct_key = (self.name, freeze(adapted) if adapted else ())
        # 5. SPMD: propagate layouts, reshard inputs by collectives, plan per-device kernels
        spmd = out_specs = None
        # rules are written for logical shapes: inside vmap they get unbatched kwargs
        rule_kwargs = self.adapt_kwargs(impls, kwargs, 0) if batch_dims else adapted
        if sharded:
            impls, out_specs, spmd = OPS.spmd_prepare(self, impls, adapted, avals, rule_kwargs)
            struct_key += (tuple(s.structural_key() if s is not None else None for s in out_specs),)
        # 6. promise tensors, and the OpNode they share (original kwargs kept for replay and autodiff)
        out_bd = self.out_batch_dims(batch_dims, adapted)
        device = self.output_device(impls)
        outs = [
            TensorImpl(shape, dtype, None, device, out_bd, traced and _dt.is_float(dtype)) for shape, dtype in avals
        ]
        node = OpNode(self, tuple(impls), kwargs, adapted, struct_key)
        if spmd is not None:
            node.spmd = spmd
            for out, spec in zip(outs, out_specs, strict=True):
                out.sharding = spec
        if batch_dims:
            node.rule_kwargs = rule_kwargs
        node.set_outputs(outs)
        # A backward being recorded for replay (autograd/replay.py); a trace opened inside it (a
        # `call`'s backward program traced on placeholders) is not part of its tape.
        if TAPE.nodes is not None and state is None:
            TAPE.nodes.append(node)
        if CONFIG.eager_max_graph:  # debugging / shape oracle: build the MAX nodes now
            GRAPH_EAGER.build(node, outs)
        return outs, node

    # -- overridable pieces -------------------------------------------------------------
    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return kwargs

    def out_batch_dims(self, batch_dims: int, kwargs: dict) -> int:
        """How many leading physical dims of the outputs are vmap dims (only vmap's own ops change it)."""
        return batch_dims

    def compute_physical_shape(self, impls: list[TensorImpl], kwargs: dict) -> list[AVal]:
        result = self.abstract_eval(*[(i.physical_shape, i.dtype) for i in impls], **kwargs)
        return result if isinstance(result, list) else [result]

    def abstract_eval(self, *avals: AVal, **kwargs: Any) -> AVal | list[AVal]:
        """One AVal for a single-output op, a list of AVals for a multi-output op."""
        raise NotImplementedError(f"{type(self).__name__} must implement abstract_eval")

    def output_device(self, impls: list[TensorImpl]) -> Any:
        """The accelerator among the inputs' devices, else the CPU: CPU operands join an
        accelerator's computation (copied there when it runs), as JAX moves uncommitted arrays.
        Two different accelerators are an error."""
        device = CPU_DEVICE
        for impl in impls:
            d = impl.device
            if d is not device and d is not CPU_DEVICE:
                if device is not CPU_DEVICE:
                    raise ValueError(
                        f"{self.name}: expected all tensors on one accelerator, got tensors on {device} and {d}"
                    )
                device = d
        return device

    def kernel(self, *values: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self.name}: no MAX lowering")

    def numpy_kernel(self, *arrays: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{self.name}: no NumPy kernel")

    def vjp_rule(self, primals: list[Tensor], cotangents: list[Tensor], outputs: list[Tensor], **kwargs: Any) -> list:
        raise NotImplementedError(f"{self.name} is not differentiable (no vjp_rule)")

    def jvp_rule(self, primals: list[Tensor], tangents: list[Tensor], outputs: list[Tensor], **kwargs: Any) -> list:
        raise NotImplementedError(f"{self.name} has no jvp_rule")

    def apply_auto_reduction(self, outputs: list[Tensor]) -> list[Tensor]:
        """Partial sums are kept (not all-reduced here): the next op that is not linear in
        them reduces them as part of its resharding, so linear chains reduce once."""
        return outputs

    def sharding_rule_for(self, in_shapes: list[tuple], out_shapes: list[tuple], kwargs: dict) -> OpShardingRule:
        """The op's factors for these (physical) shapes and adapted kwargs."""
        if self.sharding_rule == "elementwise":
            return _rules.elementwise(in_shapes, out_shapes, partial_ok=self.partial_ok)
        if self.sharding_rule is not None:
            return OpShardingRule.parse(self.sharding_rule, in_shapes, out_shapes, partial_ok=self.partial_ok)
        return OpShardingRule.replicated([len(s) for s in in_shapes], [len(s) for s in out_shapes])

    def partial_passes(self, position: int, constants: list[float | None]) -> bool:
        """Whether a partial sum at `position` (one of `partial_ok`) passes through unreduced,
        given each operand's value where it is a constant known while tracing (else None)."""
        if not self.scales_partials:
            return True
        return all(c is not None and math.isfinite(c) for k, c in enumerate(constants) if k != position)

    def own_layouts(self, impls: list[TensorImpl], kwargs: dict) -> tuple[list, list] | None:
        """(input specs or None, output specs) for ops that place their outputs themselves and
        whose kernels take every device's values at once (collectives, `call`); None: propagate.
        Inputs are resharded to the input specs first (None: taken as they are)."""
        return None

    def local_kwargs(
        self,
        kwargs: dict,
        in_avals: list[AVal],
        out_shapes: list[tuple],
        offsets: list | None = None,
        sizes: list | None = None,
    ) -> dict:
        """The kwargs one device's kernel gets for its local shapes (ops whose kwargs hold
        global sizes, such as a reshape's target shape, override this).

        Args:
            kwargs: the op's physical (adapted) kwargs.
            in_avals: the device's local (shape, dtype) of each input.
            out_shapes: the device's local shape of each output.
            offsets: only for `position_dependent` ops (others are called without it): per
                input, the global start index of the device's piece in each physical dim, or
                None for an input that is not laid out over the mesh.
            sizes: with `offsets`: per input, its global physical shape (None likewise), so
                a device can tell a piece of a dimension from the whole of it.

        Example:
            >>> def local_kwargs(self, kwargs, in_avals, out_shapes, offsets=None, sizes=None):
            ...     r0, c0 = offsets[0][-2:]  # tril on a piece from row r0, column c0
            ...     return {"diagonal": kwargs["diagonal"] + r0 - c0}
        """
        return kwargs

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _scan(impls: list[TensorImpl], collective: bool) -> tuple[int, bool, bool, bool]:
    """(vmap depth, any requires grad, any tangent below the running jvp level, any sharded)."""
    batch_dims, requires_grad, has_tangent, sharded = 0, False, False, collective
    for i in impls:
        if i.batch_dims > batch_dims:
            batch_dims = i.batch_dims
        if i.requires_grad:
            requires_grad = True
        if i.tangent is not None and min(i.tangent) < _JVP.limit:
            has_tangent = True
        if i.sharding is not None:
            sharded = True
    return batch_dims, requires_grad, has_tangent, sharded


def _apply_jvp(op: Operation, primals: list[Tensor], outputs: list[Tensor], kwargs: dict) -> None:
    limit = _JVP.limit
    # Outer (lower) levels first: a rule for an inner level may use the outputs (exp's y * t),
    # which must already carry their outer tangents for the tangent of the tangent to be right.
    levels = sorted({lv for p in primals if p._impl.tangent for lv in p._impl.tangent if lv < limit})
    for level in levels:
        tangents, zeros = [], set()
        for p in primals:
            t = (p._impl.tangent or {}).get(level)
            if t is None:
                z = OPS.zeros_like(p)
                zeros.add(id(z))
                tangents.append(z)
            else:
                tangents.append(Tensor(t))
        saved = _JVP.zeros
        _JVP.limit, _JVP.zeros = level, zeros
        try:
            out_tangents = op.jvp_rule(primals, tangents, outputs, **kwargs)
        finally:
            _JVP.limit, _JVP.zeros = limit, saved
        for out, tangent in zip(outputs, out_tangents, strict=True):
            if tangent is not None:
                if out._impl.tangent is None:
                    out._impl.tangent = {}
                out._impl.tangent[level] = tangent._impl


class _EagerGraph:
    """NABLA_EAGER_MAX_GRAPH=1: build each op's MAX nodes when the op is called.

    Each graph epoch has one MAX graph. Realized inputs enter it as typed weights; a promise
    from an earlier epoch is rehydrated by replaying its OpNode. With
    NABLA_VERIFY_EAGER_SHAPES=1 every op's inferred shape and dtype are checked against what
    MAX infers. Evaluation still compiles the replayed program, so the model cache behaves
    identically in both modes; the eager graph is a shape oracle and a debugging aid.
    """

    def __init__(self) -> None:
        self.graph: Graph | None = None
        self.epoch = -1
        self._inputs = 0

    def _current(self) -> Graph:
        if self.graph is None or self.epoch != GRAPH.epoch:
            self.epoch = GRAPH.epoch
            self.graph = Graph(f"nabla_eager_{self.epoch}", input_types=[], module=Module())
            self._inputs = 0
        return self.graph

    def value_of(self, impl: TensorImpl) -> Any:
        if impl.graph_values_epoch == self.epoch and impl.graph_values:
            return impl.graph_values[0]
        if impl.is_realized or impl.output_refs is None:
            weight = Weight(f"input{self._inputs}", impl.dtype, impl.physical_shape, DeviceRef.CPU())
            self._inputs += 1
            impl.graph_values = [self._current().add_weight(weight)]
            impl.graph_values_epoch = self.epoch
            return impl.graph_values[0]
        node = impl.output_refs
        self._emit(node, node.outputs())
        return impl.graph_values[0]

    def build(self, node: OpNode, outs: list[TensorImpl]) -> None:
        with self._current():
            self._emit(node, outs)

    def _emit(self, node: OpNode, outs: list) -> None:
        values = [self.value_of(a) for a in node.args]
        result = node.op.kernel(*values, **node.adapted_kwargs)
        results = result if isinstance(result, tuple | list) else (result,)
        for out, value in zip(outs, results, strict=True):
            if out is None:
                continue
            if CONFIG.verify_eager_shapes:
                shape = tuple(int(d) for d in value.shape)
                if shape != out.physical_shape or value.dtype != out.dtype:
                    raise RuntimeError(
                        f"{node.op.name}: shape inference says {out.physical_shape} {out.dtype.name}, "
                        f"MAX built {shape} {value.dtype.name}"
                    )
            out.graph_values = [value]
            out.graph_values_epoch = self.epoch


GRAPH_EAGER = _EagerGraph()
