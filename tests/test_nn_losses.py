"""nabla_nn.functional losses: values and gradients against torch.nn.functional where torch is
installed and against NumPy formulas everywhere (cross_entropy's ignore_index, class weights,
label smoothing and probability targets; binary cross entropy's clamped logs; kl_div's
batchmean); argument errors; losses stay lazy and work under vmap and grad."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

RNG = np.random.default_rng(1)
REDUCTIONS = ["none", "mean", "sum"]


def _randn(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _close(a, b, tol: float = 1e-5) -> None:
    a = a.numpy() if isinstance(a, nb.Tensor) else np.asarray(a)
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _reduce(loss: np.ndarray, reduction: str) -> np.ndarray:
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _np_cross_entropy(x, t, w=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """PyTorch's rule, written out: class dim 1 (0 for unbatched input)."""
    cd = 0 if x.ndim == 1 else 1
    c = x.shape[cd]
    logp = np.moveaxis(_log_softmax(x.astype(np.float64), cd), cd, -1)
    w = np.ones(c) if w is None else w.astype(np.float64)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    wt = w[safe] * valid
    nll = -np.take_along_axis(logp, safe[..., None], -1)[..., 0] * wt
    smooth = -(logp * w).sum(-1) * valid
    loss = (1 - smoothing) * nll + smoothing / c * smooth
    return {"none": loss, "mean": loss.sum() / wt.sum(), "sum": loss.sum()}[reduction]


# -- regression losses: NumPy ----------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_numpy(reduction: str) -> None:
    x, y = _randn(4, 5, scale=2.0), _randn(4, 5, scale=2.0)
    d, ad = x - y, np.abs(x - y)
    a, b = nb.tensor(x), nb.tensor(y)
    _close(F.mse_loss(a, b, reduction=reduction), _reduce(d**2, reduction), 1e-5)
    _close(F.l1_loss(a, b, reduction=reduction), _reduce(ad, reduction), 1e-5)
    sl1 = np.where(ad < 0.5, 0.5 * d**2 / 0.5, ad - 0.25)
    _close(F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5), _reduce(sl1, reduction), 1e-5)
    hub = np.where(ad < 2.0, 0.5 * d**2, 2.0 * (ad - 1.0))
    _close(F.huber_loss(a, b, reduction=reduction, delta=2.0), _reduce(hub, reduction), 1e-5)
    w = np.abs(y)
    weighted = d**2 * w
    expected = weighted.sum() / w.sum() if reduction == "mean" else _reduce(weighted, reduction)
    _close(F.mse_loss(a, b, reduction=reduction, weight=nb.tensor(w)), expected, 1e-5)


def test_regression_loss_edge_cases() -> None:
    x, y = nb.tensor([0.0, 3.0]), nb.tensor([0.5, 0.0])
    assert F.smooth_l1_loss(x, y, beta=0.0).item() == pytest.approx(1.75)  # beta=0 is L1
    g = nb.grad(lambda a: F.l1_loss(a, nb.tensor([0.0, 1.0])))(nb.tensor([0.0, 3.0]))
    assert g.tolist() == [0.0, 0.5]  # sign(0) = 0, as PyTorch
    with pytest.warns(UserWarning, match="different to the input size"):
        out = F.mse_loss(nb.ones(3, 2), nb.zeros(2))
    assert out.item() == 1.0
    with pytest.warns(UserWarning, match="deprecated"):
        assert F.l1_loss(x, y, size_average=False).item() == pytest.approx(3.5)


# -- cross entropy / nll: NumPy --------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (2, 4, 3, 2)])
def test_cross_entropy_class_indices_numpy(reduction: str, smoothing: float, weighted: bool, shape: tuple) -> None:
    x = _randn(*shape, scale=2.0)
    t = RNG.integers(0, 4, (shape[0], *shape[2:]))
    t.flat[1] = -100
    t.flat[2] = 3  # ignored below with ignore_index=3 in the second call
    w = np.array([0.5, 1.0, 2.0, 1.5], np.float32) if weighted else None
    wt = nb.tensor(w) if weighted else None
    out = F.cross_entropy(nb.tensor(x), nb.tensor(t), wt, reduction=reduction, label_smoothing=smoothing)
    _close(out, _np_cross_entropy(x, t, w, -100, reduction, smoothing), 1e-5)
    t2 = np.where(t < 0, 0, t)
    out = F.cross_entropy(
        nb.tensor(x), nb.tensor(t2), wt, ignore_index=3, reduction=reduction, label_smoothing=smoothing
    )
    _close(out, _np_cross_entropy(x, t2, w, 3, reduction, smoothing), 1e-5)


