"""Embedding and EmbeddingBag (PyTorch's `torch.nn.modules.sparse`): lookup tables of learned
vectors, looked up one by one or reduced over bags of indices."""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .. import functional as F
from .. import init
from ..functional.sparse import embedding_bag
from ..module import Module
from ..parameter import Parameter, placed
from .linear import empty_parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx: int | None, num_embeddings: int) -> int | None:
    """padding_idx normalized to [0, num_embeddings), as PyTorch (negative counts from the end)."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int | np.integer):
        raise TypeError(f"Embedding: padding_idx must be an int or None, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), got {padding_idx}")
    return int(padding_idx) % num_embeddings


def _zero_row(weight: Tensor, row: int | None) -> None:
    """Zero one row of a realized table (the padding_idx row at initialization)."""
    if row is not None:
        values = weight.numpy().copy()
        values[row] = 0
        weight.data = Tensor.from_numpy(values, dtype=weight.dtype).to(weight.device)


def _realized(value: Any, name: str) -> Tensor:
    """A realized floating tensor from a Tensor or array (for `_weight` / `from_pretrained`)."""
    t = value if isinstance(value, Tensor) else Tensor.from_numpy(np.asarray(value))
    if not _dt.is_float(t.dtype):
        raise TypeError(f"Embedding: {name} must be a floating tensor, got dtype {t.dtype.name}")
    if not t.is_realized:
        nb.evaluate(t)
    return t.data


def _init_table(module: Module, weight: Any, freeze: bool, dtype: Any, device: Any) -> None:
    """Give an Embedding or EmbeddingBag its table: `weight` (checked against its sizes) if
    given, else PyTorch's default initialization (`reset_parameters`)."""
    shape = (module.num_embeddings, module.embedding_dim)
    if weight is None:
        module.weight = empty_parameter(shape, dtype, device)
        module.reset_parameters()
        return
    weight = _realized(weight, "_weight")
    if tuple(weight.shape) != shape:
        raise ValueError(
            f"{type(module).__name__}: shape of _weight {tuple(weight.shape)} does not match "
            f"(num_embeddings, embedding_dim) = {shape}"
        )
    module.weight = Parameter(placed(weight, device), requires_grad=not freeze)


