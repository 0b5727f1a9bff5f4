"""nabla_nn transformer layers: TransformerEncoderLayer/Encoder, TransformerDecoderLayer/Decoder,
Transformer.

Against PyTorch (when installed, dropout=0): outputs and gradients (inputs and parameters)
after loading torch's state_dict, for post/pre-norm, relu/gelu, batch_first, masks, stacks
with a final norm. Without torch: causality and padding through gradients, deep copies,
shapes, masks, errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn

RNG = np.random.default_rng(1)
E, HEADS, FF = 8, 2, 16


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def causal(n: int) -> np.ndarray:
    return np.triu(np.full((n, n), -np.inf, np.float32), 1)


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def seq(n_batch: int, length: int, batch_first: bool) -> np.ndarray:
    return randn(n_batch, length, E) if batch_first else randn(length, n_batch, E)


def compare(tm, m, inputs, call, tol=1e-4):
    """Load tm's state_dict into m, then compare outputs and all gradients."""
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()}, strict=True)
    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    nin = [nb.tensor(a, requires_grad=True) for a in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to = tm(*tin, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in call.items()})
    no = m(*nin, **{k: nb.tensor(v) if isinstance(v, np.ndarray) else v for k, v in call.items()})
    assert no.shape == tuple(to.shape)
    assert_close(no.numpy(), to.detach().numpy(), tol)
    g = randn(*to.shape)
    (to * torch.tensor(g)).sum().backward()
    (no * nb.tensor(g)).sum().backward()
    for t, n in zip(tin, nin, strict=True):
        assert_close(n.grad.numpy(), t.grad.numpy(), tol)
    params = dict(m.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params[name].grad.numpy(), p.grad.numpy(), tol)


LAYER_OPTS = [
    {},
    {"batch_first": True, "norm_first": True},
    {"activation": "gelu", "batch_first": True},
    {"norm_first": True, "activation": "gelu", "bias": False},
]


def _ids(opts):
    return "-".join(f"{k}={v}" for k, v in opts.items()) or "default"


@needs_torch
@pytest.mark.parametrize("opts", LAYER_OPTS, ids=_ids)
def test_encoder_layer_matches_torch(opts):
    torch.manual_seed(0)
    tm = torch.nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **opts)
    m = nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **opts)
    bf = opts.get("batch_first", False)
    compare(tm, m, [seq(3, 5, bf)], {"src_key_padding_mask": RNG.random((3, 5)) < 0.3})
    compare(tm, m, [seq(3, 5, bf)], {"src_mask": randn(5, 5)})
    compare(tm, m, [randn(5, E)], {"src_mask": RNG.random((5, 5)) < 0.3})  # unbatched


@needs_torch
@pytest.mark.parametrize("opts", LAYER_OPTS[:2], ids=_ids)
def test_encoder_stack_with_norm_matches_torch(opts):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **opts)
    tm = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(E), enable_nested_tensor=False)
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **opts), 2, norm=nn.LayerNorm(E))
    bf = opts.get("batch_first", False)
    compare(tm, m, [seq(2, 5, bf)], {"mask": causal(5), "is_causal": True})
    compare(tm, m, [seq(2, 5, bf)], {"mask": causal(5), "src_key_padding_mask": np.array([[0, 0, 0, 1, 1]] * 2, bool)})


@needs_torch
@pytest.mark.parametrize("opts", LAYER_OPTS[:3], ids=_ids)
def test_decoder_stack_matches_torch(opts):
    torch.manual_seed(0)
    layer = torch.nn.TransformerDecoderLayer(E, HEADS, FF, dropout=0.0, **opts)
    tm = torch.nn.TransformerDecoder(layer, 2, norm=torch.nn.LayerNorm(E))
    m = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, HEADS, FF, dropout=0.0, **opts), 2, norm=nn.LayerNorm(E))
    bf = opts.get("batch_first", False)
    memory_mask = RNG.random((4, 6)) < 0.2
    memory_mask[:, 0] = False
    call = {
        "tgt_mask": causal(4),
        "memory_mask": memory_mask,
        "tgt_key_padding_mask": np.array([[0, 0, 0, 1]] * 3, bool),
        "memory_key_padding_mask": np.array([[0, 0, 0, 0, 1, 1]] * 3, bool),
        "tgt_is_causal": True,
    }
    compare(tm, m, [seq(3, 4, bf), seq(3, 6, bf)], call)


@needs_torch
def test_transformer_matches_torch():
    torch.manual_seed(0)
    tm = torch.nn.Transformer(E, HEADS, 2, 2, FF, dropout=0.0, batch_first=True)
    m = nn.Transformer(E, HEADS, 2, 2, FF, dropout=0.0, batch_first=True)
    call = {
        "tgt_mask": causal(4),
        "src_key_padding_mask": np.array([[0, 0, 0, 0, 0, 1]] * 3, bool),
        "memory_key_padding_mask": np.array([[0, 0, 0, 0, 0, 1]] * 3, bool),
    }
    compare(tm, m, [randn(3, 6, E), randn(3, 4, E)], call, tol=2e-4)
    expected = torch.nn.Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(4).numpy(), expected)