def test_cross_entropy_unbatched_probability_targets_and_nll_numpy() -> None:
    x = _randn(5, scale=2.0)
    _close(F.cross_entropy(nb.tensor(x), nb.tensor(np.array(2))), -_log_softmax(x, 0)[2], 1e-5)
    xs, p = _randn(3, 5), np.abs(_randn(3, 5))
    p /= p.sum(1, keepdims=True)
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32)
    ps = p * 0.8 + 0.2 / 5
    expected = -(_log_softmax(xs, 1) * ps * w).sum(1)
    out = F.cross_entropy(nb.tensor(xs), nb.tensor(p), nb.tensor(w), reduction="none", label_smoothing=0.2)
    _close(out, expected, 1e-5)
    # mean over probability targets divides by N, not by the weights
    _close(F.cross_entropy(nb.tensor(xs), nb.tensor(p), nb.tensor(w), label_smoothing=0.2), expected.mean(), 1e-5)
    logp = _log_softmax(xs, 1)
    t = np.array([4, 0, 2])
    _close(F.nll_loss(nb.tensor(logp), nb.tensor(t), nb.tensor(w)), -(logp[range(3), t] * w[t]).sum() / w[t].sum())
    assert np.isnan(F.cross_entropy(nb.tensor(xs), nb.tensor(np.full(3, -100))).item())  # all ignored: 0 / 0


def test_cross_entropy_gradient_numpy_and_ignored_rows() -> None:
    x = _randn(4, 3)
    t = np.array([0, -100, 2, 1])
    g = nb.grad(lambda a: F.cross_entropy(a, nb.tensor(t)))(nb.tensor(x)).numpy()
    sm = np.exp(_log_softmax(x, 1))
    expected = sm - np.eye(3)[np.where(t < 0, 0, t)]
    expected[1] = 0.0  # an ignored target gets no gradient
    _close(g, expected / 3, 1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 4, 3)])
def test_all_ignored_targets_give_a_nan_mean_and_a_zero_gradient(smoothing: float, weighted: bool, shape) -> None:
    # an all-padding batch: the mean is 0 / 0 = nan, but (PyTorch's rule) the gradient is exactly
    # 0, so an optimizer step leaves the weights unchanged (it was nan: 0 * (1 / 0))
    x = _randn(*shape)
    t = nb.tensor(np.full(shape[:1] + shape[2:] if len(shape) > 1 else (), 1))
    w = nb.tensor(np.array([0.5, 1.0, 2.0, 1.5], np.float32)) if weighted else None

    def ce(a):
        return F.cross_entropy(a, t, w, ignore_index=1, label_smoothing=smoothing)

    def nll(a):
        return F.nll_loss(nb.log_softmax(a, axis=0 if len(shape) == 1 else 1), t, w, ignore_index=1)

    for f in (ce, nll):
        assert np.isnan(f(nb.tensor(x)).item())
        g = nb.grad(f)(nb.tensor(x)).numpy()
        np.testing.assert_array_equal(g, np.zeros(shape, np.float32))


def test_cross_entropy_is_lazy_and_vmaps() -> None:
    x, t = _randn(5, 4), RNG.integers(0, 4, 5)
    loss = F.cross_entropy(nb.tensor(x), nb.tensor(t), label_smoothing=0.1)
    assert not loss.is_realized  # part of the step's graph until something reads it
    per = nb.vmap(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1))(nb.tensor(x), nb.tensor(t))
    _close(per, _np_cross_entropy(x, t, None, -100, "none", 0.1), 1e-5)
    _close(loss, per.numpy().mean(), 1e-5)
    per_grads = nb.vmap(nb.grad(lambda a, b: F.cross_entropy(a, b)))(nb.tensor(x), nb.tensor(t)).numpy()
    _close(per_grads, np.exp(_log_softmax(x, 1)) - np.eye(4)[t], 1e-5)


