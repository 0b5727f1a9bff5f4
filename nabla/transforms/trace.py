"""trace(fn)(*args): the op graph `fn` records, as readable text (for debugging and teaching).

    >>> print(nabla.trace(lambda x, w: (x @ w).relu().sum())(x, w))
    trace of <lambda>
      inputs:
        %0: float32[8, 4]   x
        %1: float32[4, 3]   w
      ops:
        %2: float32[8, 3] = matmul(%0, %1)
        %3: float32[8, 3] = relu(%2)
        %4: float32[] = sum(%3, axes=(0, 1), keepdims=False)
      outputs: %4

The function runs exactly as under `nabla.compile` (on placeholders: nothing is computed),
so this is also the program a compiled function would run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.tensor import Tensor
from .compile import CompiledFunction


class TracedGraph:
    """The captured program of one call: `str()` gives the listing; `.ops` the op names."""

    def __init__(self, name: str, collected: Any, labels: dict[int, str]) -> None:
        self.name = name
        self._collected = collected
        self._labels = labels

    @property
    def ops(self) -> list[str]:
        return [node.op.name for node in self._collected.nodes]

    def __str__(self) -> str:
        c = self._collected
        lines = [f"trace of {self.name}", "  inputs:"]
        for impl, slot in zip(c.inputs, c.input_slots, strict=True):
            lines.append(
                f"    %{slot}: {_type(impl.physical_shape, impl.dtype)}   {self._labels.get(id(impl), 'constant')}"
            )
        lines.append("  ops:")
        for node, args, outs in zip(c.nodes, c.node_arg_slots, c.node_out_slots, strict=True):
            results = ", ".join(
                f"%{s}: {_type(shape, dtype)}" for s, (shape, dtype) in zip(outs, node.out_avals, strict=True)
            )
            operands = [f"%{a}" for a in args] + [f"{k}={_short(v)}" for k, v in node.adapted_kwargs.items()]
            lines.append(f"    {results} = {node.op.name}({', '.join(operands)})")
        lines.append("  outputs: " + ", ".join(f"%{s}" for s in c.output_slots))
        return "\n".join(lines)

    __repr__ = __str__


def _type(shape: tuple, dtype: Any) -> str:
    return f"{dtype.name}[{', '.join(str(d) for d in shape)}]"


def _short(value: Any) -> str:
    text = getattr(value, "name", None) if hasattr(value, "name") and not isinstance(value, str) else None
    text = text or repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def trace(fn: Callable | Tensor) -> Any:
    """Return a function that traces `fn` on its arguments and gives back a `TracedGraph`.
    Given a matrix instead of a function, PyTorch's `torch.trace`: the sum of its diagonal.

    Example:
        >>> print(nabla.trace(lambda x: nabla.sin(x) * 2)(nabla.ones(3)))
        >>> nabla.trace(nabla.eye(3)).item()
        3.0
    """
    if isinstance(fn, Tensor):
        return fn.trace()
    if not callable(fn):
        raise TypeError(f"trace: expected a function to trace or a matrix (Tensor), got {type(fn).__name__}")
    compiled = CompiledFunction(fn)

    def traced(*args: Any, **kwargs: Any) -> TracedGraph:
        result = compiled.trace_program(args, kwargs)
        return TracedGraph(getattr(fn, "__qualname__", repr(fn)), *result)

    return traced
