"""F.embedding_bag / nn.EmbeddingBag, F.ctc_loss / nn.CTCLoss, F.affine_grid / F.grid_sample and
F.channel_shuffle / nn.ChannelShuffle.

Against PyTorch (when installed): values, the weight / per-sample-weight / input / grid / theta
gradients, reprs. Without torch: NumPy references (bag loops, CTC by enumerating every
alignment, bilinear sampling by hand, the channel permutation) and argument errors.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
from nabla_nn.functional.ctc import ctc_loss
from nabla_nn.functional.sparse import embedding_bag
from nabla_nn.functional.vision import affine_grid, channel_shuffle, grid_sample, native_channel_shuffle
from nabla_nn.modules.channel_shuffle import ChannelShuffle
from nabla_nn.modules.ctc import CTCLoss
from nabla_nn.modules.sparse import EmbeddingBag

RNG = np.random.default_rng(11)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _grad(t) -> np.ndarray | None:
    return None if t.grad is None else t.grad.numpy()


# -- embedding_bag ----------------------------------------------------------------------------------
W = randn(8, 3)
FLAT = np.array([1, 2, 4, 5, 4, 3, 0, 7, 7, 2])
OFFSETS = np.array([0, 3, 3, 6])  # bag 1 is empty
BATCH = np.array([[1, 2, 2, 5], [0, 3, 0, 0], [7, 6, 4, 1]])

BAG_CASES = [
    # (input, offsets, kwargs)
    (BATCH, None, {"mode": "sum"}),
    (BATCH, None, {"mode": "mean"}),
    (BATCH, None, {"mode": "max"}),
    (BATCH, None, {"mode": "mean", "padding_idx": 0}),
    (BATCH, None, {"mode": "max", "padding_idx": -8}),
    (BATCH, None, {"mode": "sum", "psw": True}),
    (FLAT, OFFSETS, {"mode": "sum"}),
    (FLAT, OFFSETS, {"mode": "mean", "padding_idx": 4}),
    (FLAT, OFFSETS, {"mode": "max", "padding_idx": 7}),
    (FLAT, OFFSETS, {"mode": "sum", "psw": True, "padding_idx": 2}),
    (FLAT, np.array([0, 2, 5, 10]), {"mode": "mean", "include_last_offset": True, "padding_idx": 7}),
    (FLAT, np.array([0, 2, 5, 10]), {"mode": "max", "include_last_offset": True}),
    (FLAT, np.array([0, 4, 4, 10]), {"mode": "sum", "include_last_offset": True, "psw": True}),
]
# Beyond PyTorch's contract (the last offset of include_last_offset is len(input)): a bag is
# input[offsets[b]:offsets[b + 1]] for every mode (PyTorch's mean divides the last bag's sum by
# len(input) - offsets[-2] there, and its weight gradient reads uninitialized memory with
# per_sample_weights).
NUMPY_ONLY_CASES = [
    (FLAT, np.array([0, 2, 5, 8]), {"mode": "mean", "include_last_offset": True}),
    (FLAT, np.array([0, 4, 4]), {"mode": "sum", "include_last_offset": True, "psw": True}),
]


def _bag_id(case: tuple) -> str:
    return f"{'2d' if case[1] is None else '1d'}-{'-'.join(f'{k}={v}' for k, v in case[2].items())}"


def _bags(inp: np.ndarray, offsets: np.ndarray | None, include_last: bool) -> list[np.ndarray]:
    """The positions (into the flat input) of each bag's entries."""
    if offsets is None:
        n = inp.shape[1]
        return [np.arange(b * n, (b + 1) * n) for b in range(inp.shape[0])]
    ends = offsets[1:] if include_last else np.append(offsets[1:], inp.size)
    starts = offsets[:-1] if include_last else offsets
    return [np.arange(s, e) for s, e in zip(starts, ends, strict=True)]


def _numpy_bag(inp, offsets, weight, mode, psw=None, padding_idx=None, include_last_offset=False):
    """A loop over bags: the reference values, and d(sum(out * cot))/d(weight) for mode sum/mean."""
    flat = inp.reshape(-1)
    flat_psw = None if psw is None else psw.reshape(-1)
    pad = None if padding_idx is None else padding_idx % weight.shape[0]
    rows = []
    for pos in _bags(inp, offsets, include_last_offset):
        pos = [p for p in pos if flat[p] != pad]
        vecs = np.array([weight[flat[p]] * (1 if flat_psw is None else flat_psw[p]) for p in pos]).reshape(-1, 3)
        if not pos:
            rows.append(np.zeros(weight.shape[1], np.float32))
        elif mode == "sum":
            rows.append(vecs.sum(0))
        elif mode == "mean":
            rows.append(vecs.mean(0))
        else:
            rows.append(vecs.max(0))
    return np.array(rows, np.float32)


