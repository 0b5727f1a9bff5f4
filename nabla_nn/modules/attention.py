"""Attention layers: MultiheadAttention (PyTorch's `torch.nn.MultiheadAttention`)."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from .linear import NonDynamicallyQuantizableLinear, empty_parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention: softmax(Q K^T / sqrt(head_dim) + mask) V per head, then a linear map.

    Parameters have PyTorch's names and layouts, so a torch state_dict loads as it is:
    `in_proj_weight` (3E, E) and `in_proj_bias` (3E,) when kdim == vdim == embed_dim, else
    `q_proj_weight` (E, E), `k_proj_weight` (E, kdim), `v_proj_weight` (E, vdim); `out_proj`
    (a NonDynamicallyQuantizableLinear E -> E, as PyTorch's); `bias_k`/`bias_v` (1, 1, E) with `add_bias_kv`.

    Args:
        embed_dim: the model dimension E (query's last dim).
        num_heads: heads; embed_dim must be divisible by it.
        dropout: dropout probability on the attention weights (training only).
        bias: learn input/output projection biases.
        add_bias_kv: append a learned key and value to the key/value sequences.
        add_zero_attn: append a zero key and value.
        kdim: key's feature size (default embed_dim).
        vdim: value's feature size (default embed_dim).
        batch_first: inputs and output are (N, L, E) instead of (L, N, E).
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None):
        query (L, N, E), key (S, N, kdim), value (S, N, vdim) (batch first with batch_first),
        or unbatched (L, E), (S, kdim), (S, vdim). Bool masks: True means *not allowed to
        attend*; float masks are added to the scores. key_padding_mask (N, S) or (S,);
        attn_mask (L, S) or (N * num_heads, L, S). weights are (N, L, S) averaged over heads,
        or (N, num_heads, L, S) with average_attn_weights=False. `is_causal` is a hint that
        attn_mask is causal (see `F.multi_head_attention_forward`).

    Example:
        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = nb.randn(2, 5, 16)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        ((2, 5, 16), (2, 5, 5))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        _check_dims(embed_dim, num_heads, kdim, vdim)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty_parameter((3 * embed_dim, embed_dim), dtype, device)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty_parameter((embed_dim, embed_dim), dtype, device)
            self.k_proj_weight = empty_parameter((embed_dim, self.kdim), dtype, device)
            self.v_proj_weight = empty_parameter((embed_dim, self.vdim), dtype, device)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty_parameter((3 * embed_dim,), dtype, device)
        else:
            self.register_parameter("in_proj_bias", None)
        # PyTorch's class for out_proj, so the model prints (and type-checks) as PyTorch's
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty_parameter((1, 1, embed_dim), dtype, device)
            self.bias_v = empty_parameter((1, 1, embed_dim), dtype, device)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """torch's init: xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b)

    reset_parameters = _reset_parameters

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        for x, dim, name in ((query, self.embed_dim, "query"), (key, self.kdim, "key"), (value, self.vdim, "value")):
            if not isinstance(x, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type(x).__name__}")
            if x.ndim not in (2, 3) or x.shape[-1] != dim:
                layout = "(N, L, {d})" if self.batch_first else "(L, N, {d})"
                raise self.input_error(x.shape, f"{name} {layout.format(d=dim)} or unbatched (L, {dim})")
        if not query.ndim == key.ndim == value.ndim:
            raise self.input_error(
                query.shape, f"query, key and value of the same rank (got key {key.shape}, value {value.shape})"
            )

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        self._check_inputs(query, key, value)
        separate = {}
        if not self._qkv_same_embed_dim:
            separate = {
                "use_separate_proj_weight": True,
                "q_proj_weight": self.q_proj_weight,
                "k_proj_weight": self.k_proj_weight,
                "v_proj_weight": self.v_proj_weight,
            }
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
            batch_first=self.batch_first,
            **separate,
        )
        return out, weights


def _check_dims(embed_dim: Any, num_heads: Any, kdim: Any, vdim: Any) -> None:
    for value, name in ((embed_dim, "embed_dim"), (num_heads, "num_heads")):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"MultiheadAttention: {name} must be a positive int, got {value!r}")
    for value, name in ((kdim, "kdim"), (vdim, "vdim")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"MultiheadAttention: {name} must be a positive int or None, got {value!r}")
    if embed_dim % num_heads:
        raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
