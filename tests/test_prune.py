"""nabla_nn.utils.prune: torch's mechanics (weight_orig / weight_mask / forward pre-hook,
PruningContainer, remove) and masks compared with torch.nn.utils.prune where installed."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim
from nabla_nn.utils import prune

if torch is not None:
    import torch.nn.utils.prune as tprune
else:
    tprune = None

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 4)).astype(np.float32)  # distinct magnitudes: no ties
CONV = RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)
X = RNG.standard_normal((2, 4)).astype(np.float32)


def _linear(weight: np.ndarray = W) -> nn.Linear:
    m = nn.Linear(weight.shape[1], weight.shape[0])
    m.weight.data = nb.tensor(weight)
    return m


def _pruned(mask: np.ndarray) -> int:
    return int((mask == 0).sum())


def test_l1_unstructured_reparametrizes_like_torch():
    m = _linear()
    weight = m.weight
    prune.l1_unstructured(m, "weight", amount=0.25)
    assert m.weight_orig is weight and "weight" not in dict(m.named_parameters())
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    mask = m.weight_mask.numpy()
    assert _pruned(mask) == 6 and np.abs(W[mask == 0]).max() < np.abs(W[mask == 1]).min()
    np.testing.assert_array_equal(m.weight.numpy(), W * mask)
    assert prune.is_pruned(nn.Sequential(m)) and not prune.is_pruned(_linear())


def test_the_hook_recomputes_the_weight_and_masks_the_gradient():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=5)
    opt = optim.SGD(m.parameters(), lr=0.1)
    m(nb.tensor(X)).sum().backward()
    mask = m.weight_mask.numpy()
    assert np.all(m.weight_orig.grad.numpy()[mask == 0] == 0) and np.any(m.weight_orig.grad.numpy() != 0)
    opt.step()
    m(nb.tensor(X))  # the pre-hook recomputes weight from the updated weight_orig
    np.testing.assert_allclose(m.weight.numpy(), m.weight_orig.numpy() * mask)


def test_repeated_pruning_applies_to_what_is_left():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)  # 12 of 24
    prune.l1_unstructured(m, "weight", amount=0.5)  # 6 of the 12 left
    assert _pruned(m.weight_mask.numpy()) == 18
    hooks = [h for h, *_ in m._forward_pre_hooks.values()]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    prune.ln_structured(m, "weight", amount=1, n=1, dim=0)  # one more row
    assert int((m.weight_mask.numpy().sum(1) == 0).sum()) >= 1


def test_remove_identity_random_and_custom_masks():
    m = prune.remove(prune.l1_unstructured(_linear(), "weight", 0.5), "weight")
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    assert _pruned(m.weight.numpy()) == 12 and not prune.is_pruned(m)
    assert prune.identity(_linear(), "bias").bias_mask.numpy().tolist() == [1.0] * 6
    nb.manual_seed(0)
    assert _pruned(prune.random_unstructured(_linear(), "weight", 7).weight_mask.numpy()) == 7
    rows = prune.random_structured(_linear(), "weight", 0.5, dim=0).weight_mask.numpy()
    assert sorted(rows.sum(1).tolist()) == [0.0] * 3 + [4.0] * 3
    custom = np.array([1, 0, 1, 0, 1, 0], np.float32)
    np.testing.assert_array_equal(prune.custom_from_mask(_linear(), "bias", custom).bias_mask.numpy(), custom)


def test_bad_arguments_raise_torchs_errors():
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range \[0, 1\]"):
        prune.l1_unstructured(_linear(), "weight", 1.5)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(_linear(), "weight", "half")
    m = _linear()
    with pytest.raises(ValueError, match="amount=30 should be smaller than the number of parameters to prune=24"):
        prune.l1_unstructured(m, "weight", 30)
    assert sorted(m.state_dict()) == ["bias", "weight"] and not m._forward_pre_hooks  # undone (torch's key order)
    assert isinstance(m.weight, nn.Parameter)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(_linear(), "bias", 1, n=2, dim=0)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(_linear(), "weight")


def _pair(weight: np.ndarray):
    ours = _linear(weight) if weight.ndim == 2 else nn.Conv2d(3, 4, 2)
    theirs = torch.nn.Linear(weight.shape[1], weight.shape[0]) if weight.ndim == 2 else torch.nn.Conv2d(3, 4, 2)
    ours.weight.data = nb.tensor(weight)
    theirs.weight.data = torch.tensor(weight)
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("amount", [0, 5, 0.3, 1.0])
def test_l1_unstructured_masks_match_torch(amount):
    ours, theirs = _pair(W)
    prune.l1_unstructured(ours, "weight", amount)
    tprune.l1_unstructured(theirs, "weight", amount)
    np.testing.assert_array_equal(ours.weight_mask.numpy(), theirs.weight_mask.numpy())


@needs_torch
@pytest.mark.parametrize(("amount", "n", "dim"), [(1, 2, 0), (0.5, 1, 1), (2, float("inf"), -1), (0.5, 3, 2)])
def test_ln_structured_masks_match_torch(amount, n, dim):
    ours, theirs = _pair(CONV)
    prune.ln_structured(ours, "weight", amount, n, dim)
    tprune.ln_structured(theirs, "weight", amount, n, dim)
    np.testing.assert_array_equal(ours.weight_mask.numpy(), theirs.weight_mask.numpy())


@needs_torch
def test_combined_and_global_pruning_match_torch():
    tp = tprune
    ours, theirs = _pair(W)
    for lib, m in ((prune, ours), (tp, theirs)):
        lib.l1_unstructured(m, "weight", 0.3)
        lib.ln_structured(m, "weight", 2, 2, 0)
        lib.l1_unstructured(m, "weight", 3)
    np.testing.assert_array_equal(ours.weight_mask.numpy(), theirs.weight_mask.numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    (a, b), (c, d) = _pair(W), _pair(CONV)
    prune.global_unstructured([(a, "weight"), (c, "weight")], prune.L1Unstructured, amount=0.4)
    tp.global_unstructured([(b, "weight"), (d, "weight")], tp.L1Unstructured, amount=0.4)
    np.testing.assert_array_equal(a.weight_mask.numpy(), b.weight_mask.numpy())
    np.testing.assert_array_equal(c.weight_mask.numpy(), d.weight_mask.numpy())
    tp.remove(theirs, "weight")
    prune.remove(ours, "weight")
    np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy())
