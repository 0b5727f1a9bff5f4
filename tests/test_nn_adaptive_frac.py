"""AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d and fractional max pooling (FractionalMaxPool2d / 3d,
F.fractional_max_pool2d / 3d).

Against PyTorch (when installed): outputs, losses, gradients, state_dict keys and shapes, torch's
weights loaded through `load_state_dict`, reprs, and errors; fractional pooling's values and
indices bit for bit for given `_random_samples`. Without torch: NumPy references (ATen's
interval algorithm and scan, the legacy LRN window) and self-consistency (forward's output
against log_prob).
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

RNG = np.random.default_rng(11)
# torch warns when it initializes a zero-sized cluster projection (in_features // div_value**i == 0)
pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors:UserWarning")


def randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _load_torch_weights(m: nn.Module, tm) -> None:
    """`m` takes `tm`'s state_dict (after checking that keys and shapes agree)."""
    tsd = tm.state_dict()
    assert [(k, tuple(v.shape)) for k, v in tsd.items()] == [(k, v.shape) for k, v in m.state_dict().items()]
    m.load_state_dict({k: nb.tensor(v.numpy()) for k, v in tsd.items()})


# -- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------------
ASM_CASES = [
    # in_features, n_classes, cutoffs, div_value, head_bias
    (8, 10, [3], 4.0, False),
    (16, 20, [4, 9, 15], 2.0, True),
    (12, 30, [5, 11], 4.0, False),
]
ASM_IDS = [f"in{c[0]}-n{c[1]}-cut{'_'.join(map(str, c[2]))}" for c in ASM_CASES]


def _targets(n_classes: int, cutoffs: list[int], batch: int) -> np.ndarray:
    """Targets hitting the shortlist and every cluster (both ends of each)."""
    edges = [0, *cutoffs, n_classes]
    picks = [v for lo, hi in zip(edges[:-1], edges[1:], strict=True) for v in (lo, hi - 1)]
    rest = RNG.integers(0, n_classes, batch - len(picks))
    return np.concatenate([picks, rest]).astype(np.int64)


def test_asm_layout_and_init():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0)
    assert m.cutoffs == [4, 9, 15, 20] and m.shortlist_size == 4 and m.n_clusters == 3 and m.head_size == 7
    assert list(m.state_dict()) == [
        "head.weight",
        "tail.0.0.weight",
        "tail.0.1.weight",
        "tail.1.0.weight",
        "tail.1.1.weight",
        "tail.2.0.weight",
        "tail.2.1.weight",
    ]
    assert m.head.weight.shape == (7, 16) and m.head.bias is None
    assert [(s[0].weight.shape, s[1].weight.shape) for s in m.tail] == [
        ((8, 16), (5, 8)),
        ((4, 16), (6, 4)),
        ((2, 16), (5, 2)),
    ]
    assert "head.bias" in nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3], head_bias=True).state_dict()
    before = m.tail[1][0].weight.numpy().copy()
    m.reset_parameters()
    assert not np.array_equal(before, m.tail[1][0].weight.numpy())


def test_asm_output_is_log_prob_of_target():
    """Without torch: forward's output is log_prob at the target, the loss its negative mean,
    log_prob normalizes, and predict is log_prob's argmax."""
    m = nn.AdaptiveLogSoftmaxWithLoss(12, 30, [5, 11], head_bias=True)
    for p in m.parameters():  # larger weights: the head's best entry is often a cluster
        p.data = p * 4.0
    x, t = randn(10, 12), _targets(30, [5, 11], 10)
    out = m(nb.tensor(x), nb.tensor(t))
    assert isinstance(out, tuple) and out._fields == ("output", "loss")
    full = m.log_prob(nb.tensor(x)).numpy()
    assert full.shape == (10, 30)
    assert_close(np.exp(full).sum(1), np.ones(10), 1e-5)
    assert_close(out.output.numpy(), full[np.arange(10), t])
    assert_close(out.loss.numpy(), -full[np.arange(10), t].mean())
    np.testing.assert_array_equal(m.predict(nb.tensor(x)).numpy(), full.argmax(1))
    # unbatched
    one = m(nb.tensor(x[3]), nb.tensor(t[3]))
    assert one.output.shape == () and one.loss.shape == ()
    assert_close(one.output.numpy(), full[3, t[3]])
    assert m.log_prob(nb.tensor(x[3])).shape == (30,) and m.predict(nb.tensor(x[3])).shape == ()