def test_cross_entropy_errors() -> None:
    x = nb.ones(4, 3)
    with pytest.raises(ValueError, match=r"expected target shape \(4,\) for input of shape \(4, 3\), got \(4, 1\)"):
        F.cross_entropy(x, nb.tensor(np.zeros((4, 1), np.int64)))
    with pytest.raises(TypeError, match="target must be an integer tensor for class indices"):
        F.cross_entropy(x, nb.tensor([0.0, 1.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="reduction must be one of 'none', 'mean', 'sum', got 'avg'"):
        F.cross_entropy(x, nb.tensor([0, 1, 2, 1]), reduction="avg")
    with pytest.raises(IndexError, match="target 3 is out of bounds for 3 classes"):
        F.cross_entropy(x, nb.tensor([0, 1, 3, 1]))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, nb.tensor([0, 1, 2, 1]), label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        F.cross_entropy(x, nb.tensor([0, 1, 2, 1]), nb.ones(4))
    with pytest.raises(TypeError, match="floating-point"):
        F.nll_loss(nb.tensor([[0, 1]]), nb.tensor([0]))
    with pytest.raises(ValueError, match="reduction must be one of 'none', 'mean', 'sum', 'batchmean'"):
        F.kl_div(x, x, reduction="max")


# -- binary losses: NumPy --------------------------------------------------------------------------
def test_binary_cross_entropy_clamps_logs_and_keeps_gradients_finite() -> None:
    p = np.array([0.0, 1.0, 0.3, 1.0, 0.0], np.float32)
    t = np.array([1.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    out = F.binary_cross_entropy(nb.tensor(p), nb.tensor(t), reduction="none")
    _close(out, [100.0, 100.0, -np.log(0.3), 0.0, 0.0], 1e-5)
    g = nb.grad(lambda a: F.binary_cross_entropy(a, nb.tensor(t)))(nb.tensor(p)).numpy()
    assert np.all(np.isfinite(g)) and g[2] == pytest.approx(-1 / 0.3 / 5, rel=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_numpy_and_stable(reduction: str) -> None:
    x = _randn(4, 3, scale=50.0)  # huge logits: the naive formula overflows
    t = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
    pw = np.array([1.0, 2.0, 0.5], np.float32)
    w = np.abs(_randn(4, 3))
    log_sig = -np.logaddexp(0, -x.astype(np.float64))
    loss = ((1 - t) * x - (1 + (pw - 1) * t) * log_sig) * w
    out = F.binary_cross_entropy_with_logits(
        nb.tensor(x), nb.tensor(t), nb.tensor(w), reduction=reduction, pos_weight=nb.tensor(pw)
    )
    assert np.all(np.isfinite(out.numpy()))
    _close(out, _reduce(loss, reduction), 1e-4)


def test_kl_div_batchmean_and_log_target() -> None:
    logq = _log_softmax(_randn(3, 4), 1)
    p = np.exp(_log_softmax(_randn(3, 4), 1))
    p[0, 0] = 0.0  # 0 * log(0) counts as 0
    pointwise = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0) - p * logq
    _close(F.kl_div(nb.tensor(logq), nb.tensor(p), reduction="batchmean"), pointwise.sum() / 3, 1e-5)
    _close(F.kl_div(nb.tensor(logq), nb.tensor(p), reduction="sum"), pointwise.sum(), 1e-5)
    with pytest.warns(UserWarning, match="batchmean"):
        _close(F.kl_div(nb.tensor(logq), nb.tensor(p)), pointwise.mean(), 1e-5)
    logp = _log_softmax(_randn(3, 4), 1)
    expected = (np.exp(logp) * (logp - logq)).sum() / 3
    _close(F.kl_div(nb.tensor(logq), nb.tensor(logp), reduction="batchmean", log_target=True), expected, 1e-5)
    g = nb.grad(lambda q, r: F.kl_div(q, r, reduction="batchmean"), argnums=(0, 1))(nb.tensor(logq), nb.tensor(p))
    _close(g[0], -p / 3, 1e-6)
    assert np.all(np.isfinite(g[1].numpy()))


def test_margin_and_embedding_losses_numpy() -> None:
    x1, x2 = _randn(5, 3), _randn(5, 3)
    y = np.array([1, -1, 1, -1, -1], np.float32)
    cos = (x1 * x2).sum(1) / np.sqrt(((x1**2).sum(1) + 1e-12) * ((x2**2).sum(1) + 1e-12))
    expected = np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0))
    _close(F.cosine_embedding_loss(nb.tensor(x1), nb.tensor(x2), nb.tensor(y), 0.1, reduction="none"), expected, 1e-5)
    a, b = x1[:, 0], x2[:, 0]
    _close(
        F.margin_ranking_loss(nb.tensor(a), nb.tensor(b), nb.tensor(y), 0.5),
        np.maximum(-y * (a - b) + 0.5, 0).mean(),
        1e-5,
    )
    _close(F.soft_margin_loss(nb.tensor(a), nb.tensor(y), reduction="sum"), np.log1p(np.exp(-y * a)).sum(), 1e-5)
    _close(
        F.hinge_embedding_loss(nb.tensor(a), nb.tensor(y), 0.7),
        np.where(y == 1, a, np.maximum(0.7 - a, 0)).mean(),
        1e-5,
    )
    # The target broadcasts, as in PyTorch: one label for a whole batch, a row of labels per column
    _close(F.margin_ranking_loss(nb.tensor(a), nb.tensor(b), nb.tensor(y[:1])), np.maximum(-(a - b), 0).mean(), 1e-5)
    _close(
        F.hinge_embedding_loss(nb.tensor(x1), nb.tensor(y[:3]), reduction="sum"),
        np.where(y[:3] == 1, x1, np.maximum(1.0 - x1, 0)).sum(),
        1e-5,
    )
    with pytest.raises(ValueError, match=r"do not broadcast together: input1 \(5,\), input2 \(5,\), target \(2,\)"):
        F.margin_ranking_loss(nb.tensor(a), nb.tensor(b), nb.tensor(y[:2]))
    _close(F.cosine_similarity(nb.tensor(x1), nb.tensor(x2)), cos, 1e-5)
    d = np.linalg.norm(x1 - x2 + 1e-6, axis=-1)
    _close(F.pairwise_distance(nb.tensor(x1), nb.tensor(x2)), d, 1e-5)


def test_likelihood_losses_numpy() -> None:
    x, c = _randn(4, 3), RNG.poisson(2.0, (4, 3)).astype(np.float32)
    _close(F.poisson_nll_loss(nb.tensor(x), nb.tensor(c)), (np.exp(x) - c * x).mean(), 1e-5)
    mu, v = _randn(4, 3), np.abs(_randn(4, 3)) + 0.1
    y = _randn(4, 3)
    expected = 0.5 * (np.log(v) + (mu - y) ** 2 / v) + 0.5 * np.log(2 * np.pi)
    _close(F.gaussian_nll_loss(nb.tensor(mu), nb.tensor(y), nb.tensor(v), full=True, reduction="none"), expected, 1e-5)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(nb.tensor(mu), nb.tensor(y), nb.ones(2, 2))


def test_loss_argument_errors() -> None:
    x = nb.ones(2, 3)
    with pytest.raises(ValueError, match=r"target shape \(3, 2\) must equal input shape \(2, 3\)"):
        F.binary_cross_entropy(x * 0.5, nb.ones(3, 2))
    with pytest.raises(ValueError, match=r"target shape \(2,\) must equal input shape \(2, 3\)"):
        F.binary_cross_entropy_with_logits(x, nb.ones(2))
    with pytest.raises(ValueError, match="reduction must be one of 'none', 'mean', 'sum', got 'batchmean'"):
        F.mse_loss(x, x, reduction="batchmean")
    with pytest.raises(ValueError, match="delta must be positive"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(TypeError, match="input must be a Tensor"):
        F.l1_loss(np.ones(3), x)
    with pytest.raises(ValueError, match=r"weight shape \(3,\) must equal input shape \(2, 3\)"):
        F.mse_loss(x, x, weight=nb.ones(3))


# -- against torch -----------------------------------------------------------------------------------
def _grads_vs_torch(nf, tf, arrays: list, argnums: tuple, tol: float = 1e-4) -> None:
    got = nb.grad(nf, argnums=argnums)(*[nb.tensor(a) for a in arrays])
    got = got if isinstance(got, tuple) else (got,)
    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(arrays)]
    tf(*ts).backward()
    for g, i in zip(got, argnums, strict=True):
        _close(g, ts[i].grad, tol)


def _ce_pair(t: np.ndarray, w: np.ndarray | None, scale: np.ndarray, args: dict) -> tuple:
    """nabla and torch cross_entropy, weighted by `scale`, as functions of the logits."""

    def nf(a):
        loss = F.cross_entropy(a, nb.tensor(t), None if w is None else nb.tensor(w), **args)
        return (loss * nb.tensor(scale)).sum()

    def tf(a):
        loss = TF.cross_entropy(a, torch.tensor(t), None if w is None else torch.tensor(w), **args)
        return (loss * torch.tensor(scale)).sum()

    return nf, tf


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("shape", [(5,), (6, 4), (2, 4, 3), (2, 4, 2, 3)])
def test_cross_entropy_matches_torch(reduction: str, smoothing: float, shape: tuple) -> None:
    x = _randn(*shape, scale=2.0)
    c = 4 if len(shape) > 1 else 5
    t = RNG.integers(0, c, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if t.ndim:
        t.flat[0] = -100
    w = np.linspace(0.5, 2.0, c, dtype=np.float32)
    args = dict(reduction=reduction, label_smoothing=smoothing)
    scale = _randn(*np.shape(TF.cross_entropy(torch.tensor(x), torch.tensor(t), **args)))
    for wt in (None, w):
        nf, tf = _ce_pair(t, wt, scale, args)
        _close(nf(nb.tensor(x)), tf(torch.tensor(x)), 1e-5)
        _grads_vs_torch(nf, tf, [x], (0,))
    p = np.exp(_log_softmax(_randn(*shape), 0 if len(shape) == 1 else 1)).astype(np.float32)
    _grads_vs_torch(
        lambda a, q: (F.cross_entropy(a, q, nb.tensor(w), **args) * nb.tensor(scale)).sum(),
        lambda a, q: (TF.cross_entropy(a, q, torch.tensor(w), **args) * torch.tensor(scale)).sum(),
        [x, p],
        (0, 1),
    )


@needs_torch
@pytest.mark.parametrize(("fn", "smoothing"), [("cross_entropy", 0.0), ("cross_entropy", 0.2), ("nll_loss", 0.0)])
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # 0 * inf in masked-out branches
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 2)])
def test_ignored_and_zero_weight_targets_match_torch(fn: str, smoothing: float, shape: tuple) -> None:
    # the mean's denominator is 0: ignored targets get gradient 0, a zero-weight target nan
    x = _randn(*shape)
    n_targets = (shape[0] * int(np.prod(shape[2:])),) if len(shape) > 1 else ()
    w = np.array([0.0, 1.0, 2.0], np.float32)
    kw = {"label_smoothing": smoothing} if smoothing else {}
    cases = [(np.full(n_targets, -100), None), (np.full(n_targets, -100), w)]
    if n_targets and not smoothing:  # (with smoothing both libraries give a non-finite gradient)
        t = np.zeros(n_targets, np.int64)
        t[0] = -100
        cases.append((t, w))
    for t, wt in cases:
        t = t.reshape(shape[:1] + shape[2:] if len(shape) > 1 else ())
        xn, xt = nb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ln = getattr(F, fn)(xn, nb.tensor(t), None if wt is None else nb.tensor(wt), **kw)
        lt = getattr(TF, fn)(xt, torch.tensor(t), None if wt is None else torch.tensor(wt), **kw)
        ln.backward()
        lt.backward()
        assert np.isnan(ln.item()) and np.isnan(lt.item())
        np.testing.assert_array_equal(xn.grad.numpy(), xt.grad.numpy())


