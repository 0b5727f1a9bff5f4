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
from nabla.ops.creation import known_values

from ._checks import first_outside

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _check_indices(input: Tensor, n: int, op: str) -> None:
    """IndexError for indices outside [0, n) when their values are known (a realized batch):
    after flattening they would reach the lookup unchecked, and MAX does not check them."""
    values = None if input._impl.sharding is not None else known_values(input)
    bad = None if values is None else first_outside(values, n)
    if bad is not None:
        raise IndexError(f"{op}: index {bad} is out of range for a table of {n} rows (num_embeddings)")


def _padding_idx(padding_idx: Any, num_embeddings: int, op: str = "embedding") -> int | None:
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int | np.integer):
        raise TypeError(f"{op}: padding_idx must be an int or None, got {padding_idx!r}")
    p = int(padding_idx)
    if not -num_embeddings <= p < num_embeddings:
        raise ValueError(f"{op}: padding_idx={p} must be within num_embeddings={num_embeddings}")
    return p + num_embeddings if p < 0 else p


def _number(value: Any, arg: str, op: str = "embedding") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: {arg} must be a number, got {value!r}")
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
    _check_indices(input, weight.shape[0], "embedding")
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
    is_pad = nb.unsqueeze(nb.eq(input, pad), -1)
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


# -- embedding_bag ----------------------------------------------------------------------------------
_BAG_MODES = ("sum", "mean", "max")


def _bag_offsets(offsets: Any, n: int, include_last_offset: bool) -> tuple[Tensor, int]:
    """The offsets as an int64 tensor and the number of bags; known offsets are checked as
    PyTorch checks them (offsets[0] == 0, non-decreasing, offsets[-1] <= len(input))."""
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor when input is 1D, but got None")
    t = offsets if isinstance(offsets, Tensor) else nb.tensor(np.asarray(offsets))
    if not _dt.is_integer(t.dtype):
        raise TypeError(f"embedding_bag: offsets must be an integer tensor, got dtype {t.dtype.name}")
    if t.ndim != 1:
        raise ValueError(f"embedding_bag: offsets has to be a 1D Tensor, got shape {t.shape}")
    bags = t.shape[0] - 1 if include_last_offset else t.shape[0]
    if bags < 0:
        raise ValueError("embedding_bag: offsets must hold at least one entry with include_last_offset=True")
    known = known_values(t)
    if known is not None and known.size:
        if known[0] != 0:
            raise ValueError(f"embedding_bag: offsets[0] has to be 0 (the first bag starts at 0), got {known[0]}")
        if known[-1] > n:
            raise ValueError(f"embedding_bag: offsets[-1] can not be greater than input's length {n}, got {known[-1]}")
        if np.any(np.diff(known) < 0):
            raise ValueError(f"embedding_bag: offsets must be non-decreasing, got {known.tolist()}")
    return nb.cast(t, nb.int64), bags


def _bag_positions(offsets: Tensor, bags: int, n: int, include_last_offset: bool) -> tuple[Tensor, Tensor]:
    """(pos, inside), both (bags, L): bag b's k-th entry is input[pos[b, k]] where inside[b, k].

    Known offsets give L = the longest bag, computed on the host; offsets still being computed
    give L = len(input) (every bag could be that long), so nothing is read back."""
    known = known_values(offsets)
    if known is not None:
        starts = known[:bags]
        ends = known[1 : bags + 1] if include_last_offset else np.append(known[1:], n)
        lengths = np.maximum(ends - starts, 0)
        width = max(int(lengths.max(initial=0)), 1)
        k = np.arange(width)
        inside = k[None, :] < lengths[:, None]
        pos = np.where(inside, starts[:, None] + k[None, :], 0)
        return nb.tensor(pos.astype(np.int64)), nb.tensor(inside)
    starts = offsets[:bags]
    ends = offsets[1 : bags + 1] if include_last_offset else nb.cat([offsets[1:], nb.full((1,), n, nb.int64)])
    pos = nb.unsqueeze(starts, 1) + nb.unsqueeze(nb.arange(n, dtype=nb.int64), 0)
    inside = nb.less(pos, nb.unsqueeze(ends, 1))
    return nb.minimum(pos, n - 1), inside


def _lookup(weight: Tensor, flat: Tensor, max_norm: Any, norm_type: Any, by_freq: bool, op: str) -> Tensor:
    """The rows of `weight` at `flat`, renormalized in place first (max_norm) and with the
    gradient scaled by each index's frequency in `flat` (scale_grad_by_freq), as `embedding`."""
    if max_norm is None:
        rows = nb.index_select(weight, 0, flat)
    else:
        rows = _renorm_and_lookup(weight, flat, _number(max_norm, "max_norm", op), _number(norm_type, "norm_type", op))
    return _scaled_by_frequency(rows, flat, weight.shape[0]) if by_freq else rows


def _reduce_bags(rows: Tensor, valid: Tensor, weights: Tensor | None, mode: str) -> Tensor:
    """(B, L, D) rows of which `valid` (B, L) are in their bag, reduced over L; empty bags give 0."""
    keep = nb.unsqueeze(valid, -1)
    if mode == "max":  # the first maximal row per dimension, so a tie's gradient goes to it alone, as torch's
        first = nb.argmax(nb.where(keep, rows, float("-inf")), axis=1, keepdims=True)
        top = nb.squeeze(nb.take_along_axis(rows, first, 1), 1)
        return nb.where(nb.any(keep, axis=1), top, 0.0)
    if weights is not None:
        rows = rows * nb.unsqueeze(weights, -1)
    total = nb.sum(nb.where(keep, rows, 0.0), axis=1)
    if mode == "sum":
        return total
    count = nb.sum(nb.cast(valid, rows.dtype), axis=1, keepdims=True)
    return total / nb.maximum(count, 1.0)


