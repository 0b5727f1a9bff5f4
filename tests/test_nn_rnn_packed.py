"""nabla_nn.utils.rnn (packed / padded sequences) and RNN, LSTM, GRU on PackedSequence input.

Against PyTorch (when installed): pack/pad round trips (batch_first, unsorted lengths,
total_length, padding_value, padding_side), and packed RNN/LSTM/GRU layers (layers, directions,
initial states, proj_size): packed outputs, batch_sizes, final states and the gradients of the
input, the initial states and every weight. Without torch: values written down from torch 2.13,
round-trip and final-state invariants, gradient flow through packing, and the error messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch
from test_nn_rnn import assert_close, assert_outputs_and_grads_match

import nabla as nb
import nabla_nn as nn
from nabla_nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

RNG = np.random.default_rng(7)
IN, HID, LEN = 3, 4, 5


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _fixed_weights(m) -> None:
    """Deterministic weights (the same formula gave the torch 2.13 values written down below)."""
    m.load_state_dict(
        {
            k: np.roll(np.linspace(-0.6, 0.6, int(np.prod(v.shape))), i).reshape(v.shape).astype(np.float32)
            for i, (k, v) in enumerate(m.state_dict().items())
        }
    )


def _states(state) -> list:
    return list(state) if isinstance(state, tuple) else [state]


# -- written-down values (torch 2.13) -----------------------------------------------------------------
def test_pack_and_pad_values():
    x = nb.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    p = pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
    assert p.data.tolist() == [4, 1, 3, 5, 2, 6]
    assert p.batch_sizes.tolist() == [3, 2, 1] and p.batch_sizes.dtype == nb.int64
    assert not p.batch_sizes.device.is_accelerator and p.batch_sizes.is_realized
    assert p.sorted_indices.tolist() == [2, 0, 1] and p.unsorted_indices.tolist() == [1, 2, 0]
    padded, lengths = pad_packed_sequence(p, batch_first=True, padding_value=-1, total_length=4)
    assert padded.tolist() == [[1, 2, -1, -1], [3, -1, -1, -1], [4, 5, 6, -1]]
    assert lengths.tolist() == [2, 1, 3]
    padded, _ = pad_packed_sequence(p)  # time-major
    assert padded.tolist() == [[1, 3, 4], [2, 0, 5], [0, 0, 6]]
    seqs = [nb.tensor([1, 2, 3]), nb.tensor([4, 5]), nb.tensor([6])]
    p = pack_sequence(seqs)
    assert p.data.tolist() == [1, 4, 6, 2, 5, 3] and p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert pad_sequence(seqs, batch_first=True, padding_value=9).tolist() == [[1, 2, 3], [4, 5, 9], [6, 9, 9]]
    assert pad_sequence(seqs, padding_side="left").tolist() == [[1, 0, 0], [2, 4, 0], [3, 5, 6]]
    with pytest.raises(RuntimeError, match=r"sequences\[0\] must be a tensor of shape \(L, \*\), got a 0-d tensor"):
        pad_sequence([nb.tensor(1.0), nb.tensor(2.0)])


def test_packed_gru_and_lstm_values():
    x = nb.tensor([[[1.0], [0.5]], [[9.0], [-1.0]], [[9.0], [2.0]]], requires_grad=True)  # 9.0: padding
    p = pack_padded_sequence(x, [1, 3], enforce_sorted=False)
    gru = nn.GRU(1, 2, bidirectional=True)
    _fixed_weights(gru)
    out, h = gru(p)
    assert isinstance(out, PackedSequence) and out.batch_sizes.tolist() == [2, 1, 1]
    assert out.sorted_indices.tolist() == [1, 0]
    assert_close(
        out.data.numpy(),
        [
            [-0.069690, 0.231371, 0.219689, 0.493057],
            [0.037452, 0.395760, -0.096220, 0.118737],
            [-0.323263, -0.287510, 0.500240, 0.478096],
            [0.065115, 0.438883, -0.289180, -0.000495],
        ],
    )
    assert_close(
        h.numpy(), [[[0.037452, 0.395760], [0.065115, 0.438883]], [[-0.096220, 0.118737], [0.219689, 0.493057]]]
    )
    (out.data.sum() + h.sum()).backward()
    assert_close(x.grad.numpy()[:, :, 0], [[0.091580, 0.412684], [0.0, 0.166943], [0.0, 0.383732]])
    assert_close(
        gru.weight_hh_l0_reverse.grad.numpy(),
        [[-0.020854, -0.012862], [0.025509, 0.032082], [0.232601, 0.115224]]
        + [[0.086236, -0.006536], [0.230131, 0.293676], [0.123830, 0.145078]],
    )
    lstm = nn.LSTM(1, 2)
    _fixed_weights(lstm)
    out, (h, c) = lstm(p)
    assert_close(
        out.data.numpy(),
        [[-0.179936, -0.095189], [-0.165267, -0.039691]] + [[-0.225844, -0.190890], [-0.288651, -0.049316]],
    )
    assert_close(h.numpy(), [[[-0.165267, -0.039691], [-0.288651, -0.049316]]])
    assert_close(c.numpy(), [[[-0.280026, -0.055207], [-0.457967, -0.062255]]])


# -- invariants ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pad_of_pack_is_the_masked_input(batch_first, enforce_sorted):
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 4]
    x = randn(5, LEN, 2) if batch_first else randn(LEN, 5, 2)
    xt = nb.tensor(x, requires_grad=True)
    p = pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    assert not p.data.is_realized  # one lazy gather
    padded, out_lengths = pad_packed_sequence(p, batch_first=batch_first, padding_value=-3.0, total_length=LEN + 1)
    valid = np.arange(LEN + 1)[None, :] < np.array(lengths)[:, None]  # (B, T)
    mask = (valid if batch_first else valid.T)[..., None]
    expected = np.pad(x, ((0, 1), (0, 0), (0, 0)) if not batch_first else ((0, 0), (0, 1), (0, 0)))
    assert_close(padded.numpy(), np.where(mask, expected, -3.0))
    assert out_lengths.tolist() == lengths
    p.data.sum().backward()  # gradients reach exactly the packed steps
    assert_close(xt.grad.numpy(), np.broadcast_to(mask[:LEN] if not batch_first else mask[:, :LEN], x.shape))


def test_sequence_round_trips():
    seqs = [randn(n, 2) for n in (3, 5, 1)]
    back = unpack_sequence(pack_sequence([nb.tensor(s) for s in seqs], enforce_sorted=False))
    for s, b in zip(seqs, back, strict=True):
        assert_close(b.numpy(), s)
    padded = pad_sequence([nb.tensor(s) for s in seqs])
    assert padded.shape == (5, 3, 2)
    for s, b in zip(seqs, unpad_sequence(padded, nb.tensor([3, 5, 1])), strict=True):
        assert_close(b.numpy(), s)
    left = pad_sequence([nb.tensor(s) for s in seqs], batch_first=True, padding_side="left").numpy()
    assert_close(left[0, 2:], seqs[0])
    assert_close(left[0, :2], 0.0)


def test_packed_sequence_is_a_namedtuple():
    data, bs = nb.ones(3, 2), nb.tensor([2, 1])
    p = PackedSequence(data, bs, nb.tensor([1, 0]))
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.unsorted_indices.tolist() == [1, 0]  # invert_permutation of sorted_indices
    d, b, s, u = p
    assert d is data and b is bs
    q = PackedSequence((data, bs))
    assert q.sorted_indices is None and q.batch_sizes is bs
    assert p.to(nb.float32) is p and p.double().data.dtype == nb.float64
    assert invert_permutation(nb.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2] and invert_permutation(None) is None
    leaves, tree = nb.tree_flatten(p)  # a pytree node: data is the only leaf
    assert leaves == [data]
    back = nb.tree_unflatten(tree, leaves)
    assert isinstance(back, PackedSequence) and back.sorted_indices.tolist() == [1, 0]


def test_compile_and_grad_take_packed_input():
    m = nn.LSTM(IN, HID, bidirectional=True)
    p = pack_padded_sequence(nb.tensor(randn(LEN, 3, IN)), [2, 5, 3], enforce_sorted=False)
    out, (h, _) = m(p)
    g = nb.grad(lambda mod, q: mod(q)[1][0].sum(), argnums=(0, 1))(m, p)
    assert isinstance(g[1], PackedSequence) and g[1].data.shape == (10, IN)
    assert g[1].batch_sizes.tolist() == [3, 3, 2, 1, 1]
    m.compile()  # batch sizes are host structure, part of the compiled signature
    out2, (h2, _) = m(p)
    assert isinstance(out2, PackedSequence) and out2.sorted_indices.tolist() == [1, 2, 0]
    assert_close(out2.data.numpy(), out.data.numpy())
    assert_close(h2.numpy(), h.numpy())


def _run_alone(m, seq: np.ndarray, states: list[np.ndarray]):
    """m on one sequence (L, IN) as a batch of one, with its own initial states."""
    hx = tuple(nb.tensor(s[:, None]) for s in states)
    out, state = m(nb.tensor(seq[:, None]), hx if len(hx) == 2 else hx[0])
    return out.numpy()[:, 0], [s.numpy()[:, 0] for s in _states(state)]


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_final_state_is_the_sequence_run_alone(cls):
    kw = {"num_layers": 2, "bidirectional": True} | ({"proj_size": 2} if cls == "LSTM" else {})
    m = getattr(nn, cls)(IN, HID, **kw)
    lengths = [2, 5, 1, 3]
    x = randn(LEN, 4, IN)
    out_size = kw.get("proj_size", HID)
    states = [randn(4, 4, out_size)] + ([randn(4, 4, HID)] if cls == "LSTM" else [])
    hx = tuple(nb.tensor(s) for s in states)
    out, state = m(pack_padded_sequence(nb.tensor(x), lengths, enforce_sorted=False), hx if len(hx) == 2 else hx[0])
    padded, _ = pad_packed_sequence(out)
    for b, n in enumerate(lengths):
        alone_out, alone_states = _run_alone(m, x[:n, b], [s[:, b] for s in states])
        assert_close(padded.numpy()[:n, b], alone_out, 1e-4)
        for got, want in zip(_states(state), alone_states, strict=True):
            assert_close(got.numpy()[:, b], want, 1e-4)


def test_full_lengths_match_the_padded_path():
    m = nn.GRU(IN, HID, num_layers=2, bidirectional=True, batch_first=True)
    x = nb.tensor(randn(3, LEN, IN))
    out, h = m(x)
    p_out, p_h = m(pack_padded_sequence(x, [LEN] * 3, batch_first=True))
    assert_close(pad_packed_sequence(p_out, batch_first=True)[0].numpy(), out.numpy())
    assert_close(p_h.numpy(), h.numpy())


# -- errors -------------------------------------------------------------------------------------------
def test_errors():
    x = nb.ones(4, 3, 2)
    with pytest.raises(
        RuntimeError, match=r"must be sorted in decreasing order when `enforce_sorted` is True.*\[2, 3, 1\]"
    ):
        pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match=r"greater than 0.*lengths=\[3, 0, 0\]"):
        pack_padded_sequence(x, [3, 0, 0])
    with pytest.raises(RuntimeError, match=r"must not exceed the input's sequence length 4, got lengths=\[5, 3, 1\]"):
        pack_padded_sequence(x, [5, 3, 1])
    with pytest.raises(
        RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)"
    ):
        pack_padded_sequence(x, [3, 3])
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D"):
        pack_padded_sequence(x, [[3, 2, 1]])
    with pytest.raises(RuntimeError, match=r"Cannot pack empty tensors \(batch_size=0"):
        pack_padded_sequence(nb.ones(3, 0, 2), [])
    with pytest.raises(ValueError, match=r"at least 2 dimensions, got \(4,\)"):
        pack_padded_sequence(nb.ones(4), [4])
    p = pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 3"):
        pad_packed_sequence(p, total_length=2)
    with pytest.raises(RuntimeError, match="padding_side to be one of left or right, but got middle"):
        pad_sequence([nb.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match=r"sequences\[1\] has shape \(3, 2\), expected \(L, \*\(3,\)\)"):
        pad_sequence([nb.ones(2, 3), nb.ones(3, 2)])
    with pytest.raises(RuntimeError, match="Expected iterable"):
        pad_sequence(5)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_sequence([nb.ones(2), nb.ones(3)])
    with pytest.raises(ValueError, match="got 2 lengths for a batch of 3"):
        unpad_sequence(x, [1, 2])
    lstm = nn.LSTM(2, HID)
    with pytest.raises(ValueError, match=r"expected PackedSequence data of shape \(sum\(lengths\), 2\)"):
        lstm(PackedSequence(nb.ones(6, 3), nb.tensor([3, 2, 1])))
    with pytest.raises(ValueError, match=r"expected h_0 of shape \(1, 3, 4\)"):
        lstm(p, (nb.zeros(1, 2, HID), nb.zeros(1, 2, HID)))


# -- against PyTorch ----------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(("lengths", "enforce_sorted"), [([5, 3, 3, 1], True), ([2, 5, 1, 3], False)])
@pytest.mark.parametrize(("total_length", "padding_value"), [(None, 0.0), (7, -1.5)])
def test_pack_pad_match_torch(batch_first, lengths, enforce_sorted, total_length, padding_value):
    tr = torch.nn.utils.rnn
    x = randn(4, LEN, 2, 3) if batch_first else randn(LEN, 4, 2, 3)
    tx, nx = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    tp = tr.pack_padded_sequence(tx, torch.tensor(lengths), batch_first, enforce_sorted)
    np_ = nn.utils.rnn.pack_padded_sequence(nx, nb.tensor(lengths), batch_first, enforce_sorted)
    assert_close(np_.data.numpy(), tp.data.detach().numpy())
    assert np_.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for n, t in ((np_.sorted_indices, tp.sorted_indices), (np_.unsorted_indices, tp.unsorted_indices)):
        assert (n is None and t is None) or n.tolist() == t.tolist()
    ty, tl = tr.pad_packed_sequence(tp, batch_first, padding_value, total_length)
    ny, nl = pad_packed_sequence(np_, batch_first, padding_value, total_length)
    assert_close(ny.numpy(), ty.detach().numpy())
    assert nl.tolist() == tl.tolist()
    g = randn(*ty.shape)
    (ty * torch.tensor(g)).sum().backward()
    (ny * nb.tensor(g)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy())


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_sequences_match_torch(batch_first, padding_side):
    tr = torch.nn.utils.rnn
    seqs = [randn(n, 2) for n in (2, 4, 1)]
    ty = tr.pad_sequence([torch.tensor(s) for s in seqs], batch_first, 0.5, padding_side)
    ny = pad_sequence([nb.tensor(s) for s in seqs], batch_first, 0.5, padding_side)
    assert_close(ny.numpy(), ty.numpy())
    tp = tr.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    np_ = pack_sequence([nb.tensor(s) for s in seqs], enforce_sorted=False)
    assert_close(np_.data.numpy(), tp.data.numpy())
    for n, t in zip(unpack_sequence(np_), tr.unpack_sequence(tp), strict=True):
        assert_close(n.numpy(), t.numpy())


RNN_CASES = [
    ("RNN", {}, False, True),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, True, False),
    ("GRU", {}, True, False),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}, False, False),
    ("LSTM", {}, False, True),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, True, False),
    ("LSTM", {"num_layers": 2, "proj_size": 2, "bidirectional": True}, True, False),
    ("LSTM", {"proj_size": 3, "bias": False}, False, False),
]


def _loss_inputs(cls, kw, with_state, batch):
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    arrays = [randn(LEN, batch, IN)]
    if with_state:
        arrays.append(randn(layers, batch, kw.get("proj_size") or HID))
        if cls == "LSTM":
            arrays.append(randn(layers, batch, HID))
    return arrays


@needs_torch
@pytest.mark.parametrize("case", RNN_CASES, ids=[f"{c[0]}-{c[1]}-hx={c[2]}-sorted={c[3]}" for c in RNN_CASES])
def test_packed_layers_match_torch(case):
    cls, kw, with_state, enforce_sorted = case
    torch.manual_seed(0)
    tm, m = getattr(torch.nn, cls)(IN, HID, **kw), getattr(nn, cls)(IN, HID, **kw)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()}, strict=True)
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 3]
    arrays = _loss_inputs(cls, kw, with_state, len(lengths))
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    nin = [nb.tensor(a, requires_grad=True) for a in arrays]

    def state(xs):
        return (tuple(xs[1:]) if cls == "LSTM" else xs[1]) if with_state else None

    tp = torch.nn.utils.rnn.pack_padded_sequence(tin[0], lengths, enforce_sorted=enforce_sorted)
    np_ = pack_padded_sequence(nin[0], lengths, enforce_sorted=enforce_sorted)
    t_out, t_state = tm(tp, state(tin))
    n_out, n_state = m(np_, state(nin))
    assert isinstance(n_out, PackedSequence) and n_out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    touts, nouts = [t_out.data, *_states(t_state)], [n_out.data, *_states(n_state)]
    assert_outputs_and_grads_match(touts, nouts, tin, nin, tm, m, randn)