@needs_torch
@pytest.mark.filterwarnings("ignore:.*batchmean")  # both libraries warn about kl_div's 'mean'
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_bce_kl_match_torch(reduction: str) -> None:
    x = _randn(6, 5, scale=2.0)
    logp, t, w = _log_softmax(x, 1).astype(np.float32), RNG.integers(0, 5, 6), np.linspace(1, 2, 5, dtype=np.float32)
    t[0] = 2
    _close(
        F.nll_loss(nb.tensor(logp), nb.tensor(t), nb.tensor(w), ignore_index=2, reduction=reduction),
        TF.nll_loss(torch.tensor(logp), torch.tensor(t), torch.tensor(w), ignore_index=2, reduction=reduction),
    )
    prob = (1 / (1 + np.exp(-x))).astype(np.float32)
    tb = (RNG.uniform(size=x.shape) > 0.5).astype(np.float32)
    _grads_vs_torch(
        lambda a: F.binary_cross_entropy(a, nb.tensor(tb), nb.tensor(w), reduction=reduction).sum(),
        lambda a: TF.binary_cross_entropy(a, torch.tensor(tb), torch.tensor(w), reduction=reduction).sum(),
        [prob],
        (0,),
    )
    _grads_vs_torch(
        lambda a, b: F.binary_cross_entropy_with_logits(
            a * 20.0, b, reduction=reduction, pos_weight=nb.tensor(w)
        ).sum(),
        lambda a, b: TF.binary_cross_entropy_with_logits(
            a * 20.0, b, reduction=reduction, pos_weight=torch.tensor(w)
        ).sum(),
        [x, tb],
        (0, 1),
    )
    q = np.exp(_log_softmax(_randn(6, 5), 1)).astype(np.float32)
    for red in (reduction, "batchmean"):
        for log_target, target in ((False, q), (True, np.log(q))):
            _grads_vs_torch(
                lambda a, b: F.kl_div(a, b, reduction=red, log_target=log_target).sum(),  # noqa: B023
                lambda a, b: TF.kl_div(a, b, reduction=red, log_target=log_target).sum(),  # noqa: B023
                [logp, target],
                (0, 1),
            )