# -- without torch ---------------------------------------------------------------------------------------
def test_submodule_names_and_deep_copies():
    layer = nn.TransformerEncoderLayer(E, HEADS, FF)
    names = [n for n, _ in layer.named_children()]
    assert names == ["self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    enc = nn.TransformerEncoder(layer, 3)
    assert "layers.2.self_attn.in_proj_weight" in enc.state_dict()
    w = [enc.layers[i].linear1.weight for i in range(3)] + [layer.linear1.weight]
    assert len({id(p) for p in w}) == 4  # independent copies, equal values
    assert_close(w[0].numpy(), w[3].numpy())
    with nb.no_grad():
        enc.layers[0].linear1.weight.mul_(0.0)
    assert np.abs(enc.layers[1].linear1.weight.numpy()).sum() > 0
    dec = nn.TransformerDecoderLayer(E, HEADS, FF)
    assert [n for n, _ in dec.named_children()] == [
        "self_attn", "multihead_attn", "linear1", "dropout", "linear2",
        "norm1", "norm2", "norm3", "dropout1", "dropout2", "dropout3",
    ]  # fmt: skip


def test_transformer_init_and_shapes():
    model = nn.Transformer(E, HEADS, 1, 2, FF, dropout=0.0)
    assert len(model.decoder.layers) == 2 and isinstance(model.encoder.norm, nn.LayerNorm)
    w = model.encoder.layers[0].linear1.weight.numpy()  # xavier_uniform_, not Linear's kaiming
    assert np.all(np.abs(w) <= math.sqrt(6 / (E + FF)))
    assert np.all(model.decoder.norm.weight.numpy() == 1)
    out = model(nb.ones(6, 3, E), nb.ones(4, 3, E))
    assert out.shape == (4, 3, E)
    assert model(nb.ones(6, E), nb.ones(4, E)).shape == (4, E)  # unbatched


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.is_realized and mask.dtype == nb.float32
    expected = [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]
    np.testing.assert_array_equal(mask.numpy(), expected)


def test_encoder_causal_mask_through_gradients():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, norm_first=True), 2)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    for t in (0, 3):
        x = nb.tensor(randn(5, 2, E), requires_grad=True)
        enc(x, mask=mask, is_causal=True)[t].sum().backward()
        g = np.abs(x.grad.numpy()).sum(axis=(1, 2))
        assert np.all(g[t + 1 :] == 0) and np.all(g[: t + 1] > 0), (t, g)


def test_decoder_sees_all_memory_but_no_future_targets():
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, HEADS, FF, dropout=0.0, batch_first=True), 2)
    tgt = nb.tensor(randn(2, 4, E), requires_grad=True)
    mem = nb.tensor(randn(2, 6, E), requires_grad=True)
    out = dec(tgt, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), tgt_is_causal=True)
    (out[:, 1] * nb.tensor(randn(2, E))).sum().backward()  # (a plain sum of a LayerNorm output is constant)
    g_tgt = np.abs(tgt.grad.numpy()).sum(axis=(0, 2))
    assert np.all(g_tgt[2:] == 0) and np.all(g_tgt[:2] > 0)
    assert np.all(np.abs(mem.grad.numpy()).sum(axis=(0, 2)) > 0)


def test_key_padding_hides_padded_positions():
    layer = nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, batch_first=True, activation="gelu")
    x = nb.tensor(randn(2, 5, E), requires_grad=True)
    pad = np.zeros((2, 5), bool)
    pad[0, 3:] = True
    out = layer(x, src_key_padding_mask=nb.tensor(pad))
    (out[0, :3] * nb.tensor(randn(3, E))).sum().backward()  # (a plain sum of a LayerNorm output is constant)
    assert np.all(x.grad.numpy()[0, 3:] == 0) and np.abs(x.grad.numpy()[0, :3]).sum() > 0


def test_callable_activation_and_dropout_modes():
    layer = nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.5, activation=nb.tanh)
    assert layer.activation is nb.tanh
    x = nb.tensor(randn(5, 2, E))
    train_out = layer(x).numpy()
    layer.eval()
    eval1, eval2 = layer(x).numpy(), layer(x).numpy()
    assert_close(eval1, eval2)
    assert not np.allclose(train_out, eval1)


def test_vmap_over_examples_matches_batch():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, batch_first=True), 2)
    x = nb.tensor(randn(3, 4, E))
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    per_example = nb.vmap(lambda a: enc(a, mask=mask))(x)  # each call sees an unbatched (L, E)
    assert_close(per_example.numpy(), enc(x, mask=mask).numpy())


def test_errors():
    with pytest.raises(ValueError, match="activation should be"):
        nn.TransformerEncoderLayer(E, HEADS, activation="swish")
    with pytest.raises(ValueError, match="divisible"):
        nn.TransformerEncoderLayer(10, 3)
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF), 0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF), 2)
    with pytest.raises(
        ValueError, match=r"\(TransformerEncoderLayer\) got input \(5, 2, 6\), expected src \(S, N, 8\)"
    ):
        enc(nb.ones(5, 2, 6))
    with pytest.raises(ValueError, match="needs attn_mask"):
        enc(nb.ones(5, 2, E), is_causal=True)
    model = nn.Transformer(E, HEADS, 1, 1, FF)
    with pytest.raises(ValueError, match="batch number"):
        model(nb.ones(6, 3, E), nb.ones(4, 2, E))
    with pytest.raises(ValueError, match="expected tgt"):
        model(nb.ones(6, 3, E), nb.ones(4, 3, 4))
    with pytest.raises(ValueError, match="sz must be"):
        nn.Transformer.generate_square_subsequent_mask(-1)