def _pretrained(embeddings: Any) -> Tensor:
    """`from_pretrained`'s table: realized and 2-D."""
    weight = _realized(embeddings, "embeddings")
    if weight.ndim != 2:
        raise ValueError(f"Embeddings parameter is expected to be 2-dimensional, got shape {tuple(weight.shape)}")
    return weight


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by integer index.

    Args:
        num_embeddings: size of the table.
        embedding_dim: size of each vector.
        padding_idx: this row is zero-initialized and gets no gradient (negative counts from
            the end).
        max_norm: before each lookup, rescale IN PLACE the rows of `weight` being read whose
            `norm_type` norm exceeds this to norm max_norm (as PyTorch; not differentiated).
        norm_type: the p of the max_norm norm (default 2).
        scale_grad_by_freq: scale gradients by the inverse frequency of each index in the batch.
        sparse: must be False (dense gradients only).
        _weight: an initial (num_embeddings, embedding_dim) table instead of N(0, 1).
        _freeze: make the weight not trainable.

    Shape:
        input: integer tensor `(*)`; output `(*, embedding_dim)`; `weight` is
        `(num_embeddings, embedding_dim)`.

    Example:
        >>> emb = nn.Embedding(10, 3, padding_idx=0)
        >>> emb(nb.tensor([[0, 2, 4]])).shape
        (1, 3, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Any = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for arg, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Embedding: {arg} must be a non-negative int, got {value!r}")
        if sparse:
            raise NotImplementedError("Embedding: sparse=True (sparse gradients) is not supported; use sparse=False")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        _init_table(self, _weight, _freeze, dtype, device)

    def reset_parameters(self) -> None:
        """PyTorch's default: N(0, 1), with the padding_idx row zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        _zero_row(self.weight, self.padding_idx)

    def forward(self, input: Tensor) -> Tensor:
        if not isinstance(input, Tensor) or not _dt.is_integer(input.dtype):
            got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
            raise self.input_error(
                getattr(input, "shape", ()), f"an integer tensor of indices in [0, {self.num_embeddings}), got {got}"
            )
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Any,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding holding `embeddings` (a 2-D tensor or array) as its table.

        Args:
            embeddings: (num_embeddings, embedding_dim) table; used as is (padding_idx's row is
                not zeroed, as PyTorch).
            freeze: make the table not trainable (default True).
            padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse: as for `Embedding`.

        Example:
            >>> emb = nn.Embedding.from_pretrained(nb.tensor([[1.0, 2.3, 3.0], [4.0, 5.1, 6.3]]))
            >>> emb(nb.tensor([1])).tolist()
            [[4.0, 5.099999904632568, 6.300000190734863]]
        """
        weight = _pretrained(embeddings)
        rows, cols = weight.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=weight,
            _freeze=freeze,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
        )


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (PyTorch's `nn.EmbeddingBag`), computed
    without the intermediate (*, embedding_dim) lookup; see `F.embedding_bag`.

    Args:
        num_embeddings: size of the table.
        embedding_dim: size of each vector.
        max_norm: rescale IN PLACE the rows being read whose `norm_type` norm exceeds this.
        norm_type: the p of the max_norm norm (default 2).
        scale_grad_by_freq: scale gradients by the inverse frequency of each index in the batch
            (not with mode="max").
        mode: "sum", "mean" (default) or "max".
        sparse: must be False (dense gradients only).
        _weight: an initial (num_embeddings, embedding_dim) table instead of N(0, 1).
        include_last_offset: offsets has one entry more than there are bags (the last bag's end).
        padding_idx: this row is zero-initialized, and entries equal to it are left out of their
            bag (negative counts from the end).
        _freeze: make the weight not trainable.

    Shape:
        `forward(input, offsets=None, per_sample_weights=None)`: input (B, N) with offsets None,
        or (n,) with offsets (B,) (or (B + 1,)); output (B, embedding_dim).

    Example:
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(nb.tensor([1, 2, 4, 5, 4, 3, 2, 9]), nb.tensor([0, 4])).shape
        (2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Any = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for arg, value in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"EmbeddingBag: {arg} must be a non-negative int, got {value!r}")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of 'sum', 'mean' or 'max', got {mode!r}")
        if sparse:
            raise NotImplementedError("EmbeddingBag: sparse=True (sparse gradients) is not supported; use sparse=False")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        _init_table(self, _weight, _freeze, dtype, device)

    def reset_parameters(self) -> None:
        """PyTorch's default: N(0, 1), with the padding_idx row zeroed."""
        init.normal_(self.weight)
        _zero_row(self.weight, self.padding_idx)

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        if not isinstance(input, Tensor) or not _dt.is_integer(input.dtype) or input.ndim not in (1, 2):
            got = f"dtype {input.dtype.name}" if isinstance(input, Tensor) else type(input).__name__
            raise self.input_error(
                getattr(input, "shape", ()),
                f"(B, N) or (n,) integer indices in [0, {self.num_embeddings}) (got {got})",
            )
        return embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Any,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag holding `embeddings` (a 2-D tensor or array) as its table.

        Args:
            embeddings: (num_embeddings, embedding_dim) table, used as is.
            freeze: make the table not trainable (default True).
            max_norm, norm_type, scale_grad_by_freq, mode, sparse, include_last_offset,
                padding_idx: as for `EmbeddingBag`.

        Example:
            >>> bag = nn.EmbeddingBag.from_pretrained(nb.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> bag(nb.tensor([[0, 1]])).tolist()
            [[2.0, 3.0]]
        """
        weight = _pretrained(embeddings)
        rows, cols = weight.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=weight,
            _freeze=freeze,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
