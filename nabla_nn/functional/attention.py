"""Attention: `scaled_dot_product_attention` and `multi_head_attention_forward` (PyTorch's
semantics and argument names), written with nabla ops so they differentiate, vmap and compile.

Masks stay tensors all the way (no value is read on the host): a bool mask is turned into
`where`, a float mask is added to the scores, a causal mask is a constant `tri`.
"""

from __future__ import annotations

import math
from typing import Any

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.ops.cast import autocast_operands

from ._checks import check_float
from .linear import linear

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]

_NEG_INF = float("-inf")


# -- shared pieces -------------------------------------------------------------------------------
def _check_tensor(x: Any, op: str, arg: str, min_rank: int = 0) -> None:
    check_float(x, op, arg)
    if x.ndim < min_rank:
        raise ValueError(f"{op}: {arg} must have at least {min_rank} dimensions, got shape {x.shape}")


def _check_mask_dtype(mask: Any, op: str, arg: str) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor or None, got {type(mask).__name__}")
    if mask.dtype != _dt.bool_ and not _dt.is_float(mask.dtype):
        raise TypeError(f"{op}: {arg} must be a bool or floating-point tensor, got dtype {mask.dtype.name}")


def _attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    dropout_p: float,
    scale: float,
    safe: bool,
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + mask) v and the weights. `mask` is bool (True: attend) or float
    (added). With `safe`, rows whose scores are all -inf give zero weights (torch's SDPA),
    and neither the value nor the gradient sees a NaN; otherwise they give NaN (torch's MHA
    with need_weights=True)."""
    scores = nb.matmul(q * scale, nb.transpose(k, -2, -1))
    if mask is not None:
        if mask.dtype == _dt.bool_:
            scores = nb.where(mask, scores, _NEG_INF)
        else:
            scores = scores + nb.cast(mask, scores.dtype)
    weights = nb.softmax(scores, -1, safe=mask is not None and safe)
    if dropout_p > 0.0:
        weights = nb.dropout(weights, dropout_p)
    return nb.matmul(weights, v), weights


def _causal_mask(q_len: int, k_len: int) -> Tensor:
    """(L, S) bool, True at and below the main diagonal (top-left aligned, as torch)."""
    return nb.tri(q_len, k_len, dtype=nb.bool_)


def _dropout_prob(p: Any, op: str) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be a probability in [0, 1], got {p!r}")
    return float(p)


# -- scaled dot-product attention -----------------------------------------------------------------
def _repeat_kv_heads(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Grouped-query attention: each key/value head serves Hq / Hkv query heads."""
    if query.ndim < 3 or key.ndim < 3 or value.ndim < 3:
        raise ValueError(
            "scaled_dot_product_attention: enable_gqa needs a head dimension (..., H, L, E), got "
            f"query {query.shape}, key {key.shape}, value {value.shape}"
        )
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise ValueError(
            f"scaled_dot_product_attention: with enable_gqa the number of query heads ({hq}) must be a "
            f"multiple of the key heads ({hk}) and value heads ({hv})"
        )
    if hk != hq:
        key = nb.repeat_interleave(key, hq // hk, axis=-3)
    if hv != hq:
        value = nb.repeat_interleave(value, hq // hv, axis=-3)
    return key, value


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value (PyTorch's `F.scaled_dot_product_attention`).

    Args:
        query: (..., L, E).
        key: (..., S, E); leading dims broadcast with query's.
        value: (..., S, Ev).
        attn_mask: broadcastable to (..., L, S); bool (True: the position takes part in
            attention) or float (added to the scores). Rows with no position left give zeros.
        dropout_p: dropout probability on the attention weights (always applied when > 0,
            as in torch; pass 0.0 in evaluation).
        is_causal: attend only to positions j <= i (top-left aligned lower triangle); an error
            together with `attn_mask`.
        scale: the score scale; 1 / sqrt(E) when None.
        enable_gqa: allow fewer key/value heads (dim -3) than query heads (grouped-query
            attention); each key/value head is repeated for Hq / Hkv query heads.

    Returns:
        (..., L, Ev).

    Example:
        >>> q = nb.randn(2, 4, 5, 8)        # (N, heads, L, E)
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (2, 4, 5, 8)
    """
    op = "scaled_dot_product_attention"
    for x, arg in ((query, "query"), (key, "key"), (value, "value")):
        _check_tensor(x, op, arg, min_rank=2)
    query, key, value = autocast_operands(query, key, value)  # (inside nabla.autocast only)
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(
            f"{op}: query, key and value must have the same dtype, got {query.dtype.name}, "
            f"{key.dtype.name} and {value.dtype.name}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{op}: query's last dim {query.shape[-1]} must equal key's {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"{op}: key and value must have the same sequence length (dim -2), got {key.shape} and {value.shape}"
        )
    dropout_p = _dropout_prob(dropout_p, op)
    if enable_gqa:
        key, value = _repeat_kv_heads(query, key, value)
    q_len, k_len = query.shape[-2], key.shape[-2]
    scores = (*query.shape[:-2], q_len, k_len)
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both")
    if attn_mask is not None:
        _check_mask_dtype(attn_mask, op, "attn_mask")
        try:
            scores = nb.broadcast_shapes(attn_mask.shape, scores)
        except ValueError:
            raise ValueError(
                f"{op}: attn_mask of shape {attn_mask.shape} does not broadcast to the scores' shape {scores}"
            ) from None
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    same = query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
    if same and scores == (*query.shape[:-1], k_len):  # one op (with dropout: weights, dropout, matmul)
        return nb.dot_product_attention(
            query, key, value, attn_mask, scale=scale, is_causal=is_causal, dropout_p=dropout_p
        )
    mask = _causal_mask(q_len, k_len) if is_causal else attn_mask
    out, _ = _attend(query, key, value, mask, dropout_p, scale, safe=True)
    return out


# -- multi-head attention ---------------------------------------------------------------------------
def _mha_shape_check(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
) -> bool:
    """Whether the inputs are batched (L, N, E) or not (L, E); bad ranks raise."""
    op = "multi_head_attention_forward"
    if query.ndim not in (2, 3):
        raise ValueError(f"{op}: query must be unbatched (L, E) or batched (L, N, E), got shape {query.shape}")
    batched = query.ndim == 3
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(
            f"{op}: for a {query.ndim}-D query, key and value must be {query.ndim}-D, got shapes "
            f"{key.shape} and {value.shape}"
        )
    if key_padding_mask is not None:
        _check_mask_dtype(key_padding_mask, op, "key_padding_mask")
        if key_padding_mask.ndim != query.ndim - 1:
            raise ValueError(
                f"{op}: key_padding_mask must be {query.ndim - 1}-D for a {query.ndim}-D query, got "
                f"shape {key_padding_mask.shape}"
            )
    if attn_mask is not None:
        _check_mask_dtype(attn_mask, op, "attn_mask")
        if attn_mask.ndim not in (2, 3):
            raise ValueError(f"{op}: attn_mask must be 2-D or 3-D, got shape {attn_mask.shape}")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and attn_mask.shape != expected:
            raise ValueError(f"{op}: attn_mask must have shape {expected} for unbatched inputs, got {attn_mask.shape}")
    return batched


def _float_mask(mask: Tensor | None, dtype: Any) -> Tensor | None:
    """torch's `_canonical_mask`: a bool mask (True: masked out) becomes 0 / -inf in `dtype`."""
    if mask is None or mask.dtype != _dt.bool_:
        return None if mask is None else nb.cast(mask, dtype)
    return nb.where(mask, nb.full((), _NEG_INF, dtype), nb.full((), 0.0, dtype))


def _in_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    weights: tuple[Tensor, Tensor, Tensor],
    bias: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v: one projection each (`bias` holds the three biases end to end)."""
    biases = (None, None, None) if bias is None else nb.chunk(bias, 3)
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases, strict=True))


def _check_projection_shapes(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    use_separate_proj_weight: bool,
) -> int:
    op = "multi_head_attention_forward"
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise ValueError(f"{op}: expected query's embedding dimension {embed_dim_to_check}, got {embed_dim}")
    if num_heads <= 0 or embed_dim % num_heads:
        raise ValueError(f"{op}: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"{op}: key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}"
            )
    elif key.shape != value.shape:
        raise ValueError(f"{op}: key shape {key.shape} does not match value shape {value.shape}")
    return embed_dim // num_heads


def _project(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    separate: tuple[Tensor | None, Tensor | None, Tensor | None] | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The input projections; self-attention with the packed weight is one matmul."""
    op = "multi_head_attention_forward"
    if separate is None:
        if in_proj_weight is None:
            raise ValueError(f"{op}: use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            return tuple(nb.chunk(linear(query, in_proj_weight, in_proj_bias), 3, axis=-1))
        return _in_projection(query, key, value, tuple(nb.chunk(in_proj_weight, 3)), in_proj_bias)
    for w, arg in zip(separate, ("q_proj_weight", "k_proj_weight", "v_proj_weight"), strict=True):
        if w is None:
            raise ValueError(f"{op}: use_separate_proj_weight is True but {arg} is None")
    return _in_projection(query, key, value, separate, in_proj_bias)


def _check_attn_mask(attn_mask: Tensor, shape2d: tuple, shape3d: tuple) -> None:
    """A 2-D mask must be (L, S), a 3-D one (N * heads, L, S)."""
    expected = shape2d if attn_mask.ndim == 2 else shape3d
    if attn_mask.shape != expected:
        raise ValueError(
            f"multi_head_attention_forward: the {attn_mask.ndim}-D attn_mask has shape {attn_mask.shape}, "
            f"expected {expected}"
        )


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """One more key position that every query may attend to (a 0 in a float mask)."""
    return None if mask is None else nb.pad(mask, (0, 1))


def _split_heads(x: Tensor, bsz: int, num_heads: int, head_dim: int) -> Tensor:
    """(S, N, E) -> (N * heads, S, head_dim), torch's layout. Two reshapes, each splitting or
    merging dimensions, so a batch (N) split over devices stays split (data parallelism)."""
    x = nb.reshape(x, (x.shape[0], bsz, num_heads, head_dim))
    return nb.transpose(nb.reshape(x, (x.shape[0], bsz * num_heads, head_dim)), 0, 1)


def _merge_heads(x: Tensor, bsz: int, num_heads: int) -> Tensor:
    """(N * heads, L, head_dim) -> (L, N, E), the inverse of `_split_heads`."""
    x = nb.reshape(nb.transpose(x, 0, 1), (x.shape[1], bsz, num_heads, x.shape[2]))
    return nb.reshape(x, (x.shape[0], bsz, num_heads * x.shape[3]))


def _static_kv(x: Tensor, name: str, bsz: int, num_heads: int, head_dim: int) -> Tensor:
    if x.ndim != 3 or x.shape[0] != bsz * num_heads or x.shape[2] != head_dim:
        raise ValueError(
            f"multi_head_attention_forward: {name} must have shape ({bsz * num_heads}, S, {head_dim}), got {x.shape}"
        )
    return x


def _check_padding_mask(key_padding_mask: Tensor, bsz: int, src_len: int) -> None:
    if key_padding_mask.shape != (bsz, src_len):
        raise ValueError(
            f"multi_head_attention_forward: key_padding_mask must have shape {(bsz, src_len)}, "
            f"got {key_padding_mask.shape}"
        )


def _seq_first(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(N, L, E) -> (L, N, E), keeping `query is key is value` (self-attention uses one matmul)."""
    q = nb.transpose(query, 0, 1)
    k = q if key is query else nb.transpose(key, 0, 1)
    v = k if value is key else (q if value is query else nb.transpose(value, 0, 1))
    return q, k, v


def _head_mask(
    key_padding_mask: Tensor | None, attn_mask: Tensor | None, bsz: int, num_heads: int, length: int, dtype: Any
) -> Tensor | None:
    """The float masks of self-attention as one, broadcastable to (N, heads, L, L)."""
    mask = None
    if attn_mask is not None:
        _check_attn_mask(attn_mask, (length, length), (bsz * num_heads, length, length))
        mask = _float_mask(attn_mask, dtype)
        if mask.ndim == 3:
            mask = nb.reshape(mask, (bsz, num_heads, length, length))
    if key_padding_mask is not None:
        _check_padding_mask(key_padding_mask, bsz, length)
        kpm = nb.reshape(_float_mask(key_padding_mask, dtype), (bsz, 1, 1, length))
        mask = kpm if mask is None else mask + kpm
    return mask


def _self_attention(
    x: Tensor,
    weights: tuple[Tensor, Tensor | None, Tensor, Tensor | None],
    num_heads: int,
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    is_causal: bool,
    batch_first: bool,
    dropout_p: float = 0.0,
) -> Tensor:
    """Self-attention with the packed projection: x is (L, N, E), or (N, L, E) when
    `batch_first`. The projection splits into heads (N, 3 * heads, L, head_dim) with one
    reshape and one permute, and attention is one op."""
    in_w, in_b, out_w, out_b = weights
    a, b, embed = x.shape
    bsz, length = (a, b) if batch_first else (b, a)
    head_dim = embed // num_heads
    causal = is_causal and key_padding_mask is None  # the hint replaces attn_mask (as torch)
    mask = _head_mask(key_padding_mask, None if causal else attn_mask, bsz, num_heads, length, x.dtype)
    qkv = nb.reshape(linear(x, in_w, in_b), (a, b, 3 * num_heads, head_dim))
    q, k, v = nb.chunk(nb.permute(qkv, (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)), 3, axis=1)
    scale = 1.0 / math.sqrt(head_dim)
    out = nb.dot_product_attention(q, k, v, mask, scale=scale, is_causal=causal, dropout_p=dropout_p)
    out = nb.permute(out, (0, 2, 1, 3) if batch_first else (2, 0, 1, 3))
    return linear(nb.reshape(out, (a, b, embed)), out_w, out_b)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    batch_first: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The computation behind `nn.MultiheadAttention` (PyTorch's function of the same name).

    Sequence-first layout: query (L, N, E), key (S, N, kdim), value (S, N, vdim), or unbatched
    (L, E), (S, kdim), (S, vdim). In masks, True (bool) means *masked out*, float is added:

    Args:
        key_padding_mask: (N, S) (or (S,) unbatched): padding key positions to ignore.
        attn_mask: (L, S) or (N * num_heads, L, S).
        is_causal: a hint that `attn_mask` is the causal mask; it needs `attn_mask`, and when
            there is no key_padding_mask and need_weights is False the causal lower triangle
            is used in its place (as torch does).
        need_weights: also return the attention weights, (N, num_heads, L, S), averaged over
            heads to (N, L, S) when `average_attn_weights`. Rows that mask every key give NaN
            here and zeros without weights, as in torch.
        training: dropout_p applies only when True.
        batch_first: (a nabla addition) batched query, key, value and output are (N, L, E).

    Self-attention with the packed projection and no extra keys or weights to return (what
    `TransformerEncoderLayer` runs) takes a short path: one projection, one reshape and
    permute into heads, one `dot_product_attention` op.

    Returns:
        (output (L, N, E) ((N, L, E) with batch_first) or (L, E), weights or None).

    Example:
        >>> x, w_in, w_out = nb.randn(5, 2, 8), nb.randn(24, 8), nb.randn(8, 8)
        >>> out, w = F.multi_head_attention_forward(x, x, x, 8, 2, w_in, None, None, None, False,
        ...                                         0.0, w_out, None)
        >>> out.shape, w.shape
        ((5, 2, 8), (2, 5, 5))
    """
    op = "multi_head_attention_forward"
    for x, arg in ((query, "query"), (key, "key"), (value, "value")):
        _check_tensor(x, op, arg)
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if is_causal and attn_mask is None:
        raise ValueError(
            f"{op}: is_causal=True is a hint that needs attn_mask; build one with "
            "Transformer.generate_square_subsequent_mask"
        )
    p = _dropout_prob(dropout_p, op) if training else 0.0
    packed = query is key and key is value and not (need_weights or use_separate_proj_weight or add_zero_attn)
    if batched and packed and in_proj_weight is not None and bias_k is bias_v is static_k is static_v is None:
        _check_projection_shapes(query, key, value, embed_dim_to_check, num_heads, False)
        weights = (in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias)
        out = _self_attention(query, weights, num_heads, key_padding_mask, attn_mask, is_causal, batch_first, p)
        return out, None
    if batch_first and batched:
        query, key, value = _seq_first(query, key, value)
    if not batched:
        query, key, value = (nb.unsqueeze(x, 1) for x in (query, key, value))
        key_padding_mask = None if key_padding_mask is None else nb.unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    dtype = query.dtype
    key_padding_mask = _float_mask(key_padding_mask, dtype)
    use_causal = is_causal and key_padding_mask is None and not need_weights
    attn_mask = None if use_causal else _float_mask(attn_mask, dtype)
    head_dim = _check_projection_shapes(query, key, value, embed_dim_to_check, num_heads, use_separate_proj_weight)
    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        _check_attn_mask(attn_mask, (tgt_len, src_len), (bsz * num_heads, tgt_len, src_len))
        attn_mask = nb.unsqueeze(attn_mask, 0) if attn_mask.ndim == 2 else attn_mask

    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"{op}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{op}: bias_k/bias_v cannot be added to static_k/static_v")
        k = nb.concatenate([k, nb.broadcast_to(bias_k, (1, bsz, embed_dim))], axis=0)
        v = nb.concatenate([v, nb.broadcast_to(bias_v, (1, bsz, embed_dim))], axis=0)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)

    q = _split_heads(q, bsz, num_heads, head_dim)
    k = (
        _split_heads(k, bsz, num_heads, head_dim)
        if static_k is None
        else _static_kv(static_k, "static_k", bsz, num_heads, head_dim)
    )
    v = (
        _split_heads(v, bsz, num_heads, head_dim)
        if static_v is None
        else _static_kv(static_v, "static_v", bsz, num_heads, head_dim)
    )
    if add_zero_attn:
        zeros = nb.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype)
        k = nb.concatenate([k, zeros], axis=1)
        v = nb.concatenate([v, zeros], axis=1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        _check_padding_mask(key_padding_mask, bsz, src_len)
        kpm = nb.broadcast_to(nb.reshape(key_padding_mask, (bsz, 1, 1, src_len)), (bsz, num_heads, 1, src_len))
        kpm = nb.reshape(kpm, (bsz * num_heads, 1, src_len))
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if use_causal:
        attn_mask = _causal_mask(tgt_len, src_len)  # bool, True: attend

    out, weights = _attend(q, k, v, attn_mask, p, 1.0 / math.sqrt(head_dim), safe=not need_weights)
    out = _merge_heads(out, bsz, num_heads)
    out = linear(out, out_proj_weight, out_proj_bias)
    if batch_first and batched:
        out = nb.transpose(out, 0, 1)
    if not need_weights:
        return (out if batched else nb.squeeze(out, 1)), None
    weights = nb.reshape(weights, (bsz, num_heads, tgt_len, src_len))
    if average_attn_weights:
        weights = nb.mean(weights, axis=1)
    if not batched:
        return nb.squeeze(out, 1), nb.squeeze(weights, 0)
    return out, weights
