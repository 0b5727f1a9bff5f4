"""Lookup tables: `embedding` (rows of a weight matrix by index) and `one_hot`.

`embedding(..., max_norm=...)` renormalizes the rows it reads IN PLACE before the lookup, as
PyTorch's `embedding_renorm_`: the new table is computed under `nb.no_grad()` and swapped into
`weight` with nabla's in-place methods, which install a lazy value (no evaluation of its own, so
a training step stays one graph; a parameter stays a leaf). The looked-up rows carry the new
values and pass their gradient to `weight` unchanged (the renormalization is not
differentiated), spelled with explicit `detach`es so that eager autodiff, `nb.grad` and compiled
modules agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

__all__ = ["embedding", "one_hot"]


def _padding_idx(padding_idx: Any, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int | np.integer):
        raise TypeError(f"embedding: padding_idx must be an int or None, got {padding_idx!r}")
    p = int(padding_idx)
    if not -num_embeddings <= p < num_embeddings:
        raise ValueError(f"embedding: padding_idx={p} must be within num_embeddings={num_embeddings}")
    return p + num_embeddings if p < 0 else p


def _number(value: Any, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"embedding: {arg} must be a number, got {value!r}")
    return float(value)


def _renorm_and_lookup(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """PyTorch's `embedding_renorm_` then the lookup: the rows of `weight` that `flat` reads and
    whose norm_type-norm exceeds max_norm are scaled by max_norm / (norm + 1e-7) in `weight`
    itself (in place, lazily, not differentiated); returns the new rows (n, D), whose gradient
    reaches `weight` unchanged."""
    if flat._impl.batch_dims and not weight._impl.batch_dims:
        raise RuntimeError(
            "embedding: cannot renormalize weight in place (max_norm) inside vmap with batched indices "
            "(each batch element would write a different table); pass max_norm=None under vmap"
        )
    rows = nb.index_select(weight, 0, flat)
    with nb.no_grad():
        plain = nb.detach(rows)
        norms = nb.norm(plain, norm_type, axis=1, keepdims=True)
        over = nb.greater(norms, max_norm)
        scale = nb.where(over, max_norm / (norms + 1e-7), 1.0)
        # One factor per table row: 1 for rows not read; a repeated index writes equal factors.
        factor = nb.scatter(nb.ones((weight.shape[0], 1), dtype=weight.dtype), 0, flat[:, None], scale)
    # The new values with the identity gradient (x - detach(x) is exactly 0), written with
    # explicit detaches so that compiled programs differentiate them the same way.
    if weight.requires_grad and not weight.is_leaf:
        # A table with autodiff history (a `nb.grad` argument, a computed table) keeps it, as
        # PyTorch's no_grad update does.
        plain_table = nb.detach(weight)
        weight.copy_(nb.where(nb.not_equal(factor, 1.0), plain_table * factor + (weight - plain_table), weight))
        return nb.index_select(weight, 0, flat)
    with nb.no_grad():
        weight.mul_(factor)  # a parameter stays a leaf that requires grad
    # `rows` read the table before the update, so their gradient lands on `weight` (its `.grad`).
    return nb.where(over, plain * scale + (rows - plain), rows)


def _scaled_by_frequency(rows: Tensor, flat: Tensor, num_embeddings: int) -> Tensor:
    """The same rows, whose gradient is divided by how often their index occurs in the batch
    (PyTorch's scale_grad_by_freq): r' = detach(r) + (r - detach(r)) / count has r's value
    exactly and the gradient 1/count."""
    ones = nb.ones((flat.shape[0],), dtype=rows.dtype)
    counts = nb.scatter_add(nb.zeros((num_embeddings,), dtype=rows.dtype), 0, flat, ones)
    scale = nb.unsqueeze(1.0 / nb.index_select(counts, 0, flat), -1)
    plain = nb.detach(rows)
    return plain + (rows - plain) * scale


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` at the integer indices `input`: the result has shape (*input.shape, D).

    Args:
        input: integer tensor of indices in [0, num_embeddings).
        weight: (num_embeddings, D).
        padding_idx: the row at this index gets no gradient (it still appears in the output,
            as in PyTorch). Negative values count from the end.
        max_norm: if given, each row of `weight` that `input` reads and whose `norm_type`-norm
            exceeds it is first rescaled IN PLACE to norm max_norm (scale max_norm / (norm + 1e-7),
            not differentiated), as PyTorch; `weight` then holds the new table.
        norm_type: the p of the max_norm norm (2, 1, inf, ...).
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in
            `input` (the values are unchanged).
        sparse: accepted; the gradient is always a dense tensor with the same values.

    Example:
        >>> F.embedding(nb.tensor([[0, 2]]), nb.ones(5, 3)).shape
        (1, 2, 3)
    """
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding: input and weight must be Tensors")
    if not _dt.is_integer(input.dtype):
        raise TypeError(f"embedding: input must be an integer tensor of indices, got dtype {input.dtype.name}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    pad = _padding_idx(padding_idx, weight.shape[0])
    if max_norm is None and not scale_grad_by_freq and input.sharding is not None:
        # indices on a mesh: `take` keeps their layout (flattening would merge split dims and
        # gather); unsharded, MAX runs the flat lookup faster (1.3 vs 2.0 ms for W3's, fwd + bwd)
        out = nb.take(weight, input, 0)
    else:
        flat = nb.reshape(input, (input.numel(),))
        if max_norm is None:
            rows = nb.index_select(weight, 0, flat)
        else:
            rows = _renorm_and_lookup(weight, flat, _number(max_norm, "max_norm"), _number(norm_type, "norm_type"))
        if scale_grad_by_freq:
            rows = _scaled_by_frequency(rows, flat, weight.shape[0])
        out = nb.reshape(rows, (*input.shape, weight.shape[1]))
    if pad is None:
        return out
    # Same values; positions that read the padding row pass their gradient to a detached copy.
    is_pad = nb.unsqueeze(nb.equal(input, pad), -1)
    return nb.where(is_pad, nb.detach(out), out)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dim of size num_classes (-1: max(tensor) + 1,
    which reads the data).

    Args:
        tensor: integer class values in [0, num_classes).
        num_classes: size of the new last dimension, or -1 to infer it from the data.

    Example:
        >>> F.one_hot(nb.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    return nb.one_hot(tensor, num_classes)
