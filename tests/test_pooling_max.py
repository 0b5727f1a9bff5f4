"""Max pooling's MAX lowering against the NumPy reference, on ties, NaNs, -inf and padding.

The MAX kernels build each window's first maximum from strided slices (forward, gradient and
its transpose); the gradient of 4-D tiles without padding runs nabla's Mojo kernel on x
permuted to NHWC. Every case below, forward values, VJPs and JVPs, is one evaluation: one compile.

Inside a MAX graph, convolutions, max pooling and per-channel sums pass NHWC values between them
(NHWC twins, nabla/ops/_layout.py) instead of permuting to NCHW and back. The second test chains
them as a conv net does (bias, ReLU, batch norm and pooling over ties, NaNs and padding in
between), forward and backward: one more compile.
"""

from __future__ import annotations

import numpy as np

import nabla as nb
import nabla_nn.functional as F
from nabla.ops import _layout, mojo_kernels

USES_MAX = True  # conftest: leave the MAX executor selected

# (input shape, kwargs): tiles (k == stride) with and without a remainder, overlapping windows,
# padding, ceil mode, dilation, a large window (MAX's own pooling), unbatched and 5-D inputs.
CASES = {
    "k2": ((2, 3, 8, 6), {"kernel_size": 2}),
    "k2-odd": ((2, 3, 7, 9), {"kernel_size": 2}),
    "k3-tiles": ((1, 2, 9, 6), {"kernel_size": 3}),
    "k2x3": ((2, 2, 6, 9), {"kernel_size": (2, 3)}),
    "k3-s2-p1": ((2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    "ceil-pad": ((2, 2, 7, 5), {"kernel_size": 2, "padding": 1, "ceil_mode": True}),
    "dilation": ((1, 2, 8, 8), {"kernel_size": 2, "stride": 1, "dilation": 2}),
    "k5-native": ((1, 2, 11, 10), {"kernel_size": 5, "stride": 2}),
    "unbatched": ((3, 6, 6), {"kernel_size": 2}),
    "rank5": ((2, 2, 2, 6, 4), {"kernel_size": 2}),
}


def _data(shape: tuple, seed: int) -> np.ndarray:
    """Few distinct values (many ties), some NaNs and -infs."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, max(1, flat.size // 17), replace=False)] = np.nan
    flat[rng.choice(flat.size, max(1, flat.size // 23), replace=False)] = -np.inf
    return x


def _program() -> dict:
    out = {}
    for k, (name, (shape, kw)) in enumerate(CASES.items()):
        x = nb.tensor(_data(shape, k))
        rng = np.random.default_rng(100 + k)

        def pool(v, _kw=kw):
            if v.ndim == 5:  # a 5-D input runs as a batch of 4-D ones
                return nb.vmap(lambda u: F.max_pool2d(u, **_kw))(v)
            return F.max_pool2d(v, **_kw)

        y, pullback = nb.vjp(pool, x)
        (dx,) = pullback(nb.tensor(rng.normal(size=y.shape).astype(np.float32)))
        _, ty = nb.jvp(pool, (x,), (nb.tensor(rng.normal(size=shape).astype(np.float32)),))
        out.update({f"{name}/y": y, f"{name}/dx": dx, f"{name}/jvp": ty})
    return out


def _run(executor: str, program=_program) -> dict:
    nb.set_executor(executor)
    out = program()
    nb.evaluate(*out.values())
    return {k: v.numpy() for k, v in out.items()}


def test_max_pool_matches_numpy_on_ties_nan_and_padding():
    want = _run("numpy")
    nb.reset_cache_info()
    placed = mojo_kernels.STATS["nabla_max_pool_tiles_grad_nhwc"]
    got = _run("max")
    assert nb.cache_info().per_executor["max"].compiles <= 1
    # with no NHWC twin, the tile cases without padding (k2, k2-odd, k3-tiles, k2x3, and unbatched,
    # pooled as a batch of one) permute x for nabla's kernel (a model read from the store builds
    # no graph: nothing placed)
    assert mojo_kernels.STATS["nabla_max_pool_tiles_grad_nhwc"] - placed == 5 * nb.cache_info().compiles
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=key)
    # the data really holds NaN windows and tied windows
    assert np.isnan(want["k2/y"]).any() and np.isfinite(want["k2/y"]).any()


# (input shape, max_pool2d kwargs) after a depthwise identity conv, which keeps ties, NaNs and
# -infs exact: tiles with and without a remainder, tiles over padding, wide and odd channels. (Overlapping windows
# take their gradient in NCHW, as the test above checks.)
AFTER_CONV = {
    "k2": ((2, 3, 8, 6), {"kernel_size": 2}),
    "k2-odd": ((2, 3, 7, 9), {"kernel_size": 2}),
    "ceil-pad": ((2, 2, 7, 5), {"kernel_size": 2, "padding": 1, "ceil_mode": True}),
    "c37-k3x2": ((2, 37, 7, 5), {"kernel_size": (3, 2)}),  # 16-lane vectors, then 5 single lanes
}


def _net(x, w1, b1, w2, b2, gamma, beta):
    """conv -> bias -> relu -> pool -> conv -> batch norm -> relu -> pool -> per-channel sums."""
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.conv2d(h, w2, b2, padding=1)
    h = F.batch_norm(h, None, None, gamma, beta, training=True)
    h = F.max_pool2d(F.relu(h), 2)
    return nb.sum(h * h) + nb.sum(nb.sum(h, axis=(0, 2, 3)) * nb.arange(h.shape[1], dtype=nb.float32))


def _conv_net_program() -> dict:
    rng = np.random.default_rng(0)
    args = [
        rng.normal(size=s).astype(np.float32)
        for s in [(4, 3, 12, 12), (8, 3, 3, 3), (8,), (6, 8, 3, 3), (6,), (6,), (6,)]
    ]
    out = {}
    loss, grads = nb.value_and_grad(_net, argnums=tuple(range(7)))(*[nb.tensor(a) for a in args])
    out["net/loss"] = loss
    out.update({f"net/grad{k}": g for k, g in enumerate(grads)})
    for k, (name, (shape, kw)) in enumerate(AFTER_CONV.items()):
        ident = nb.tensor(np.ones((shape[1], 1, 1, 1), np.float32))

        def pool(v, _kw=kw, _w=ident):
            return F.max_pool2d(F.conv2d(v, _w, groups=v.shape[1]), **_kw)

        x = nb.tensor(_data(shape, k))
        y, pullback = nb.vjp(pool, x)
        (dx,) = pullback(nb.tensor(np.random.default_rng(100 + k).normal(size=y.shape).astype(np.float32)))
        out.update({f"{name}/y": y, f"{name}/dx": dx})
    return out


_POOL_KERNEL = "nabla_max_pool_tiles_grad_nhwc"


def test_nhwc_twins_match_numpy_in_a_conv_net():
    want = _run("numpy", _conv_net_program)
    hits, kernels = _layout.STATS.hits, mojo_kernels.STATS[_POOL_KERNEL]
    got = _run("max", _conv_net_program)
    # the graph was built here (not loaded) and the lowerings used twins instead of permutes
    assert _layout.STATS.hits - hits >= 10
    # the unpadded tiles' gradients (the net's two, k2, k2-odd, c37-k3x2) ran nabla's Mojo kernel
    assert mojo_kernels.STATS[_POOL_KERNEL] - kernels == 5
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=2e-4, atol=2e-4, equal_nan=True, err_msg=key)
    # the pooled data really holds NaN windows and finite ones
    assert np.isnan(want["k2/y"]).any() and np.isfinite(want["k2/y"]).any()