def _call_bag(inp, offsets, weight, kw, psw, lazy_offsets=False):
    off = None if offsets is None else nb.tensor(offsets)
    if lazy_offsets and off is not None:
        off = off + 0  # computed, not realized: the layout is built without reading it
    return embedding_bag(nb.tensor(inp), weight, off, per_sample_weights=psw, **kw)


@pytest.mark.parametrize("case", BAG_CASES + NUMPY_ONLY_CASES, ids=_bag_id)
@pytest.mark.parametrize("lazy_offsets", [False, True], ids=["known-offsets", "computed-offsets"])
def test_embedding_bag_matches_numpy(case, lazy_offsets):
    inp, offsets, kw = case
    kw = dict(kw)
    psw = randn(*inp.shape) if kw.pop("psw", False) else None
    weight = nb.tensor(W, requires_grad=True)
    out = _call_bag(inp, offsets, weight, kw, None if psw is None else nb.tensor(psw), lazy_offsets)
    expected = _numpy_bag(inp, offsets, W, kw["mode"], psw, kw.get("padding_idx"), kw.get("include_last_offset", False))
    assert out.shape == expected.shape
    assert_close(out.numpy(), expected)
    if kw["mode"] == "sum" and psw is None:  # each entry passes its bag's cotangent to its row
        cot = randn(*expected.shape)
        (out * nb.tensor(cot)).sum().backward()
        grad = np.zeros_like(W)
        flat = inp.reshape(-1)
        for b, pos in enumerate(_bags(inp, offsets, kw.get("include_last_offset", False))):
            for p in pos:
                grad[flat[p]] += cot[b]
        assert_close(weight.grad.numpy(), grad)


@needs_torch
@pytest.mark.parametrize("case", BAG_CASES, ids=_bag_id)
@pytest.mark.parametrize("lazy_offsets", [False, True], ids=["known-offsets", "computed-offsets"])
def test_embedding_bag_matches_torch(case, lazy_offsets):
    inp, offsets, kw = case
    kw = dict(kw)
    psw = randn(*inp.shape) if kw.pop("psw", False) else None
    tw, nw = torch.tensor(W, requires_grad=True), nb.tensor(W, requires_grad=True)
    tp = None if psw is None else torch.tensor(psw, requires_grad=True)
    np_ = None if psw is None else nb.tensor(psw, requires_grad=True)
    t_off = None if offsets is None else torch.tensor(offsets)
    tout = TF.embedding_bag(torch.tensor(inp), tw, t_off, per_sample_weights=tp, **kw)
    nout = _call_bag(inp, offsets, nw, kw, np_, lazy_offsets)
    assert_close(nout.numpy(), tout.detach().numpy())
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nw.grad.numpy(), tw.grad.numpy())
    if psw is not None:
        assert_close(np_.grad.numpy(), tp.grad.numpy())


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_max_norm_matches_torch(mode):
    """Rows read are renormalized in place (not differentiated), as torch's embedding_renorm_."""
    tw, nw = torch.tensor(W * 2, requires_grad=True), nb.tensor(W * 2, requires_grad=True)
    tout = TF.embedding_bag(torch.tensor(FLAT), tw, torch.tensor(OFFSETS), max_norm=1.5, norm_type=1.0, mode=mode)
    nout = embedding_bag(nb.tensor(FLAT), nw, nb.tensor(OFFSETS), max_norm=1.5, norm_type=1.0, mode=mode)
    assert_close(nout.numpy(), tout.detach().numpy())
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nw.numpy(), tw.detach().numpy())  # the table itself was renormalized
    assert_close(nw.grad.numpy(), tw.grad.numpy())


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_matches_torch(mode):
    """With every index equally frequent, torch's CPU kernel and the documented rule agree."""
    inp = np.array([[1, 3, 3], [1, 5, 5], [2, 2, 0], [0, 4, 4]])  # every index twice
    counts = np.bincount(inp.reshape(-1))
    assert len(set(counts[counts > 0])) == 1
    tw, nw = torch.tensor(W, requires_grad=True), nb.tensor(W, requires_grad=True)
    tout = TF.embedding_bag(torch.tensor(inp), tw, mode=mode, scale_grad_by_freq=True)
    nout = embedding_bag(nb.tensor(inp), nw, mode=mode, scale_grad_by_freq=True)
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nout.numpy(), tout.detach().numpy())
    assert_close(nw.grad.numpy(), tw.grad.numpy())


