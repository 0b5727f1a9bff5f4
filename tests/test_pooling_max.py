"""Max pooling's MAX lowering against the NumPy reference, on ties, NaNs, -inf and padding.

The MAX kernels build each window's first maximum from strided slices (forward, gradient and
its transpose). Every case below, forward values, VJPs and JVPs, is one evaluation: one compile.
"""

from __future__ import annotations

import numpy as np

import nabla as nb
import nabla_nn.functional as F

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


def _run(executor: str) -> dict:
    nb.set_executor(executor)
    out = _program()
    nb.evaluate(*out.values())
    return {k: v.numpy() for k, v in out.items()}


def test_max_pool_matches_numpy_on_ties_nan_and_padding():
    want = _run("numpy")
    nb.reset_cache_info()
    got = _run("max")
    assert nb.cache_info().per_executor["max"].compiles <= 1
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=key)
    # the data really holds NaN windows and tied windows
    assert np.isnan(want["k2/y"]).any() and np.isfinite(want["k2/y"]).any()
