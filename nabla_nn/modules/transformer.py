"""Transformer layers (PyTorch's `torch.nn.modules.transformer`): TransformerEncoderLayer,
TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and Transformer, with PyTorch's
submodule names (`self_attn`, `linear1`, `norm1`, `layers.0...`) so torch state_dicts load.

torch's inference fast paths (nested tensors, fused kernels) are not reproduced; the results are
those of torch's regular path. `is_causal=None` never inspects mask values (that would read
the tensor on the host): the mask is simply applied, which gives the same result.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .. import functional as F
from .. import init
from ..module import Module
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]

Activation = str | Callable[[Tensor], Tensor]


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    if isinstance(sz, bool) or not isinstance(sz, int) or sz < 0:
        raise ValueError(f"generate_square_subsequent_mask: sz must be a non-negative int, got {sz!r}")
    if device is not None and str(device) not in ("cpu", "cpu:0"):
        raise ValueError(f"generate_square_subsequent_mask: device must be 'cpu' (or None), got {device!r}")
    dt = _dt.DEFAULT_FLOAT if dtype is None else _dt.as_dtype(dtype)
    mask = np.triu(np.full((sz, sz), -np.inf, dtype=np.float32), k=1)
    return Tensor.from_numpy(mask, dtype=dt)


def _get_activation_fn(activation: Activation) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str) or not callable(activation):
        raise ValueError(f"activation should be 'relu', 'gelu' or a callable, not {activation!r}")
    return activation


def _check_input(layer: Module, x: Any, d_model: int, batch_first: bool, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{type(layer).__name__}: {name} must be a Tensor, got {type(x).__name__}")
    if x.ndim not in (2, 3) or x.shape[-1] != d_model:
        layout = f"(N, S, {d_model})" if batch_first else f"(S, N, {d_model})"
        raise layer.input_error(x.shape, f"{name} {layout} or unbatched (S, {d_model})")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward network, each with a residual connection and LayerNorm
    (after the residual; before the sublayer with `norm_first`).

    Args:
        d_model: the model dimension (input's last dim).
        nhead: attention heads.
        dim_feedforward: the feed-forward hidden size (default 2048).
        dropout: dropout probability (default 0.1).
        activation: "relu" (default), "gelu" or a callable.
        layer_norm_eps: LayerNorm eps (default 1e-5).
        batch_first: input (N, S, E) instead of (S, N, E).
        norm_first: pre-norm (LayerNorm before attention and feed-forward).
        bias: learn biases in the Linear and LayerNorm layers.
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False): masks as in
    `MultiheadAttention` (bool True: not allowed to attend; float: added).

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(nb.randn(2, 10, 16)).shape
        (2, 10, 16)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)
        self.activation_relu_or_gelu = 1 if self.activation is F.relu else 2 if self.activation is F.gelu else 0

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        _check_input(self, src, self.self_attn.embed_dim, self.self_attn.batch_first, "src")
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (`memory`), then a feed-forward
    network; each with a residual connection and LayerNorm (pre-norm with `norm_first`).

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
        norm_first, bias, device, dtype: as in `TransformerEncoderLayer`.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False).

    Example:
        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4)
        >>> layer(nb.randn(7, 2, 16), nb.randn(10, 2, 16)).shape
        (7, 2, 16)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        d_model, batch_first = self.self_attn.embed_dim, self.self_attn.batch_first
        _check_input(self, tgt, d_model, batch_first, "tgt")
        _check_input(self, memory, d_model, batch_first, "memory")
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout1(x)

    def _mha_block(
        self, x: Tensor, mem: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _check_num_layers(num_layers: Any, cls: str) -> None:
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"{cls}: num_layers must be a positive int, got {num_layers!r}")


class TransformerEncoder(Module):
    """A stack of `num_layers` deep copies of `encoder_layer` (`layers.0`, `layers.1`, ...), then
    the optional `norm`.

    Args:
        encoder_layer: the layer to copy (a `TransformerEncoderLayer`, or any module with its
            forward signature).
        num_layers: how many copies.
        norm: an optional final layer normalization.
        enable_nested_tensor: accepted for compatibility; nested tensors are not used.
        mask_check: accepted for compatibility.

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None).

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4)
        >>> enc = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(16))
        >>> enc(nb.randn(10, 2, 16)).shape
        (10, 2, 16)
    """

    def __init__(
        self,
        encoder_layer: Module,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        _check_num_layers(num_layers, "TransformerEncoder")
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=bool(is_causal), src_key_padding_mask=src_key_padding_mask)
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    """A stack of `num_layers` deep copies of `decoder_layer`, then the optional `norm`.

    Args:
        decoder_layer: the layer to copy (a `TransformerDecoderLayer`).
        num_layers: how many copies.
        norm: an optional final layer normalization.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False).

    Example:
        >>> dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 4), num_layers=2)
        >>> dec(nb.randn(7, 2, 16), nb.randn(10, 2, 16)).shape
        (7, 2, 16)
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        _check_num_layers(num_layers, "TransformerDecoder")
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        output = tgt
        for mod in self.layers:
            output = mod(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need" (PyTorch's `nn.Transformer`):
    an encoder stack and a decoder stack, each ending in a LayerNorm.

    Args:
        d_model: the model dimension (default 512).
        nhead: attention heads (default 8).
        num_encoder_layers: encoder layers (default 6).
        num_decoder_layers: decoder layers (default 6).
        dim_feedforward: feed-forward hidden size (default 2048).
        dropout: dropout probability (default 0.1).
        activation: "relu", "gelu" or a callable.
        custom_encoder: a module to use in place of the encoder stack.
        custom_decoder: a module to use in place of the decoder stack.
        layer_norm_eps: LayerNorm eps.
        batch_first: (N, S, E) inputs and output instead of (S, N, E).
        norm_first: pre-norm layers.
        bias: learn biases in the Linear and LayerNorm layers.
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
    tgt_is_causal=None, memory_is_causal=False) -> (T, N, E).

    Example:
        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1)
        >>> tgt_mask = nn.Transformer.generate_square_subsequent_mask(7)
        >>> model(nb.randn(10, 2, 16), nb.randn(7, 2, 16), tgt_mask=tgt_mask).shape
        (7, 2, 16)
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_args = (
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            activation,
            layer_norm_eps,
            batch_first,
            norm_first,
            bias,
        )
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        for x, name in ((src, "src"), (tgt, "tgt")):
            _check_input(self, x, self.d_model, self.batch_first, name)
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise ValueError(f"Transformer: the batch number of src {src.shape} and tgt {tgt.shape} must be equal")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """A realized (sz, sz) float mask: -inf above the diagonal (future positions), 0 elsewhere.

        Example:
            >>> nn.Transformer.generate_square_subsequent_mask(3).tolist()
            [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
        """
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        """xavier_uniform_ on every parameter with more than one dimension, as torch."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
