"""Registry entries for nabla.ops.attention: dot_product_attention (and its weights helper
primitive, which its derivatives use)."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "attention"


def _np_attention(q, k, v, mask=None, *, scale=None, is_causal=False):
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    keep = np.ones(s.shape, bool)
    if mask is not None and mask.dtype == np.bool_:
        keep = keep & mask
    elif mask is not None:
        s = s + mask
    if is_causal:
        keep = keep & np.tri(*s.shape[-2:], dtype=bool)
    s = np.where(keep, s, -np.inf)
    m = np.max(np.where(keep, s, 0.0), axis=-1, keepdims=True)
    e = np.where(keep, np.exp(s - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)  # a row that keeps no key: zeros
    return (p @ v).astype(q.dtype)


def _torch_attention(torch, q, k, v, mask=None, *, scale=None, is_causal=False):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)


def _u(shape: tuple, tag: str) -> np.ndarray:
    return uniform(shape, seed="attention" + tag)


_dead = np.tril(np.ones((5, 6), bool))
_dead[2] = False  # a query row that keeps no key

SPECS = [
    OpSpec(
        name="dot_product_attention",
        fn=nb.dot_product_attention,
        ref=_np_attention,
        samples=[
            Sample((_u((2, 5, 4), "q"), _u((2, 6, 4), "k"), _u((2, 6, 3), "v")), label="(2,5,4)x(2,6,4)"),
            Sample((_u((5, 4), "q2"), _u((6, 4), "k2"), _u((6, 4), "v2"), _u((5, 6), "m2")), label="2-D-float-mask"),
            Sample(
                (_u((2, 3, 5, 4), "q4"), _u((2, 3, 6, 4), "k4"), _u((2, 3, 6, 2), "v4"), _u((3, 1, 6), "m4")),
                {"scale": 0.3},
                label="4-D-broadcast-mask-scale",
            ),
            Sample((_u((2, 5, 4), "qb"), _u((2, 6, 4), "kb"), _u((2, 6, 3), "vb"), _dead), label="bool-mask-dead-row"),
            Sample(
                (_u((3, 4, 2), "qc"), _u((3, 4, 2), "kc"), _u((3, 4, 5), "vc")), {"is_causal": True}, label="causal"
            ),
            # sharded levels split the largest dim: the leading one (8), then queries (6)
            Sample((_u((8, 6, 2), "qs"), _u((8, 3, 2), "ks"), _u((8, 3, 2), "vs")), label="(8,6,2)x(8,3,2)"),
        ],
        family=FAMILY,
        covers=("dot_product_attention", "attention_weights"),
        torch_ref=_torch_attention,
        rtol=1e-5,
        atol=1e-5,
        dtypes=("float64", "float16"),
    ),
]
