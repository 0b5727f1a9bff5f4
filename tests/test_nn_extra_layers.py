"""nabla_nn padding layers, distance layers and recurrent cells (RNNCell, LSTMCell, GRUCell).

Against PyTorch (when installed): outputs, input and parameter gradients (torch's weights loaded
through `load_state_dict`), state_dict keys and reprs. Without torch: NumPy references (np.pad,
hand-written cell steps, norms), init bounds, agreement of the cells with nn.RNN / nn.LSTM /
nn.GRU, and input checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
from nabla_nn.modules.distance import CosineSimilarity, PairwiseDistance
from nabla_nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from nabla_nn.modules.rnn_cells import GRUCell, LSTMCell, RNNCell

RNG = np.random.default_rng(7)
IN, HID, BATCH = 3, 5, 2
CELLS = {"RNNCell": RNNCell, "LSTMCell": LSTMCell, "GRUCell": GRUCell}


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _outputs(out) -> list:
    return list(out) if isinstance(out, tuple) else [out]


def _compare(m, tm, arrays: list[np.ndarray], call=None) -> None:
    """Same outputs, and the same input and parameter gradients for a random cotangent, as `tm`
    (whose weights `m` must hold already). `call(module, inputs)` runs a module (default: all
    arrays as positional inputs)."""
    call = call or (lambda mod, xs: mod(*xs))
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    nin = [nb.tensor(a, requires_grad=True) for a in arrays]
    touts, nouts = _outputs(call(tm, tin)), _outputs(call(m, nin))
    assert len(touts) == len(nouts)
    for t, n in zip(touts, nouts, strict=True):
        assert n.shape == tuple(t.shape)
        assert_close(n.numpy(), t.detach().numpy())
    cots = [randn(*t.shape) for t in touts]
    sum((t * torch.tensor(g)).sum() for t, g in zip(touts, cots, strict=True)).backward()
    total = nb.tensor(0.0)
    for n, g in zip(nouts, cots, strict=True):
        total = total + (n * nb.tensor(g)).sum()
    total.backward()
    for t, n in zip(tin, nin, strict=True):
        assert_close(n.grad.numpy(), t.grad.numpy(), 1e-4)
    params = dict(m.named_parameters())
    assert sorted(params) == sorted(name for name, _ in tm.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params[name].grad.numpy(), p.grad.numpy(), 1e-4)


# -- padding -------------------------------------------------------------------------------------------
PADS = [
    # (class, constructor args, input shapes, np.pad mode)
    (ZeroPad1d, (2,), [(2, 3, 4), (3, 4)], "constant"),
    (ZeroPad1d, ((3, -1),), [(2, 3, 4)], "constant"),
    (ZeroPad2d, ((1, 1, 2, 0),), [(2, 3, 4, 4), (3, 4, 4)], "constant"),
    (ZeroPad2d, (1,), [(1, 2, 3, 3)], "constant"),
    (ConstantPad1d, ((2, 1), 3.5), [(2, 3, 4), (3, 4)], "constant"),
    (ConstantPad2d, ((3, 0, 2, 1), -1.5), [(2, 3, 4, 4), (3, 4, 4)], "constant"),
    (ConstantPad2d, (2, 2.0), [(1, 2, 3, 3)], "constant"),
    (ReflectionPad1d, ((3, 1),), [(2, 3, 5), (3, 5)], "reflect"),
    (ReflectionPad1d, (2,), [(1, 2, 4)], "reflect"),
    (ReflectionPad2d, ((1, 2, 3, 0),), [(2, 3, 4, 5), (3, 4, 5)], "reflect"),
    (ReflectionPad2d, (1,), [(1, 1, 3, 3)], "reflect"),
    (ReplicationPad1d, ((3, 1),), [(2, 3, 4), (3, 4)], "edge"),
    (ReplicationPad2d, ((1, 2, 3, 0),), [(2, 3, 4, 4), (3, 4, 4)], "edge"),
    (ReplicationPad2d, (2,), [(1, 1, 3, 3)], "edge"),
    (CircularPad1d, ((1, 2),), [(2, 3, 4), (3, 4)], "wrap"),
    (CircularPad2d, ((1, 2, 2, 0),), [(2, 3, 4, 4), (3, 4, 4)], "wrap"),
    (CircularPad2d, (1,), [(1, 1, 3, 3)], "wrap"),
]
PAD_IDS = [f"{c[0].__name__}{c[1]}" for c in PADS]


def _np_pad(x: np.ndarray, padding: tuple, mode: str, value: float = 0.0) -> np.ndarray:
    """np.pad with torch's (left, right[, top, bottom]) order; negative widths crop."""
    pairs = [(padding[2 * i], padding[2 * i + 1]) for i in range(len(padding) // 2)][::-1]
    widths = [(0, 0)] * (x.ndim - len(pairs)) + pairs
    x = x[tuple(slice(-lo if lo < 0 else 0, hi if hi < 0 else None) for lo, hi in widths)]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    return np.pad(x, widths, mode, constant_values=value) if mode == "constant" else np.pad(x, widths, mode)


@pytest.mark.parametrize("case", PADS, ids=PAD_IDS)
def test_padding_matches_numpy(case):
    cls, args, shapes, mode = case
    m = cls(*args)
    value = args[1] if len(args) == 2 else 0.0
    for shape in shapes:
        x = randn(*shape)
        assert_close(m(nb.tensor(x)).numpy(), _np_pad(x, m.padding, mode, value), 0)


@needs_torch
@pytest.mark.parametrize("case", PADS, ids=PAD_IDS)
def test_padding_matches_torch(case):
    cls, args, shapes, _ = case
    m, tm = cls(*args), getattr(torch.nn, cls.__name__)(*args)
    assert repr(m) == repr(tm)
    assert m.padding == tuple(tm.padding)
    assert list(m.state_dict()) == list(tm.state_dict()) == []
    for shape in shapes:
        _compare(m, tm, [randn(*shape)])


def test_padding_reprs_and_arguments():
    assert repr(ZeroPad2d((1, 1, 2, 0))) == "ZeroPad2d((1, 1, 2, 0))"
    assert repr(ZeroPad1d(2)) == "ZeroPad1d((2, 2))"
    assert repr(ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert repr(ConstantPad2d([1, 2, 3, 4], 0)) == "ConstantPad2d(padding=(1, 2, 3, 4), value=0)"
    assert repr(ReflectionPad2d(1)) == "ReflectionPad2d((1, 1, 1, 1))"
    assert repr(ReplicationPad1d((3, 1))) == "ReplicationPad1d((3, 1))"
    assert repr(CircularPad2d(2)) == "CircularPad2d((2, 2, 2, 2))"
    assert ZeroPad1d(1).value == 0.0 and ConstantPad2d(1, 7).value == 7
    for bad in ((1, 2, 3), "ab", 1.5, True, (1, 2.0)):
        with pytest.raises(ValueError, match="ZeroPad1d: padding must be an int or a tuple of 2 ints"):
            ZeroPad1d(bad)
    with pytest.raises(ValueError, match=r"CircularPad2d: padding must be .* 4 ints .*got \(1, 2\)"):
        CircularPad2d((1, 2))


def test_padding_constant_any_leading_rank():
    """As torch: the constant pads take any rank that has the padded dims."""
    x = randn(4)
    assert_close(ZeroPad1d(1)(nb.tensor(x)).numpy(), np.pad(x, 1), 0)
    x = randn(2, 2, 3, 4, 5)
    assert ConstantPad2d(1, 1.0)(nb.tensor(x)).shape == (2, 2, 3, 6, 7)
    assert ZeroPad2d(1)(nb.tensor(randn(3, 3))).shape == (5, 5)


@pytest.mark.parametrize(
    "m, shape, expected",
    [
        (ZeroPad2d(1), (3,), r"\(ZeroPad2d \(1 1 1 1\)\) got input \(3,\), expected \(\*, H, W\)"),
        (ConstantPad1d(1, 2.0), (), r"got input \(\), expected \(\*, W\)"),
        (ReflectionPad1d(1), (4,), r"\(ReflectionPad1d \(1 1\)\) got input \(4,\), expected \(N, C, W\) or \(C, W\)"),
        (ReflectionPad1d(1), (1, 1, 2, 4), r"got input \(1, 1, 2, 4\), expected \(N, C, W\) or \(C, W\)"),
        (ReplicationPad1d(1), (4,), r"expected \(N, C, W\) or \(C, W\)"),
        (CircularPad1d(1), (1, 1, 1, 4), r"expected \(N, C, W\) or \(C, W\)"),
        (ReflectionPad2d(1), (3, 3), r"expected \(N, C, H, W\) or \(C, H, W\)"),
        (ReplicationPad2d(1), (1, 1, 1, 3, 3), r"expected \(N, C, H, W\) or \(C, H, W\)"),
        (CircularPad2d(1), (3, 3), r"got input \(3, 3\), expected \(N, C, H, W\) or \(C, H, W\)"),
    ],
)
def test_padding_rank_errors(m, shape, expected):
    with pytest.raises(ValueError, match=expected):
        m(nb.zeros(shape))


def test_padding_size_errors():
    with pytest.raises(ValueError, match="reflect padding"):
        ReflectionPad1d(3)(nb.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="circular padding"):
        CircularPad1d(4)(nb.zeros((1, 2, 3)))


def test_padding_gradients_numpy():
    """d(sum of the output)/d(input) counts how often each input element is copied."""
    x = nb.tensor(randn(1, 2, 4), requires_grad=True)
    ReplicationPad1d((2, 1))(x).sum().backward()
    assert_close(x.grad.numpy(), np.broadcast_to([3.0, 1.0, 1.0, 2.0], (1, 2, 4)), 0)
    x = nb.tensor(randn(1, 4), requires_grad=True)
    ReflectionPad1d(2)(x).sum().backward()
    assert_close(x.grad.numpy(), [[1.0, 3.0, 3.0, 1.0]], 0)
    x = nb.tensor(randn(2, 3, 3), requires_grad=True)
    ZeroPad2d((1, -1, 0, 2))(x).sum().backward()
    assert_close(x.grad.numpy(), np.broadcast_to([1.0, 1.0, 0.0], (2, 3, 3)), 0)


# -- distance ------------------------------------------------------------------------------------------
def test_distance_reprs_and_attributes():
    assert repr(CosineSimilarity()) == "CosineSimilarity()"
    assert repr(PairwiseDistance(p=1, keepdim=True)) == "PairwiseDistance()"
    c = CosineSimilarity(dim=0, eps=1e-3)
    assert (c.dim, c.eps) == (0, 1e-3)
    d = PairwiseDistance(p=3.0, eps=0.0, keepdim=True)
    assert (d.norm, d.eps, d.keepdim) == (3.0, 0.0, True)


def test_distance_matches_numpy():
    a, b = randn(4, 6), randn(4, 6)
    cos = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert_close(CosineSimilarity()(nb.tensor(a), nb.tensor(b)).numpy(), cos)
    cos0 = np.sum(a * b, 0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0))
    assert_close(CosineSimilarity(dim=0)(nb.tensor(a), nb.tensor(b)).numpy(), cos0)
    assert_close(CosineSimilarity()(nb.zeros((2, 3)), nb.ones((2, 3))).numpy(), [0.0, 0.0])
    assert_close(PairwiseDistance()(nb.tensor(a), nb.tensor(b)).numpy(), np.linalg.norm(a - b + 1e-6, axis=-1))
    d1 = PairwiseDistance(p=1.0, eps=0.0, keepdim=True)(nb.tensor(a), nb.tensor(b))
    assert_close(d1.numpy(), np.abs(a - b).sum(-1, keepdims=True))
    assert PairwiseDistance()(nb.tensor(a[0]), nb.tensor(b[0])).shape == ()


DISTANCES = [
    ("CosineSimilarity", {}, [(4, 6), (4, 6)]),
    ("CosineSimilarity", {"dim": 0, "eps": 1e-4}, [(5, 3), (5, 3)]),
    ("CosineSimilarity", {"dim": -1}, [(2, 3, 4), (1, 3, 4)]),
    ("PairwiseDistance", {}, [(4, 6), (4, 6)]),
    ("PairwiseDistance", {"p": 1.0, "keepdim": True}, [(4, 6), (4, 6)]),
    ("PairwiseDistance", {"p": 3.0, "eps": 1e-3}, [(6,), (6,)]),
]


@needs_torch
@pytest.mark.parametrize("case", DISTANCES, ids=[f"{c[0]}-{c[1]}" for c in DISTANCES])
def test_distance_matches_torch(case):
    name, kw, shapes = case
    m = {"CosineSimilarity": CosineSimilarity, "PairwiseDistance": PairwiseDistance}[name](**kw)
    tm = getattr(torch.nn, name)(**kw)
    assert repr(m) == repr(tm)
    _compare(m, tm, [randn(*s) for s in shapes])


# -- recurrent cells -----------------------------------------------------------------------------------
def _np_params(m) -> list[np.ndarray]:
    return [getattr(m, k).numpy() for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def test_cell_layouts_init_and_reprs():
    for name, chunks in (("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)):
        m = CELLS[name](IN, HID)
        assert list(m.state_dict()) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
        assert m.weight_ih.shape == (chunks * HID, IN) and m.weight_hh.shape == (chunks * HID, HID)
        assert m.bias_ih.shape == m.bias_hh.shape == (chunks * HID,)
        bound = 1 / math.sqrt(HID)
        for p in m.parameters():
            assert np.abs(p.numpy()).max() <= bound and p.requires_grad
        assert np.abs(m.weight_ih.numpy()).max() > 0.5 * bound
        assert repr(m) == f"{name}({IN}, {HID})"
        nb_m = CELLS[name](IN, HID, bias=False)
        assert list(nb_m.state_dict()) == ["weight_ih", "weight_hh"]
        assert nb_m.bias_ih is None and nb_m.bias_hh is None
        assert repr(nb_m) == f"{name}({IN}, {HID}, bias=False)"
    assert repr(RNNCell(IN, HID, nonlinearity="relu")) == f"RNNCell({IN}, {HID}, nonlinearity=relu)"
    assert repr(RNNCell(2, 3, False, "relu")) == "RNNCell(2, 3, bias=False, nonlinearity=relu)"
    assert RNNCell(IN, HID, dtype=nb.float64).weight_ih.dtype == nb.float64


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_matches_numpy(nonlinearity):
    m = RNNCell(IN, HID, nonlinearity=nonlinearity)
    w_ih, w_hh, b_ih, b_hh = _np_params(m)
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0))
    x, h = randn(BATCH, IN), randn(BATCH, HID)
    assert_close(m(nb.tensor(x), nb.tensor(h)).numpy(), act(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh))
    assert_close(m(nb.tensor(x)).numpy(), act(x @ w_ih.T + b_ih + b_hh))
    assert_close(m(nb.tensor(x[0]), nb.tensor(h[0])).numpy(), act(w_ih @ x[0] + b_ih + w_hh @ h[0] + b_hh))
    m = RNNCell(IN, HID, bias=False)
    assert_close(m(nb.tensor(x), nb.tensor(h)).numpy(), np.tanh(x @ m.weight_ih.numpy().T + h @ m.weight_hh.numpy().T))


def test_lstm_cell_matches_numpy():
    m = LSTMCell(IN, HID)
    w_ih, w_hh, b_ih, b_hh = _np_params(m)
    x, h, c = randn(BATCH, IN), randn(BATCH, HID), randn(BATCH, HID)
    h1, c1 = m(nb.tensor(x), (nb.tensor(h), nb.tensor(c)))
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)  # torch's i, f, g, o
    c_ref = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    assert_close(c1.numpy(), c_ref)
    assert_close(h1.numpy(), sigmoid(o) * np.tanh(c_ref))
    h0, c0 = m(nb.tensor(x[1]))
    i, f, g, o = np.split(w_ih @ x[1] + b_ih + b_hh, 4)
    assert h0.shape == c0.shape == (HID,)
    assert_close(c0.numpy(), sigmoid(i) * np.tanh(g))
    assert_close(h0.numpy(), sigmoid(o) * np.tanh(sigmoid(i) * np.tanh(g)))


def test_gru_cell_matches_numpy():
    m = GRUCell(IN, HID)
    w_ih, w_hh, b_ih, b_hh = _np_params(m)
    x, h = randn(BATCH, IN), randn(BATCH, HID)
    x_r, x_z, x_n = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    assert_close(m(nb.tensor(x), nb.tensor(h)).numpy(), (1 - z) * n + z * h)
    assert m(nb.tensor(x[0])).shape == (HID,)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_cells_unrolled_match_recurrent_layers(name):
    """A loop of cell steps is the one-layer recurrent layer with the same weights."""
    cell, layer = CELLS[name + "Cell"](IN, HID), getattr(nn, name)(IN, HID)
    layer.load_state_dict({f"{k}_l0": v.numpy() for k, v in cell.state_dict().items()})
    xs = randn(4, BATCH, IN)
    out, state = layer(nb.tensor(xs))
    s = None
    for t in range(4):
        s = cell(nb.tensor(xs[t]), s)
        assert_close((s[0] if name == "LSTM" else s).numpy(), out.numpy()[t])
    if name == "LSTM":
        assert_close(s[1].numpy(), state[1].numpy()[0])


CELL_CASES = [
    # (class, kwargs, hx given, unbatched)
    ("RNNCell", {}, False, False),
    ("RNNCell", {}, True, False),
    ("RNNCell", {}, True, True),
    ("RNNCell", {"nonlinearity": "relu"}, True, False),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}, False, True),
    ("LSTMCell", {}, False, False),
    ("LSTMCell", {}, True, False),
    ("LSTMCell", {}, True, True),
    ("LSTMCell", {"bias": False}, True, False),
    ("LSTMCell", {}, False, True),
    ("GRUCell", {}, False, False),
    ("GRUCell", {}, True, False),
    ("GRUCell", {}, True, True),
    ("GRUCell", {"bias": False}, True, False),
]