def test_embedding_bag_scale_grad_by_freq_numpy():
    """Each row's gradient is divided by its own index's frequency in the input."""
    inp = np.array([1, 1, 2, 1, 0, 0, 3, 4, 4])
    weight = nb.tensor(W, requires_grad=True)
    out = embedding_bag(nb.tensor(inp), weight, nb.tensor([0, 3, 6]), mode="sum", scale_grad_by_freq=True)
    out.sum().backward()
    counts = np.bincount(inp, minlength=8)
    expected = np.where(counts > 0, 1.0, 0.0)[:, None] * np.ones((1, 3))  # count * (1 / count)
    assert_close(weight.grad.numpy(), expected)
    assert_close(out.numpy(), _numpy_bag(inp, np.array([0, 3, 6]), W, "sum"))


def test_embedding_bag_empty_bags_and_inputs():
    weight = nb.tensor(W, requires_grad=True)
    out = embedding_bag(nb.tensor(np.zeros(0, np.int64)), weight, nb.tensor([0, 0]), mode="max")
    assert out.shape == (2, 3)
    assert_close(out.numpy(), np.zeros((2, 3)))
    out.sum().backward()
    assert_close(weight.grad.numpy(), np.zeros_like(W))
    out = embedding_bag(nb.tensor([[3, 3]]), nb.tensor(W), mode="mean", padding_idx=3)  # only padding
    assert_close(out.numpy(), np.zeros((1, 3)))
    assert embedding_bag(nb.tensor([1]), nb.tensor(W), nb.tensor([0]), include_last_offset=True).shape == (0, 3)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), nb.tensor([0])), ValueError, "if input is 2D"),
        (lambda: embedding_bag(nb.tensor(FLAT), nb.tensor(W)), ValueError, "offsets has to be a 1D Tensor"),
        (lambda: embedding_bag(nb.tensor(FLAT), nb.tensor(W), nb.tensor([[0]])), ValueError, r"got shape \(1, 1\)"),
        (lambda: embedding_bag(nb.tensor([1.0]), nb.tensor(W), nb.tensor([0])), TypeError, "got float32"),
        (lambda: embedding_bag(nb.tensor(FLAT), nb.tensor(W), nb.tensor([1, 3])), ValueError, r"offsets\[0\]"),
        (lambda: embedding_bag(nb.tensor(FLAT), nb.tensor(W), nb.tensor([0, 11])), ValueError, "input's length 10"),
        (lambda: embedding_bag(nb.tensor(FLAT), nb.tensor(W), nb.tensor([0, 4, 2])), ValueError, "non-decreasing"),
        (lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), mode="prod"), ValueError, "got 'prod'"),
        (
            lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), mode="mean", per_sample_weights=nb.ones(3, 4)),
            NotImplementedError,
            "only supported for mode='sum'",
        ),
        (
            lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), mode="sum", per_sample_weights=nb.ones(3)),
            ValueError,
            r"per_sample_weights must have the input's shape \(3, 4\), got \(3,\)",
        ),
        (
            lambda: embedding_bag(
                nb.tensor(BATCH), nb.tensor(W), mode="sum", per_sample_weights=nb.ones(3, 4, dtype=nb.float64)
            ),
            TypeError,
            "weight's dtype float32, got float64",
        ),
        (lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), mode="max", scale_grad_by_freq=True), ValueError, "max"),
        (lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), padding_idx=8), ValueError, "padding_idx=8"),
        (lambda: embedding_bag(nb.tensor(BATCH), nb.ones(8)), ValueError, r"2-D floating tensor .* shape \(8,\)"),
        (lambda: embedding_bag(nb.tensor(BATCH), nb.tensor(W), mode="max", sparse=True), ValueError, "sparse"),
    ],
)
def test_embedding_bag_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_embedding_bag_module_numpy():
    bag = EmbeddingBag(8, 3, mode="sum", padding_idx=2)
    assert bag.weight.shape == (8, 3) and bag.weight.requires_grad
    assert_close(bag.weight.numpy()[2], np.zeros(3))
    assert list(bag.state_dict()) == ["weight"]
    out = bag(nb.tensor(FLAT), nb.tensor(OFFSETS))
    assert_close(out.numpy(), _numpy_bag(FLAT, OFFSETS, bag.weight.numpy(), "sum", padding_idx=2))
    pretrained = EmbeddingBag.from_pretrained(W, mode="max", include_last_offset=True)
    assert not pretrained.weight.requires_grad
    out = pretrained(nb.tensor(FLAT), nb.tensor([0, 2, 5, 10]))
    assert_close(out.numpy(), _numpy_bag(FLAT, np.array([0, 2, 5, 10]), W, "max", include_last_offset=True))
    with pytest.raises(ValueError, match=r"\(EmbeddingBag 8 3 mode='sum' padding_idx=2\) got input \(2, 2, 2\)"):
        bag(nb.zeros((2, 2, 2), dtype=nb.int64))
    with pytest.raises(ValueError, match="mode has to be one of"):
        EmbeddingBag(4, 2, mode="min")
    with pytest.raises(NotImplementedError, match="sparse=True"):
        EmbeddingBag(4, 2, sparse=True)