@needs_torch
@pytest.mark.parametrize("case", ASM_CASES, ids=ASM_IDS)
def test_asm_matches_torch(case):
    in_f, n_classes, cutoffs, div, head_bias = case
    torch.manual_seed(0)  # torch's init draws from its global generator: fixed, whatever ran before
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(in_f, n_classes, cutoffs, div_value=div, head_bias=head_bias)
    m = nn.AdaptiveLogSoftmaxWithLoss(in_f, n_classes, cutoffs, div_value=div, head_bias=head_bias)
    assert repr(m) == repr(tm)
    with torch.no_grad():  # larger weights: the head's best entry is often a cluster (predict's both paths)
        for p in tm.parameters():
            p.mul_(4.0)
    _load_torch_weights(m, tm)
    x, t = randn(9, in_f), _targets(n_classes, cutoffs, 9)
    tx, nx = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    tout, nout = tm(tx, torch.tensor(t)), m(nx, nb.tensor(t))
    assert nout.output.shape == tuple(tout.output.shape) and nout.loss.shape == ()
    assert_close(nout.output.numpy(), tout.output.detach().numpy())
    assert_close(nout.loss.numpy(), tout.loss.detach().numpy())
    # gradients of the loss plus a random weighting of the outputs
    cot = randn(9)
    (tout.loss + (tout.output * torch.tensor(cot)).sum()).backward()
    (nout.loss + (nout.output * nb.tensor(cot)).sum()).backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy(), 1e-4)
    params = dict(m.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params[name].grad.numpy(), p.grad.numpy(), 1e-4)
    with torch.no_grad():
        assert_close(m.log_prob(nb.tensor(x)).numpy(), tm.log_prob(torch.tensor(x)).numpy())
        tpred = tm.predict(torch.tensor(x)).numpy()
    head_best = tm.head(torch.tensor(x)).argmax(1).numpy()
    assert (head_best >= tm.shortlist_size).any()  # the clusters' path of predict is exercised
    np.testing.assert_array_equal(m.predict(nb.tensor(x)).numpy(), tpred)
    # unbatched: (in_features,) input, () target
    tone, none = tm(torch.tensor(x[1]), torch.tensor(t[1])), m(nb.tensor(x[1]), nb.tensor(t[1]))
    assert none.output.shape == tuple(tone.output.shape) == ()
    assert_close(none.output.numpy(), tone.output.detach().numpy())
    assert_close(none.loss.numpy(), tone.loss.detach().numpy())


@needs_torch
def test_asm_all_targets_in_one_cluster_and_batch_of_one():
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 6])
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 6])
    _load_torch_weights(m, tm)
    for t in (np.array([7, 11, 9]), np.array([0, 1, 0]), np.array([4])):
        x = randn(len(t), 8)
        tout, nout = tm(torch.tensor(x), torch.tensor(t)), m(nb.tensor(x), nb.tensor(t))
        assert_close(nout.output.numpy(), tout.output.detach().numpy())
        assert_close(nout.loss.numpy(), tout.loss.detach().numpy())


def test_asm_cutoff_errors():
    msg = "cutoffs should be a sequence of unique, positive integers"
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    for bad in ([5, 3], [0, 4], [3, 10], [3, 3], [2.5], [-1]):
        with pytest.raises(ValueError, match=msg):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
        if torch is not None:
            with pytest.raises(ValueError, match=msg):
                torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)


