"""Sharding on MAX: simulated devices lower to one graph (collectives become concatenations,
sums and slices); values equal the NumPy executor's. Few graphs, each holding many cases."""

from __future__ import annotations

import numpy as np

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh, P

USES_MAX = True

MESH4 = DeviceMesh("m4", (4,), ("x",))
MESH22 = DeviceMesh("m22", (2, 2), ("a", "b"))


def _cases() -> list:
    """Many sharded computations (propagation, every reshard kind, every collective, uneven
    splits, partial sums) built lazily so that one evaluation computes all of them."""
    rng = np.random.default_rng(0)
    xa, wa, va = (rng.standard_normal(s).astype(np.float32) for s in [(6, 5), (5, 7), (8,)])
    x = nb.shard(nb.tensor(xa), MESH22, P("a", "b"))
    w = nb.shard(nb.tensor(wa), MESH22, P("b", None))
    xr = nb.shard(nb.tensor(xa), MESH4, P("x"))  # 6 rows over 4 devices: uneven
    out = [
        nb.relu(x @ w),  # contraction over b: partial sum, all-reduced by relu
        nb.reshard(x, P(None, "a")),  # all_to_all + all_gather
        nb.reshard(x @ w, P("b", None)),  # reduce_scatter
        nb.softmax(xr, axis=1) * 2.0,
        nb.reshard(xr, P(None, "x")),  # uneven both ways
        (xr.sum(axis=0) + 1.0),
        # windows: data moved along a sharded dim, each device assembling its piece
        nb.flip(xr, 0) + xr[1:].sum(),
        nb.roll(xr, 2, 0)[1:5],
        nb.chunk(x, 2, 1)[1] * nb.pad(x, (0, 0, 1, -1))[:, :2],
        # a vocabulary-parallel lookup: each device takes the rows it holds (3 rows over 4: one empty)
        nb.relu(nb.index_select(xr, 0, nb.tensor(np.array([5, 0, 3, 3])))),
        nb.relu(nb.index_select(nb.shard(nb.tensor(xa[:3]), MESH4, P("x")), 0, nb.tensor(np.array([2, 0])))),
        xr.at[nb.tensor(np.array([5, 0, 5]))].add(nb.tensor(xa[:3])),  # each piece its own rows
        xr.at[nb.tensor(np.array([4, 1]))].max(nb.tensor(xa[2:4])),
        nb.softmax(x, 1) + nb.log_softmax(x, 1),  # all-reduced row maxima and sums
        # blocked scans and a two-stage topk over an uneven split: only per-piece values gathered
        nb.cumsum(xr, 0) + nb.cumprod(xr, 0),
        *nb.topk(xr, 1, 0, largest=False),
        # sort over the pieces: odd-even transposition between neighbours (6 rows extended to 8)
        *nb.sort(xr, 0),
        # causal attention over a sequence split unevenly (6 over 4): masks by global position
        nb.dot_product_attention(
            nb.shard(nb.tensor(xa.reshape(1, 1, 6, 5)), MESH4, P(None, None, "x")),
            nb.tensor(xa.reshape(1, 1, 6, 5)),
            nb.tensor(xa[:, ::-1].reshape(1, 1, 6, 5)),
            is_causal=True,
        ),
        # keys split along the sequence: ring attention (ppermuted key/value blocks, a running softmax),
        # with a key-padding mask whose blocks travel with the keys, and a per-query float mask
        # each device takes its key blocks from
        nb.dot_product_attention(
            *(nb.shard(nb.tensor(a), MESH4, P(None, "x")) for a in (xa[:4].reshape(1, 4, 5), xa[2:].reshape(1, 4, 5))),
            nb.shard(nb.tensor(xa[:4, ::-1].reshape(1, 4, 5)), MESH4, P(None, "x")),
            nb.tensor(np.array([[[True, True, False, True]]])),
            is_causal=True,
        ),
        nb.dot_product_attention(
            *(nb.shard(nb.tensor(a), MESH4, P(None, "x")) for a in (xa[:4].reshape(1, 4, 5), xa[2:].reshape(1, 4, 5))),
            nb.shard(nb.tensor(xa[:4, ::-1].reshape(1, 4, 5)), MESH4, P(None, "x")),
            nb.tensor(xa[:4, :4].reshape(1, 4, 4)),
        ),
    ]
    v = nb.tensor(va)
    out += [
        nb.shard_map(lambda t, op=op: nb.all_reduce(t, "x", op), MESH4, P("x"), P())(v) for op in ("sum", "mean", "max")
    ]
    out += [
        nb.shard_map(lambda t: nb.all_gather(t * 2.0, "x"), MESH4, P("x"), P())(v),
        nb.shard_map(lambda t: nb.reduce_scatter(t, "x"), MESH4, P(), P("x"))(v),
        nb.shard_map(lambda t: nb.ppermute(t, "x", [(i, (i + 1) % 4) for i in range(4)]), MESH4, P("x"), P("x"))(v),
        nb.shard_map(lambda t: nb.broadcast(t, "x", root=1), MESH4, P("x"), P("x"))(v),
        nb.shard_map(lambda t: t * nb.axis_index("x").astype(nb.float32), MESH4, P("x"), P("x"))(v),
        nb.shard_map(lambda t: nb.all_to_all(t, "x", split_dim=1, concat_dim=0), MESH4, P("x"), P(None, "x"))(
            nb.tensor(np.arange(32.0, dtype=np.float32).reshape(8, 4))
        ),
    ]
    wr = nb.shard(nb.tensor(wa), MESH22, P())
    out += [
        nb.vmap(lambda r: nb.tanh(r @ wr))(x),  # per-example work on a batch-sharded input
        nb.vmap(lambda r: nb.softmax(r, axis=0), spmd_axis_name="b")(nb.shard(nb.tensor(xa), MESH22, P())),
    ]
    return out