@needs_torch
def test_embedding_bag_module_matches_torch():
    for kw in ({}, {"mode": "sum", "padding_idx": 2, "max_norm": 1.0}, {"mode": "max", "norm_type": 1.0}):
        m, tm = EmbeddingBag(8, 3, **kw), torch.nn.EmbeddingBag(8, 3, **kw)
        assert repr(m) == repr(tm)
        m.load_state_dict(tm.state_dict())
        tout, nout = tm(torch.tensor(BATCH)), m(nb.tensor(BATCH))
        assert_close(nout.numpy(), tout.detach().numpy())
        tout.sum().backward()
        nout.sum().backward()
        assert_close(m.weight.grad.numpy(), tm.weight.grad.numpy())
    tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), freeze=False, mode="sum")
    m = EmbeddingBag.from_pretrained(W, freeze=False, mode="sum")
    assert repr(m) == repr(tm)
    assert_close(m(nb.tensor(FLAT), nb.tensor(OFFSETS)).numpy(), tm(torch.tensor(FLAT), torch.tensor(OFFSETS)).detach())


# -- ctc_loss -----------------------------------------------------------------------------------------
T_, N_, C_ = 6, 3, 5
LOGITS = randn(T_, N_, C_)
PADDED = np.array([[1, 2, 2], [1, 1, 1], [3, 4, 0]])

CTC_CASES = [
    # (input_lengths, target_lengths, kwargs)
    ([6, 6, 6], [3, 3, 2], {}),
    ([6, 4, 1], [3, 2, 0], {"reduction": "none"}),
    ([6, 5, 3], [3, 2, 1], {"reduction": "sum"}),
    ([6, 2, 0], [3, 2, 0], {"reduction": "mean", "zero_infinity": True}),  # sample 1 is infeasible
    ([6, 2, 6], [3, 2, 2], {"reduction": "none", "zero_infinity": True}),
    ([6, 6, 5], [3, 3, 2], {"blank": 4, "targets": [[1, 2, 2], [1, 1, 1], [3, 0, 0]]}),
    ([6, 5, 6], [3, 3, 1], {"concatenated": True}),
    ([6, 5, 6], [2, 0, 1], {"concatenated": True, "reduction": "none"}),
]
CTC_IDS = [f"{c[0]}-{c[1]}-{'-'.join(f'{k}={v}' for k, v in c[2].items() if k != 'targets')}" for c in CTC_CASES]


def _ctc_targets(kw: dict, target_lengths: list[int]) -> np.ndarray:
    padded = np.array(kw.pop("targets", PADDED))
    if kw.pop("concatenated", False):
        return np.concatenate([row[:n] for row, n in zip(padded, target_lengths, strict=True)])
    return padded


@needs_torch
@pytest.mark.parametrize("case", CTC_CASES, ids=CTC_IDS)
def test_ctc_loss_matches_torch(case):
    """Values, and gradients with respect to logits through log_softmax (the documented use)."""
    il, tl, kw = case
    kw = dict(kw)
    targets = _ctc_targets(kw, tl)
    tx, nx = torch.tensor(LOGITS, requires_grad=True), nb.tensor(LOGITS, requires_grad=True)
    tloss = TF.ctc_loss(tx.log_softmax(-1), torch.tensor(targets), torch.tensor(il), torch.tensor(tl), **kw)
    nloss = ctc_loss(nb.log_softmax(nx, axis=-1), nb.tensor(targets), nb.tensor(il), tl, **kw)
    assert nloss.shape == tuple(tloss.shape)
    assert_close(nloss.numpy(), tloss.detach().numpy())
    cot = randn(*tloss.shape)
    (tloss * torch.tensor(cot)).sum().backward()
    (nloss * nb.tensor(cot)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy())