def test_asm_input_and_target_errors():
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    x, t = nb.tensor(randn(4, 8)), nb.tensor(np.array([0, 3, 6, 9]))
    cases = [
        (x, nb.tensor(np.array([0, 1, 2])), "Input and target should have the same size in the batch dimension"),
        (nb.tensor(randn(4, 2, 8)), t, r"1D target tensor expects 2D input tensors"),
        (x, nb.tensor(np.array(1)), r"0D target tensor expects 1D input tensors"),
        (x, nb.tensor(np.zeros((4, 1), np.int64)), "0D or 1D target tensor expected, multi-target not supported"),
        (x, nb.tensor(np.array([0, 1, 10, 2])), r"Target values should be in \[0, 9\], but values in range \[0, 10\]"),
        (x, nb.tensor(np.array([0, -1, 3, 2])), r"Target values should be in \[0, 9\], but values in range \[-1, 3\]"),
    ]
    for inp, tgt, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            m(inp, tgt)
    if torch is not None:  # the same errors as torch
        tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
        for inp, tgt, msg in cases:
            with pytest.raises(RuntimeError, match=msg):
                tm(torch.tensor(inp.numpy()), torch.tensor(tgt.numpy()))
    with pytest.raises(TypeError, match="target must be an integer tensor"):
        m(x, nb.tensor(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match=r"expected \(N, 8\) or \(8,\)"):
        m.log_prob(nb.tensor(randn(4, 7)))


def test_asm_lazy_targets_out_of_range_give_nan():
    """A pending target's values cannot be checked without running the graph: rows outside
    [0, n_classes) read NaN, the others are unchanged."""
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    x = nb.tensor(randn(4, 8))
    good = m(x, nb.tensor(np.array([0, 4, 7, 2]))).output.numpy()
    lazy = nb.tensor(np.array([0, 4, 7, 12])) - nb.tensor(np.array([0, 0, 0, 10]))  # [0, 4, 7, 2], pending
    assert_close(m(x, lazy).output.numpy(), good, 0)
    out = m(x, nb.tensor(np.array([0, 4, 7, 12])) + 0)
    assert np.isnan(out.output.numpy()[3]) and not np.isnan(out.output.numpy()[:3]).any()
    assert np.isnan(out.loss.item())


# -- CrossMapLRN2d ----------------------------------------------------------------------------------
def _lrn_window(channels: int, size: int) -> np.ndarray:
    """(C, C) 0/1 matrix of the channels PyTorch's legacy running sum adds for each channel."""
    pre = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels))
    for c in range(channels):
        w[c, max(0, c - pre + 1) : min(channels, c + pre)] = 1
        w[c, 0] = 1  # never subtracted by the running sum
    return w


def _np_cross_map_lrn(x: np.ndarray, size: int, alpha: float, beta: float, k: float) -> np.ndarray:
    scale = np.einsum("cj,njhw->nchw", _lrn_window(x.shape[1], size), x.astype(np.float64) ** 2)
    return x * (scale * (alpha / size) + k) ** -beta


LRN_CASES = [(1, 4), (2, 5), (3, 1), (3, 6), (4, 5), (5, 8), (5, 3), (6, 7)]


@pytest.mark.parametrize("size, channels", LRN_CASES)
def test_cross_map_lrn2d_matches_numpy(size, channels):
    x = randn(2, channels, 3, 4) * 2
    y = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(nb.tensor(x))
    assert_close(y.numpy(), _np_cross_map_lrn(x, size, 0.5, 0.75, 1.5))


