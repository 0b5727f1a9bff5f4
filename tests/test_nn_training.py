"""The one-model training step: in the plain PyTorch loop nothing is evaluated before
`opt.step()`, then forward, backward, every update and the loss are one graph with the same
structure from the first iteration on (1 miss, N-1 hits, 1 graph build), `loss.item()` after
the step costs no execution, and a learning-rate schedule never recompiles.

These run on the NumPy executor, which counts models exactly as MAX does;
`test_nn_training_max.py` checks the same on MAX.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.graph.engine import GRAPH
from nabla_optim.fused import fused_update_

RNG = np.random.default_rng(0)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(x.flatten(1))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 16, d: int = 16, seq: int = 8) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, 2, dim_feedforward=32, dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("positions", nb.Tensor.from_numpy(np.arange(seq, dtype=np.int64)), persistent=False)
        self.register_buffer(
            "causal", nb.Tensor.from_numpy(np.triu(np.full((seq, seq), -np.inf, np.float32), 1)), persistent=False
        )

    def forward(self, idx):
        h = self.tok(idx) + self.pos(self.positions)
        return self.head(self.encoder(h, mask=self.causal))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _classification(n: int, shape: tuple, classes: int, steps: int) -> list:
    teacher = RNG.standard_normal((int(np.prod(shape)), classes)).astype(np.float32)
    out = []
    for _ in range(steps):
        x = RNG.standard_normal((n, *shape)).astype(np.float32)
        out.append((nb.Tensor.from_numpy(x), nb.Tensor.from_numpy(np.argmax(x.reshape(n, -1) @ teacher, 1))))
    return out


def _text(steps: int, batch: int = 4, seq: int = 8, vocab: int = 16) -> list:
    out = []
    for _ in range(steps):
        start = RNG.integers(0, vocab, (batch, 1))
        tokens = (start + np.arange(seq + 1)) % vocab  # next token = this one + 1
        out.append((nb.Tensor.from_numpy(tokens[:, :-1]), nb.Tensor.from_numpy(tokens[:, 1:])))
    return out


def run_loop(model, opt, loss_fn, batches, scheduler=None) -> list[float]:
    nb.reset_cache_info()
    losses = []
    for i, (x, y) in enumerate(batches):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if i == 0:
            assert nb.cache_info().executions == 0, "nothing may be evaluated before opt.step()"
        opt.step()
        executed = nb.cache_info().executions
        losses.append(loss.item())
        assert nb.cache_info().executions == executed, "loss.item() after opt.step() must not execute again"
        if scheduler is not None:
            scheduler.step()
    info = nb.cache_info()
    n = len(batches)
    assert (info.misses, info.hits, info.graph_builds, info.executions) == (1, n - 1, 1, n)
    return losses


def test_mlp_with_adam_is_one_cached_model_per_step():
    model = mlp()
    losses = run_loop(
        model, optim.Adam(model.parameters(), lr=1e-2), F.cross_entropy, _classification(16, (12,), 4, 12)
    )
    assert losses[-1] < losses[0]


def test_a_step_leaves_its_updated_parameters_and_state_realized_and_untracked():
    model = mlp()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    for x, y in _classification(16, (12,), 4, 2):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        assert np.isfinite(loss.item())
    written = [t for p in model.parameters() for t in (p, *opt.state[p].values())]
    assert len(written) == 6 * 4 and all(t.is_realized for t in written)
    # (the step evaluates what its fused update writes at once: none of it is a pending result)
    assert not {id(t) for t in written} & GRAPH._pending.keys()
    # A fused update outside a step is lazy, and joins the next evaluation as usual.
    w = nb.Tensor.from_numpy(np.ones(3, np.float32))
    fused_update_(lambda xp, p, g, state, s: (p - g, state), [w], [nb.ones(3)], [()], {})
    assert not w.is_realized and id(w) in GRAPH._pending
    np.testing.assert_array_equal(w.numpy(), np.zeros(3, np.float32))


def test_cnn_with_sgd_momentum_and_batchnorm_is_one_cached_model_per_step():
    model = SmallCNN()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = run_loop(model, opt, F.cross_entropy, _classification(16, (1, 8, 8), 3, 2) * 5)
    assert losses[-1] < losses[0]
    assert int(model.bn.num_batches_tracked.item()) == 10  # buffer updates are part of the step


def test_transformer_with_adamw_and_cosine_schedule_is_one_cached_model_per_step():
    nb.manual_seed(0)
    model = TinyLM()
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    lrs = []
    losses = run_loop(model, opt, lm_loss, _text(10), scheduler=_Recorder(sched, opt, lrs))
    assert len(set(lrs)) == 10  # the learning rate changed every step, the model did not
    assert losses[-1] < losses[0]


class _Recorder:
    def __init__(self, sched, opt, lrs: list) -> None:
        self.sched, self.opt, self.lrs = sched, opt, lrs

    def step(self) -> None:
        self.lrs.append(self.opt.param_groups[0]["lr"])
        self.sched.step()


def test_eval_under_no_grad_between_steps_keeps_the_training_model_cached():
    model = mlp()
    opt = optim.Adam(model.parameters())
    batches = _classification(16, (12,), 4, 6)
    nb.reset_cache_info()
    for x, y in batches:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        model.eval()
        with nb.no_grad():
            model(x).numpy()
        model.train()
    info = nb.cache_info()
    assert (info.misses, info.hits) == (2, 10)  # one training model, one eval model


def test_checkpoint_resume_continues_bit_identically(tmp_path):
    batches = _classification(16, (12,), 4, 8)
    model = mlp()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    start = copy.deepcopy(model.state_dict())
    for i, (x, y) in enumerate(batches):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if i == 3:
            model.save_weights(tmp_path / "model.safetensors")
            saved_opt = copy.deepcopy(opt.state_dict())
    resumed = mlp()
    resumed.load_state_dict(start)
    resumed.load_weights(tmp_path / "model.safetensors")
    opt2 = optim.Adam(resumed.parameters(), lr=1e-2)
    opt2.load_state_dict(saved_opt)
    for x, y in batches[4:]:
        opt2.zero_grad()
        F.cross_entropy(resumed(x), y).backward()
        opt2.step()
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
def test_mlp_adam_training_matches_pytorch_step_for_step():
    batches = _classification(16, (12,), 4, 6)
    model = mlp()
    ref = torch.nn.Sequential(
        torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    )
    model.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    opt = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-2, weight_decay=1e-3)
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x.numpy())), torch.from_numpy(y.numpy()))
        ref_loss.backward()
        ref_opt.step()
        assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-5)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


class _WithConstants(nn.Module):
    """Tensors made with nabla ops in __init__ (a buffer, a plain attribute): pending until the
    first step evaluates them."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 4)
        self.register_buffer("scale", nb.ones(4) * 2)
        self.mask = nb.tril(nb.ones(4, 4))

    def forward(self, x):
        return (self.lin(x) * self.scale) @ self.mask