@needs_torch
def test_ctc_loss_unbatched_and_module_match_torch():
    lp = torch.tensor(LOGITS[:, 0]).log_softmax(-1)
    for reduction in ("none", "mean", "sum"):
        expected = TF.ctc_loss(lp, torch.tensor(PADDED[0]), torch.tensor(6), torch.tensor(3), reduction=reduction)
        got = ctc_loss(nb.tensor(lp.numpy()), nb.tensor(PADDED[0]), 6, 3, reduction=reduction)
        assert got.shape == () and expected.shape == ()
        assert_close(got.numpy(), expected.numpy())
    tm, m = torch.nn.CTCLoss(blank=0, reduction="sum"), CTCLoss(blank=0, reduction="sum")
    assert repr(m) == repr(tm) == "CTCLoss()"
    lp = torch.tensor(LOGITS).log_softmax(-1)
    expected = tm(lp, torch.tensor(PADDED), (6, 6, 6), (3, 3, 2))
    assert_close(m(nb.tensor(lp.numpy()), nb.tensor(PADDED), (6, 6, 6), (3, 3, 2)).numpy(), expected.numpy())


def _brute_force_nll(lp: np.ndarray, target: list[int], blank: int) -> float:
    """-log of the summed probability of every frame labelling that collapses to `target`."""
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
        if collapsed == target:
            total += math.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_loss_matches_enumeration_numpy(blank):
    """Against the definition: every alignment enumerated (T=4, C=3), log_probs used as given."""
    lp = np.log(np.random.default_rng(3).dirichlet(np.ones(3), size=(4, 3))).astype(np.float64)
    targets = [[1], [1, 1], [1, 0 if blank == 2 else 2]] if blank == 2 else [[1], [1, 1], [1, 2]]
    lengths, il = [len(t) for t in targets], [4, 4, 3]
    padded = np.array([t + [0] * (2 - len(t)) for t in targets])
    x = nb.tensor(lp, requires_grad=True)
    loss = ctc_loss(x, nb.tensor(padded), il, lengths, blank=blank, reduction="none")
    expected = [_brute_force_nll(lp[: il[n], n], targets[n], blank) for n in range(3)]
    assert_close(loss.numpy(), expected, 1e-10)
    # The gradient is the exact derivative of the loss with respect to log_probs.
    loss.sum().backward()
    eps, n, t, k = 1e-6, 1, 2, 1
    bumped = lp.copy()
    bumped[t, n, k] += eps
    numeric = (_brute_force_nll(bumped[:, n], targets[n], blank) - expected[n]) / eps
    assert abs(x.grad.numpy()[t, n, k] - numeric) < 1e-4
    assert_close(x.grad.numpy()[3, 2], np.zeros(3), 0)  # frames past an input's length get nothing


def test_ctc_loss_infinite_and_zero_infinity_numpy():
    lp = nb.tensor(np.log(np.full((2, 1, 3), 1 / 3)), requires_grad=True)
    loss = ctc_loss(lp, nb.tensor([[1, 1]]), [2], [2], reduction="none")  # "1 1" needs 3 frames
    assert np.isinf(loss.numpy()).all()
    loss.sum().backward()
    assert np.isfinite(lp.grad.numpy()).all()  # no NaN from the unreachable states
    lp.grad = None
    loss = ctc_loss(lp, nb.tensor([[1, 1]]), [2], [2], reduction="mean", zero_infinity=True)
    loss.backward()
    assert loss.item() == 0.0
    assert_close(lp.grad.numpy(), np.zeros((2, 1, 3)), 0)
    # An empty target over no frames has probability 1; a non-empty one probability 0.
    out = ctc_loss(
        nb.tensor(np.log(np.full((3, 2, 3), 1 / 3))), nb.tensor([[1], [0]]), [0, 0], [1, 0], reduction="none"
    )
    assert out.numpy()[0] == np.inf and out.numpy()[1] == 0.0


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"input_lengths": [7, 6, 6]}, ValueError, r"input_lengths must be at most T = 6, got \[7, 6, 6\]"),
        ({"input_lengths": [6, 6]}, ValueError, r"input_lengths must have one entry per batch element \(3\)"),
        ({"target_lengths": [4, 1, 1]}, ValueError, r"padded targets must be \(N=3, S >= 4\).*got shape \(3, 3\)"),
        ({"target_lengths": [1, -1, 1]}, ValueError, "target_lengths must be non-negative"),
        ({"blank": 5}, ValueError, r"blank must be in the label range \[0, 5\), got 5"),
        ({"targets": nb.tensor(PADDED.astype(np.float32))}, TypeError, "targets must be an integer tensor"),
        ({"targets": nb.tensor([1, 2, 2, 1])}, ValueError, "sum\\(target_lengths\\) = 7 entries, got 4"),
        ({"targets": nb.tensor(PADDED + 5)}, ValueError, r"target class 6 is out of range \[0, 5\)"),
        ({"reduction": "avg"}, ValueError, "reduction must be one of"),
        ({"input_lengths": nb.tensor([6.0, 6.0, 6.0])}, TypeError, "input_lengths must be an integer tensor"),
        ({"log_probs": nb.ones(6, 3, 5, 1)}, ValueError, r"log_probs must be \(T, N, C\)"),
        ({"log_probs": nb.ones(6, 3, 5, dtype=nb.int64)}, TypeError, "log_probs must be a floating-point tensor"),
    ],
)
def test_ctc_loss_errors(kwargs, error, message):
    args = {
        "log_probs": nb.log_softmax(nb.tensor(LOGITS), axis=-1),
        "targets": nb.tensor(PADDED),
        "input_lengths": [6, 6, 6],
        "target_lengths": [3, 3, 1],
    }
    args.update(kwargs)
    with pytest.raises(error, match=message):
        ctc_loss(**args)


