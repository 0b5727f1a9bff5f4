"""Registry entries for nabla.ops.conv, nabla.ops.conv_grad and nabla.ops.pooling (convolution, its
weight gradient, and pooling; PyTorch layouts).

The references are deliberately naive (loops over output positions) and independent of the
kernels in nabla/ops/conv.py, conv_grad.py, pooling.py and their shared window helpers (windows.py):
they follow PyTorch's definitions directly.
"""

from __future__ import annotations

import itertools

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "conv"


def _u(shape: tuple, seed: str) -> np.ndarray:
    return uniform(shape, -1.0, 1.0, seed=seed)


def _pair(v, n: int = 2) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


# -- references -----------------------------------------------------------------------------------
def _unbatch(x: np.ndarray, spatial: int):
    return (x[None], True) if x.ndim == spatial + 1 else (x, False)


def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, spatial=2):
    x, unbatched = _unbatch(x, spatial)
    if spatial == 1:
        x, w = x[:, :, None], w[:, :, None]
        stride, dilation = (1, _pair(stride, 1)[0]), (1, _pair(dilation, 1)[0])
        padding = padding if isinstance(padding, str) else (0, _pair(padding, 1)[0])
    s, d = _pair(stride), _pair(dilation)
    o, cg, kh, kw = w.shape
    if padding == "valid":
        pads = [(0, 0), (0, 0)]
    elif padding == "same":
        tot = [d[0] * (kh - 1), d[1] * (kw - 1)]
        pads = [(t // 2, t - t // 2) for t in tot]
    else:
        pads = [(p, p) for p in _pair(padding)]
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    oh = (xp.shape[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((x.shape[0], o, oh, ow), x.dtype)
    og = o // groups
    for i in range(oh):
        for j in range(ow):
            win = xp[
                :, :, i * s[0] : i * s[0] + d[0] * (kh - 1) + 1 : d[0], j * s[1] : j * s[1] + d[1] * (kw - 1) + 1 : d[1]
            ]
            for g in range(groups):
                out[:, g * og : (g + 1) * og, i, j] = np.einsum(
                    "ncij,ocij->no", win[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
                )
    if b is not None:
        out = out + b[:, None, None]
    if spatial == 1:
        out = out[:, :, 0]
    return out[0] if unbatched else out


def _conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    x, unbatched = _unbatch(x, 2)
    s, p, q, d = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = cin // groups
    full = ((h - 1) * s[0] + d[0] * (kh - 1) + 1 + q[0], (wd - 1) * s[1] + d[1] * (kw - 1) + 1 + q[1])
    out = np.zeros((n, og * groups) + full, x.dtype)
    for i in range(h):
        for j in range(wd):
            for g in range(groups):
                contrib = np.einsum("nc,coij->noij", x[:, g * cg : (g + 1) * cg, i, j], w[g * cg : (g + 1) * cg])
                out[
                    :,
                    g * og : (g + 1) * og,
                    i * s[0] : i * s[0] + d[0] * (kh - 1) + 1 : d[0],
                    j * s[1] : j * s[1] + d[1] * (kw - 1) + 1 : d[1],
                ] += contrib
    out = out[:, :, p[0] : full[0] - p[0], p[1] : full[1] - p[1]]
    if b is not None:
        out = out + b[:, None, None]
    return out[0] if unbatched else out


def _conv3d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Loops over output positions (D, H, W), as `_conv_ref` does in 2-D."""
    x, unbatched = _unbatch(x, 3)
    s, d, k = _pair(stride, 3), _pair(dilation, 3), w.shape[2:]
    if padding == "valid":
        pads = [(0, 0)] * 3
    elif padding == "same":
        pads = [(t // 2, t - t // 2) for t in (d[i] * (k[i] - 1) for i in range(3))]
    else:
        pads = [(p, p) for p in _pair(padding, 3)]
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    out_size = tuple((xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3))
    o, cg = w.shape[:2]
    og = o // groups
    out = np.zeros((x.shape[0], o) + out_size, x.dtype)
    for pos in itertools.product(*(range(n) for n in out_size)):
        win = xp[
            (
                slice(None),
                slice(None),
                *(slice(p * s[i], p * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i, p in enumerate(pos)),
            )
        ]
        for g in range(groups):
            out[(slice(None), slice(g * og, (g + 1) * og), *pos)] = np.einsum(
                "ncijk,ocijk->no", win[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
            )
    if b is not None:
        out = out + b[:, None, None, None]
    return out[0] if unbatched else out


def _conv_transpose3d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Scatters each input position's contribution, as `_conv_transpose_ref` does in 2-D."""
    x, unbatched = _unbatch(x, 3)
    s, p, q, d = _pair(stride, 3), _pair(padding, 3), _pair(output_padding, 3), _pair(dilation, 3)
    cin, size = x.shape[1], x.shape[2:]
    og, k = w.shape[1], w.shape[2:]
    cg = cin // groups
    full = tuple((size[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + q[i] for i in range(3))
    out = np.zeros((x.shape[0], og * groups) + full, x.dtype)
    for pos in itertools.product(*(range(n) for n in size)):
        taps = tuple(slice(a * s[i], a * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i, a in enumerate(pos))
        for g in range(groups):
            contrib = np.einsum(
                "nc,coijk->noijk", x[(slice(None), slice(g * cg, (g + 1) * cg), *pos)], w[g * cg : (g + 1) * cg]
            )
            out[(slice(None), slice(g * og, (g + 1) * og), *taps)] += contrib
    out = out[(slice(None), slice(None), *(slice(p[i], full[i] - p[i]) for i in range(3)))]
    if b is not None:
        out = out + b[:, None, None, None]
    return out[0] if unbatched else out


def _pool_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _max_pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, spatial=2):
    x, unbatched = _unbatch(x, spatial)
    k = _pair(kernel_size, spatial)
    s = k if stride is None else _pair(stride, spatial)
    p, d = _pair(padding, spatial), _pair(dilation, spatial)
    if spatial == 1:
        x, k, s, p, d = x[:, :, None], (1, *k), (1, *s), (0, *p), (1, *d)
    h, w = x.shape[-2:]
    oh, ow = (_pool_size(n, *a, ceil_mode) for n, a in zip((h, w), zip(k, s, p, d, strict=True), strict=True))
    out = np.zeros(x.shape[:2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            rows = [r for r in range(i * s[0] - p[0], i * s[0] - p[0] + d[0] * (k[0] - 1) + 1, d[0]) if 0 <= r < h]
            cols = [c for c in range(j * s[1] - p[1], j * s[1] - p[1] + d[1] * (k[1] - 1) + 1, d[1]) if 0 <= c < w]
            out[:, :, i, j] = x[:, :, rows][:, :, :, cols].max(axis=(2, 3))
    if spatial == 1:
        out = out[:, :, 0]
    return out[0] if unbatched else out


def _avg_pool_ref(
    x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None, spatial=2
):
    x, unbatched = _unbatch(x, spatial)
    k = _pair(kernel_size, spatial)
    s = k if stride is None else _pair(stride, spatial)
    p = _pair(padding, spatial)
    if spatial == 1:
        x, k, s, p = x[:, :, None], (1, *k), (1, *s), (0, *p)
    h, w = x.shape[-2:]
    oh, ow = (_pool_size(n, kk, ss, pp, 1, ceil_mode) for n, kk, ss, pp in zip((h, w), k, s, p, strict=True))
    out = np.zeros(x.shape[:2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            div = divisor_override or (size if count_include_pad else (h1 - h0) * (w1 - w0))
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / div
    if spatial == 1:
        out = out[:, :, 0]
    return out[0] if unbatched else out


def _adaptive_ref(x, output_size):
    h, w = x.shape[-2:]
    oh, ow = _pair(output_size) if output_size is not None else (None, None)
    oh, ow = oh or h, ow or w
    out = np.zeros(x.shape[:-2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


# -- samples ----------------------------------------------------------------------------------------
def _conv2d_samples() -> list[Sample]:
    x = _u((2, 4, 6, 6), "c2x")
    x7 = _u((2, 4, 7, 7), "c2x7")
    return [
        Sample((x, _u((3, 4, 3, 3), "c2w"), _u((3,), "c2b")), label="basic-bias"),
        Sample((x, _u((4, 4, 3, 3), "c2w2")), {"stride": 2, "padding": 1}, label="stride2-pad1"),
        Sample((x, _u((3, 4, 2, 3), "c2w3")), {"padding": (1, 0), "dilation": 2}, label="pad-tuple-dilation2"),
        Sample((x, _u((6, 2, 3, 3), "c2w4"), _u((6,), "c2b4")), {"groups": 2, "padding": 1}, label="groups2"),
        Sample((x, _u((4, 1, 3, 3), "c2w5")), {"groups": 4, "stride": (2, 1)}, label="depthwise-stride21"),
        Sample((x, _u((3, 4, 2, 3), "c2w6")), {"padding": "same", "dilation": (1, 2)}, label="same-asym"),
        Sample((x7, _u((3, 4, 3, 3), "c2w7")), {"padding": "valid", "stride": 2, "dilation": (2, 1)}, label="valid"),
        Sample((x7, _u((2, 4, 2, 2), "c2w8")), {"stride": 3, "padding": (0, 1)}, label="stride3-unread"),
        Sample((_u((4, 5, 5), "c2xu"), _u((3, 4, 3, 3), "c2wu"), _u((3,), "c2bu")), {"padding": 1}, label="unbatched"),
        Sample((x, _u((5, 4, 1, 1), "c2w1")), label="1x1"),
    ]


def _conv1d_samples() -> list[Sample]:
    x = _u((2, 4, 9), "c1x")
    return [
        Sample((x, _u((3, 4, 3), "c1w"), _u((3,), "c1b")), label="basic-bias"),
        Sample((x, _u((4, 4, 3), "c1w2")), {"stride": 2, "padding": 1}, label="stride2-pad1"),
        Sample((x, _u((6, 2, 2), "c1w3")), {"dilation": 2, "groups": 2, "padding": (2,)}, label="dilation2-groups2"),
        Sample((x, _u((3, 4, 4), "c1w4")), {"padding": "same"}, label="same-even-kernel"),
        Sample((x, _u((4, 1, 3), "c1w5")), {"groups": 4, "padding": "valid"}, label="depthwise-valid"),
        Sample((_u((4, 7), "c1xu"), _u((2, 4, 3), "c1wu")), label="unbatched"),
    ]


def _conv_transpose2d_samples() -> list[Sample]:
    x = _u((2, 4, 5, 5), "ctx")
    return [
        Sample((x, _u((4, 3, 3, 3), "ctw"), _u((3,), "ctb")), label="basic-bias"),
        Sample((x, _u((4, 2, 3, 3), "ctw2")), {"stride": 2, "padding": 1, "output_padding": 1}, label="stride2-outpad"),
        Sample((x, _u((4, 2, 3, 2), "ctw3"), _u((4,), "ctb3")), {"groups": 2, "stride": (1, 2)}, label="groups2"),
        Sample(
            (x, _u((4, 3, 2, 3), "ctw4")),
            {"stride": 2, "padding": (0, 1), "output_padding": (1, 0), "dilation": 2},
            label="dilation2",
        ),
        Sample((x, _u((4, 2, 3, 3), "ctw5")), {"dilation": 2, "output_padding": 1, "padding": 2}, label="outpad-dil"),
        Sample((x, _u((4, 1, 3, 3), "ctw6")), {"groups": 4, "stride": 2, "padding": 1}, label="depthwise"),
        Sample((_u((4, 3, 4), "ctxu"), _u((4, 2, 2, 2), "ctwu")), {"stride": 2}, label="unbatched"),
    ]


def _conv3d_samples() -> list[Sample]:
    x = _u((2, 4, 4, 5, 4), "c3x")
    return [
        Sample((x, _u((3, 4, 2, 3, 2), "c3w"), _u((3,), "c3b")), label="basic-bias"),
        Sample((x, _u((2, 4, 3, 3, 3), "c3w2")), {"stride": 2, "padding": 1}, label="stride2-pad1"),
        Sample((x, _u((2, 4, 2, 2, 2), "c3w3")), {"padding": (1, 0, 2), "dilation": (2, 1, 1)}, label="pad-dilation"),
        Sample((x, _u((4, 2, 2, 2, 2), "c3w4"), _u((4,), "c3b4")), {"groups": 2, "stride": (1, 2, 1)}, label="groups2"),
        Sample((x, _u((4, 1, 3, 1, 2), "c3w5")), {"groups": 4, "padding": "same", "dilation": (1, 1, 2)}, label="same"),
        Sample((x, _u((2, 4, 2, 3, 2), "c3w6")), {"padding": "valid", "stride": (3, 1, 2)}, label="valid-unread"),
        Sample(
            (_u((4, 3, 4, 3), "c3xu"), _u((2, 4, 2, 2, 2), "c3wu"), _u((2,), "c3bu")), {"padding": 1}, label="unbatched"
        ),
    ]


def _conv_transpose3d_samples() -> list[Sample]:
    x = _u((2, 4, 3, 4, 3), "ct3x")
    return [
        Sample((x, _u((4, 2, 2, 3, 2), "ct3w"), _u((2,), "ct3b")), label="basic-bias"),
        Sample(
            (x, _u((4, 2, 3, 3, 3), "ct3w2")), {"stride": 2, "padding": 1, "output_padding": 1}, label="stride2-outpad"
        ),
        Sample(
            (x, _u((4, 1, 2, 2, 3), "ct3w3"), _u((2,), "ct3b3")),
            {"groups": 2, "stride": (1, 2, 1), "dilation": (2, 1, 1), "padding": (0, 1, 1)},
            label="groups2-dilation",
        ),
        Sample(
            (x, _u((4, 1, 2, 2, 2), "ct3w4")),
            {"groups": 4, "stride": (2, 1, 3), "output_padding": (1, 0, 2)},
            label="depthwise-outpad",
        ),
        Sample((_u((4, 2, 3, 2), "ct3xu"), _u((4, 3, 2, 2, 2), "ct3wu")), {"stride": 2}, label="unbatched"),
    ]


def _max_pool2d_samples() -> list[Sample]:
    x = _u((2, 4, 6, 6), "mpx")
    return [
        Sample((x, 2), label="k2"),
        Sample((x, 3), {"stride": 2, "padding": 1}, label="k3-s2-p1"),
        Sample((x, (2, 3)), {"stride": (1, 2), "dilation": 2}, label="rect-dilation2"),
        Sample((x, 3), {"stride": 2, "ceil_mode": True}, label="ceil"),
        Sample((x, 2), {"stride": 2, "padding": 1, "ceil_mode": True}, label="ceil-pad"),
        Sample((_u((4, 5, 5), "mpxu"), 2), label="unbatched-floor"),
        Sample((_u((1, 2, 4, 4), "mpxn") * 0 - 1.0, 2), {"stride": 1}, label="ties", grad=False),
    ]


def _max_pool1d_samples() -> list[Sample]:
    x = _u((2, 4, 9), "mp1x")
    return [
        Sample((x, 2), label="k2"),
        Sample((x, 3), {"stride": 2, "padding": 1}, label="k3-s2-p1"),
        Sample((x, 2), {"dilation": 2, "ceil_mode": True, "stride": 2}, label="dilation-ceil"),
        Sample((_u((3, 7), "mp1xu"), 3), {"stride": 1}, label="unbatched"),
    ]


def _avg_pool2d_samples() -> list[Sample]:
    x = _u((2, 4, 6, 6), "apx")
    return [
        Sample((x, 2), label="k2"),
        Sample((x, 3), {"stride": 2, "padding": 1}, label="k3-s2-p1"),
        Sample((x, 3), {"stride": 2, "padding": 1, "count_include_pad": False}, label="exclude-pad"),
        Sample((x, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "ceil_mode": True}, label="ceil"),
        Sample(
            (x, 3), {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}, label="ceil-exclude"
        ),
        Sample((x, 2), {"divisor_override": 3}, label="divisor-override"),
        Sample((_u((4, 5, 5), "apxu"), 2), {"stride": 1}, label="unbatched"),
    ]


def _avg_pool1d_samples() -> list[Sample]:
    x = _u((2, 4, 9), "ap1x")
    return [
        Sample((x, 2), label="k2"),
        Sample((x, 3), {"stride": 2, "padding": 1, "count_include_pad": False}, label="exclude-pad"),
        Sample((x, 4), {"stride": 3, "padding": 2, "ceil_mode": True}, label="ceil"),
        Sample((_u((3, 7), "ap1xu"), 3), label="unbatched"),
    ]


def _adaptive_samples() -> list[Sample]:
    return [
        Sample((_u((2, 4, 6, 6), "adx"), 3), label="divisible"),
        Sample((_u((2, 4, 7, 5), "adx2"), (3, 2)), label="overlapping"),
        Sample((_u((4, 6, 6), "adx3"), 1), label="global-unbatched"),
        Sample((_u((2, 3, 5, 7), "adx4"), (None, 3)), label="none-entry"),
        Sample((_u((1, 2, 3, 4), "adx5"), (5, 6)), label="upsampling"),
    ]


def _fn(name: str):
    return lambda *a, **kw: getattr(nb, name)(*a, **kw)


def _torch(name: str):
    return lambda torch, *a, **kw: getattr(torch.nn.functional, name)(*a, **kw)


_TOL = {"rtol": 1e-4, "atol": 1e-5}

SPECS: list[OpSpec] = [
    OpSpec(
        name="conv2d",
        fn=_fn("conv2d"),
        ref=_conv_ref,
        samples=_conv2d_samples(),
        family=FAMILY,
        covers=("conv2d", "conv_transpose2d", "conv2d_weight_grad"),
        torch_ref=_torch("conv2d"),
        dtypes=("float64",),
        **_TOL,
    ),
    OpSpec(
        name="conv1d",
        fn=_fn("conv1d"),
        ref=lambda *a, **kw: _conv_ref(*a, spatial=1, **kw),
        samples=_conv1d_samples(),
        family=FAMILY,
        covers=("conv2d", "conv_transpose2d", "conv2d_weight_grad"),
        torch_ref=_torch("conv1d"),
        **_TOL,
    ),
    OpSpec(
        name="conv_transpose2d",
        fn=_fn("conv_transpose2d"),
        ref=_conv_transpose_ref,
        samples=_conv_transpose2d_samples(),
        family=FAMILY,
        covers=("conv_transpose2d", "conv2d", "conv2d_weight_grad"),
        torch_ref=_torch("conv_transpose2d"),
        dtypes=("float64",),
        **_TOL,
    ),
    OpSpec(
        name="conv3d",
        fn=_fn("conv3d"),
        ref=_conv3d_ref,
        samples=_conv3d_samples(),
        family=FAMILY,
        covers=("conv3d", "conv_transpose3d", "conv3d_weight_grad"),
        torch_ref=_torch("conv3d"),
        dtypes=("float64",),
        **_TOL,
    ),
    OpSpec(
        name="conv_transpose3d",
        fn=_fn("conv_transpose3d"),
        ref=_conv_transpose3d_ref,
        samples=_conv_transpose3d_samples(),
        family=FAMILY,
        covers=("conv_transpose3d", "conv3d", "conv3d_weight_grad"),
        torch_ref=_torch("conv_transpose3d"),
        dtypes=("float64",),
        **_TOL,
    ),
    OpSpec(
        name="max_pool2d",
        fn=_fn("max_pool2d"),
        ref=_max_pool_ref,
        samples=_max_pool2d_samples(),
        family=FAMILY,
        covers=("max_pool2d", "max_pool2d_grad", "max_pool2d_gather"),
        torch_ref=_torch("max_pool2d"),
        dtypes=("float64",),
    ),
    OpSpec(
        name="max_pool1d",
        fn=_fn("max_pool1d"),
        ref=lambda *a, **kw: _max_pool_ref(*a, spatial=1, **kw),
        samples=_max_pool1d_samples(),
        family=FAMILY,
        covers=("max_pool2d", "max_pool2d_grad", "max_pool2d_gather"),
        torch_ref=_torch("max_pool1d"),
    ),
    OpSpec(
        name="avg_pool2d",
        fn=_fn("avg_pool2d"),
        ref=_avg_pool_ref,
        samples=_avg_pool2d_samples(),
        family=FAMILY,
        covers=("avg_pool2d", "avg_pool2d_grad"),
        torch_ref=_torch("avg_pool2d"),
        dtypes=("float64",),
    ),
    OpSpec(
        name="avg_pool1d",
        fn=_fn("avg_pool1d"),
        ref=lambda *a, **kw: _avg_pool_ref(*a, spatial=1, **kw),
        samples=_avg_pool1d_samples(),
        family=FAMILY,
        covers=("avg_pool2d", "avg_pool2d_grad"),
        torch_ref=_torch("avg_pool1d"),
    ),
    OpSpec(
        name="adaptive_avg_pool2d",
        fn=_fn("adaptive_avg_pool2d"),
        ref=_adaptive_ref,
        samples=_adaptive_samples(),
        family=FAMILY,
        covers=("avg_pool2d", "avg_pool2d_grad"),
        torch_ref=_torch("adaptive_avg_pool2d"),
    ),
]

# Every conv/pool configuration is its own MAX kernel and a cold compile of all of them takes
# ~15 CPU-minutes. The NumPy-path checks (forward, finite differences, JVP, MAX shape inference)
# cover every sample; the compiled MAX comparison takes this representative subset.
_MAX_SAMPLES = {
    "conv2d": {"basic-bias", "stride2-pad1", "groups2"},
    "conv1d": {"basic-bias"},
    "conv_transpose2d": {"basic-bias", "stride2-outpad", "groups2"},
    "conv3d": {"basic-bias"},  # with its gradients: the stride-1 (shifted matmul) weight gradient
    "conv_transpose3d": {"groups2-dilation"},  # grouped and strided (zero-upsampled), the strided weight gradient
    "max_pool2d": {"k3-s2-p1", "ceil"},
    "max_pool1d": {"k2"},
    "avg_pool2d": {"k3-s2-p1", "exclude-pad"},
    "avg_pool1d": {"k2"},
    "adaptive_avg_pool2d": {"divisible", "overlapping"},
}
for _spec in SPECS:
    for _sample in _spec.samples:
        _sample.max = _sample.max and _sample.label in _MAX_SAMPLES[_spec.name]
