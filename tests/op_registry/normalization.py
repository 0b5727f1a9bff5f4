"""Registry entries for nabla.ops.normalization: layer_norm (and its rstd helper primitive,
which layer_norm's derivatives use)."""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "normalization"


def _np_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    centered = x - x.mean(axis=axes, keepdims=True)
    y = centered / np.sqrt((centered * centered).mean(axis=axes, keepdims=True) + eps)
    y = y if weight is None else y * weight
    return (y if bias is None else y + bias).astype(x.dtype)


def _torch_layer_norm(torch, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return torch.layer_norm(x, shape, weight, bias, eps)


def _u(shape: tuple, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return uniform(shape, low, high, seed="layer_norm")


SPECS = [
    OpSpec(
        name="layer_norm",
        fn=nb.layer_norm,
        ref=_np_layer_norm,
        samples=[
            Sample((_u((5,)), 5), label="(5,)"),
            Sample((_u((3, 4)), 4, _u((4,), 0.5, 1.5), _u((4,))), label="(3,4)-affine"),
            Sample((_u((2, 3, 4)), (3, 4), _u((3, 4), 0.5, 1.5)), label="(2,3,4)-two-dims-weight"),
            Sample((_u((2, 1, 3)), 3, None, _u((3,))), {"eps": 0.1}, label="(2,1,3)-bias-eps"),
            Sample((np.full((2, 4), 1.5), 4), label="constant-rows"),
        ],
        family=FAMILY,
        covers=("layer_norm", "layer_norm_rstd"),
        torch_ref=_torch_layer_norm,
        rtol=1e-4,
        atol=1e-5,
        dtypes=("float64", "float16"),
    ),
]