# -- affine_grid / grid_sample ------------------------------------------------------------------------
GRID_CASES = list(
    itertools.product(("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True))
)


def _compare_grid_sample(x: np.ndarray, grid: np.ndarray, **kw) -> None:
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    nx, ng = nb.tensor(x, requires_grad=True), nb.tensor(grid, requires_grad=True)
    tout, nout = TF.grid_sample(tx, tg, **kw), grid_sample(nx, ng, **kw)
    assert_close(nout.numpy(), tout.detach().numpy(), 1e-5)
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy(), 1e-5)
    ngrad = _grad(ng)  # nearest: the grid gets no gradient (None), torch's is zeros
    assert_close(np.zeros(grid.shape) if ngrad is None else ngrad, tg.grad.numpy(), 1e-4)


@needs_torch
@pytest.mark.parametrize("mode, padding_mode, align_corners", GRID_CASES)
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    """Locations up to 2.5 units out, so reflection folds several times."""
    grid = RNG.uniform(-2.5, 2.5, (2, 4, 7, 2)).astype(np.float32)
    _compare_grid_sample(randn(2, 3, 5, 6), grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


@needs_torch
@pytest.mark.parametrize("mode, padding_mode, align_corners", [c for c in GRID_CASES if c[0] != "bicubic"])
def test_grid_sample_5d_matches_torch(mode, padding_mode, align_corners):
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 2, 4, 3)).astype(np.float32)
    _compare_grid_sample(randn(2, 2, 3, 4, 5), grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


@needs_torch
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("identity", [False, True], ids=["random", "identity"])
def test_affine_grid_and_sampling_match_torch(dims, align_corners, padding_mode, identity):
    """A spatial transformer: theta -> affine_grid -> grid_sample, gradients into theta. The
    identity grid lands exactly on pixels (and on the clamp borders)."""
    size = (2, 3, 4, 5) if dims == 2 else (2, 2, 3, 4, 5)
    theta = np.tile(np.eye(dims, dims + 1, dtype=np.float32), (2, 1, 1))
    if not identity:
        theta = theta + RNG.uniform(-0.6, 0.6, theta.shape).astype(np.float32)
    x = randn(*size)
    tt, nt = torch.tensor(theta, requires_grad=True), nb.tensor(theta, requires_grad=True)
    tgrid, ngrid = TF.affine_grid(tt, size, align_corners=align_corners), affine_grid(nt, size, align_corners)
    assert ngrid.shape == tuple(tgrid.shape)
    assert_close(ngrid.numpy(), tgrid.detach().numpy(), 1e-6)
    kw = {"padding_mode": padding_mode, "align_corners": align_corners}
    tout = TF.grid_sample(torch.tensor(x), tgrid, **kw)
    nout = grid_sample(nb.tensor(x), ngrid, **kw)
    assert_close(nout.numpy(), tout.detach().numpy())
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nt.grad.numpy(), tt.grad.numpy(), 1e-4)


