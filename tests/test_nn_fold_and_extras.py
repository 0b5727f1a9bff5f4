"""unfold / fold (im2col / col2im) and their layers, pdist, gumbel_softmax, and the multi-margin,
multi-label margin and triplet-with-distance losses and their layers.

Against PyTorch (when installed): values and input gradients for several kernel / stride /
padding / dilation settings, p and class weights, -1-terminated multi-label targets, the distance
swap and custom distance functions, and the layers' reprs. Without torch: hand-written NumPy
im2col / col2im and loss formulas, fold(unfold(x)) == x * overlap counts and the adjoint identity,
gumbel_softmax's rows, one-hots, straight-through gradient, seeding and sampling frequencies,
vmap / grad / compile, and argument errors.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
from nabla_nn.functional.extra import (
    gumbel_softmax,
    multi_margin_loss,
    multilabel_margin_loss,
    pdist,
    triplet_margin_with_distance_loss,
)
from nabla_nn.functional.fold import fold, unfold
from nabla_nn.functional.loss_margin import pairwise_distance
from nabla_nn.modules.distance import PairwiseDistance
from nabla_nn.modules.extra_losses import MultiLabelMarginLoss, MultiMarginLoss, TripletMarginWithDistanceLoss
from nabla_nn.modules.fold import Fold, Unfold

RNG = np.random.default_rng(11)
REDUCTIONS = ["none", "mean", "sum"]


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _close(a, b, tol: float = 1e-5) -> None:
    a = a.numpy() if isinstance(a, nb.Tensor) else np.asarray(a)
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _against_torch(nb_fn, torch_fn, arrays: list, grad: tuple = (0,), tol: float = 1e-5) -> None:
    """Same value, and the same gradients (of a random weighting of the output) for the arrays
    indexed by `grad`."""
    ts = [torch.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    xs = [nb.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    yt, y = torch_fn(*ts), nb_fn(*xs)
    _close(y, yt, tol)
    cot = _r(*yt.shape)
    (yt * torch.tensor(cot)).sum().backward()
    (y * nb.tensor(cot)).sum().backward()
    for i in grad:
        _close(xs[i].grad, ts[i].grad, tol)


# -- NumPy references ------------------------------------------------------------------------------
def _np_blocks(size, k, d, p, s) -> tuple[int, int]:
    return tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(size, k, d, p, s, strict=True))


def _np_unfold(x: np.ndarray, kernel_size, dilation=1, padding=0, stride=1) -> np.ndarray:
    """im2col with loops: row c * kh * kw + i * kw + j, column a * n_w + b."""
    k, d, p, s = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    batched = x.ndim == 4
    x = x if batched else x[None]
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    bh, bw = _np_blocks((h, w), k, d, p, s)
    out = np.zeros((n, c, k[0], k[1], bh, bw), x.dtype)
    for i, j, a, b in itertools.product(range(k[0]), range(k[1]), range(bh), range(bw)):
        out[:, :, i, j, a, b] = xp[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    out = out.reshape(n, c * k[0] * k[1], bh * bw)
    return out if batched else out[0]


def _np_fold(cols: np.ndarray, output_size, kernel_size, dilation=1, padding=0, stride=1) -> np.ndarray:
    """col2im with loops: every block element added at its position, then the padding cropped."""
    size, k, d, p, s = (_pair(v) for v in (output_size, kernel_size, dilation, padding, stride))
    batched = cols.ndim == 3
    cols = cols if batched else cols[None]
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    bh, bw = _np_blocks(size, k, d, p, s)
    blocks = cols.reshape(n, c, k[0], k[1], bh, bw)
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]), cols.dtype)
    for i, j, a, b in itertools.product(range(k[0]), range(k[1]), range(bh), range(bw)):
        out[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]] += blocks[:, :, i, j, a, b]
    out = out[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]
    return out if batched else out[0]


# (input shape, kernel_size, dilation, padding, stride)
FOLD_CASES = [
    ((2, 3, 5, 6), 2, 1, 0, 1),
    ((2, 3, 5, 6), (2, 3), 1, 0, 1),
    ((1, 2, 7, 6), 3, 1, 1, 2),
    ((2, 1, 8, 7), (2, 2), (2, 3), (1, 2), (1, 2)),
    ((2, 2, 6, 6), 3, 1, 0, 3),  # blocks tile the input
    ((3, 5, 5), 3, 1, 1, 1),  # unbatched
    ((2, 4, 4), (1, 2), 2, 0, (2, 1)),  # unbatched
]


@pytest.mark.parametrize("case", FOLD_CASES)
def test_unfold_and_fold_match_numpy(case):
    shape, k, d, p, s = case
    x = _r(*shape)
    cols = _np_unfold(x, k, d, p, s)
    _close(unfold(nb.tensor(x), k, d, p, s), cols, 0)
    y = _r(*cols.shape)
    _close(fold(nb.tensor(y), shape[-2:], k, d, p, s), _np_fold(y, shape[-2:], k, d, p, s), 1e-5)


@pytest.mark.parametrize("case", FOLD_CASES)
def test_fold_of_unfold_counts_overlaps_and_is_the_adjoint(case):
    shape, k, d, p, s = case
    x = _r(*shape)
    args = (k, d, p, s)
    counts = fold(unfold(nb.ones(*shape), *args), shape[-2:], *args).numpy()
    _close(fold(unfold(nb.tensor(x), *args), shape[-2:], *args), x * counts, 1e-5)
    # <unfold(x), y> == <x, fold(y)>, and each one's gradient is the other
    y = _r(*unfold(nb.tensor(x), *args).shape)
    lhs = float((unfold(nb.tensor(x), *args).numpy() * y).sum())
    rhs = float((x * fold(nb.tensor(y), shape[-2:], *args).numpy()).sum())
    assert abs(lhs - rhs) < 1e-3 * max(1.0, abs(lhs))
    g = nb.grad(lambda t: nb.sum(unfold(t, *args) * nb.tensor(y)))(nb.tensor(x))
    _close(g, fold(nb.tensor(y), shape[-2:], *args), 1e-5)
    g = nb.grad(lambda t: nb.sum(fold(t, shape[-2:], *args) * nb.tensor(x)))(nb.tensor(y))
    _close(g, unfold(nb.tensor(x), *args), 1e-5)


@needs_torch
@pytest.mark.parametrize("case", FOLD_CASES)
def test_unfold_and_fold_match_torch(case):
    shape, k, d, p, s = case
    x = _r(*shape)
    _against_torch(lambda t: unfold(t, k, d, p, s), lambda t: TF.unfold(t, k, d, p, s), [x])
    cols = _r(*TF.unfold(torch.tensor(x), k, d, p, s).shape)
    _against_torch(lambda t: fold(t, shape[-2:], k, d, p, s), lambda t: TF.fold(t, shape[-2:], k, d, p, s), [cols])
    _against_torch(
        lambda t: Fold(shape[-2:], k, d, p, s)(t), lambda t: torch.nn.Fold(shape[-2:], k, d, p, s)(t), [cols]
    )
    _against_torch(lambda t: Unfold(k, d, p, s)(t), lambda t: torch.nn.Unfold(k, d, p, s)(t), [x])


def test_unfold_fold_vmap_keywords_and_compile():
    x = _r(3, 2, 5, 5)
    kw = {"kernel_size": 2, "dilation": 1, "padding": 1, "stride": (1, 2)}
    per = nb.vmap(lambda t: unfold(t, **kw))(nb.tensor(x))
    _close(per, _np_unfold(x, **kw), 0)
    back = nb.vmap(lambda t: fold(t, output_size=(5, 5), **kw))(per)
    _close(back, _np_fold(_np_unfold(x, **kw), (5, 5), **kw), 1e-5)
    f = nb.compile(lambda t: fold(unfold(t, 3, stride=2), 5, 3, stride=2))
    _close(f(nb.tensor(x)), _np_fold(_np_unfold(x, 3, stride=2), 5, 3, stride=2), 1e-5)
    assert unfold(nb.zeros((0, 2, 4, 4)), 2).shape == (0, 8, 9)  # an empty batch, as PyTorch
    assert unfold(nb.tensor(np.arange(16).reshape(1, 4, 4)), 2).dtype == nb.int64


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: unfold(nb.ones(4, 4), 2), ValueError, r"unfold: expected a 3-D .* or 4-D .* got shape \(4, 4\)"),
        (lambda: unfold(nb.ones(1, 0, 4, 4), 2), ValueError, "non-zero"),
        (lambda: unfold(np.ones((1, 1, 4, 4)), 2), TypeError, "input must be a Tensor, got ndarray"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), 5), ValueError, r"spatial size \(4, 4\) .* gives \(0, 0\) sliding"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), 2, stride=0), ValueError, "stride must be positive, got 0"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), 2, padding=-1), ValueError, "padding must be non-negative, got -1"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), 2, dilation=(1, 0)), ValueError, "dilation must be positive"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), (2, 2, 2)), TypeError, r"kernel_size must be an int or a tuple of 2"),
        (lambda: unfold(nb.ones(1, 1, 4, 4), 2.0), TypeError, "kernel_size must be an int or a tuple of 2"),
        (lambda: fold(nb.ones(1, 1, 12, 20), (5, 6), 2), ValueError, r"fold: expected a 2-D .* got shape"),
        (lambda: fold(nb.ones(1, 13, 20), (5, 6), 2), ValueError, r"\(size 13\) must be divisible .* = 4"),
        (lambda: fold(nb.ones(1, 12, 21), (5, 6), 2), ValueError, r"sliding blocks 4 \* 5 = 20, got 21"),
        (lambda: fold(nb.ones(1, 12, 20), (5, 6, 7), 2), TypeError, "output_size must be an int or a tuple of 2"),
        (lambda: fold(nb.ones(1, 12, 20), 0, 2), ValueError, "output_size must be positive"),
        (lambda: fold(nb.ones(1, 12, 1), 1, 2), ValueError, r"output_size \(1, 1\) .* gives \(0, 0\) sliding"),
    ],
)
def test_fold_and_unfold_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_fold_layers_reprs_and_forward():
    assert repr(Unfold(2)) == "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))) == (
        "Unfold(kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2))"
    )
    assert repr(Fold((4, 5), 2)) == "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)"
    x = _r(2, 3, 4, 5)
    cols = Unfold(kernel_size=(2, 2), padding=1)(nb.tensor(x))
    _close(cols, _np_unfold(x, (2, 2), padding=1), 0)
    _close(Fold((4, 5), (2, 2), padding=1)(cols), _np_fold(cols.numpy(), (4, 5), (2, 2), padding=1), 1e-5)
    assert list(Fold(4, 2).state_dict()) == [] and list(Unfold(2).parameters()) == []


@needs_torch
def test_fold_layer_reprs_match_torch():
    for args, kwargs in [((2,), {}), (((2, 3),), {"dilation": 2, "padding": 1, "stride": (1, 2)})]:
        assert repr(Unfold(*args, **kwargs)) == repr(torch.nn.Unfold(*args, **kwargs))
    for args, kwargs in [(((4, 5), 2), {}), ((), {"output_size": 4, "kernel_size": (2, 3), "stride": 2})]:
        assert repr(Fold(*args, **kwargs)) == repr(torch.nn.Fold(*args, **kwargs))


# -- pdist ------------------------------------------------------------------------------------------
def _np_pdist(x: np.ndarray, p: float) -> np.ndarray:
    i, j = np.triu_indices(len(x), 1)
    d = np.abs(x[i] - x[j]).astype(np.float64)
    if p == 0:
        return (d != 0).sum(-1)
    if np.isinf(p):
        return d.max(-1)
    return (d**p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_pdist_matches_numpy(p):
    x = _r(5, 4)
    x[3] = x[1]  # a zero distance
    _close(pdist(nb.tensor(x), p), _np_pdist(x, p).astype(np.float32), 1e-5)
    g = nb.grad(lambda t: nb.sum(pdist(t, p)))(nb.tensor(x)).numpy()
    assert np.isfinite(g).all()
    assert pdist(nb.ones(1, 3)).shape == (0,) and pdist(nb.ones(0, 3)).shape == (0,)
    _close(pdist(nb.ones(3, 0), p), np.zeros(3, np.float32), 0)


@needs_torch
@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_pdist_matches_torch(p):
    x = _r(6, 3)
    x[4] = x[2]  # zero distance: PyTorch's zero gradient
    x[0, 1] = x[5, 1]  # one equal coordinate
    _against_torch(lambda t: pdist(t, p), lambda t: TF.pdist(t, p), [x])
    _against_torch(lambda t: pdist(t, p=p), lambda t: TF.pdist(t, p=p), [x.astype(np.float64)], tol=1e-9)


def test_pdist_errors():
    with pytest.raises(ValueError, match=r"pdist: input must be a 2-D \(N, M\) tensor, got shape \(2, 3, 4\)"):
        pdist(nb.ones(2, 3, 4))
    with pytest.raises(ValueError, match="p must be non-negative .* got -1"):
        pdist(nb.ones(3, 2), -1)
    with pytest.raises(TypeError, match="pdist: input must be a floating-point tensor, got dtype int64"):
        pdist(nb.tensor(np.ones((3, 2), np.int64)))
    with pytest.raises(TypeError, match="pdist: p must be a number"):
        pdist(nb.ones(3, 2), "2")


# -- gumbel_softmax ---------------------------------------------------------------------------------
def test_gumbel_softmax_rows_seeding_and_dim():
    logits = nb.tensor(_r(4, 6))
    nb.manual_seed(5)
    y1 = gumbel_softmax(logits, tau=0.7).numpy()
    nb.manual_seed(5)
    y2 = gumbel_softmax(logits, tau=0.7).numpy()
    y3 = gumbel_softmax(logits, tau=0.7).numpy()
    assert y1.shape == (4, 6) and (y1 > 0).all()
    np.testing.assert_allclose(y1.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(y1, y2)  # reproducible under nb.manual_seed
    assert not np.array_equal(y1, y3)  # fresh noise on the next call
    y0 = gumbel_softmax(logits, dim=0).numpy()
    np.testing.assert_allclose(y0.sum(0), 1.0, rtol=1e-5)
    h = gumbel_softmax(nb.tensor(_r(3, 5, 2)), hard=True, dim=1).numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(1) == 1).all()
    assert gumbel_softmax(nb.tensor(_r(2, 3)).to(nb.float64)).dtype == nb.float64


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient():
    x = _r(5, 7)
    w = nb.tensor(_r(5, 7))
    nb.manual_seed(9)
    soft = gumbel_softmax(nb.tensor(x), tau=0.5).numpy()
    nb.manual_seed(9)
    g_soft = nb.grad(lambda t: nb.sum(gumbel_softmax(t, tau=0.5) * w))(nb.tensor(x)).numpy()
    nb.manual_seed(9)
    hard = gumbel_softmax(nb.tensor(x), tau=0.5, hard=True).numpy()
    nb.manual_seed(9)
    g_hard = nb.grad(lambda t: nb.sum(gumbel_softmax(t, tau=0.5, hard=True) * w))(nb.tensor(x)).numpy()
    np.testing.assert_array_equal(hard, np.eye(7, dtype=np.float32)[soft.argmax(-1)])
    np.testing.assert_allclose(g_hard, g_soft, rtol=1e-5, atol=1e-6)
    assert np.abs(g_soft).max() > 0


def test_gumbel_softmax_samples_the_softmax_distribution():
    # Gumbel-max: the argmax of logits + Gumbel noise is drawn from softmax(logits)
    logits = np.log(np.array([0.6, 0.3, 0.1], np.float32))
    nb.manual_seed(0)
    y = gumbel_softmax(nb.tensor(np.tile(logits, (4000, 1))), hard=True).numpy()
    np.testing.assert_allclose(y.mean(0), [0.6, 0.3, 0.1], atol=0.03)
    per = nb.vmap(lambda t: gumbel_softmax(t, hard=True))(nb.zeros((200, 4))).numpy()
    assert len({tuple(r) for r in per}) == 4  # each vmapped row draws its own noise


def test_gumbel_softmax_errors_and_eps_warning():
    with pytest.warns(UserWarning, match="eps.* deprecated"):
        gumbel_softmax(nb.zeros(2, 3), eps=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gumbel_softmax(nb.zeros(2, 3))
    with pytest.raises(TypeError, match="gumbel_softmax: logits must be a floating-point tensor"):
        gumbel_softmax(nb.tensor(np.zeros((2, 3), np.int64)))
    with pytest.raises(ValueError, match=r"dim must be an int in \[-2, 1\], got 2"):
        gumbel_softmax(nb.zeros(2, 3), dim=2)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        gumbel_softmax(nb.zeros(()))


# -- multi_margin_loss ------------------------------------------------------------------------------
def _np_multi_margin(x, t, p=1, margin=1.0, w=None, reduction="mean"):
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t2 = np.asarray(t).reshape(-1)
    n, c = x2.shape
    z = np.maximum(margin - x2[np.arange(n), t2][:, None] + x2, 0) ** p
    z[np.arange(n), t2] = 0
    loss = z.sum(1) / c * (1 if w is None else w[t2])
    loss = loss.reshape(np.shape(t)) if x.ndim == 1 else loss
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_matches_numpy(p, reduction):
    x, t, w = _r(6, 5), RNG.integers(0, 5, 6), RNG.random(5).astype(np.float32) + 0.5
    for weight in (None, w):
        got = multi_margin_loss(
            nb.tensor(x),
            nb.tensor(t),
            p=p,
            margin=0.8,
            weight=None if weight is None else nb.tensor(weight),
            reduction=reduction,
        )
        _close(got, np.float32(_np_multi_margin(x, t, p, 0.8, weight, reduction)), 1e-5)
    _close(
        multi_margin_loss(nb.tensor(x[0]), nb.tensor(np.array(2)), reduction="none"),
        _np_multi_margin(x[0], 2, reduction="none"),
    )
    _close(
        multi_margin_loss(nb.tensor(x[0]), nb.tensor(np.array([2])), reduction="none"),
        _np_multi_margin(x[0], np.array([2]), reduction="none"),
    )


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_matches_torch(p, reduction):
    x, t, w = _r(7, 4), RNG.integers(0, 4, 7), RNG.random(4).astype(np.float32) + 0.5
    kw = {"p": p, "margin": 0.6, "reduction": reduction}
    _against_torch(lambda a, b: multi_margin_loss(a, b, **kw), lambda a, b: TF.multi_margin_loss(a, b, **kw), [x, t])
    _against_torch(
        lambda a, b, c: multi_margin_loss(a, b, weight=c, **kw),
        lambda a, b, c: TF.multi_margin_loss(a, b, weight=c, **kw),
        [x, t, w],
    )
    _against_torch(
        lambda a, b: MultiMarginLoss(p, 0.6, nb.tensor(w), reduction=reduction)(a, b),
        lambda a, b: torch.nn.MultiMarginLoss(p, 0.6, torch.tensor(w), reduction=reduction)(a, b),
        [x, t],
    )
    for target in (np.array(1), np.array([3])):  # unbatched input
        _against_torch(
            lambda a, b: multi_margin_loss(a, b, **kw), lambda a, b: TF.multi_margin_loss(a, b, **kw), [x[0], target]
        )


def test_multi_margin_loss_errors():
    x, t = nb.ones(3, 4), nb.tensor(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 are supported, got p=3"):
        multi_margin_loss(x, t, p=3)
    with pytest.raises(ValueError, match=r"expected shape \(3,\), got \(2,\)"):
        multi_margin_loss(x, nb.tensor(np.array([0, 1])))
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        multi_margin_loss(x, nb.tensor(np.array([0, 4, 1])))
    with pytest.raises(TypeError, match="target must be an integer tensor .* got dtype float32"):
        multi_margin_loss(x, nb.tensor(np.array([0.0, 1.0, 2.0], np.float32)))
    with pytest.raises(ValueError, match=r"weight must have one entry per class, expected shape \(4,\), got \(3,\)"):
        multi_margin_loss(x, t, weight=nb.ones(3))
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        multi_margin_loss(x, t, weight=nb.ones(2, 2))
    with pytest.raises(ValueError, match=r"non-empty \(C,\) vector or an \(N, C\) matrix"):
        multi_margin_loss(nb.ones(2, 3, 4), t)
    with pytest.raises(ValueError, match="reduction must be one of"):
        multi_margin_loss(x, t, reduction="avg")


# -- multilabel_margin_loss -------------------------------------------------------------------------
def _np_multilabel_margin(x, t, reduction="mean"):
    x2, t2 = (x[None], t[None]) if x.ndim == 1 else (x, t)
    c = x2.shape[1]
    loss = np.zeros(len(x2))
    for n, (row, tr) in enumerate(zip(x2, t2, strict=True)):
        targets = list(itertools.takewhile(lambda v: v >= 0, tr))
        for j in targets:
            for i in set(range(c)) - set(targets):
                loss[n] += max(0.0, 1.0 - (row[j] - row[i]))
    loss = (loss / c).astype(np.float32)
    loss = loss[0] if x.ndim == 1 else loss
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


# -1 terminators at several places, a repeated class, entries after the -1, all classes, none
ML_TARGET = np.array(
    [[3, 0, -1, 1, 2], [1, 1, -1, -1, -1], [-1, 2, 3, 4, 0], [0, 1, 2, 3, 4], [4, -1, 4, 0, 0], [2, 3, -1, 0, 0]]
)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_matches_numpy(reduction):
    x = _r(6, 5)
    _close(
        multilabel_margin_loss(nb.tensor(x), nb.tensor(ML_TARGET), reduction=reduction),
        np.float32(_np_multilabel_margin(x, ML_TARGET, reduction)),
        1e-5,
    )
    _close(
        multilabel_margin_loss(nb.tensor(x[0]), nb.tensor(ML_TARGET[0]), reduction=reduction),
        np.float32(_np_multilabel_margin(x[0], ML_TARGET[0], reduction)),
        1e-5,
    )
    x = nb.tensor(np.array([[0.1, 0.2, 0.4, 0.8]], np.float32))
    assert abs(multilabel_margin_loss(x, nb.tensor(np.array([[3, 0, -1, 1]]))).item() - 0.85) < 1e-6


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_matches_torch(reduction):
    x = _r(6, 5)
    kw = {"reduction": reduction}
    _against_torch(
        lambda a, b: multilabel_margin_loss(a, b, **kw),
        lambda a, b: TF.multilabel_margin_loss(a, b, **kw),
        [x, ML_TARGET],
    )
    _against_torch(
        lambda a, b: MultiLabelMarginLoss(**kw)(a, b),
        lambda a, b: torch.nn.MultiLabelMarginLoss(**kw)(a, b),
        [x[1:], ML_TARGET[1:]],
    )
    _against_torch(
        lambda a, b: multilabel_margin_loss(a, b, **kw),
        lambda a, b: TF.multilabel_margin_loss(a, b, **kw),
        [x[0], ML_TARGET[0]],
    )


def test_multilabel_margin_loss_errors_vmap_and_legacy_args():
    x = nb.ones(2, 4)
    with pytest.raises(IndexError, match=r"target 7 is out of range: entries must lie in \[-1, 4\)"):
        multilabel_margin_loss(x, nb.tensor(np.array([[1, -1, 7, 2], [0, -1, 0, 0]])))
    with pytest.raises(IndexError, match="target -5 is out of range"):
        multilabel_margin_loss(x, nb.tensor(np.array([[1, -1, -5, 2], [0, -1, 0, 0]])))
    with pytest.raises(ValueError, match=r"target shape \(2,\) must equal input shape \(2, 4\)"):
        multilabel_margin_loss(x, nb.tensor(np.array([1, 2])))
    with pytest.raises(TypeError, match="target must be an integer tensor"):
        multilabel_margin_loss(x, nb.zeros(2, 4))
    xs, ts = _r(3, 6, 5), np.stack([ML_TARGET] * 3)
    per = nb.vmap(lambda a, b: multilabel_margin_loss(a, b, reduction="none"))(nb.tensor(xs), nb.tensor(ts))
    _close(per, np.stack([_np_multilabel_margin(a, ML_TARGET, "none") for a in xs]), 1e-5)
    with pytest.warns(UserWarning, match="deprecated"):
        got = multilabel_margin_loss(nb.tensor(xs[0]), nb.tensor(ML_TARGET), size_average=False)
    _close(got, np.float32(_np_multilabel_margin(xs[0], ML_TARGET, "sum")), 1e-5)


# -- triplet_margin_with_distance_loss --------------------------------------------------------------
def _l_inf(x1, x2):
    return nb.max(nb.abs(x1 - x2), axis=-1)


def _cos_dist(x1, x2):
    return 1.0 - nb.sum(x1 * x2, axis=-1) / (nb.norm(x1, 2, axis=-1) * nb.norm(x2, 2, axis=-1))


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_with_distance_matches_numpy(swap):
    a, p, n = _r(5, 3), _r(5, 3), _r(5, 3)
    for fn, np_fn in [
        (None, lambda u, v: np.sqrt(((u - v + 1e-6) ** 2).sum(-1))),
        (_l_inf, lambda u, v: np.abs(u - v).max(-1)),
    ]:
        d_neg = np_fn(a, n) if not swap else np.minimum(np_fn(a, n), np_fn(p, n))
        expected = np.maximum(np_fn(a, p) - d_neg + 1.5, 0).astype(np.float32)
        got = triplet_margin_with_distance_loss(
            nb.tensor(a), nb.tensor(p), nb.tensor(n), distance_function=fn, margin=1.5, swap=swap, reduction="none"
        )
        _close(got, expected, 1e-5)


def _distances(name: str) -> tuple:
    """(nabla distance_function, torch distance_function) by name."""
    if name == "default":
        return None, None
    if name == "cosine":
        return _cos_dist, lambda u, v: 1.0 - TF.cosine_similarity(u, v, dim=-1, eps=0.0)
    return PairwiseDistance(p=1), torch.nn.PairwiseDistance(p=1)


@needs_torch
@pytest.mark.parametrize("distance", ["default", "cosine", "l1_module"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_with_distance_matches_torch(swap, reduction, distance):
    a, p, n = _r(6, 4), _r(6, 4), _r(6, 4)
    p[:3] = a[:3] + 0.1 * _r(3, 4)  # some swaps and some active margins
    n[3:] = p[3:] + 0.1 * _r(3, 4)
    kw = {"swap": swap, "reduction": reduction, "margin": 1.2}
    nb_fn, t_fn = _distances(distance)
    _against_torch(
        lambda x, y, z: triplet_margin_with_distance_loss(x, y, z, distance_function=nb_fn, **kw),
        lambda x, y, z: TF.triplet_margin_with_distance_loss(x, y, z, distance_function=t_fn, **kw),
        [a, p, n],
        grad=(0, 1, 2),
    )
    _against_torch(
        lambda x, y, z: TripletMarginWithDistanceLoss(distance_function=nb_fn, **kw)(x, y, z),
        lambda x, y, z: torch.nn.TripletMarginWithDistanceLoss(distance_function=t_fn, **kw)(x, y, z),
        [a, p, n],
        grad=(0, 1, 2),
    )


def test_triplet_with_distance_errors():
    a = nb.ones(2, 3)
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match=r"same number of dimensions, got 2-D \(2, 3\), 2-D \(2, 3\) and 1-D \(3,\)"):
        triplet_margin_with_distance_loss(a, a, nb.ones(3))
    with pytest.raises(TypeError, match="distance_function must be a callable or None, got int"):
        triplet_margin_with_distance_loss(a, a, a, distance_function=3)
    with pytest.raises(TypeError, match="takes 3 positional arguments"):
        triplet_margin_with_distance_loss(a, a, a, pairwise_distance)
    with pytest.raises(ValueError, match="reduction must be one of"):
        triplet_margin_with_distance_loss(a, a, a, reduction="batchmean")


# -- loss layers ------------------------------------------------------------------------------------
def test_loss_layers_reprs_buffers_and_errors():
    assert repr(MultiMarginLoss()) == "MultiMarginLoss()"
    assert repr(MultiLabelMarginLoss()) == "MultiLabelMarginLoss()"
    assert repr(TripletMarginWithDistanceLoss()) == (
        "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"
    )
    assert repr(TripletMarginWithDistanceLoss(distance_function=_l_inf)) == "TripletMarginWithDistanceLoss()"
    m = MultiMarginLoss(p=2, margin=0.5, weight=[1.0, 2.0, 3.0], reduction="sum")
    assert (m.p, m.margin, m.reduction) == (2, 0.5, "sum") and list(m.state_dict()) == ["weight"]
    x, t = _r(4, 3), np.array([0, 2, 1, 2])
    w = np.array([1.0, 2.0, 3.0], np.float32)
    _close(m(nb.tensor(x), nb.tensor(t)), np.float32(_np_multi_margin(x, t, 2, 0.5, w, "sum")), 1e-5)
    assert MultiMarginLoss(size_average=False).reduction == "sum"
    assert MultiLabelMarginLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="only p == 1 and p == 2 are supported, got p=3"):
        MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or a 1-D tensor, got 2-D"):
        MultiMarginLoss(weight=nb.ones(2, 2))
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got -1 instead"):
        TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(TypeError, match="distance_function must be a callable"):
        TripletMarginWithDistanceLoss(distance_function="l2")
    with pytest.raises(TypeError):
        TripletMarginWithDistanceLoss(None)  # keyword-only, as in PyTorch
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        MultiLabelMarginLoss(reduction="avg")
    a, pos, neg = _r(3, 4), _r(3, 4), _r(3, 4)
    loss = TripletMarginWithDistanceLoss(distance_function=_l_inf, margin=2.0, swap=True)
    expected = np.maximum(
        np.abs(a - pos).max(-1) - np.minimum(np.abs(a - neg).max(-1), np.abs(pos - neg).max(-1)) + 2.0, 0
    ).mean()
    _close(loss(nb.tensor(a), nb.tensor(pos), nb.tensor(neg)), np.float32(expected), 1e-5)


@needs_torch
def test_loss_layer_reprs_match_torch():
    pairs = [
        (MultiMarginLoss(), torch.nn.MultiMarginLoss()),
        (MultiMarginLoss(p=2, margin=0.5, weight=[1.0, 2.0]), torch.nn.MultiMarginLoss(2, 0.5, torch.ones(2))),
        (MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss()),
        (TripletMarginWithDistanceLoss(), torch.nn.TripletMarginWithDistanceLoss()),
        (
            TripletMarginWithDistanceLoss(distance_function=_l_inf, swap=True),
            torch.nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: u, swap=True),
        ),
        (
            TripletMarginWithDistanceLoss(distance_function=PairwiseDistance(p=1)),
            torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance(p=1)),
        ),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
