"""torch.utils.checkpoint's API (`checkpoint`, `checkpoint_sequential`), so models written with
activation checkpointing (`gradient_checkpointing=True`) run unchanged.

In PyTorch, checkpointing drops a segment's activations in the forward pass and recomputes
them in the backward pass, trading compute for memory. In nabla a training step is one
compiled graph whose buffers MAX plans as a whole, so these functions run the segment as it
is: outputs and gradients are exactly those of the plain call (and of torch's checkpoint);
what they do not do is force a recomputation.

Example:
    >>> from nabla_nn.utils.checkpoint import checkpoint
    >>> h = checkpoint(block, h, use_reentrant=False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Any = None,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """`function(*args, **kwargs)`, with torch's checkpoint arguments accepted (see the
    module doc: the same values and gradients, no forced recomputation)."""
    return function(*args, **kwargs)


def checkpoint_sequential(
    functions: Sequence[Callable[..., Any]] | Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """The modules (or a `Sequential`) applied in order to `input`, as torch's
    `checkpoint_sequential` computes it; `segments` must be at least 1."""
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for layer in layers:
        input = layer(input)
    return input
