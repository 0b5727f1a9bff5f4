"""Backward replay (nabla/core/autograd/replay.py): the second backward over a forward graph of
the same structure re-creates the recorded backward nodes instead of running the VJP rules.

Each test compares a replayed backward against the recorded one on the same inputs: the
gradients must be bit-identical and the graphs they evaluate must have the same cache key.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.autograd import backward_on_trace, replay
from nabla.core.graph.program import collect
from nabla.ops import base

RNG = np.random.default_rng(0)


def _grads_and_key(model: nn.Module, loss_fn, *args) -> tuple[list[np.ndarray], tuple, int]:
    """Run forward + backward once: (the .grad values, the gradients' graph key, replays so far)."""
    model.zero_grad()
    loss = loss_fn(model, *args)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    key = collect([g._impl for g in grads if not g._impl.is_realized]).key
    return [g.numpy() for g in grads], key, replay.TAPE.replays


def _check_replayed(model: nn.Module, loss_fn, *args) -> None:
    before = replay.TAPE.replays
    first, key1, n1 = _grads_and_key(model, loss_fn, *args)
    second, key2, n2 = _grads_and_key(model, loss_fn, *args)
    assert n1 == before, "the first backward over a structure records, it does not replay"
    assert n2 == n1 + 1, "the second backward over the same structure must replay"
    assert key1 == key2
    assert len(first) == len(second) and first
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def _x(*shape: int) -> nb.Tensor:
    return nb.tensor(RNG.standard_normal(shape).astype(np.float32))


class _Tied(nn.Module):
    """One weight used twice (its gradient sums two contributions), a multi-output split whose
    second half is unused, and an int64 target."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.proj = nn.Linear(8, 8)

    def forward(self, idx: nb.Tensor) -> nb.Tensor:
        h = F.gelu(self.proj(self.emb(idx)))
        a, _ = nb.split(h, 4, axis=-1)
        return a @ self.emb.weight[:, :4].T


def test_mlp_cnn_transformer_and_tied_weights_replay_bit_identically():
    mlp = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    _check_replayed(mlp, lambda m, x, y: F.cross_entropy(m(x), y), _x(5, 6), nb.tensor(np.array([0, 2, 1, 1, 0])))
    cnn = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 2))
    _check_replayed(cnn, lambda m, x: m(x).sum(), _x(3, 2, 4, 4))
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    _check_replayed(layer, lambda m, x: (m(x, src_mask=mask) ** 2).mean(), _x(2, 5, 8))
    idx = nb.tensor(RNG.integers(0, 11, (3, 5)))
    _check_replayed(_Tied(), lambda m, i: m(i).logsumexp(-1).sum(), idx)


def test_a_new_structure_records_again_and_gets_its_own_gradients():
    model = nn.Linear(4, 2)
    loss = lambda m, x: (m(x) ** 2).sum()  # noqa: E731
    _check_replayed(model, loss, _x(3, 4))
    x = _x(7, 4)  # another batch size: another structure
    before = replay.TAPE.replays
    grads, _, n = _grads_and_key(model, loss, x)
    assert n == before
    w, b = model.weight.numpy(), model.bias.numpy()
    y = x.numpy() @ w.T + b
    np.testing.assert_allclose(grads[0], 2 * y.T @ x.numpy(), rtol=1e-5)
    np.testing.assert_allclose(grads[1], 2 * y.sum(0), rtol=1e-5)


def test_replayed_backward_releases_the_graph_like_the_recorded_one():
    model = nn.Linear(3, 1)
    x = _x(2, 3)
    for _ in range(2):
        loss = model(x).sum()
        loss.backward()
    assert replay.TAPE.replays >= 1
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    model.zero_grad()
    loss = model(x).sum()
    loss.backward(retain_graph=True)
    loss.backward()  # retained: a second pass accumulates
    np.testing.assert_allclose(model.bias.grad.numpy(), [4.0])


def test_gradients_accumulate_and_grad_transform_replays():
    w = nb.tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
    for _ in range(3):
        (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * w.numpy())
    f = lambda v: (nb.sin(v) * v).sum()  # noqa: E731
    ddf = nb.grad(lambda v: nb.grad(f)(v).sum())  # second order: create_graph backwards
    v = nb.tensor(np.array([0.3, -1.1], np.float32))
    before = replay.TAPE.replays
    first, second = ddf(v).numpy(), ddf(v).numpy()
    assert replay.TAPE.replays > before
    x = v.numpy()
    np.testing.assert_allclose(first, 2 * np.cos(x) - x * np.sin(x), rtol=1e-5)
    np.testing.assert_array_equal(first, second)


def _custom(name: str, vjp) -> object:
    return nb.custom_op(name, abstract_eval=lambda x: x, numpy_kernel=lambda x: 2 * x, vjp=vjp)


@pytest.mark.parametrize(
    "vjp",
    [
        # reads a tensor made outside any op: the plan could not name it
        lambda p, c, o: [c[0] * nb.tensor(np.float32(2.0))],
        # reads a value while differentiating: its nodes may depend on it
        lambda p, c, o: [c[0] * (2.0 if float(c[0].sum().item()) == float(c[0].sum().item()) else 0.0)],
        # reads the value of a realized input (no evaluation): same
        lambda p, c, o: [c[0] * (2.0 if p[0].numpy().size else 0.0)],
    ],
    ids=["outside-tensor", "evaluates", "reads-realized"],
)
def test_backwards_that_cannot_be_replayed_run_their_rules_every_time(vjp):
    double = _custom(f"replay_double_{len(replay._PLANS)}", vjp)
    w = nb.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    before = replay.TAPE.replays
    for _ in range(3):
        w.grad = None
        (double(w) * w).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), 4 * w.numpy())
    assert replay.TAPE.replays == before


def test_training_loop_replays_every_step_after_the_first():
    nb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    x, y = _x(16, 4), _x(16, 1)
    before = replay.TAPE.replays
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert replay.TAPE.replays == before + 5
    assert losses[-1] < losses[0]


def test_freezing_a_parameter_changes_the_signature():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = _x(5, 3)
    _check_replayed(model, lambda m, v: m(v).sum(), x)
    model[0].weight.requires_grad_(False)
    model.zero_grad()
    model(x).sum().backward()
    assert model[0].weight.grad is None
    assert model[0].bias.grad is not None and model[2].weight.grad is not None
    # a leaf that enters a differentiated node directly, frozen after the structure was recorded
    a, b = (nb.tensor(np.array([2.0, 3.0], np.float32), requires_grad=True) for _ in range(2))
    for _ in range(2):
        (a * b).sum().backward()
    a.requires_grad_(False)
    loss = (a * b).sum()
    grads = backward_on_trace([loss._impl], [nb.ones_like(loss)])
    assert list(grads) == [id(b._impl)]
    np.testing.assert_allclose(grads[id(b._impl)][1].numpy(), a.numpy())


def test_backward_nodes_with_several_outputs_replay_each_output():
    def vjp(p, c, o):
        lo, hi = nb.split(c[0], 2)
        return [nb.concatenate([lo * 2, hi * 3])]

    op = nb.custom_op(
        "replay_two_slopes", abstract_eval=lambda x: x, numpy_kernel=lambda x: x * np.array([2, 2, 3, 3]), vjp=vjp
    )
    w = nb.tensor(np.array([1.0, 2.0, 3.0, 4.0], np.float32), requires_grad=True)
    before = replay.TAPE.replays
    for _ in range(2):
        w.grad = None
        (op(w) * w).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), [4.0, 8.0, 18.0, 24.0])
    assert replay.TAPE.replays == before + 1


def test_create_graph_is_part_of_the_signature():
    w = nb.tensor(np.array([0.5, -1.0], np.float32), requires_grad=True)
    for _ in range(2):
        w.grad = None
        (w**3).sum().backward()
        assert not w.grad.requires_grad
    w.grad = None
    (w**3).sum().backward(create_graph=True)  # same forward structure, rules recorded with grad on
    assert w.grad.requires_grad
    w.grad.sum().backward()  # d/dw sum(3 w^2) = 6 w, accumulated onto 3 w^2
    np.testing.assert_allclose(w.grad.numpy(), 3 * w.numpy() ** 2 + 6 * w.numpy(), rtol=1e-6)


def test_a_replayed_backward_is_one_call_op_and_so_is_the_recorded_one(monkeypatch):
    calls: list[str] = []
    original = base.Operation._record  # every op call records through it

    def counting(self, *args):
        calls.append(self.name)
        return original(self, *args)

    monkeypatch.setattr(base.Operation, "_record", counting)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    x, y = _x(5, 6), nb.tensor(np.array([0, 2, 1, 1, 0]))
    keys = []
    for _ in range(3):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        del calls[:]
        loss.backward()
        grads = [p.grad._impl for p in model.parameters()]
        keys.append(collect(grads).key)
    assert calls == ["call"], calls  # one op (the seed is a realized input, not a recorded fill)
    assert keys[0] == keys[1] == keys[2]
    assert sum(1 for node_key, _ in keys[0][0] if node_key[0] == "call") == 1


def test_a_gradient_that_is_the_seed_itself_replays():
    w, v = (nb.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True) for _ in range(2))
    seed = nb.tensor(np.array([0.5, -3.0], np.float32))
    before = replay.TAPE.replays
    for _ in range(3):
        w.grad = v.grad = None
        (w + v).backward(gradient=seed)  # add hands the seed on unchanged
        np.testing.assert_array_equal(w.grad.numpy(), seed.numpy())
        np.testing.assert_array_equal(v.grad.numpy(), seed.numpy())
    assert replay.TAPE.replays == before + 2


def test_a_recorded_plan_does_not_keep_the_first_steps_graph_alive():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = _x(3, 4)
    refs = []
    for _ in range(3):
        opt.zero_grad()
        hidden = model[1](model[0](x))
        refs.append((weakref.ref(hidden._impl), weakref.ref(model[0].weight._impl)))
        model[2](hidden).sum().backward()
        opt.step()
        del hidden
    gc.collect()
    assert refs[0][0]() is None, "the first step's activations are still referenced"
    assert refs[0][1]() is None, "the first step's parameter buffers are still referenced"