LOSSES = [
    ("mse_loss", {}),
    ("l1_loss", {}),
    ("smooth_l1_loss", {"beta": 0.5}),
    ("smooth_l1_loss", {"beta": 0.0}),
    ("huber_loss", {"delta": 0.7}),
    ("soft_margin_loss", {}),
    ("hinge_embedding_loss", {"margin": 0.5}),
    ("multilabel_soft_margin_loss", {}),
    ("poisson_nll_loss", {"full": True}),
    ("poisson_nll_loss", {"log_input": False}),
]


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("name", "kwargs"), LOSSES)
def test_pointwise_losses_match_torch(name: str, kwargs: dict, reduction: str) -> None:
    x, y = _randn(4, 5, scale=2.0), _randn(4, 5, scale=2.0)
    if name in ("soft_margin_loss", "hinge_embedding_loss"):
        y = np.sign(y)
    elif name == "multilabel_soft_margin_loss":
        y = (y > 0).astype(np.float32)
    elif name == "poisson_nll_loss":
        y = RNG.poisson(2.0, y.shape).astype(np.float32)
        x = np.abs(x) + 0.1 if not kwargs.get("log_input", True) else x
    args = dict(kwargs, reduction=reduction)
    _close(
        getattr(F, name)(nb.tensor(x), nb.tensor(y), **args),
        getattr(TF, name)(torch.tensor(x), torch.tensor(y), **args),
        1e-4,
    )
    _grads_vs_torch(
        lambda a: getattr(F, name)(a, nb.tensor(y), **args).sum(),
        lambda a: getattr(TF, name)(a, torch.tensor(y), **args).sum(),
        [x],
        (0,),
    )


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pair_and_triplet_losses_match_torch(reduction: str) -> None:
    a, b, c = _randn(6, 4), _randn(6, 4), _randn(6, 4)
    y = np.sign(_randn(6))
    _grads_vs_torch(
        lambda p, q: F.cosine_embedding_loss(p, q, nb.tensor(y), 0.2, reduction=reduction).sum(),
        lambda p, q: TF.cosine_embedding_loss(p, q, torch.tensor(y), 0.2, reduction=reduction).sum(),
        [a, b],
        (0, 1),
    )
    _grads_vs_torch(
        lambda p, q: F.margin_ranking_loss(p, q, nb.tensor(y), 0.3, reduction=reduction).sum(),
        lambda p, q: TF.margin_ranking_loss(p, q, torch.tensor(y), 0.3, reduction=reduction).sum(),
        [a[:, 0], b[:, 0]],
        (0, 1),
    )
    for swap in (False, True):
        _grads_vs_torch(
            lambda p, q, r: F.triplet_margin_loss(p, q, r, 2.0, swap=swap, reduction=reduction).sum(),  # noqa: B023
            lambda p, q, r: TF.triplet_margin_loss(p, q, r, 2.0, swap=swap, reduction=reduction).sum(),  # noqa: B023
            [a, b, c],
            (0, 1, 2),
        )
    v = np.abs(_randn(6, 4)) + 0.05
    v[0, 0] = 0.0  # clamped to eps
    for var in (v, v[:, 0]):
        _grads_vs_torch(
            lambda p, q, s: F.gaussian_nll_loss(p, q, s, full=True, reduction=reduction).sum(),
            lambda p, q, s: TF.gaussian_nll_loss(p, q, s, full=True, reduction=reduction).sum(),
            [a, b, var],
            (0, 1, 2),
            1e-3,
        )


