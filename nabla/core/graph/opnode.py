"""OpNode: the record of one op call, shared by all of its outputs."""

from __future__ import annotations

import weakref
from typing import Any

from max.dtype import DType

_EXACT = frozenset({int, bool, str, type(None), DType})  # values that are their own key


def freeze(value: Any) -> Any:
    """A hashable, exact key for an op's static arguments.

    Floats key by `repr` so that NaN matches itself and -0.0 differs from 0.0.
    """
    kind = type(value)  # exact-type checks first: this runs on every op call
    if kind in _EXACT:
        return value
    if kind is float:
        return ("f", repr(value)) if value == 0.0 or value != value else value
    if kind is tuple or kind is list:
        # shapes and axes (ints), and an optimizer's (name, value) constants
        if kind is tuple and all(type(v) in _EXACT for v in value):
            return value
        return tuple([v if type(v) in _EXACT else freeze(v) for v in value])
    if kind is dict:  # an op's kwargs
        if len(value) == 1:  # (one static argument: axes, a shape, a permutation)
            ((k, v),) = value.items()
            return ((k, v if type(v) in _EXACT else freeze(v)),)
        items = [(k, v if type(v) in _EXACT else freeze(v)) for k, v in value.items()]
        if len(items) > 1:
            items.sort()  # keys are unique: values are never compared
        return tuple(items)
    key = getattr(value, "structural_key", None)
    if key is not None:
        return key()
    if isinstance(value, bool | int | str | DType):
        return value
    if isinstance(value, float):
        return freeze(float(value))
    if isinstance(value, tuple | list):
        return tuple([freeze(v) for v in value])
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # NumPy scalars
        return freeze(value.item())
    raise TypeError(f"static op argument {value!r} of type {type(value).__name__} is not hashable")


class OpNode:
    """One recorded op application.

    Attributes:
        op: the Operation instance.
        args: input TensorImpls, in the order the op's kernels receive them.
        kwargs: the original (logical) keyword arguments the user passed.
        adapted_kwargs: kwargs translated to physical axes; the kernels receive these.
        struct_key: `(op name, frozen adapted kwargs)`: this node's part of a cache key.
        rule_kwargs: kwargs as adapted for unbatched operands (normalized, logical axes); the
            VJP and JVP rules receive these, since they are written with logical ops.
        released: set when `backward()` consumed the node without `retain_graph`.
        spmd: for an op on sharded tensors, its `SpmdStep` (per-device kwargs and shapes).
    """

    __slots__ = (
        "op",
        "args",
        "kwargs",
        "adapted_kwargs",
        "rule_kwargs",
        "struct_key",
        "_refs",
        "out_avals",
        "released",
        "spmd",
        "__weakref__",
    )

    def __init__(self, op: Any, args: tuple, kwargs: dict, adapted_kwargs: dict, struct_key: tuple) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.adapted_kwargs = adapted_kwargs
        self.rule_kwargs = adapted_kwargs
        self.struct_key = struct_key
        self._refs: tuple[weakref.ref, ...] = ()
        self.out_avals: tuple = ()
        self.released = False
        self.spmd = None

    def set_outputs(self, impls: list) -> None:
        """Make `impls` the node's outputs. They own the node; it refers to them weakly, so
        dropped outputs are freed."""
        if len(impls) == 1:  # most ops: no loops
            (impl,) = impls
            impl.output_refs = self
            impl.output_index = 0
            self._refs = (weakref.ref(impl),)
            self.out_avals = ((impl.physical_shape, impl.dtype),)
            return
        for index, impl in enumerate(impls):
            impl.output_refs = self
            impl.output_index = index
        ref = weakref.ref
        self._refs = tuple([ref(impl) for impl in impls])
        self.out_avals = tuple([(impl.physical_shape, impl.dtype) for impl in impls])

    @property
    def num_outputs(self) -> int:
        return len(self._refs)

    def outputs(self) -> list:
        """Live output impls (None for outputs that were garbage collected)."""
        return [r() for r in self._refs]

    def __repr__(self) -> str:
        return f"OpNode({self.op.name}, nargs={len(self.args)}, nout={len(self._refs)})"