def test_constants_made_before_the_loop_leave_one_program_per_step():
    model, weight = _WithConstants(), nb.ones(4)  # a constant made before the loop, read by the loss
    opt = optim.SGD(model.parameters(), lr=0.05)
    nb.reset_cache_info()
    batches = _classification(16, (12,), 4, 5)
    for x, y in batches:
        opt.zero_grad()
        F.cross_entropy(model(x), y, weight=weight).backward()
        opt.step()
    info = nb.cache_info()
    # the constants are computed once on the host (one small program), then every step is one
    # cached program: without the split the first step folded them in and the second did not
    assert (info.misses, info.hits, info.executions) == (2, len(batches) - 1, len(batches) + 1)
    assert model.scale.is_realized and model.mask.is_realized and weight.is_realized


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.05, momentum=0.9), lambda p: optim.Adam(p, lr=1e-2)])
def test_bfloat16_parameters_with_optimizer_state_are_one_program_per_step(make):
    """An optimizer's bfloat16 initial state is a cast (NumPy has no bfloat16): computed on the
    host when made, so the first step reads it as an input as every later step does."""
    model = nn.Linear(8, 3).to(nb.bfloat16)
    opt = make(model.parameters())
    x = nb.tensor(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)).to(nb.bfloat16)
    nb.evaluate(x)
    misses = []
    for _ in range(4):
        opt.zero_grad()
        (model(x).float() ** 2).mean().backward()
        opt.step()
        misses.append(nb.cache_info().misses)
    assert misses[1:] == [misses[0]] * 3  # no new program after the first step
    assert all(t.is_realized and t.dtype == nb.bfloat16 for st in opt.state.values() for t in st.values() if t.ndim)
