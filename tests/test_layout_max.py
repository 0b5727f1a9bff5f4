"""NHWC twins (nabla/ops/_layout.py) on the MAX executor against the NumPy reference.

Inside a MAX graph, convolutions, max pooling and per-channel sums pass NHWC values between them
instead of permuting to NCHW and back. These cases chain them as a conv net does (bias, ReLU,
batch norm, pooling with ties, NaNs, -inf and padding in between), forward and backward, and
compare every value with the NumPy executor. All cases are one evaluation: one compile.
"""

from __future__ import annotations

import numpy as np

import nabla as nb
import nabla_nn.functional as F
from nabla.ops import _layout

USES_MAX = True  # conftest: leave the MAX executor selected

# (input shape, max_pool2d kwargs) after a depthwise identity conv, which keeps ties, NaNs and
# -infs exact: tiles with and without a remainder, tiles over padding. (Overlapping windows
# take their gradient in NCHW, as tests/test_pooling_max.py checks.)
POOLS = {
    "k2": ((2, 3, 8, 6), {"kernel_size": 2}),
    "k2-odd": ((2, 3, 7, 9), {"kernel_size": 2}),
    "ceil-pad": ((2, 2, 7, 5), {"kernel_size": 2, "padding": 1, "ceil_mode": True}),
}


def _ties(shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, max(1, flat.size // 17), replace=False)] = np.nan
    flat[rng.choice(flat.size, max(1, flat.size // 23), replace=False)] = -np.inf
    return x


def _net(x, w1, b1, w2, b2, gamma, beta):
    """conv -> bias -> relu -> pool -> conv -> batch norm -> relu -> pool -> per-channel sums."""
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.conv2d(h, w2, b2, padding=1)
    h = F.batch_norm(h, None, None, gamma, beta, training=True)
    h = F.max_pool2d(F.relu(h), 2)
    return nb.sum(h * h) + nb.sum(nb.sum(h, axis=(0, 2, 3)) * nb.arange(h.shape[1], dtype=nb.float32))


def _program() -> dict:
    rng = np.random.default_rng(0)
    args = [
        rng.normal(size=s).astype(np.float32)
        for s in [(4, 3, 12, 12), (8, 3, 3, 3), (8,), (6, 8, 3, 3), (6,), (6,), (6,)]
    ]
    out = {}
    loss, grads = nb.value_and_grad(_net, argnums=tuple(range(7)))(*[nb.tensor(a) for a in args])
    out["net/loss"] = loss
    out.update({f"net/grad{k}": g for k, g in enumerate(grads)})
    for k, (name, (shape, kw)) in enumerate(POOLS.items()):
        ident = nb.tensor(np.ones((shape[1], 1, 1, 1), np.float32))

        def pool(v, _kw=kw, _w=ident):
            return F.max_pool2d(F.conv2d(v, _w, groups=v.shape[1]), **_kw)

        x = nb.tensor(_ties(shape, k))
        y, pullback = nb.vjp(pool, x)
        (dx,) = pullback(nb.tensor(np.random.default_rng(100 + k).normal(size=y.shape).astype(np.float32)))
        out.update({f"{name}/y": y, f"{name}/dx": dx})
    return out


def _run(executor: str) -> dict:
    nb.set_executor(executor)
    out = _program()
    nb.evaluate(*out.values())
    return {k: v.numpy() for k, v in out.items()}


def test_nhwc_twins_match_numpy_in_a_conv_net():
    want = _run("numpy")
    hits = _layout.STATS.hits
    got = _run("max")
    # the graph was built here (not loaded) and the lowerings used twins instead of permutes
    assert _layout.STATS.hits - hits >= 10
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=2e-4, atol=2e-4, equal_nan=True, err_msg=key)
    # the pooled data really holds NaN windows and finite ones
    assert np.isnan(want["k2/y"]).any() and np.isfinite(want["k2/y"]).any()