def _check_bag_args(input: Any, weight: Any, mode: Any, per_sample_weights: Any, sparse: bool) -> None:
    op = "embedding_bag"
    if not isinstance(input, Tensor) or not _dt.is_integer(input.dtype):
        got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"{op}: input must be an integer tensor of indices (int32 or int64), got {got}")
    if not isinstance(weight, Tensor) or not _dt.is_float(weight.dtype) or weight.ndim != 2:
        got = f"shape {weight.shape} dtype {weight.dtype.name}" if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"{op}: weight must be a 2-D floating tensor (num_embeddings, embedding_dim), got {got}")
    if input.ndim not in (1, 2):
        raise ValueError(f"{op}: input has to be a 1D or 2D Tensor, got shape {input.shape}")
    if mode not in _BAG_MODES:
        raise ValueError(f"{op}: mode has to be one of 'sum', 'mean' or 'max', got {mode!r}")
    if mode == "max" and sparse:
        raise ValueError(f"{op}: max mode does not support sparse weights")
    if per_sample_weights is None:
        return
    if mode != "sum":
        raise NotImplementedError(f"{op}: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
    if not isinstance(per_sample_weights, Tensor) or tuple(per_sample_weights.shape) != tuple(input.shape):
        got = getattr(per_sample_weights, "shape", type(per_sample_weights).__name__)
        raise ValueError(f"{op}: per_sample_weights must have the input's shape {input.shape}, got {got}")
    if per_sample_weights.dtype != weight.dtype:
        raise TypeError(
            f"{op}: per_sample_weights must have weight's dtype {weight.dtype.name}, "
            f"got {per_sample_weights.dtype.name}"
        )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of embeddings, without materializing the (*, D) lookup
    (PyTorch's `F.embedding_bag`): the result is (B, D), one row per bag.

    A 2-D input (B, N) holds B bags of N indices each. A 1-D input holds the bags one after
    another and `offsets` (B,) their starts (with `include_last_offset`, (B + 1,) with the end
    of the last bag at the end). Known offsets (realized tensors) are read on the host to lay
    the bags out (width: the longest bag); offsets still being computed are handled without a
    read, with a (B, len(input)) layout. Empty bags give zeros.

    Args:
        input: integer indices, (B, N) or (n,).
        weight: (num_embeddings, D) table.
        offsets: (B,) or (B + 1,) bag starts for a 1-D input (offsets[0] == 0); None for 2-D.
        max_norm: rescale IN PLACE the rows of `weight` that `input` reads whose `norm_type`
            norm exceeds this, before the lookup (as `embedding`).
        norm_type: the p of the max_norm norm.
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in `input`
            (the documented rule; PyTorch's CPU kernel divides by a sorted neighbour's count
            when indices have different frequencies). Not with mode="max".
        mode: "sum", "mean" (entries at padding_idx not counted) or "max" (per dimension).
        sparse: accepted (the gradient is dense); not with mode="max".
        per_sample_weights: float weights of input's shape scaling each entry (mode="sum" only).
        include_last_offset: offsets has B + 1 entries, the last one the end of the last bag.
        padding_idx: entries equal to this index are left out of their bag.

    Example:
        >>> w = nb.tensor([[1.0, 1.0], [2.0, 4.0], [3.0, 0.0]])
        >>> F.embedding_bag(nb.tensor([0, 1, 2, 2]), w, nb.tensor([0, 2]), mode="sum").tolist()
        [[3.0, 5.0], [6.0, 0.0]]
    """
    _check_bag_args(input, weight, mode, per_sample_weights, sparse)
    op = "embedding_bag"
    if mode == "max" and scale_grad_by_freq:
        raise ValueError(f"{op}: max mode does not support scaling the gradient by the frequency")
    pad = _padding_idx(padding_idx, weight.shape[0], op)
    _check_indices(input, weight.shape[0], op)
    flat = nb.reshape(input, (input.numel(),))
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                f"{op}: if input is 2D, then offsets has to be None (input is a batch of fixed-length bags), "
                f"got {type(offsets).__name__}"
            )
        bags, width = input.shape
        if width == 0:
            return _empty_bags(weight, bags)
        rows = nb.reshape(_lookup(weight, flat, max_norm, norm_type, scale_grad_by_freq, op), (bags, width, -1))
        at, valid, psw = input, nb.full(input.shape, True, nb.bool_), per_sample_weights
    else:
        n = input.shape[0]
        offs, bags = _bag_offsets(offsets, n, include_last_offset)
        if n == 0 or bags == 0:
            return _empty_bags(weight, bags)
        pos, valid = _bag_positions(offs, bags, n, include_last_offset)
        rows = nb.take(_lookup(weight, flat, max_norm, norm_type, scale_grad_by_freq, op), pos, 0)
        at = nb.take(input, pos, 0)
        psw = None if per_sample_weights is None else nb.take(per_sample_weights, pos, 0)
    if pad is not None:
        valid = nb.logical_and(valid, nb.not_equal(at, pad))
    return _reduce_bags(rows, valid, psw, mode)


def _empty_bags(weight: Tensor, bags: int) -> Tensor:
    """(bags, D) zeros for bags that are all empty, connected to `weight` (a zero gradient)."""
    return nb.broadcast_to(nb.sum(weight[:0], axis=0), (bags, weight.shape[1]))