@needs_torch
def test_weighted_regression_losses_match_torch() -> None:
    x, y, w = _randn(3, 4), _randn(3, 4), np.abs(_randn(3, 4))
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        for reduction in REDUCTIONS:
            _close(
                getattr(F, name)(nb.tensor(x), nb.tensor(y), reduction=reduction, weight=nb.tensor(w)),
                getattr(TF, name)(torch.tensor(x), torch.tensor(y), reduction=reduction, weight=torch.tensor(w)),
            )


# -- linear_cross_entropy / LinearCrossEntropyLoss ----------------------------------------------
_LCE_CASES = {
    "basic": dict(x=(6, 8), w=(5, 8), target="index", kw={}),
    "unbatched": dict(x=(8,), w=(5, 8), target="index", kw={}),
    "k-dim-bias": dict(x=(6, 8), w=(5, 3, 8), target="index", kw={"linear_bias": (5, 3)}),
    "probabilities": dict(x=(6, 8), w=(5, 8), target="probs", kw={"label_smoothing": 0.1}),
    "weighted-ignored": dict(x=(6, 8), w=(5, 8), target="index", kw={"weight": (5,), "ignore_index": 2}),
    "sum-smoothed": dict(x=(6, 8), w=(5, 8), target="index", kw={"reduction": "sum", "label_smoothing": 0.2}),
    "none": dict(x=(6, 8), w=(5, 3, 8), target="index", kw={"reduction": "none"}),
}