def test_sharded_programs_on_max_match_numpy():
    nb.set_executor("numpy")
    want = [t.numpy() for t in _cases()]
    nb.set_executor("max")
    got = _cases()
    nb.evaluate(*got)  # one graph for every case
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5, err_msg=f"case {i}")
        for pos, s in enumerate(g.shards()):
            assert s.shape == g.local_shape(pos), f"case {i} device {pos}"


def _train(executor: str) -> tuple[list, dict, object]:
    nb.set_executor(executor)
    rng = np.random.default_rng(1)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4))
    for p in model.parameters():
        p.data = nb.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.2)
    plan = {"0.weight": P("b", None), "0.bias": P("b"), "2.weight": P(None, "b")}  # Megatron pair over b
    for name, p in model.named_parameters():
        p.data = nb.shard(p.data, MESH22, plan.get(name, P()))
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    teacher = rng.standard_normal((12, 4)).astype(np.float32)
    nb.reset_cache_info()
    losses = []
    for _ in range(6):
        xa = rng.standard_normal((16, 12)).astype(np.float32)
        x = nb.shard(nb.tensor(xa), MESH22, P("a", None))  # data parallel over a
        y = nb.shard(nb.tensor(np.argmax(xa @ teacher, 1)), MESH22, P("a"))
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}, nb.cache_info()


def test_dp_tp_training_step_is_one_cached_model_on_max():
    losses, params, info = _train("max")
    assert (info.compiles, info.misses, info.hits) == (1, 1, 5)
    assert losses[-1] < losses[0]
    ref_losses, ref_params, _ = _train("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for k in params:
        np.testing.assert_allclose(params[k], ref_params[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_ring_attention_dropout_on_max_drops_whole_weights():
    # MAX draws its own random numbers (not NumPy's): with v the identity the output is the
    # dropped weights, each 0 or the weight / (1 - p), and every block draws its own mask.
    nb.set_executor("max")
    nb.manual_seed(0)
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((2, 1, 8, 4)).astype(np.float32) for _ in range(2))
    v = np.broadcast_to(np.eye(8, dtype=np.float32), (2, 1, 8, 8)).copy()
    mesh = DeviceMesh("dpsp", (2, 4), ("dp", "sp"))
    args = [nb.shard(nb.tensor(a), mesh, P("dp", None, "sp")) for a in (q, k, v)]
    out = nb.dot_product_attention(*args, dropout_p=0.5).numpy()
    s = q @ k.transpose(0, 1, 3, 2) / 2.0
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    keep = out > 0
    np.testing.assert_allclose(out[keep], w[keep] * 2.0, rtol=1e-5)
    assert 0.3 < keep.mean() < 0.7
    blocks = {
        keep[b, 0, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2].tobytes() for b in range(2) for i in range(4) for j in range(4)
    }
    assert len(blocks) > 8  # 32 blocks of 4 draws: not one mask repeated
