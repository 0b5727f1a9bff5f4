"""Packed and padded variable-length sequences (PyTorch's `torch.nn.utils.rnn`).

A `PackedSequence` stores a batch of sequences time step by time step: `data` holds, for each
step t, the rows of the `batch_sizes[t]` sequences still running (sorted longest first), and
`batch_sizes` is a realized CPU int64 tensor, as torch keeps it on the CPU. Lengths and batch
sizes are host values (the layout of the result depends on them); the data movement itself is
one `nabla.take` per call, so it stays lazy and gradients flow through `data`.

Example:
    >>> from nabla_nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    >>> x = nb.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    >>> packed = pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
    >>> packed.data.tolist(), packed.batch_sizes.tolist()
    ([4, 1, 3, 5, 2, 6], [3, 2, 1])
    >>> pad_packed_sequence(packed, batch_first=True)[0].tolist()
    [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

import nabla as nb
from nabla import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]

_UNSORTED = (
    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
    "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
    "if you do not need ONNX exportability."
)


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """The data and `batch_sizes` of a packed batch of sequences (torch's `PackedSequence`).

    Made by `pack_padded_sequence` / `pack_sequence` and by RNN layers, not by hand. For
    sequences "abc" and "x", `data` is "axbc" and `batch_sizes` is [2, 1, 1].

    Args:
        data: the packed rows (sum(lengths), *); or a pair (data, batch_sizes).
        batch_sizes: a CPU int64 tensor: how many sequences are running at each step.
        sorted_indices: the batch order the packing used (None when the input was sorted).
        unsorted_indices: its inverse (computed from `sorted_indices` when None).

    Example:
        >>> p = pack_sequence([nb.tensor([1, 2, 3]), nb.tensor([4, 5])])
        >>> p.data.tolist(), p.batch_sizes.tolist()
        ([1, 4, 2, 5, 3], [2, 2, 1])
    """

    def __new__(
        cls,
        data: Any,
        batch_sizes: Any = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices)
            if not (isinstance(data, list | tuple) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = nb.tensor(np.asarray(batch_sizes, dtype=np.int64))
        elif batch_sizes.device.is_accelerator:
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created "
                "manually. They should be instantiated by functions like pack_sequence and pack_padded_sequences "
                f"in nn.utils.rnn, got batch_sizes on {batch_sizes.device}"
            )
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        """`self` when `data` is unchanged, else a copy with the indices on data's device."""
        if data is self.data:
            return self

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data.to(*args, **kwargs)` (dtype and/or device); batch_sizes stays on the CPU."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self._with_data(self.data.cpu())

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def double(self) -> PackedSequence:
        return self.to(dtype=nb.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=nb.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=nb.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=nb.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=nb.int32)

    @property
    def is_cuda(self) -> bool:
        """Whether `data` lives on an accelerator."""
        return self.data.is_cuda


def _flatten_packed(p: PackedSequence) -> tuple[list[Any], Hashable]:
    """Only `data` is a leaf: batch sizes and orders are host structure, so compile keys on them."""
    names = ("batch_sizes", "sorted_indices", "unsorted_indices")
    aux = tuple(None if t is None else tuple(_host_ints(t, n).tolist()) for t, n in zip(p[1:], names, strict=True))
    return [p.data], aux


def _unflatten_packed(aux: Hashable, children: list[Any]) -> PackedSequence:
    batch_sizes, sorted_indices, unsorted_indices = (
        None if a is None else nb.tensor(np.array(a, np.int64)) for a in aux
    )
    return PackedSequence(children[0], batch_sizes, sorted_indices, unsorted_indices)


nb.register_pytree_node(PackedSequence, _flatten_packed, _unflatten_packed, lambda aux: [".data"])


# -- host-side index maps ------------------------------------------------------------------------
def _host_ints(values: Any, name: str) -> np.ndarray:
    """A 1-D int64 NumPy copy of host integers (a list, an array or a tensor, read on the host)."""
    arr = values.numpy() if isinstance(values, Tensor) else np.asarray(values)
    if arr.ndim != 1:
        raise RuntimeError(f"'{name}' argument should be a 1D CPU int64 tensor or list, but got {arr.ndim}D values")
    return arr.astype(np.int64)  # floats truncate, as torch's .to(int64)


def _batch_sizes_of(sorted_lengths: np.ndarray) -> np.ndarray:
    """batch_sizes[t] = how many of the (decreasing) lengths exceed t."""
    return (np.arange(sorted_lengths[0])[:, None] < sorted_lengths[None, :]).sum(axis=1).astype(np.int64)


def _lengths_of(batch_sizes: np.ndarray) -> np.ndarray:
    """The sorted lengths behind `batch_sizes`: lengths[b] = how many steps have more than b sequences."""
    return (batch_sizes[:, None] > np.arange(batch_sizes[0])[None, :]).sum(axis=0).astype(np.int64)


def _check_lengths(lengths: np.ndarray, batch: int, steps: int, enforce_sorted: bool) -> None:
    shown = lengths.tolist()
    if batch == 0 or steps == 0:
        raise RuntimeError(f"Cannot pack empty tensors (batch_size={batch}, sequence length {steps}).")
    if len(lengths) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} (batch_size={batch})"
        )
    if (lengths <= 0).any():
        raise RuntimeError(
            f"Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0: "
            f"lengths={shown}"
        )
    if (lengths > steps).any():
        raise RuntimeError(f"`lengths` must not exceed the input's sequence length {steps}, got lengths={shown}")
    if enforce_sorted and (np.diff(lengths) > 0).any():
        raise RuntimeError(f"{_UNSORTED} Got lengths={shown}")


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation (the `unsorted_indices` of `sorted_indices`).

    Args:
        permutation: a 1-D integer tensor holding a permutation of 0..n-1, or None.

    Example:
        >>> invert_permutation(nb.tensor([2, 0, 1])).tolist()
        [1, 2, 0]
    """
    if permutation is None:
        return None
    if permutation.is_realized:  # stays a realized host value, as sorted_indices usually is
        return nb.tensor(np.argsort(permutation.numpy()).astype(np.int64), device=permutation.device)
    return nb.cast(nb.argsort(permutation), nb.int64)


# -- packing -----------------------------------------------------------------------------------------
def pack_padded_sequence(
    input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch of sequences (T, B, *) ((B, T, *) with batch_first) of the given lengths.

    Args:
        input: the padded batch; steps past a sequence's length are dropped.
        lengths: each sequence's length, host values (a list or a CPU tensor; a lazy tensor is
            evaluated to read them); each in [1, T].
        batch_first: input is (B, T, *).
        enforce_sorted: require decreasing lengths; with False the batch is sorted first and
            the order is kept in `sorted_indices`.

    Returns:
        a PackedSequence whose `data` is one lazy gather from `input`.

    Example:
        >>> p = pack_padded_sequence(nb.ones(4, 3, 2), [4, 2, 1])
        >>> p.data.shape, p.batch_sizes.tolist()
        ((7, 2), [3, 2, 1, 1])
    """
    if not isinstance(input, Tensor) or input.ndim < 2:
        shape = tuple(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise ValueError(f"pack_padded_sequence: input must be a Tensor of at least 2 dimensions, got {shape}")
    lengths = _host_ints(lengths, "lengths")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    _check_lengths(lengths, batch, steps, enforce_sorted)
    order = np.argsort(-lengths, kind="stable") if not enforce_sorted else np.arange(batch)
    sorted_lengths = lengths[order]
    t, b = np.nonzero(np.arange(sorted_lengths[0])[:, None] < sorted_lengths[None, :])  # packed order
    src = order[b]
    rows = src * steps + t if batch_first else t * batch + src
    data = nb.take(nb.reshape(input, (steps * batch, *input.shape[2:])), rows, 0)
    batch_sizes = nb.tensor(_batch_sizes_of(sorted_lengths))
    if enforce_sorted:
        return PackedSequence(data, batch_sizes, None, None)
    sorted_indices = nb.tensor(order.astype(np.int64), device=input.device)
    unsorted_indices = nb.tensor(np.argsort(order).astype(np.int64), device=input.device)
    return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """Pad a packed batch back to (T, B, *) ((B, T, *) with batch_first): the inverse of packing.

    Args:
        sequence: the PackedSequence.
        batch_first: return (B, T, *).
        padding_value: the value of steps past each sequence's length.
        total_length: pad to this many steps (at least the longest sequence) instead of T.

    Returns:
        (padded, lengths): the batch in its original order (undoing `sorted_indices`), and the
        lengths as a CPU int64 tensor.

    Example:
        >>> padded, lengths = pad_packed_sequence(pack_sequence([nb.ones(3), nb.ones(1)]))
        >>> padded.shape, lengths.tolist()
        ((3, 2), [3, 1])
    """
    batch_sizes = _host_ints(sequence.batch_sizes, "batch_sizes")
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    sorted_lengths = _lengths_of(batch_sizes)
    order = _order(sequence.unsorted_indices, len(sorted_lengths))
    rows = _padded_rows(batch_sizes, order, steps)  # (steps, B) rows of data; len(data) is padding
    if batch_first:
        rows = rows.T
    data = sequence.data
    padded_data = nb.pad(data, (0, 0) * (data.ndim - 1) + (0, 1), value=padding_value)  # one padding row
    return nb.take(padded_data, rows, 0), nb.tensor(sorted_lengths[order])


def _order(unsorted_indices: Tensor | None, batch: int) -> np.ndarray:
    return np.arange(batch) if unsorted_indices is None else _host_ints(unsorted_indices, "unsorted_indices")


def _padded_rows(batch_sizes: np.ndarray, order: np.ndarray, steps: int) -> np.ndarray:
    """rows[t, j]: the packed row of step t of sequence j (sorted position order[j]), or the padding row."""
    counts = np.pad(batch_sizes, (0, steps - len(batch_sizes)))  # no sequence runs past the last step
    starts = np.cumsum(counts) - counts
    valid = order[None, :] < counts[:, None]
    return np.where(valid, starts[:, None] + order[None, :], counts.sum())


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Pad sequences (L_i, *) to the longest and stack them: (T, B, *) ((B, T, *) with batch_first).

    Args:
        sequences: the sequences (an iterable of tensors, or a tensor read along its first axis).
        batch_first: return (B, T, *).
        padding_value: the value of the padded steps.
        padding_side: "right" (pad after each sequence) or "left" (before).

    Example:
        >>> pad_sequence([nb.tensor([1, 2, 3]), nb.tensor([4])], batch_first=True).tolist()
        [[1, 2, 3], [4, 0, 0]]
    """
    if isinstance(sequences, Tensor):
        sequences = nb.unbind(sequences, 0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError(
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor) or s.ndim == 0:
            got = "a 0-d tensor" if isinstance(s, Tensor) else type(s).__name__
            raise RuntimeError(f"pad_sequence: sequences[{i}] must be a tensor of shape (L, *), got {got}")
    trailing = tuple(sequences[0].shape[1:])
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for i, s in enumerate(sequences):
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                f"pad_sequence: sequences[{i}] has shape {tuple(s.shape)}, expected (L, *{trailing}) as sequences[0]"
            )
        extra = longest - s.shape[0]
        side = (0, extra) if padding_side == "right" else (extra, 0)
        padded.append(nb.pad(s, (0, 0) * len(trailing) + side, value=padding_value) if extra else s)
    return nb.stack(padded, axis=0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False
) -> list[Tensor]:
    """Split a padded batch (T, B, *) ((B, T, *) with batch_first) into its sequences (L_i, *).

    Unlike torch, the input is not transposed in place.

    Args:
        padded_sequences: the padded batch.
        lengths: each sequence's length (host values).
        batch_first: the batch is (B, T, *).

    Example:
        >>> [s.tolist() for s in unpad_sequence(nb.tensor([[1, 2], [3, 0]]), [2, 1], batch_first=True)]
        [[1, 2], [3]]
    """
    lengths = _host_ints(lengths, "lengths")
    batch = padded_sequences.shape[0 if batch_first else 1]
    if len(lengths) != batch:
        raise ValueError(f"unpad_sequence: got {len(lengths)} lengths for a batch of {batch} sequences")
    if batch_first:
        return [padded_sequences[i, : int(n)] for i, n in enumerate(lengths)]
    return [padded_sequences[: int(n), i] for i, n in enumerate(lengths)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *): `pad_sequence` then `pack_padded_sequence`.

    Args:
        sequences: the sequences, longest first unless enforce_sorted=False.
        enforce_sorted: require decreasing lengths (else sort them, keeping `sorted_indices`).

    Example:
        >>> pack_sequence([nb.tensor([1, 2, 3]), nb.tensor([4, 5]), nb.tensor([6])]).data.tolist()
        [1, 4, 6, 2, 5, 3]
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences (L_i, *) in a PackedSequence, in their original order.

    Example:
        >>> seqs = [nb.tensor([1, 2, 3]), nb.tensor([4, 5])]
        >>> [s.tolist() for s in unpack_sequence(pack_sequence(seqs))]
        [[1, 2, 3], [4, 5]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
