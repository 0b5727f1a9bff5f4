"""SPMD sharding of attention: causal attention over split queries and ring attention.

Queries, keys and values split along the sequence: causal masks by global position, ring attention
over key blocks passed round by ppermutes (even and uneven splits, masks, dropout), never gathering
the keys. Everything runs on the NumPy executor with simulated devices; results and gradients are
compared with the unsharded computation. Shared meshes and helpers live in `test_sharding.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_sharding import MESH1, arr, comm_ops

import nabla as nb
from nabla import DeviceMesh, P


@pytest.mark.parametrize("mesh", [MESH1, DeviceMesh("m3", (3,), ("x",))], ids=["even", "uneven"])
@pytest.mark.parametrize("split_keys", [False, True], ids=["queries", "queries-and-keys"])
def test_causal_attention_over_split_queries_masks_by_global_position(mesh, split_keys):
    q, k, v = (arr(2, 3, 8, 4) for _ in range(3))
    qs = nb.shard(nb.tensor(q), mesh, P(None, None, "x"))  # the sequence over devices
    ks, vs = (nb.shard(nb.tensor(t), mesh, P(None, None, "x")) if split_keys else nb.tensor(t) for t in (k, v))

    def f(a, b, c):
        return (nb.dot_product_attention(a, b, c, is_causal=True) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, is_causal=True)
    assert y.sharding.dim_axes[2] == ("x",)  # each device its queries, keys j <= its rows' i
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), is_causal=True)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = nb.grad(f, (0, 1, 2))(qs, ks, vs)
    ref = nb.grad(f, (0, 1, 2))(nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    ("q_len", "q_split"), [(8, True), (8, False), (6, False)], ids=["seq-parallel", "q-whole", "cross"]
)
def test_keys_split_along_the_sequence_run_ring_attention(causal, q_len, q_split):
    # Batch over dp, keys and values over sp: each device passes its key/value block round the
    # ring (ppermutes) and folds it into a running softmax; nothing gathers the keys.
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, q_len, 4), arr(2, 3, 8, 4), arr(2, 3, 8, 5)
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))

    def f(a, b, c):
        return (nb.dot_product_attention(a, b, c, is_causal=causal) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, is_causal=causal)
    assert comm_ops(y) == ["ppermute"] * 6  # 3 passes of k and of v
    assert y.sharding.dim_axes == qs.sharding.dim_axes  # q's layout
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), is_causal=causal)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = nb.grad(f, (0, 1, 2))(qs, ks, vs)
    assert "all_gather" not in comm_ops(*got)
    ref = nb.grad(f, (0, 1, 2))(nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("q_split", "mask_kind"), [(True, None), (False, None), (True, "keys"), (True, "rows")])
def test_ring_attention_pads_a_sequence_that_does_not_split_evenly(causal, q_split, mask_kind):
    # 10 positions over 4 devices (3 3 2 2): each piece is zero-extended to 3, the padding's
    # keys are masked out and its query rows dropped; still no gather of the keys.
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, 10, 4), arr(2, 3, 10, 4), arr(2, 3, 10, 5)
    mask = None
    if mask_kind == "keys":  # (B, 1, 1, S) key padding: its key dim travels with k's blocks
        mask = np.ones((2, 1, 1, 10), bool)
        mask[1, ..., 7:] = False
    elif mask_kind == "rows":  # (1, 1, L, S) additive: rows split like q's, every key on each device
        mask = np.random.default_rng(3).standard_normal((1, 1, 10, 10)).astype(np.float32)
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))
    masks = () if mask is None else (nb.tensor(mask),)

    def f(a, b, c, *m):
        return (nb.dot_product_attention(a, b, c, *m, is_causal=causal) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, *masks, is_causal=causal)
    assert comm_ops(y).count("ppermute") >= 6 and "all_gather" not in comm_ops(y)
    assert y.shape == (2, 3, 10, 5) and y.sharding.dim_axes == qs.sharding.dim_axes
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), *masks, is_causal=causal)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    argnums = (0, 1, 2, 3) if mask_kind == "rows" else (0, 1, 2)
    got = nb.grad(f, argnums)(qs, ks, vs, *masks)
    assert "all_gather" not in comm_ops(*got)
    ref = nb.grad(f, argnums)(nb.tensor(q), nb.tensor(k), nb.tensor(v), *masks)
    for g, r in zip(got, ref, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_kind", ["key-padding", "float-per-query", "bool-full"])
def test_ring_attention_takes_masks_whose_key_blocks_travel_with_the_keys(mask_kind):
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    q, k, v = arr(2, 3, 8, 4), arr(2, 3, 8, 4), arr(2, 3, 8, 5)
    rng = np.random.default_rng(7)
    if mask_kind == "key-padding":  # (B, 1, 1, S): the last keys of the second sequence padded
        mask = np.ones((2, 1, 1, 8), bool)
        mask[1, ..., 5:] = False
    elif mask_kind == "float-per-query":  # (1, 1, L, S) additive, trained (its gradient flows)
        mask = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
    else:  # (B, H, L, S), whole rows masked out: zeros, as the one op gives
        mask = rng.random((2, 3, 8, 8)) > 0.3
        mask[0, 0, 2] = False
    qs, ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (q, k, v))

    def f(a, b, c, m):
        return (nb.dot_product_attention(a, b, c, m, is_causal=True) ** 2).sum()

    y = nb.dot_product_attention(qs, ks, vs, nb.tensor(mask), is_causal=True)
    assert "all_gather" not in comm_ops(y)
    want = nb.dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), nb.tensor(mask), is_causal=True)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    argnums = (0, 1, 2, 3) if mask.dtype != bool else (0, 1, 2)
    got = nb.grad(f, argnums)(qs, ks, vs, nb.tensor(mask))
    ref = nb.grad(f, argnums)(nb.tensor(q), nb.tensor(k), nb.tensor(v), nb.tensor(mask))
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("q_split", [True, False], ids=["seq-parallel", "q-whole"])
def test_ring_attention_dropout_drops_weights_block_by_block_without_gathering(q_split):
    # With v the identity, the output is the dropped weights themselves: each is 0 or the
    # unsharded weight / (1 - p), so the mask applies to the weighted values only (the row sums
    # normalize the undropped weights) and lands on the right (query, key) positions.
    nb.manual_seed(3)
    mesh, p = DeviceMesh("dpsp", (2, 4), ("dp", "sp")), 0.5
    q, k, v = arr(2, 1, 8, 4), arr(2, 1, 8, 4), np.broadcast_to(np.eye(8, dtype=np.float32), (2, 1, 8, 8)).copy()
    qs = nb.shard(nb.tensor(q), mesh, P("dp", None, "sp" if q_split else None))
    ks, vs = (nb.shard(nb.tensor(t), mesh, P("dp", None, "sp")) for t in (k, v))
    r = arr(2, 1, 8, 8)

    def f(a, b, c):
        return nb.dot_product_attention(a, b, c, is_causal=True, dropout_p=p)

    y, pullback = nb.vjp(f, qs, ks, vs)
    grads = pullback(nb.tensor(r))
    assert comm_ops(y) == ["ppermute"] * 6 and "all_gather" not in comm_ops(*grads)
    out = y.numpy()
    tril = nb.tensor(np.tril(np.ones((8, 8), bool)))

    def weights(a, b):
        return nb.softmax(nb.where(tril, nb.matmul(a * 0.5, nb.transpose(b, -1, -2)), -np.inf), -1)  # scale 1/sqrt(4)

    w = weights(nb.tensor(q), nb.tensor(k)).numpy()
    keep = out > 0
    np.testing.assert_allclose(out[keep], w[keep] / (1 - p), rtol=1e-5)
    lower = np.tril(np.ones((8, 8), bool))
    assert not out[..., ~lower].any()  # causal: nothing above the diagonal
    kept = keep[..., lower].mean()
    assert 0.25 < kept < 0.75
    assert (keep[0] != keep[1]).any()  # data-parallel replicas draw their own masks

    def ref(a, b, c):  # the same mask, unsharded, op by op
        return nb.matmul(weights(a, b) * nb.tensor(keep.astype(np.float32) / (1 - p)), c)

    _, ref_pullback = nb.vjp(ref, nb.tensor(q), nb.tensor(k), nb.tensor(v))
    for g, want in zip(grads, ref_pullback(nb.tensor(r)), strict=True):
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