def _numpy_bilinear_zeros(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """grid_sample(bilinear, zeros, align_corners=False) by hand, one output pixel at a time."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, *grid.shape[1:3]), np.float64)
    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        px = ((grid[b, i, j, 0] + 1) * w - 1) / 2
        py = ((grid[b, i, j, 1] + 1) * h - 1) / 2
        x0, y0 = math.floor(px), math.floor(py)
        for dy, dx in itertools.product((0, 1), (0, 1)):
            xi, yi = x0 + dx, y0 + dy
            weight = (px - x0 if dx else 1 - (px - x0)) * (py - y0 if dy else 1 - (py - y0))
            if 0 <= xi < w and 0 <= yi < h:
                out[b, :, i, j] += weight * x[b, :, yi, xi]
    return out


def test_grid_sample_numpy():
    x = randn(2, 3, 4, 5)
    grid = RNG.uniform(-1.2, 1.2, (2, 3, 2, 2)).astype(np.float32)
    out = grid_sample(nb.tensor(x), nb.tensor(grid), align_corners=False)
    assert_close(out.numpy(), _numpy_bilinear_zeros(x, grid))
    # The identity transform reproduces the input in every mode (align_corners=True: exact pixels).
    theta = nb.tensor(np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1)))
    ident = affine_grid(theta, (2, 3, 4, 5), align_corners=True)
    for mode in ("bilinear", "nearest", "bicubic"):
        assert_close(grid_sample(nb.tensor(x), ident, mode=mode, align_corners=True).numpy(), x, 1e-5)
    # Border padding repeats the edge pixel; reflection mirrors it.
    row = nb.tensor(np.array([[[[1.0, 2.0, 4.0]]]], np.float32))
    far = nb.tensor(np.array([[[[-3.0, 0.0], [3.0, 0.0]]]], np.float32))
    assert_close(grid_sample(row, far, padding_mode="border", align_corners=True).numpy(), [[[[1.0, 4.0]]]])
    assert_close(grid_sample(row, far, padding_mode="reflection", align_corners=True).numpy(), [[[[4.0, 1.0]]]])
    assert_close(grid_sample(row, far, padding_mode="zeros", align_corners=True).numpy(), [[[[0.0, 0.0]]]])


def test_affine_grid_numpy():
    theta = nb.tensor([[[2.0, 0.0, 0.5], [0.0, 1.0, -1.0]]])
    grid = affine_grid(theta, (1, 3, 2, 3), align_corners=True).numpy()
    xs, ys = np.meshgrid([-1.0, 0.0, 1.0], [-1.0, 1.0])
    assert_close(grid[0, ..., 0], 2 * xs + 0.5)
    assert_close(grid[0, ..., 1], ys - 1.0)
    centers = affine_grid(nb.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]), (1, 1, 1, 4), align_corners=False)
    assert_close(centers.numpy()[0, 0, :, 0], [-0.75, -0.25, 0.25, 0.75])
    assert_close(centers.numpy()[0, 0, :, 1], np.zeros(4))  # a unit-size dim sits at 0
    assert affine_grid(nb.zeros((2, 3, 4)), (2, 1, 3, 4, 5), align_corners=False).shape == (2, 3, 4, 5, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        affine_grid(nb.zeros((1, 2, 3)), (1, 1, 2, 2))
    assert any("align_corners" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: affine_grid(nb.zeros((2, 3, 3)), (2, 3, 4, 5), False), ValueError, r"Nx2x3 .* got \(2, 3, 3\)"),
        (lambda: affine_grid(nb.zeros((2, 2, 3)), (3, 3, 4, 5), False), ValueError, "2 matrices but size asks for N=3"),
        (lambda: affine_grid(nb.zeros((2, 2, 3)), (2, 3, 4), False), NotImplementedError, "4D and 5D sizes"),
        (lambda: affine_grid(nb.zeros((2, 2, 3), dtype=nb.int64), (2, 1, 2, 2), False), TypeError, "theta"),
        (lambda: affine_grid(nb.zeros((2, 2, 3)), (2, 3, 0, 5), False), ValueError, "positive output size"),
        (lambda: grid_sample(nb.zeros((2, 3, 4, 5)), nb.zeros((3, 6, 7, 2)), align_corners=False), ValueError, "N = 2"),
        (lambda: grid_sample(nb.zeros((2, 3, 4, 5)), nb.zeros((2, 6, 7, 3)), align_corners=False), ValueError, "got"),
        (
            lambda: grid_sample(nb.zeros((2, 3, 4, 5)), nb.zeros((2, 1, 1, 2)), "area", align_corners=False),
            ValueError,
            "'area'",
        ),
        (
            lambda: grid_sample(
                nb.zeros((2, 3, 4, 5)), nb.zeros((2, 1, 1, 2)), padding_mode="wrap", align_corners=False
            ),
            ValueError,
            "'wrap'",
        ),
        (
            lambda: grid_sample(nb.zeros((2, 3, 4, 5)), nb.zeros((2, 1, 1, 2), dtype=nb.float64), align_corners=False),
            TypeError,
            "float32 and float64",
        ),
        (
            lambda: grid_sample(nb.zeros((1, 1, 2, 2, 2)), nb.zeros((1, 1, 1, 1, 3)), "bicubic", align_corners=False),
            ValueError,
            "bicubic interpolation only supports 4-D",
        ),
        (lambda: grid_sample(nb.zeros((3, 4, 5)), nb.zeros((1, 6, 7, 2)), align_corners=False), ValueError, "4-D"),
        (lambda: grid_sample(nb.zeros((2, 3, 0, 5)), nb.zeros((2, 1, 1, 2)), align_corners=False), ValueError, "empty"),
    ],
)
def test_affine_grid_and_grid_sample_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- channel_shuffle ----------------------------------------------------------------------------------
def test_channel_shuffle_numpy():
    x = randn(2, 6, 3, 2)
    expected = x.reshape(2, 3, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 2)
    assert_close(channel_shuffle(nb.tensor(x), 3).numpy(), expected, 0)
    assert_close(native_channel_shuffle(nb.tensor(x), 3).numpy(), expected, 0)
    m = ChannelShuffle(3)
    assert repr(m) == "ChannelShuffle(groups=3)" and list(m.state_dict()) == []
    assert_close(m(nb.tensor(x)).numpy(), expected, 0)
    xt = nb.tensor(x, requires_grad=True)
    (channel_shuffle(xt, 2) * nb.tensor(np.arange(6, dtype=np.float32).reshape(1, 6, 1, 1))).sum().backward()
    perm = np.arange(6).reshape(2, 3).T.reshape(-1)  # output channel k reads input channel perm[k]
    assert_close(xt.grad.numpy()[0, perm, 0, 0], np.arange(6), 0)
    with pytest.raises(ValueError, match="divisible by groups, got 6 channels and 4 groups"):
        channel_shuffle(nb.tensor(x), 4)
    with pytest.raises(ValueError, match="must be positive, got 0"):
        channel_shuffle(nb.tensor(x), 0)
    with pytest.raises(ValueError, match=r"> 2 dims \(N, C, \*\), got shape \(2, 6\)"):
        channel_shuffle(nb.zeros((2, 6)), 2)
    with pytest.raises(ValueError, match=r"\(ChannelShuffle groups=3\) got input \(2, 4, 3\)"):
        m(nb.zeros((2, 4, 3)))


@needs_torch
@pytest.mark.parametrize("shape, groups", [((2, 6, 3), 2), ((1, 12, 2, 3), 4), ((2, 6, 2, 1, 2), 6)])
def test_channel_shuffle_matches_torch(shape, groups):
    x = randn(*shape)
    expected = TF.channel_shuffle(torch.tensor(x), groups).numpy()
    assert_close(channel_shuffle(nb.tensor(x), groups).numpy(), expected, 0)
    assert repr(ChannelShuffle(groups)) == repr(torch.nn.ChannelShuffle(groups))


def test_ctc_ignores_any_padding_past_the_target_lengths():
    log_probs = nb.tensor(np.log(np.full((5, 2, 4), 0.25, np.float32)))
    padded_with_junk = nb.tensor(np.array([[1, 2, 999], [3, 999, -5]]))  # torch ignores the padding
    padded_with_blank = nb.tensor(np.array([[1, 2, 0], [3, 0, 0]]))
    got = ctc_loss(log_probs, padded_with_junk, [5, 5], [2, 1], reduction="none").numpy()
    want = ctc_loss(log_probs, padded_with_blank, [5, 5], [2, 1], reduction="none").numpy()
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got, [3.3761237, 4.2234216], rtol=1e-6)  # torch 2.13


def test_max_bags_give_a_tied_gradient_to_the_first_maximal_row_as_torch():
    weight = nb.tensor(np.array([[1.0, 2.0], [2.0, 1.0], [2.0, 2.0]], np.float32), requires_grad=True)
    out = embedding_bag(nb.tensor([[0, 1, 2], [2, 1, 0]]), weight, mode="max")
    np.testing.assert_array_equal(out.numpy(), [[2, 2], [2, 2]])
    out.sum().backward()
    # bag 0: dim 0's max is first at row 1, dim 1's at row 0; bag 1: row 2 first for both (torch 2.13)
    np.testing.assert_array_equal(weight.grad.numpy(), [[0, 1], [1, 0], [1, 1]])