@needs_torch
@pytest.mark.parametrize("case", CELL_CASES, ids=[f"{c[0]}-{c[1]}-hx={c[2]}-unbatched={c[3]}" for c in CELL_CASES])
def test_cells_match_torch(case):
    name, kw, with_state, unbatched = case
    torch.manual_seed(0)
    tm, m = getattr(torch.nn, name)(IN, HID, **kw), CELLS[name](IN, HID, **kw)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert repr(m) == repr(tm)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()}, strict=True)
    lead = () if unbatched else (BATCH,)
    arrays = [randn(*lead, IN)]
    if with_state:
        arrays += [randn(*lead, HID) for _ in range(2 if name == "LSTMCell" else 1)]

    def call(mod, xs):
        if not with_state:
            return mod(xs[0])
        return mod(xs[0], tuple(xs[1:]) if name == "LSTMCell" else xs[1])

    _compare(m, tm, arrays, call)


def test_cell_errors():
    m = RNNCell(IN, HID)
    with pytest.raises(
        ValueError, match=r"\(RNNCell 3 5\) got input \(2, 2, 3\), expected \(N, 3\) or unbatched \(3,\)"
    ):
        m(nb.zeros((2, 2, IN)))
    with pytest.raises(ValueError, match=r"got input \(2, 4\), expected \(N, 3\)"):
        m(nb.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"got input \(3, 5\), expected hx of shape \(2, 5\) for an input of shape"):
        m(nb.zeros((2, IN)), nb.zeros((3, HID)))
    with pytest.raises(ValueError, match=r"expected hx of shape \(5,\) for an input of shape \(3,\)"):
        m(nb.zeros((IN,)), nb.zeros((1, HID)))
    with pytest.raises(ValueError, match=r"expected hx of shape \(2, 5\)"):
        m(nb.zeros((2, IN)), nb.zeros((HID,)))
    with pytest.raises(TypeError, match="input must be a Tensor"):
        m(np.zeros((2, IN), np.float32))
    with pytest.raises(TypeError, match="hx must be a Tensor"):
        GRUCell(IN, HID)(nb.zeros((2, IN)), np.zeros((2, HID)))
    lstm = LSTMCell(IN, HID)
    with pytest.raises(TypeError, match=r"LSTMCell: hx must be a tuple \(h, c\)"):
        lstm(nb.zeros((2, IN)), nb.zeros((2, HID)))
    with pytest.raises(ValueError, match=r"expected c of shape \(2, 5\)"):
        lstm(nb.zeros((2, IN)), (nb.zeros((2, HID)), nb.zeros((2, 4))))
    with pytest.raises(ValueError, match="unknown nonlinearity 'gelu'"):
        RNNCell(IN, HID, nonlinearity="gelu")
    with pytest.raises(ValueError, match="hidden_size must be an int >= 1"):
        GRUCell(IN, 0)
    with pytest.raises(ValueError, match="input_size must be an int >= 0"):
        LSTMCell(-1, HID)