@needs_torch
@pytest.mark.parametrize("size, channels", LRN_CASES)
def test_cross_map_lrn2d_matches_torch(size, channels):
    m, tm = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5), torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)
    assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict()) == []
    x = randn(2, channels, 3, 4) * 2
    assert_close(m(nb.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())
    # The gradient is the exact derivative of this forward (torch's autograd through the same
    # formula); torch's own hand-written backward is not (it fails gradcheck), so it is not compared.
    tx, nx = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    scale = torch.einsum("cj,njhw->nchw", torch.tensor(_lrn_window(channels, size), dtype=tx.dtype), tx * tx)
    ref = tx * (scale * (0.5 / size) + 1.5) ** -0.75
    cot = randn(*x.shape)
    (ref * torch.tensor(cot)).sum().backward()
    (m(nx) * nb.tensor(cot)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy(), 1e-4)


def test_cross_map_lrn2d_defaults_repr_and_errors():
    m = nn.CrossMapLRN2d(5)
    assert (m.size, m.alpha, m.beta, m.k) == (5, 1e-4, 0.75, 1)
    assert repr(m) == "CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)"
    with pytest.raises(ValueError, match=r"got input \(2, 3, 4\), expected \(N, C, H, W\)"):
        m(nb.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="size must be a positive int"):
        nn.CrossMapLRN2d(0)
    with pytest.raises(TypeError, match="floating-point"):
        m(nb.zeros((1, 2, 3, 3), dtype=nb.int64))


# -- fractional max pooling -------------------------------------------------------------------------
def _np_intervals(u, n: int, o: int, k: int, dt) -> np.ndarray:
    """ATen's generate_intervals, in the samples' dtype."""
    seq = np.zeros(o, np.int64)
    if o > 1:
        alpha = dt(n - k) / dt(o - 1)
        for i in range(o - 1):
            seq[i] = int((dt(i) + u) * alpha) - int(u * alpha)
    seq[o - 1] = n - k
    return seq


def _np_fractional(x: np.ndarray, kernel: tuple, out: tuple, samples: np.ndarray) -> tuple:
    """ATen's fractional max pooling of a batched (N, C, *spatial) input: values and indices."""
    nd = len(kernel)
    slots = (1, 0) if nd == 2 else (0, 1, 2)
    n_batch, channels, spatial = x.shape[0], x.shape[1], x.shape[2:]
    values, indices = np.zeros((n_batch, channels, *out), x.dtype), np.zeros((n_batch, channels, *out), np.int64)
    dt = x.dtype.type
    for b in range(n_batch):
        for c in range(channels):
            starts = [_np_intervals(samples[b, c, slots[d]], spatial[d], out[d], kernel[d], dt) for d in range(nd)]
            for o in np.ndindex(*out):
                best, best_i = -np.inf, None
                for w in np.ndindex(*kernel):
                    pos = tuple(starts[d][o[d]] + w[d] for d in range(nd))
                    v = x[(b, c, *pos)]
                    if best_i is None or v > best or np.isnan(v):
                        best, best_i = v, int(np.ravel_multi_index(pos, spatial))
                values[(b, c, *o)], indices[(b, c, *o)] = best, best_i
    return values, indices


FRAC2D = [
    # input shape, kernel, output_size, output_ratio, dtype
    ((2, 3, 9, 11), (2, 3), (4, 5), None, np.float32),
    ((2, 2, 10, 10), 2, 5, None, np.float64),
    ((1, 2, 8, 9), (1, 2), (1, 8), None, np.float32),
    ((2, 3, 7, 7), 3, (5, 1), None, np.float32),
    ((2, 2, 12, 9), 2, None, 0.5, np.float32),
    ((1, 3, 10, 11), (3, 2), None, (0.4, 0.7), np.float64),
]
FRAC3D = [
    ((2, 2, 6, 7, 8), (2, 3, 2), (3, 4, 5), None, np.float32),
    ((1, 2, 5, 6, 6), 2, None, 0.5, np.float64),
    ((2, 1, 4, 5, 6), 1, (3, 2, 5), None, np.float32),
]


def _sizes(shape, output_size, output_ratio, nd):
    if output_size is not None:
        return tuple(output_size) if isinstance(output_size, tuple) else (output_size,) * nd
    ratio = output_ratio if isinstance(output_ratio, tuple) else (output_ratio,) * nd
    return tuple(int(n * r) for n, r in zip(shape[-nd:], ratio, strict=True))


def _frac_input(shape, dtype) -> tuple[np.ndarray, np.ndarray]:
    x = RNG.integers(0, 4, shape).astype(dtype)  # ties: the first maximum must be picked
    x.flat[[3, x.size // 2]] = np.nan  # a window holding a NaN picks it (its last one)
    samples = RNG.random((shape[0], shape[1], len(shape) - 2)).astype(dtype)
    samples[0, 0] = np.nextafter(dtype(1), dtype(0))  # extremes of [0, 1)
    samples[-1, -1] = 0.0
    return x, samples


@pytest.mark.parametrize("case", FRAC2D + FRAC3D, ids=[f"{len(c[0]) - 2}d-{c[0]}-{c[1]}" for c in FRAC2D + FRAC3D])
def test_fractional_max_pool_matches_numpy(case):
    shape, kernel, output_size, output_ratio, dtype = case
    nd = len(shape) - 2
    pool = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    x, s = _frac_input(shape, dtype)
    out, idx = pool(nb.tensor(x), kernel, output_size, output_ratio, True, _random_samples=nb.tensor(s))
    k = kernel if isinstance(kernel, tuple) else (kernel,) * nd
    ref_out, ref_idx = _np_fractional(x, k, _sizes(shape, output_size, output_ratio, nd), s)
    assert idx.dtype == nb.int64 and out.dtype == nb.tensor(x).dtype
    np.testing.assert_array_equal(out.numpy(), ref_out)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)


@needs_torch
@pytest.mark.parametrize("case", FRAC2D + FRAC3D, ids=[f"{len(c[0]) - 2}d-{c[0]}-{c[1]}" for c in FRAC2D + FRAC3D])
def test_fractional_max_pool_matches_torch(case):
    """Values and indices bit for bit, unbatched too; input gradients equal."""
    shape, kernel, output_size, output_ratio, dtype = case
    nd = len(shape) - 2
    name = f"fractional_max_pool{nd}d"
    x, s = _frac_input(shape, dtype)
    if isinstance(output_ratio, float):  # torch's 2-D function takes len() of it (its module pairs it)
        output_ratio = (output_ratio,) * nd
    args = (kernel, output_size, output_ratio)
    tout, tidx = getattr(TF, name)(torch.tensor(x), *args, return_indices=True, _random_samples=torch.tensor(s))
    nout, nidx = getattr(F, name)(nb.tensor(x), *args, return_indices=True, _random_samples=nb.tensor(s))
    np.testing.assert_array_equal(nout.numpy(), tout.numpy())
    np.testing.assert_array_equal(nidx.numpy(), tidx.numpy())
    alias = getattr(F, f"{name}_with_indices")(nb.tensor(x), *args, _random_samples=nb.tensor(s))
    np.testing.assert_array_equal(alias[1].numpy(), tidx.numpy())
    # gradients (overlapping windows accumulate)
    x = randn(*shape, dtype=dtype)
    tx, nx = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    tout = getattr(TF, name)(tx, *args, _random_samples=torch.tensor(s))
    nout = getattr(F, name)(nx, *args, _random_samples=nb.tensor(s))
    cot = randn(*tout.shape, dtype=dtype)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy(), 1e-6)
    # unbatched input, its samples (1, C, nd)
    t1 = getattr(TF, name)(torch.tensor(x[0]), *args, _random_samples=torch.tensor(s[:1]))
    n1 = getattr(F, name)(nb.tensor(x[0]), *args, _random_samples=nb.tensor(s[:1]))
    assert n1.shape == tuple(t1.shape)
    np.testing.assert_array_equal(n1.numpy(), t1.numpy())


@needs_torch
def test_fractional_max_pool_sweep_matches_torch():
    """Random geometries (every output size the input allows) and samples, float32 and float64."""
    for trial in range(12):
        dtype = (np.float32, np.float64)[trial % 2]
        h, w = (int(v) for v in RNG.integers(5, 40, 2))
        kh, kw = (int(v) for v in RNG.integers(1, 4, 2))
        oh, ow = int(RNG.integers(1, h - kh + 2)), int(RNG.integers(1, w - kw + 2))
        x, s = randn(2, 3, h, w, dtype=dtype), RNG.random((2, 3, 2)).astype(dtype)
        t = TF.fractional_max_pool2d(torch.tensor(x), (kh, kw), (oh, ow), None, True, torch.tensor(s))
        n = F.fractional_max_pool2d(nb.tensor(x), (kh, kw), (oh, ow), None, True, nb.tensor(s))
        np.testing.assert_array_equal(n[0].numpy(), t[0].numpy())
        np.testing.assert_array_equal(n[1].numpy(), t[1].numpy())


def test_fractional_max_pool_lazy_samples_and_extra_rows():
    """Pending samples work (the regions are computed with ops); rows past the batch are ignored."""
    x, s = randn(2, 3, 9, 9), RNG.random((4, 3, 2)).astype(np.float32)
    ref = F.fractional_max_pool2d(nb.tensor(x), 2, 4, _random_samples=nb.tensor(s[:2])).numpy()
    pending = nb.tensor(s) * 1.0
    np.testing.assert_array_equal(F.fractional_max_pool2d(nb.tensor(x), 2, 4, _random_samples=pending).numpy(), ref)


def test_fractional_max_pool_draws_from_nabla_rng():
    x = nb.tensor(randn(2, 3, 11, 10))
    nb.manual_seed(3)
    a, ai = F.fractional_max_pool2d(x, 2, output_ratio=0.5, return_indices=True)
    nb.manual_seed(3)
    b = F.fractional_max_pool2d(x, 2, output_ratio=0.5)
    assert a.shape == (2, 3, 5, 5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, ai.numpy().reshape(2, 3, -1), -1).reshape(a.shape), a.numpy()
    )
    draws = {F.fractional_max_pool3d(nb.tensor(randn(1, 2, 8, 8, 8)), 2, 3).shape for _ in range(2)}
    assert draws == {(1, 2, 3, 3, 3)}
    m = nn.FractionalMaxPool2d(3, output_size=4)
    assert m(x).shape == (2, 3, 4, 4) and m(x[0]).shape == (3, 4, 4)


