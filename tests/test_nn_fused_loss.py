"""The fused softmax cross-entropy (`nabla_nn/functional/fused_loss.py`): values, gradients and
second derivatives equal the op-by-op composite path for every reduction, class weights,
ignore_index and label smoothing; vmap and weights that require grad take the composite path."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn.functional as F
from nabla_nn.functional import loss as loss_module

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 5)).astype(np.float32)
T = np.array([0, 4, 2, -100, 1, 3])
W = RNG.uniform(0.5, 2.0, 5).astype(np.float32)
G = RNG.standard_normal(6).astype(np.float32)
CONFIGS = [(red, eps, w) for red in ("mean", "sum", "none") for eps in (0.0, 0.2) for w in (False, True)]


@pytest.fixture
def composite(monkeypatch):
    """Switch cross_entropy to the op-by-op path (the reference)."""

    def use(on: bool) -> None:
        if on:
            monkeypatch.setattr(loss_module, "fused_cross_entropy", lambda *a: None)
        else:
            monkeypatch.undo()

    return use


def _loss_and_grad(red: str, eps: float, weighted: bool) -> tuple[np.ndarray, np.ndarray]:
    x = nb.Tensor.from_numpy(X, requires_grad=True)
    w = nb.Tensor.from_numpy(W) if weighted else None
    out = F.cross_entropy(x, nb.Tensor.from_numpy(T), weight=w, reduction=red, label_smoothing=eps)
    out.backward(nb.Tensor.from_numpy(G) if red == "none" else None)
    return out.numpy(), x.grad.numpy()


@pytest.mark.parametrize(("red", "eps", "weighted"), CONFIGS)
def test_fused_cross_entropy_matches_the_composite_path(composite, red, eps, weighted):
    got = _loss_and_grad(red, eps, weighted)
    composite(True)
    want = _loss_and_grad(red, eps, weighted)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_fused_cross_entropy_records_one_op_forward_and_one_backward():
    x = nb.Tensor.from_numpy(X, requires_grad=True)
    loss = F.cross_entropy(x, nb.Tensor.from_numpy(T))
    assert loss._impl.output_refs.op.name == "softmax_cross_entropy"
    loss.backward()
    node = x.grad._impl.output_refs
    assert node.op.name == "call"  # the whole backward is one recorded op (autograd/replay.py)
    assert [step.op.name for step in node.kwargs["sub"].program.steps] == ["softmax_cross_entropy_grad"]


@pytest.mark.parametrize(("red", "weighted"), [("mean", True), ("none", False), ("sum", True)])
def test_second_derivatives_match_the_composite_path(composite, red, weighted):
    t, w = nb.Tensor.from_numpy(T), nb.Tensor.from_numpy(W) if weighted else None
    g = nb.Tensor.from_numpy(G)

    def f(v):
        out = F.cross_entropy(v, t, weight=w, reduction=red, label_smoothing=0.1)
        return (out * g).sum() if red == "none" else out

    x = nb.Tensor.from_numpy(X)
    fwd, rev = nb.jacfwd(nb.grad(f))(x).numpy(), nb.jacrev(nb.grad(f))(x).numpy()
    composite(True)
    want = nb.jacrev(nb.grad(f))(x).numpy()
    np.testing.assert_allclose(fwd, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rev, want, rtol=1e-4, atol=1e-6)


def test_jvp_of_the_loss_matches_the_composite_path(composite):
    t, tangent = nb.Tensor.from_numpy(T), nb.Tensor.from_numpy(RNG.standard_normal(X.shape).astype(np.float32))
    _, got = nb.jvp(lambda v: F.cross_entropy(v, t, reduction="none"), (nb.Tensor.from_numpy(X),), (tangent,))
    composite(True)
    _, want = nb.jvp(lambda v: F.cross_entropy(v, t, reduction="none"), (nb.Tensor.from_numpy(X),), (tangent,))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_one_dimensional_input_and_int32_targets():
    x = nb.Tensor.from_numpy(X[1])
    got = F.cross_entropy(x, nb.tensor(np.int32(4)), reduction="none")
    assert got.shape == ()
    z = X[1] - X[1].max()
    np.testing.assert_allclose(got.item(), -(z[4] - np.log(np.exp(z).sum())), rtol=1e-6)


def test_vmap_and_trainable_weights_take_the_composite_path():
    per_row = nb.vmap(lambda v, t: F.cross_entropy(v, t))(
        nb.Tensor.from_numpy(X), nb.Tensor.from_numpy(T[[0, 1, 2, 4, 4, 5]])
    )
    z = X - X.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(per_row.numpy(), -logp[np.arange(6), [0, 4, 2, 1, 1, 3]], rtol=1e-5)
    w = nb.Tensor.from_numpy(W, requires_grad=True)
    loss = F.cross_entropy(nb.Tensor.from_numpy(X), nb.Tensor.from_numpy(T), weight=w)
    assert loss._impl.output_refs.op.name != "softmax_cross_entropy"
    loss.backward()
    assert w.grad.shape == (5,)


@pytest.mark.parametrize(("red", "eps", "weighted"), [("mean", 0.0, False), ("mean", 0.2, True), ("sum", 0.2, True)])
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # 0 * inf in masked-out branches
def test_all_ignored_rows_get_zero_derivatives_on_both_paths(composite, red, eps, weighted):
    # the mean is 0 / 0 = nan, its gradient exactly 0 (PyTorch); first and second derivatives,
    # forward and reverse, of the fused op and of the composite path
    t, w = nb.Tensor.from_numpy(np.full(6, -100)), nb.Tensor.from_numpy(W) if weighted else None
    tangent = nb.Tensor.from_numpy(RNG.standard_normal(X.shape).astype(np.float32))

    def f(v):
        return F.cross_entropy(v, t, weight=w, reduction=red, label_smoothing=eps)

    for path in (False, True):
        composite(path)
        x = nb.Tensor.from_numpy(X)
        assert np.isnan(f(x).item()) == (red == "mean")
        np.testing.assert_array_equal(nb.grad(f)(x).numpy(), np.zeros_like(X))
        np.testing.assert_array_equal(nb.jvp(nb.grad(f), (x,), (tangent,))[1].numpy(), np.zeros_like(X))
        np.testing.assert_array_equal(nb.jacrev(nb.grad(f))(x).numpy(), np.zeros(X.shape * 2, np.float32))


@pytest.mark.parametrize(("red", "weighted"), [("mean", False), ("sum", True), ("none", False)])
def test_minus_inf_logits_of_non_target_classes_are_masked_out_on_both_paths(composite, red, weighted):
    # Logits set to -inf (invalid actions, a constrained vocabulary) take no probability; the
    # loss of a target elsewhere stays finite (it was 0 * -inf = nan on the fused path).
    x = X.copy()
    x[:, 1] = -np.inf
    t = np.array([0, 4, 2, -100, 0, 3])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    w = W if weighted else np.ones(5, np.float32)
    keep = t != -100
    per_row = np.where(keep, -logp[np.arange(6), np.where(keep, t, 0)] * w[np.where(keep, t, 0)], 0)
    want = {"none": per_row, "sum": per_row.sum(), "mean": per_row.sum() / w[t[keep]].sum()}[red]
    for path in (False, True):
        composite(path)
        xt = nb.Tensor.from_numpy(x, requires_grad=True)
        out = F.cross_entropy(
            xt, nb.Tensor.from_numpy(t), weight=nb.Tensor.from_numpy(W) if weighted else None, reduction=red
        )
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, err_msg=f"composite={path}")
        out.sum().backward()
        assert np.isfinite(xt.grad.numpy()).all() and (xt.grad.numpy()[:, 1] == 0).all()


@needs_torch
def test_jacrev_and_hessian_of_the_fused_loss_match_torch_func():
    """A batch of cotangents (jacrev's vmapped pullback) takes the composite gradient."""
    z, y = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, -1.0]], np.float32), np.array([0, 2])
    for kw in ({}, {"label_smoothing": 0.1, "reduction": "sum"}, {"ignore_index": 2}):
        got = nb.jacrev(lambda logits, kw=kw: F.cross_entropy(logits, nb.tensor(y), **kw))(nb.tensor(z))
        want = torch.func.jacrev(lambda logits, kw=kw: TF.cross_entropy(logits, torch.tensor(y), **kw))(torch.tensor(z))
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6, err_msg=str(kw))
        got = nb.hessian(lambda logits, kw=kw: F.cross_entropy(logits, nb.tensor(y), **kw))(nb.tensor(z))
        want = torch.func.hessian(lambda logits, kw=kw: TF.cross_entropy(logits, torch.tensor(y), **kw))(
            torch.tensor(z)
        )
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6, err_msg=str(kw))
