"""nabla_nn recurrent layers: RNN, LSTM, GRU.

Against PyTorch (when installed): outputs, final states and gradients (input, initial states,
parameters) after loading torch's state_dict, over layers, directions, batch_first, initial
states, unbatched input, proj_size. Without torch: NumPy step-by-step references, causality
through gradients, shapes, init, dropout modes, vmap, errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn

RNG = np.random.default_rng(2)
IN, HID, LEN, BATCH = 3, 5, 4, 2


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def assert_outputs_and_grads_match(touts, nouts, tin, nin, tm, m, draw) -> None:
    """torch's and nabla's outputs agree, and so do the gradients of the inputs and of every
    weight after a backward of the same random cotangents (`draw(*shape)`)."""
    for t, n in zip(touts, nouts, strict=True):
        assert n.shape == tuple(t.shape)
        assert_close(n.numpy(), t.detach().numpy())
    gs = [draw(*t.shape) for t in touts]
    sum((t * torch.tensor(g)).sum() for t, g in zip(touts, gs, strict=True)).backward()
    total = nb.tensor(0.0)
    for n, g in zip(nouts, gs, strict=True):
        total = total + (n * nb.tensor(g)).sum()
    total.backward()
    for t, n in zip(tin, nin, strict=True):
        assert_close(n.grad.numpy(), t.grad.numpy(), 1e-4)
    params = dict(m.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params[name].grad.numpy(), p.grad.numpy(), 1e-4)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _flat(out):
    """[output, h_n] or [output, h_n, c_n]."""
    y, state = out
    return [y, *state] if isinstance(state, tuple) else [y, state]


CASES = [
    ("RNN", {}, False, False),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, True, False),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}, True, False),
    ("GRU", {"bias": False}, True, True),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, True, False),
    ("LSTM", {"num_layers": 3}, True, True),
    ("LSTM", {"num_layers": 2, "proj_size": 3, "bidirectional": True}, True, False),
    ("LSTM", {"batch_first": True}, False, False),
]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-hx={c[2]}-unbatched={c[3]}" for c in CASES])
def test_matches_torch(case):
    cls, kw, with_state, unbatched = case
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(IN, HID, **kw)
    m = getattr(nn, cls)(IN, HID, **kw)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()}, strict=True)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x = randn(LEN, IN) if unbatched else (randn(BATCH, LEN, IN) if kw.get("batch_first") else randn(LEN, BATCH, IN))
    arrays = [x]
    if with_state:
        lead = (layers,) if unbatched else (layers, BATCH)
        arrays.append(randn(*lead, kw.get("proj_size") or HID))
        if cls == "LSTM":
            arrays.append(randn(*lead, HID))
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    nin = [nb.tensor(a, requires_grad=True) for a in arrays]
    t_state = (tuple(tin[1:]) if cls == "LSTM" else tin[1]) if with_state else None
    n_state = (tuple(nin[1:]) if cls == "LSTM" else nin[1]) if with_state else None
    touts, nouts = _flat(tm(tin[0], t_state)), _flat(m(nin[0], n_state))
    assert_outputs_and_grads_match(touts, nouts, tin, nin, tm, m, randn)


# -- NumPy references --------------------------------------------------------------------------------
def _params(m, suffix="l0"):
    return [getattr(m, f"{k}_{suffix}").numpy() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def test_lstm_matches_numpy_gate_order():
    m = nn.LSTM(IN, HID)
    w_ih, w_hh, b_ih, b_hh = _params(m)
    x, h, c = randn(LEN, BATCH, IN), randn(1, BATCH, HID), randn(1, BATCH, HID)
    out, (h_n, c_n) = m(nb.tensor(x), (nb.tensor(h), nb.tensor(c)))
    h, c = h[0], c[0]
    for t in range(LEN):
        i, f, g, o = np.split(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)  # torch's i, f, g, o
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        assert_close(out.numpy()[t], h)
    assert_close(h_n.numpy()[0], h)
    assert_close(c_n.numpy()[0], c)


def test_gru_matches_numpy_gate_order():
    m = nn.GRU(IN, HID, batch_first=True)
    w_ih, w_hh, b_ih, b_hh = _params(m)
    x = randn(BATCH, LEN, IN)
    out, h_n = m(nb.tensor(x))
    h = np.zeros((BATCH, HID), np.float32)
    for t in range(LEN):
        x_r, x_z, x_n = np.split(x[:, t] @ w_ih.T + b_ih, 3, axis=-1)  # torch's r, z, n
        h_r, h_z, h_n_ = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
        r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
        h = (1 - z) * np.tanh(x_n + r * h_n_) + z * h
        assert_close(out.numpy()[:, t], h)
    assert_close(h_n.numpy()[0], h)


def test_bidirectional_rnn_matches_numpy_and_final_states():
    m = nn.RNN(IN, HID, bidirectional=True, nonlinearity="relu")
    x = randn(LEN, IN)  # unbatched
    out, h_n = m(nb.tensor(x))
    assert out.shape == (LEN, 2 * HID) and h_n.shape == (2, HID)
    for suffix, steps, half in (
        ("l0", range(LEN), slice(0, HID)),
        ("l0_reverse", reversed(range(LEN)), slice(HID, None)),
    ):
        w_ih, w_hh, b_ih, b_hh = _params(m, suffix)
        h = np.zeros(HID, np.float32)
        for t in steps:
            h = np.maximum(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 0)
            assert_close(out.numpy()[t, half], h)
    assert_close(h_n.numpy()[0], out.numpy()[-1, :HID])  # forward ends at the last step
    assert_close(h_n.numpy()[1], out.numpy()[0, HID:])  # reverse ends at the first


# -- behaviour ----------------------------------------------------------------------------------------
def test_parameter_names_shapes_and_init():
    m = nn.LSTM(IN, HID, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {n: p.shape for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (4 * HID, IN)
    assert shapes["weight_hh_l0_reverse"] == (4 * HID, 2)
    assert shapes["weight_ih_l1"] == (4 * HID, 4)  # two directions of proj_size 2
    assert shapes["weight_hr_l1_reverse"] == (2, HID)
    assert len(shapes) == 2 * 2 * 5
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    gru = nn.GRU(IN, 16, bias=False)
    assert [n for n, _ in gru.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    bound = 1 / math.sqrt(16)
    for p in gru.parameters():
        assert p.is_realized and np.all(np.abs(p.numpy()) <= bound) and p.numpy().std() > bound / 4


def test_unidirectional_output_ignores_the_future():
    m = nn.LSTM(IN, HID, num_layers=2)
    for t in (0, 2):
        x = nb.tensor(randn(LEN, BATCH, IN), requires_grad=True)
        out, _ = m(x)
        out[t].sum().backward()
        g = np.abs(x.grad.numpy()).sum(axis=(1, 2))
        assert np.all(g[t + 1 :] == 0) and np.all(g[: t + 1] > 0), (t, g)


def test_dropout_between_layers_only_in_training():
    m = nn.GRU(IN, HID, num_layers=2, dropout=0.5)
    x = nb.tensor(randn(LEN, BATCH, IN))
    train_out = m(x)[0].numpy()
    m.eval()
    assert_close(m(x)[0].numpy(), m(x)[0].numpy())
    assert not np.allclose(train_out, m(x)[0].numpy())
    with pytest.warns(UserWarning, match="no effect"):
        nn.GRU(IN, HID, dropout=0.5)


def test_vmap_and_grad_transforms():
    m = nn.GRU(IN, HID, batch_first=True)
    x = nb.tensor(randn(BATCH, LEN, IN))
    per_example = nb.vmap(lambda a: m(a)[0])(x)  # each call sees unbatched (L, H_in)
    assert_close(per_example.numpy(), m(x)[0].numpy())
    grads = nb.grad(lambda mod, a: mod(a)[1].sum())(m, x)
    assert grads.weight_hh_l0.shape == (3 * HID, HID)
    assert np.abs(grads.weight_hh_l0.numpy()).sum() > 0


def test_errors():
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(IN, HID, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size is only supported for LSTM"):
        nn.RNNBase("GRU", IN, HID, proj_size=2)
    with pytest.raises(ValueError, match="must be smaller than hidden_size"):
        nn.LSTM(IN, HID, proj_size=HID)
    with pytest.raises(ValueError, match="hidden_size must be an int >= 1"):
        nn.LSTM(IN, 0)
    with pytest.raises(ValueError, match="dropout"):
        nn.LSTM(IN, HID, dropout=2.0)
    m = nn.LSTM(IN, HID, num_layers=2)
    with pytest.raises(ValueError, match=r"\(LSTM 3 5 num_layers=2\) got input \(4, 2, 7\), expected \(L, N, 3\)"):
        m(nb.ones(LEN, BATCH, 7))
    with pytest.raises(ValueError, match=r"got input \(1, 2, 5\), expected h_0 of shape \(2, 2, 5\)"):
        m(nb.ones(LEN, BATCH, IN), (nb.ones(1, BATCH, HID), nb.ones(2, BATCH, HID)))
    with pytest.raises(TypeError, match="tuple"):
        m(nb.ones(LEN, BATCH, IN), nb.ones(2, BATCH, HID))
    with pytest.raises(ValueError, match=r"expected hx of shape \(1, 5\)"):
        nn.GRU(IN, HID)(nb.ones(LEN, IN), nb.ones(1, BATCH, HID))  # unbatched input, batched hx
    for layer, x in ((m, nb.ones(0, BATCH, IN)), (nn.GRU(IN, HID, batch_first=True), nb.ones(BATCH, 0, IN))):
        with pytest.raises(ValueError, match="sequence length above 0"):  # as torch
            layer(x)


@needs_torch
@pytest.mark.parametrize(
    "src",
    [
        "RNN(4, 8, nonlinearity='relu')",
        "RNN(4, 8, 2, nonlinearity='tanh', bias=False, batch_first=True, dropout=0.5, bidirectional=True)",
        "LSTM(4, 8, proj_size=3)",
        "LSTM(4, 8, 2, dropout=0.25)",
        "GRU(4, 8, 3, dropout=1)",
    ],
)
def test_rnn_reprs_match_torch(src):
    # torch's RNNBase.extra_repr never prints nonlinearity: RNN(4, 8, nonlinearity='relu') is "RNN(4, 8)".
    assert repr(eval(f"nn.{src}")) == repr(eval(f"torch.nn.{src}"))


@needs_torch
@pytest.mark.parametrize(
    "src", ["LSTM(3, 4, 2, bidirectional=True, proj_size=2)", "GRU(3, 4, bias=False)", "RNN(3, 4, 3)"]
)
def test_flat_weights_names_and_order_are_torchs(src: str):
    m, ref = eval(f"nn.{src}"), eval(f"torch.nn.{src}")
    assert m._flat_weights_names == ref._flat_weights_names
    assert [tuple(w.shape) for w in m._flat_weights] == [tuple(w.shape) for w in ref._flat_weights]
    assert m._flat_weights[0] is m.weight_ih_l0