@needs_torch
@pytest.mark.parametrize("case", list(_LCE_CASES))
def test_linear_cross_entropy_matches_torch(case):
    c = _LCE_CASES[case]
    rng = np.random.default_rng(1)
    x, w = _randn(*c["x"]), _randn(*c["w"], scale=0.5)
    logits_shape = (*c["x"][:-1], c["w"][0], *c["w"][1:-1])
    if c["target"] == "index":
        t = rng.integers(0, c["w"][0], size=logits_shape[:1] + logits_shape[2:] if len(c["x"]) == 2 else ())
    else:
        t = rng.dirichlet(np.ones(c["w"][0]), size=c["x"][0]).astype(np.float32)
    kw = {k: (_randn(*v) if isinstance(v, tuple) else v) for k, v in c["kw"].items()}
    if "weight" in kw:
        kw["weight"] = np.abs(kw["weight"]) + 0.1
    nkw = {k: nb.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    nx, nw = nb.tensor(x, requires_grad=True), nb.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    got = F.linear_cross_entropy(nx, nw, nb.tensor(t), **nkw)
    want = TF.linear_cross_entropy(tx, tw, torch.tensor(t), **tkw)
    _close(got.numpy(), want, 1e-5)
    got.sum().backward()
    want.sum().backward()
    _close(nx.grad.numpy(), tx.grad, 1e-4)
    _close(nw.grad.numpy(), tw.grad, 1e-4)


@needs_torch
def test_linear_cross_entropy_loss_module_matches_torch_and_loads_its_state_dict():
    theirs = torch.nn.LinearCrossEntropyLoss(8, 5, out_features=(3,), bias=True, label_smoothing=0.1)
    ours = nn.LinearCrossEntropyLoss(8, 5, out_features=(3,), bias=True, label_smoothing=0.1)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x, t = _randn(6, 8), np.random.default_rng(2).integers(0, 5, size=(6, 3))
    _close(ours(nb.tensor(x), nb.tensor(t)).numpy(), theirs(torch.tensor(x), torch.tensor(t)), 1e-5)


def test_linear_cross_entropy_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(nb.ones(2, 3, 4), nb.ones(5, 4), nb.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="last dimensions .in_features., got 4 and 3"):
        F.linear_cross_entropy(nb.ones(2, 4), nb.ones(5, 3), nb.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"expected linear_bias shape \(5,\), got \(4,\)"):
        F.linear_cross_entropy(nb.ones(2, 4), nb.ones(5, 4), nb.tensor([0, 1]), linear_bias=nb.ones(4))
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(nb.ones(4), nb.ones(5, 2, 4), nb.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target contains probabilities"):
        F.linear_cross_entropy(nb.ones(2, 4), nb.ones(5, 4), nb.ones(2, 5) / 5, ignore_index=0)


def test_nll_loss_2d_is_nll_loss_with_pytorchs_deprecation_warning():
    x = nb.tensor(_randn(2, 3, 4, 4))
    t = nb.tensor(np.random.default_rng(0).integers(0, 3, size=(2, 4, 4)))
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(ignore_index=1)
    np.testing.assert_allclose(loss(x, t).numpy(), nn.NLLLoss(ignore_index=1)(x, t).numpy())


def _edge_grads(nabla_loss, torch_loss, *arrays, grad_of=(0,)):
    """Loss values and the gradients of the arrays `grad_of` names, from nabla and from torch."""
    ts = [torch.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    ns = [nb.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    lt, ln = torch_loss(*ts), nabla_loss(*ns)
    lt.sum().backward()
    ln.sum().backward()
    np.testing.assert_allclose(ln.numpy(), lt.detach().numpy(), rtol=1e-6)
    return [(ns[i].grad.numpy(), ts[i].grad.numpy()) for i in grad_of]


@needs_torch
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_gradient_is_zero_at_the_margin(p):
    # z = margin - x[y] + x[i] == 0 exactly for classes 0 (row 0) and 1, 2 (row 1): torch counts only z > 0.
    x = np.array([[0.0, 1.0, 0.5], [1.2, 0.2, 0.2]], np.float32)
    t = np.array([1, 0])
    ((g, gt),) = _edge_grads(
        lambda a, b: F.multi_margin_loss(a, b, p=p), lambda a, b: TF.multi_margin_loss(a, b, p=p), x, t
    )
    np.testing.assert_allclose(g, gt, rtol=1e-6)
    if p == 1:
        np.testing.assert_allclose(g[0], [0.0, -1 / 6, 1 / 6], rtol=1e-6)  # was [1/6, -1/3, 1/6]


@needs_torch
def test_multilabel_margin_loss_gradient_is_zero_at_the_margin():
    x = np.array([[0.1, 0.2, 0.4, 0.8], [0.0, 1.0, 0.0, 5.0]], np.float32)  # row 1: 1 - (1 - 0) == 0
    t = np.array([[3, 0, -1, 1], [1, -1, 0, 0]])
    ((g, gt),) = _edge_grads(F.multilabel_margin_loss, TF.multilabel_margin_loss, x, t)
    np.testing.assert_allclose(g, gt, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
def test_binary_cross_entropy_input_gradient_at_0_and_1_matches_torch(dtype, reduction):
    # torch's input gradient is (x - y) / max(x * (1 - x), 1e-12): +-1e12 where x is 0 or 1 and
    # y disagrees, 0 where they agree (was [1, -1, 0, 0] for the first four).
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3, 1e-13, 0.5], dtype)
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.7, 1.0, 0.5], dtype)
    w = np.arange(1, 8).astype(dtype)
    ((g, gt), (gy, gyt)) = _edge_grads(
        lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction),
        lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction),
        p,
        y,
        w,
        grad_of=(0, 1),
    )
    np.testing.assert_allclose(g, gt, rtol=1e-6)
    # The target gradient -logit(x) is +-inf in torch at x == 0 or 1; nabla's stays finite there (+-100 * w).
    inner = np.isfinite(gyt)
    assert not inner[:4].any() and inner[4:].all()
    np.testing.assert_allclose(gy[inner], gyt[inner], rtol=1e-5)
    assert np.isfinite(gy).all()


@needs_torch
def test_binary_cross_entropy_second_derivative_inside_is_unchanged():
    x, y = np.array([0.2, 0.6], np.float64), np.array([1.0, 0.3], np.float64)
    hessian = nb.grad(lambda a: nb.sum(nb.grad(lambda b: F.binary_cross_entropy(b, nb.tensor(y), reduction="sum"))(a)))
    np.testing.assert_allclose(hessian(nb.tensor(x)).numpy(), y / x**2 + (1 - y) / (1 - x) ** 2, rtol=1e-10)