def test_fractional_max_pool_gradient_numpy():
    """Overlapping windows: each output's gradient goes to its window's maximum, summed."""
    x, s = randn(1, 2, 7, 8), RNG.random((1, 2, 2)).astype(np.float32)
    nx = nb.tensor(x, requires_grad=True)
    out, idx = F.fractional_max_pool2d(nx, 3, (5, 6), return_indices=True, _random_samples=nb.tensor(s))
    out.sum().backward()
    expected = np.zeros((1, 2, 56), np.float32)
    for c in range(2):
        np.add.at(expected[0, c], idx.numpy()[0, c].reshape(-1), 1.0)
    assert_close(nx.grad.numpy(), expected.reshape(x.shape), 0)


@needs_torch
@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_modules_match_torch(nd):
    cls, tcls = getattr(nn, f"FractionalMaxPool{nd}d"), getattr(torch.nn, f"FractionalMaxPool{nd}d")
    shape = (2, 3, 9, 8) if nd == 2 else (2, 3, 6, 7, 6)
    x, s = randn(*shape), RNG.random((2, 3, nd)).astype(np.float32)
    for kwargs in ({"output_size": 4}, {"output_ratio": 0.5}, {"output_size": (4, 5, 3)[:nd], "return_indices": True}):
        m, tm = cls(2, **kwargs), tcls(2, **kwargs)
        assert repr(m) == repr(tm) == f"FractionalMaxPool{nd}d()"
        assert (m.kernel_size, m.output_size, m.output_ratio, m.return_indices) == (
            tm.kernel_size,
            tm.output_size,
            tm.output_ratio,
            tm.return_indices,
        )
        assert list(m.state_dict()) == list(tm.state_dict()) == []
    # fixed samples are a buffer: torch's state_dict loads, and the outputs (and indices) agree
    tm = tcls(2, output_ratio=0.6, return_indices=True, _random_samples=torch.tensor(s))
    m = cls(
        2, output_ratio=0.6, return_indices=True, _random_samples=nb.tensor(RNG.random((2, 3, nd)).astype(np.float32))
    )
    _load_torch_weights(m, tm)
    assert list(m.state_dict()) == ["_random_samples"]
    tout, tidx = tm(torch.tensor(x))
    nout, nidx = m(nb.tensor(x))
    np.testing.assert_array_equal(nout.numpy(), tout.numpy())
    np.testing.assert_array_equal(nidx.numpy(), tidx.numpy())
    unpool = getattr(F, f"max_unpool{nd}d")(nout, nidx, 2, output_size=x.shape[-nd:])
    tunpool = getattr(TF, f"max_unpool{nd}d")(tout, tidx, 2, output_size=x.shape[-nd:])
    np.testing.assert_array_equal(unpool.numpy(), tunpool.numpy())


