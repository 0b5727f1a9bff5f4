"""nabla_nn attention: F.scaled_dot_product_attention, F.multi_head_attention_forward and
nn.MultiheadAttention.

Against PyTorch (when installed): outputs, attention weights and gradients (inputs and
parameters) after loading torch's state_dict, over layouts, masks and options. Without torch:
a NumPy formula, causality and padding through gradients, shapes, defaults, vmap/grad, errors.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
from nabla.core.graph.program import collect

RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def to_torch(v):
    return torch.tensor(v) if isinstance(v, np.ndarray) else v


def to_nabla(v):
    return nb.tensor(v) if isinstance(v, np.ndarray) else v


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- scaled_dot_product_attention ---------------------------------------------------------------------
SDPA_CASES = [
    ("plain", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), {}),
    ("3d", (2, 4, 8), (2, 6, 8), (2, 6, 8), {}),
    ("bool_mask", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), {"attn_mask": RNG.random((4, 6)) > 0.3}),
    ("float_mask", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5), {"attn_mask": randn(3, 4, 6)}),
    ("causal", (2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8), {"is_causal": True}),
    ("causal_L_lt_S", (2, 4, 8), (2, 6, 8), (2, 6, 8), {"is_causal": True}),
    ("causal_L_gt_S", (2, 6, 8), (2, 4, 8), (2, 4, 8), {"is_causal": True}),
    ("scale", (1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), {"scale": 0.3}),
    ("gqa", (2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8), {"enable_gqa": True, "is_causal": True}),
    ("broadcast_kv", (2, 3, 4, 8), (1, 3, 6, 8), (1, 3, 6, 8), {}),
]


@needs_torch
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_sdpa_matches_torch_values_and_grads(case):
    _, qs, ks, vs, kw = case
    q, k, v = randn(*qs), randn(*ks), randn(*vs)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    nq, nk, nv = (nb.tensor(a, requires_grad=True) for a in (q, k, v))
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **{a: to_torch(b) for a, b in kw.items()})
    no = F.scaled_dot_product_attention(nq, nk, nv, **{a: to_nabla(b) for a, b in kw.items()})
    assert no.shape == tuple(to.shape)
    assert_close(no.numpy(), to.detach().numpy())
    g = randn(*to.shape)
    (to * torch.tensor(g)).sum().backward()
    (no * nb.tensor(g)).sum().backward()
    for t, n in ((tq, nq), (tk, nk), (tv, nv)):
        assert_close(n.grad.numpy(), t.grad.numpy())


@needs_torch
def test_sdpa_fully_masked_row_is_zero_like_torch():
    q, k, v = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4)
    mask = np.ones((3, 5), bool)
    mask[1] = False
    expected = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), torch.tensor(mask))
    got = F.scaled_dot_product_attention(*map(nb.tensor, (q, k, v)), nb.tensor(mask))
    assert_close(got.numpy(), expected.numpy())


def test_sdpa_matches_numpy_formula():
    q, k, v = randn(2, 4, 8), randn(2, 6, 8), randn(2, 6, 3)
    mask = RNG.random((4, 6)) > 0.4
    mask[:, 0] = True
    bias = randn(4, 6)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(8)
    expected_bool = np_softmax(np.where(mask, scores, -np.inf)) @ v
    expected_float = np_softmax(scores + bias) @ v
    got_bool = F.scaled_dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), attn_mask=nb.tensor(mask))
    got_float = F.scaled_dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), attn_mask=nb.tensor(bias))
    assert_close(got_bool.numpy(), expected_bool)
    assert_close(got_float.numpy(), expected_float)
    causal = F.scaled_dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), is_causal=True)
    tri = np.tril(np.ones((4, 6), bool))
    assert_close(causal.numpy(), np_softmax(np.where(tri, scores, -np.inf)) @ v)


def test_sdpa_fully_masked_row_gives_zeros_and_finite_grads():
    q = nb.tensor(randn(3, 4), requires_grad=True)
    k = nb.tensor(randn(5, 4), requires_grad=True)
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, k, k, attn_mask=nb.tensor(mask))
    assert np.all(out.numpy()[1] == 0) and np.all(np.isfinite(out.numpy()))
    out.sum().backward()
    assert np.all(np.isfinite(q.grad.numpy())) and np.all(np.isfinite(k.grad.numpy()))
    assert np.all(q.grad.numpy()[1] == 0)


def test_sdpa_causal_output_ignores_the_future():
    """d out[t] / d (q, k, v)[s] is zero for every s > t."""
    length = 5
    x = randn(2, length, 8)
    for t in range(length):
        q, k, v = (nb.tensor(x, requires_grad=True) for _ in range(3))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out[:, t].sum().backward()
        for a in (q, k, v):
            g = np.abs(a.grad.numpy()).sum(axis=(0, 2))
            assert np.all(g[t + 1 :] == 0), (t, g)
        assert np.abs(k.grad.numpy()[:, : t + 1]).sum() > 0 or t == 0


def test_sdpa_vmap_and_dropout():
    q = nb.tensor(randn(3, 4, 8))
    mask = nb.tensor(RNG.random((3, 4, 4)) > 0.5)
    batched = nb.vmap(lambda a, m: F.scaled_dot_product_attention(a, a, a, attn_mask=m))(q, mask)
    loop = np.stack([F.scaled_dot_product_attention(q[i], q[i], q[i], attn_mask=mask[i]).numpy() for i in range(3)])
    assert_close(batched.numpy(), loop)
    ones, eye = nb.ones(1, 16, 4), nb.tensor(np.eye(16, dtype=np.float32)[None])
    weights = F.scaled_dot_product_attention(ones, ones, eye, dropout_p=0.5).numpy()  # value = I: the weights
    assert set(np.unique(weights)) == {0.0, np.float32(2 / 16)}  # uniform 1/16, dropped or doubled


def test_sdpa_errors():
    q = nb.ones(2, 4, 8)
    with pytest.raises(ValueError, match="attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=nb.ones(4, 4), is_causal=True)
    with pytest.raises(TypeError, match="bool or floating"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=nb.tensor(np.ones((4, 4), np.int32)))
    with pytest.raises(ValueError, match="query's last dim 8"):
        F.scaled_dot_product_attention(q, nb.ones(2, 4, 5), nb.ones(2, 4, 5))
    with pytest.raises(ValueError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=nb.ones(3, 4))
    with pytest.raises(ValueError, match="multiple of the key heads"):
        F.scaled_dot_product_attention(nb.ones(1, 3, 4, 8), nb.ones(1, 2, 4, 8), nb.ones(1, 2, 4, 8), enable_gqa=True)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(TypeError, match="same dtype, got float32, float64 and float32"):  # as torch
        F.scaled_dot_product_attention(q, q.double(), q)


# -- MultiheadAttention against torch -------------------------------------------------------------------
def _pair(embed_dim=8, heads=2, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(embed_dim, heads, **kw)
    m = nn.MultiheadAttention(embed_dim, heads, **kw)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()}, strict=True)
    return tm, m


MHA_CASES = [
    ("default", {}, {}, False, False),
    ("self_attn_batch_first", {"batch_first": True}, {}, True, False),
    ("kdim_vdim", {"kdim": 6, "vdim": 3, "batch_first": True}, {}, False, False),
    ("no_bias", {"bias": False}, {}, False, False),
    ("bias_kv_zero_attn", {"add_bias_kv": True, "add_zero_attn": True}, {"key_padding_mask": RNG.random((3, 5)) < 0.3}, False, False),
    ("kpm_float", {}, {"key_padding_mask": np.where(RNG.random((3, 5)) < 0.3, -1e4, 0).astype(np.float32)}, False, False),
    ("attn_mask_bool", {"batch_first": True}, {"attn_mask": RNG.random((4, 5)) < 0.3}, False, False),
    ("attn_mask_3d_heads", {}, {"attn_mask": randn(6, 4, 5), "average_attn_weights": False}, False, False),
    ("both_masks_no_weights", {}, {"attn_mask": RNG.random((4, 5)) < 0.3, "key_padding_mask": RNG.random((3, 5)) < 0.3, "need_weights": False}, False, False),
    ("unbatched_bool", {}, {"attn_mask": RNG.random((4, 5)) < 0.3}, False, True),
    ("unbatched_3d_kpm", {"batch_first": True}, {"attn_mask": randn(2, 4, 5), "key_padding_mask": RNG.random(5) < 0.3}, False, True),
    ("causal_hint_weights", {}, {"attn_mask": np.triu(np.full((4, 4), -np.inf, np.float32), 1), "is_causal": True}, True, False),
    ("causal_hint_sdpa", {}, {"attn_mask": np.triu(np.full((4, 4), -np.inf, np.float32), 1), "is_causal": True, "need_weights": False}, True, False),
    # torch then ignores attn_mask and uses the causal triangle: so do we.
    ("causal_hint_overrides", {}, {"attn_mask": np.zeros((4, 4), np.float32), "is_causal": True, "need_weights": False}, True, False),
    # the packed self-attention path (one dot_product_attention op) with every mask it takes
    ("packed_batch_first_3d_kpm", {"batch_first": True}, {"attn_mask": randn(6, 4, 4), "key_padding_mask": RNG.random((3, 4)) < 0.3, "need_weights": False}, True, False),
    ("packed_bool_mask", {}, {"attn_mask": RNG.random((4, 4)) < 0.3, "need_weights": False}, True, False),
    ("packed_kpm_keeps_causal_mask", {"batch_first": True}, {"attn_mask": np.triu(np.full((4, 4), -np.inf, np.float32), 1), "key_padding_mask": RNG.random((3, 4)) < 0.3, "is_causal": True, "need_weights": False}, True, False),
]  # fmt: skip


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_mha_matches_torch(case):
    _, ctor, call, self_attn, unbatched = case
    tm, m = _pair(**ctor)
    n_batch, q_len, k_len = 3, 4, 4 if self_attn else 5
    e, kd, vd = 8, ctor.get("kdim", 8), ctor.get("vdim", 8)

    def shape(length, d):
        if unbatched:
            return (length, d)
        return (n_batch, length, d) if ctor.get("batch_first") else (length, n_batch, d)

    arrays = (
        [randn(*shape(q_len, e))]
        if self_attn
        else [randn(*shape(q_len, e)), randn(*shape(k_len, kd)), randn(*shape(k_len, vd))]
    )
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    nin = [nb.tensor(a, requires_grad=True) for a in arrays]
    targs = tin * 3 if self_attn else tin
    nargs = nin * 3 if self_attn else nin
    to, tw = tm(*targs, **{a: to_torch(b) for a, b in call.items()})
    no, nw = m(*nargs, **{a: to_nabla(b) for a, b in call.items()})
    assert no.shape == tuple(to.shape)
    assert_close(no.numpy(), to.detach().numpy())
    if tw is None:
        assert nw is None
    else:
        assert nw.shape == tuple(tw.shape)
        assert_close(nw.numpy(), tw.detach().numpy())
    g = randn(*to.shape)
    (to * torch.tensor(g)).sum().backward()
    (no * nb.tensor(g)).sum().backward()
    for t, n in zip(tin, nin, strict=True):
        assert_close(n.grad.numpy(), t.grad.numpy(), 1e-4)
    params = dict(m.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params[name].grad.numpy(), p.grad.numpy(), 1e-4)


def _recorded_ops(out: nb.Tensor) -> list[str]:
    """The op names of the lazy graph behind `out`, in creation order (the engine's own walk)."""
    return [node.op.name for node in collect([out._impl]).nodes]


def test_sdpa_records_one_op_unless_dropout_or_broadcast_leading_dims():
    q = nb.tensor(randn(2, 3, 4, 8))
    for kw in ({"attn_mask": nb.tensor(randn(4, 4))}, {"is_causal": True}, {}):
        assert _recorded_ops(F.scaled_dot_product_attention(q, q, q, **kw))[-1] == "dot_product_attention"
    k = nb.tensor(randn(1, 3, 4, 8))  # key's leading dims broadcast against query's
    for out in (F.scaled_dot_product_attention(q, q, q, dropout_p=0.5), F.scaled_dot_product_attention(q, k, k)):
        assert "dot_product_attention" not in _recorded_ops(out)


@pytest.mark.parametrize("batch_first", [True, False])
def test_mha_self_attention_is_one_attention_op_without_layout_round_trips(batch_first):
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    x = nb.tensor(randn(3, 4, 8) if batch_first else randn(4, 3, 8))  # N=3, L=4
    mask = nb.tensor(np.triu(np.full((4, 4), -np.inf, np.float32), 1))
    ops = _recorded_ops(m(x, x, x, attn_mask=mask, need_weights=False)[0])
    assert ops.count("dot_product_attention") == 1 and "softmax" not in ops and "safe_softmax" not in ops
    assert ops.count("permute") == 2, ops  # into heads and back; none at the module's ends
    assert ops.count("linear") == 2


@needs_torch
def test_mha_nan_rows_with_weights_like_torch():
    """need_weights=True uses a plain softmax: a row with every key masked is NaN (torch's
    behaviour); without weights the SDPA path gives zeros."""
    tm, m = _pair()
    x = randn(3, 2, 8)
    mask = np.zeros((3, 3), bool)
    mask[1] = True
    for need_weights in (True, False):
        to, _ = tm(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(mask), need_weights=need_weights)
        no, _ = m(*[nb.tensor(x)] * 3, attn_mask=nb.tensor(mask), need_weights=need_weights)
        np.testing.assert_array_equal(np.isnan(no.numpy()), np.isnan(to.detach().numpy()))
        assert_close(np.nan_to_num(no.numpy()), np.nan_to_num(to.detach().numpy()))


@needs_torch
def test_functional_mha_static_kv_zero_attn_matches_torch():
    q, static_k, static_v = randn(4, 2, 8), randn(4, 6, 4), randn(4, 6, 4)
    w_in, b_in, w_out = randn(24, 8), randn(24), randn(8, 8)
    pad = RNG.random((2, 6)) < 0.3
    common = {"static_k": static_k, "static_v": static_v, "key_padding_mask": pad, "average_attn_weights": False}
    expected = torch.nn.functional.multi_head_attention_forward(
        torch.tensor(q), torch.tensor(q), torch.tensor(q), 8, 2, torch.tensor(w_in), torch.tensor(b_in),
        None, None, True, 0.0, torch.tensor(w_out), None, **{k: to_torch(v) for k, v in common.items()},
    )  # fmt: skip
    got = F.multi_head_attention_forward(
        nb.tensor(q), nb.tensor(q), nb.tensor(q), 8, 2, nb.tensor(w_in), nb.tensor(b_in),
        None, None, True, 0.0, nb.tensor(w_out), None, **{k: to_nabla(v) for k, v in common.items()},
    )  # fmt: skip
    assert got[1].shape == (2, 2, 4, 7)  # (N, heads, L, S + the zero key)
    for g, e in zip(got, expected, strict=True):
        assert_close(g.numpy(), e.numpy(), 1e-4)


# -- MultiheadAttention without torch ---------------------------------------------------------------------
def test_mha_parameters_names_and_init():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert m.in_proj_weight.shape == (24, 8)
    bound = math.sqrt(6 / (8 + 24))
    w = m.in_proj_weight.numpy()
    assert np.all(np.abs(w) <= bound) and w.std() > bound / 4
    assert np.all(m.in_proj_bias.numpy() == 0) and np.all(m.out_proj.bias.numpy() == 0)
    assert all(p.is_realized for p in m.parameters())
    sep = nn.MultiheadAttention(8, 2, kdim=6, vdim=4, bias=False, add_bias_kv=True)
    shapes = {n: p.shape for n, p in sep.named_parameters()}
    assert shapes == {
        "q_proj_weight": (8, 8),
        "k_proj_weight": (8, 6),
        "v_proj_weight": (8, 4),
        "bias_k": (1, 1, 8),
        "bias_v": (1, 1, 8),
        "out_proj.weight": (8, 8),
    }


def test_mha_matches_numpy_single_head():
    m = nn.MultiheadAttention(4, 1, bias=False)
    x = randn(5, 4)  # unbatched (L, E)
    w_q, w_k, w_v = np.split(m.in_proj_weight.numpy(), 3)
    q, k, v = x @ w_q.T, x @ w_k.T, x @ w_v.T
    weights = np_softmax(q @ k.T / 2.0)
    expected = (weights @ v) @ m.out_proj.weight.numpy().T
    out, got_w = m(nb.tensor(x), nb.tensor(x), nb.tensor(x))
    assert_close(out.numpy(), expected)
    assert_close(got_w.numpy(), weights)


def test_mha_shapes():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    q, kv = nb.ones(3, 4, 8), nb.ones(3, 6, 8)
    out, w = m(q, kv, kv)
    assert out.shape == (3, 4, 8) and w.shape == (3, 4, 6)
    _, w = m(q, kv, kv, average_attn_weights=False)
    assert w.shape == (3, 2, 4, 6)
    out, w = m(q, kv, kv, need_weights=False)
    assert out.shape == (3, 4, 8) and w is None
    out, w = m(nb.ones(4, 8), nb.ones(6, 8), nb.ones(6, 8))
    assert out.shape == (4, 8) and w.shape == (4, 6)


def test_mha_key_padding_mask_blocks_padded_keys():
    """Padded keys get zero weight, and outputs do not depend on their values."""
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = nb.tensor(randn(2, 5, 8), requires_grad=True)
    pad = np.zeros((2, 5), bool)
    pad[0, 3:] = True
    out, w = m(x, x, x, key_padding_mask=nb.tensor(pad))
    assert np.all(w.numpy()[0, :, 3:] == 0) and np.all(w.numpy()[1] > 0)
    out[0, :3].sum().backward()
    assert np.all(x.grad.numpy()[0, 3:] == 0) and np.abs(x.grad.numpy()[0, :3]).sum() > 0


def test_mha_causal_mask_through_gradients():
    m = nn.MultiheadAttention(8, 2)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    for t in (0, 2, 4):
        x = nb.tensor(randn(5, 2, 8), requires_grad=True)
        out, _ = m(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)
        out[t].sum().backward()
        g = np.abs(x.grad.numpy()).sum(axis=(1, 2))
        assert np.all(g[t + 1 :] == 0) and np.all(g[: t + 1] > 0), (t, g)


def test_mha_dropout_train_vs_eval_and_grad_transform():
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = nb.tensor(randn(6, 2, 8))
    _, w_train = m(x, x, x)
    m.eval()
    _, w_eval1 = m(x, x, x)
    _, w_eval2 = m(x, x, x)
    assert_close(w_eval1.numpy(), w_eval2.numpy())
    assert not np.allclose(w_train.numpy(), w_eval1.numpy())
    grads = nb.grad(lambda mod, a: mod(a, a, a)[0].sum())(m, x)
    assert grads.in_proj_weight.shape == (24, 8)
    assert np.abs(grads.out_proj.weight.numpy()).sum() > 0
    clone = copy.deepcopy(m)
    assert clone.in_proj_weight is not m.in_proj_weight
    assert_close(clone.in_proj_weight.numpy(), m.in_proj_weight.numpy())


def test_mha_errors():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim must be a positive int"):
        nn.MultiheadAttention(0, 1)
    m = nn.MultiheadAttention(8, 2)
    x = nb.ones(4, 2, 8)
    with pytest.raises(ValueError, match=r"\(MultiheadAttention\) got input \(4, 2, 6\), expected query"):
        m(nb.ones(4, 2, 6), x, x)
    with pytest.raises(ValueError, match="same rank"):
        m(x, nb.ones(4, 8), nb.ones(4, 8))
    with pytest.raises(ValueError, match="needs attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match=r"2-D attn_mask has shape \(3, 4\), expected \(4, 4\)"):
        m(x, x, x, attn_mask=nb.zeros(3, 4))
    with pytest.raises(ValueError, match=r"3-D attn_mask has shape \(2, 4, 4\), expected \(4, 4, 4\)"):
        m(x, x, x, attn_mask=nb.zeros(2, 4, 4))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(2, 4\)"):
        m(x, x, x, key_padding_mask=nb.tensor(np.zeros((2, 3), bool)))
    with pytest.raises(TypeError, match="bool or floating"):
        m(x, x, x, key_padding_mask=nb.tensor(np.zeros((2, 4), np.int64)))


@needs_torch
@pytest.mark.parametrize(
    "src",
    [
        "MultiheadAttention(8, 2)",
        "MultiheadAttention(8, 2, dropout=0.1, kdim=3, vdim=5, batch_first=True, bias=False)",
        "TransformerEncoderLayer(8, 2, 16)",
        "TransformerDecoderLayer(8, 2, 16, batch_first=True)",
    ],
)
def test_attention_reprs_match_torch(src):
    # torch's MultiheadAttention has no extra_repr, and its out_proj is a NonDynamicallyQuantizableLinear.
    m = eval(f"nn.{src}")
    assert repr(m) == repr(eval(f"torch.nn.{src}"))
    mha = m if isinstance(m, nn.MultiheadAttention) else m.self_attn
    assert type(mha.out_proj) is nn.NonDynamicallyQuantizableLinear and isinstance(mha.out_proj, nn.Linear)