@needs_torch
@pytest.mark.parametrize("eps", [0.0, 1e-6])
def test_pairwise_distance_p0_keeps_autodiff_history(eps):
    # The count of nonzeros used to come back without history (requires_grad False).
    a = np.array([[0.0, 1.0, -2.0, np.nan, np.inf], [1.0, 2.0, 3.0, 4.0, 5.0]], np.float32)
    b = np.zeros_like(a)
    b[1] = a[1]
    xt, xn = torch.tensor(a, requires_grad=True), nb.tensor(a, requires_grad=True)
    out, ref = (
        F.pairwise_distance(xn, nb.tensor(b), p=0, eps=eps),
        TF.pairwise_distance(xt, torch.tensor(b), p=0, eps=eps),
    )
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    assert out.requires_grad and ref.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(xn.grad.numpy(), np.zeros_like(a))  # torch leaves .grad None: an undefined zero


@pytest.mark.parametrize("target_shape", [(3,), (4, 1), (1, 3)])
def test_soft_margin_losses_broadcast_the_target_like_torch(target_shape):
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    t = np.where(np.arange(np.prod(target_shape)).reshape(target_shape) % 2 == 0, 1.0, -1.0).astype(np.float32)
    got = F.soft_margin_loss(nb.tensor(x), nb.tensor(t)).item()
    multi = F.multilabel_soft_margin_loss(nb.tensor(x), nb.tensor((t > 0).astype(np.float32))).item()
    full = np.broadcast_to(t, x.shape)
    assert got == pytest.approx(np.mean(np.log1p(np.exp(-full * x))), rel=1e-5)
    if torch is not None:
        assert got == pytest.approx(TF.soft_margin_loss(torch.tensor(x), torch.tensor(t)).item(), rel=1e-5)
        want = TF.multilabel_soft_margin_loss(torch.tensor(x), torch.tensor((t > 0).astype(np.float32))).item()
        assert multi == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match=r"target of shape \(5,\) does not broadcast to input shape \(4, 3\)"):
        F.soft_margin_loss(nb.tensor(x), nb.ones(5))


def test_gaussian_nll_rejects_a_negative_variance_tensor():
    with pytest.raises(ValueError, match="gaussian_nll_loss: var has negative entry/entries"):
        F.gaussian_nll_loss(nb.tensor([0.0, 0.0]), nb.tensor([1.0, 1.0]), nb.tensor([1.0, -1.0]))


_PROMOTING = {  # torch promotes a wider float target in these losses (not in huber, hinge, soft margin)
    "mse_loss": lambda f, x, t: f.mse_loss(x, t),
    "l1_loss": lambda f, x, t: f.l1_loss(x, t, reduction="none"),
    "smooth_l1_loss": lambda f, x, t: f.smooth_l1_loss(x, t, beta=0.5),
    "binary_cross_entropy_with_logits": lambda f, x, t: f.binary_cross_entropy_with_logits(x, t),
    "kl_div": lambda f, x, t: f.kl_div(x, t, reduction="batchmean"),
    "poisson_nll_loss": lambda f, x, t: f.poisson_nll_loss(x, t),
    "gaussian_nll_loss": lambda f, x, t: f.gaussian_nll_loss(x, t, 0.5),
    "cross_entropy_probabilities": lambda f, x, t: f.cross_entropy(x, t),
    "multilabel_soft_margin_loss": lambda f, x, t: f.multilabel_soft_margin_loss(x, t),
    "margin_ranking_loss": lambda f, x, t: f.margin_ranking_loss(x[:, 0], x[:, 1], t[:, 0] * 2 - 1),
}


@pytest.mark.parametrize("name", sorted(_PROMOTING))
def test_a_wider_float_target_promotes_the_loss_as_torch(name):
    x, t = RNG.random((4, 3)).astype(np.float32), RNG.random((4, 3))
    xn = nb.tensor(x, requires_grad=True)
    out = _PROMOTING[name](F, xn, nb.tensor(t))
    assert out.dtype == nb.float64
    out.sum().backward()
    assert xn.grad.dtype == nb.float32
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        ref = _PROMOTING[name](TF, xt, torch.tensor(t))
        ref.sum().backward()
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-6)  # (parts in float32)
        np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_huber_and_hinge_losses_keep_the_input_dtype_as_torch():
    x, t = nb.tensor(RNG.random((4, 3)).astype(np.float32)), nb.tensor(RNG.random((4, 3)))
    assert F.huber_loss(x, t).dtype == nb.float32
    assert F.hinge_embedding_loss(x, t).dtype == nb.float32
    assert F.soft_margin_loss(x, t).dtype == nb.float32