def test_fractional_max_pool_argument_errors():
    for cls in (nn.FractionalMaxPool2d, nn.FractionalMaxPool3d):
        name = cls.__name__
        with pytest.raises(ValueError, match=f"{name} requires specifying either an output size, or a pooling ratio"):
            cls(2)
        with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
            cls(2, 4, 0.5)
        for ratio in (1.0, 0.0, (0.5, 1.5, 0.5)[: cls._n]):
            with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
                cls(2, output_ratio=ratio)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0, but got 0"):
        nn.FractionalMaxPool3d(0, 2)
    x = nb.tensor(randn(2, 3, 8, 8))
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="kernel_size must be positive"):
        F.fractional_max_pool2d(x, 0, 2)
    with pytest.raises(ValueError, match="output_size must be an int or a tuple of 2 ints"):
        F.fractional_max_pool2d(x, 2, (4, 3, 2))
    with pytest.raises(ValueError, match=r"expected a 3-D \(unbatched\) or 4-D \(batched\) input"):
        F.fractional_max_pool2d(nb.tensor(randn(8, 8)), 2, 4)
    with pytest.raises(ValueError, match=r"got input \(8, 8\), expected \(N, C, H, W\) or \(C, H, W\)"):
        nn.FractionalMaxPool2d(2, 4)(nb.tensor(randn(8, 8)))
    with pytest.raises(TypeError, match="floating-point"):
        F.fractional_max_pool2d(nb.zeros((1, 2, 8, 8), dtype=nb.int64), 2, 4)


def test_fractional_max_pool_runtime_errors_as_torch():
    x, y = randn(2, 3, 8, 8), randn(2, 3, 6, 7, 8)

    def u(*shape: int, dtype=np.float32) -> np.ndarray:
        return RNG.random(shape).astype(dtype)

    cases = [
        # input, (kernel, output_size, samples), message
        (x, (2, 8, None), r"fractional_max_pool2d\(\): pool height 2 too large relative to input height 8"),
        (x, (9, 1, None), r"pool height 9 too large relative to input height 8"),
        (y, (2, (3, 6, 3), None), r"fractional_max_pool3d_out\(\): pool height 2 too large relative to input height 7"),
        (y, (1, (3, 3, 8), None), r"pool width 1 too large relative to input width 8"),
        (x, (2, 4, u(3, 2)), "Expect _random_samples to have 3 dimensions, got 2"),
        (x, (2, 4, u(1, 3, 2)), r"Expect _random_samples.size\(0\) no less then input batch size"),
        (x, (2, 4, u(2, 4, 2)), r"Expect _random_samples.size\(1\) equals to input channel size"),
        (x, (2, 4, u(2, 3, 3)), r"Expect _random_samples.size\(2\) equals to 2; got 3"),
        (y, (2, 3, u(2, 3, 2)), r"Expect _random_samples.size\(2\) equals to 3; got 2"),
        (x, (2, 4, u(2, 3, 2, dtype=np.float64)), "Expect _random_samples to have the same dtype as input"),
    ]
    for inp, (k, o, s), msg in cases:
        name = f"fractional_max_pool{inp.ndim - 2}d"
        with pytest.raises(RuntimeError, match=msg):
            getattr(F, name)(nb.tensor(inp), k, o, _random_samples=None if s is None else nb.tensor(s))
        if torch is not None:
            with pytest.raises(RuntimeError, match=msg):
                getattr(TF, name)(torch.tensor(inp), k, o, _random_samples=None if s is None else torch.tensor(s))
