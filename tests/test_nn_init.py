"""nabla_nn.init: PyTorch's initialisers, drawn on the host (no graph) and reproducible."""

from __future__ import annotations

import inspect
import math
import threading

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla_nn import init
from nabla_nn.parameter import Parameter


def _p(*shape: int) -> Parameter:
    return Parameter(nb.Tensor.from_numpy(np.zeros(shape, np.float32)))


def test_initialisers_build_no_graph_and_leave_realized_parameters():
    nb.reset_cache_info()
    w = _p(64, 32)
    for fn in (init.kaiming_uniform_, init.kaiming_normal_, init.xavier_uniform_, init.orthogonal_):
        fn(w)
        assert w.is_realized and w.requires_grad and w.is_leaf and isinstance(w, Parameter)
    info = nb.cache_info()
    assert (info.misses, info.executions) == (0, 0)


def test_uniform_bounds_and_normal_statistics():
    w = init.uniform_(_p(200, 100), -0.5, 0.25).numpy()
    assert w.min() >= -0.5 and w.max() < 0.25 and abs(w.mean() + 0.125) < 0.01
    w = init.normal_(_p(200, 100), 1.0, 2.0).numpy()
    assert abs(w.mean() - 1.0) < 0.05 and abs(w.std() - 2.0) < 0.05


def test_kaiming_and_xavier_scales():
    fan_in, fan_out = 300, 200
    w = init.kaiming_uniform_(_p(fan_out, fan_in), a=math.sqrt(5)).numpy()
    assert np.abs(w).max() <= 1 / math.sqrt(fan_in) + 1e-7 and np.abs(w).max() > 0.9 / math.sqrt(fan_in)
    w = init.kaiming_normal_(_p(fan_out, fan_in), nonlinearity="relu").numpy()
    assert abs(w.std() - math.sqrt(2 / fan_in)) < 0.003
    w = init.kaiming_normal_(_p(fan_out, fan_in), mode="fan_out", nonlinearity="relu").numpy()
    assert abs(w.std() - math.sqrt(2 / fan_out)) < 0.003
    w = init.xavier_uniform_(_p(fan_out, fan_in), gain=2.0).numpy()
    assert np.abs(w).max() <= 2 * math.sqrt(6 / (fan_in + fan_out)) + 1e-7
    w = init.xavier_normal_(_p(16, 8, 3, 3)).numpy()  # conv weight: receptive field 9
    assert abs(w.std() - math.sqrt(2 / (8 * 9 + 16 * 9))) < 0.01


def test_trunc_normal_orthogonal_constant_eye_dirac():
    w = init.trunc_normal_(_p(100, 100), std=1.0, a=-0.5, b=0.5).numpy()
    assert w.min() >= -0.5 and w.max() <= 0.5
    q = init.orthogonal_(_p(8, 20), gain=3.0).numpy()
    np.testing.assert_allclose(q @ q.T, 9 * np.eye(8), atol=1e-4)
    assert np.all(init.constant_(_p(3), 0.5).numpy() == 0.5)
    assert np.all(init.ones_(_p(3)).numpy() == 1) and np.all(init.zeros_(_p(3)).numpy() == 0)
    np.testing.assert_array_equal(init.eye_(_p(2, 3)).numpy(), np.eye(2, 3))
    d = init.dirac_(_p(2, 2, 3)).numpy()
    assert d[0, 0, 1] == 1 and d[1, 1, 1] == 1 and d.sum() == 2


def test_manual_seed_repeats_draws():
    nb.manual_seed(7)
    a = init.normal_(_p(5)).numpy().copy()
    nb.manual_seed(7)
    np.testing.assert_array_equal(init.normal_(_p(5)).numpy(), a)


@pytest.mark.parametrize(
    "name",
    ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
     "kaiming_normal_", "orthogonal_", "sparse_"],
)  # fmt: skip
def test_initialisers_take_a_generator(name):
    fill = getattr(init, name)
    args = (0.5,) if name == "sparse_" else ()
    draws = [fill(Parameter(nb.empty(4, 6)), *args, generator=nb.Generator().manual_seed(s)).numpy() for s in (1, 1, 2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    if torch is not None:  # torch's keyword, in torch's position
        assert list(inspect.signature(fill).parameters) == list(
            inspect.signature(getattr(torch.nn.init, name)).parameters
        )


def test_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(_p(5))
    with pytest.raises(ValueError, match="Mode fan_up not supported"):
        init.kaiming_uniform_(_p(2, 2), mode="fan_up")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(TypeError, match="floating dtype"):
        init.uniform_(nb.Tensor.from_numpy(np.zeros(3, np.int64)))
    with pytest.raises(RuntimeError, match=r"uniform_: expects a range \[a, b\) with a <= b, got a=1 > b=0"):
        init.uniform_(_p(3), 1, 0)
    with pytest.raises(RuntimeError, match="normal_: expects std >= 0.0, got std=-1"):
        init.normal_(_p(3), 0, -1)
    with pytest.raises(
        ValueError, match=r"dirac_: dim 0 of the weight \(shape \(5, 2, 3\)\) must be divisible by groups=2"
    ):
        init.dirac_(_p(5, 2, 3), groups=2)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
@pytest.mark.parametrize(
    "name, param", [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None), ("conv2d", None)]
)
def test_calculate_gain_matches_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))


def test_sparse_zeroes_a_fraction_of_each_column():
    w = init.sparse_(_p(10, 6), sparsity=0.25, std=0.5).numpy()
    zeros_per_column = (w == 0).sum(axis=0)
    assert zeros_per_column.tolist() == [3] * 6  # ceil(0.25 * 10)
    assert 0.2 < w[w != 0].std() < 1.0
    with pytest.raises(ValueError, match="only tensors with 2 dimensions"):
        init.sparse_(_p(2, 2, 2), sparsity=0.1)


def test_deprecated_names_warn_and_initialise():
    with pytest.warns(FutureWarning, match=r"`nn.init.normal` is now deprecated in favor of `nn.init.normal_`"):
        w = init.normal(_p(4, 3), 0.0, 0.5)
    assert w.numpy().std() > 0
    with pytest.warns(FutureWarning, match="nn.init.constant_"):
        assert np.all(init.constant(_p(3), 2.0).numpy() == 2.0)
    assert init.kaiming_uniform.__name__ == "kaiming_uniform"


def _within_seconds(seconds, fn):
    """fn() run in a daemon thread: a test failure, not a hang, when it does not return in time."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"did not finish within {seconds} s"
    return out[0]


def _truncated_normal_moments(mean, std, a, b):
    """The mean and standard deviation of N(mean, std^2) truncated to [a, b] (closed forms)."""
    lo, hi = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    if hi < 0:  # (each tail from its own side, where erfc keeps precision)
        mass = 0.5 * (math.erfc(-hi / math.sqrt(2)) - math.erfc(-lo / math.sqrt(2)))
    else:
        mass = 0.5 * (math.erfc(lo / math.sqrt(2)) - math.erfc(hi / math.sqrt(2)))
    d = (pdf(lo) - pdf(hi)) / mass
    var = 1 + (lo * pdf(lo) - hi * pdf(hi)) / mass - d * d
    return mean + std * d, std * math.sqrt(var)


@pytest.mark.parametrize(
    "mean, std, a, b",
    [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 2.0), (0.0, 1.0, 8.0, 9.0), (0.0, 1.0, -9.0, -8.0), (3.0, 1.0, -1.0, 0.0)],
)
def test_trunc_normal_in_any_interval_is_fast_and_has_the_truncated_moments(mean, std, a, b):
    # [8, 9] is far in the tail: redrawing until a sample lands there never ended
    nb.manual_seed(0)
    w = _within_seconds(60, lambda: init.trunc_normal_(_p(40000), mean=mean, std=std, a=a, b=b).numpy())
    w = w.astype(np.float64)
    assert w.min() >= a and w.max() <= b
    m, s = _truncated_normal_moments(mean, std, a, b)
    assert abs(w.mean() - m) < 0.02 * std and abs(w.std() - s) < 0.02 * std


def test_trunc_normal_beyond_float64_cdf_and_argument_errors():
    w = _within_seconds(60, lambda: init.trunc_normal_(_p(20000), a=39.0, b=40.0).numpy()).astype(np.float64)
    assert w.min() >= 39.0 and w.max() <= 40.0 and abs(w.mean() - 39.0256) < 0.003  # not all at one bound
    assert np.all(init.trunc_normal_(_p(3), mean=5.0, std=0.0, a=-1.0, b=1.0).numpy() == 1.0)
    with pytest.raises(ValueError, match="trunc_normal_: std must be non-negative, got std=-1.0"):
        init.trunc_normal_(_p(3), std=-1.0)


def test_kaiming_on_a_zero_element_tensor_is_a_no_op_with_a_warning():
    for fn in (init.kaiming_uniform_, init.kaiming_normal_):
        for shape in ((0,), (0, 3), (3, 0)):
            t = nb.empty(*shape)
            with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
                assert fn(t) is t
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.kaiming_uniform_(_p(3))


@needs_torch
def test_torch_agrees_on_zero_element_kaiming_and_tail_trunc_normal():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        torch.nn.init.kaiming_uniform_(torch.empty(0))
    with pytest.warns(UserWarning):
        t = torch.nn.init.trunc_normal_(torch.empty(100), a=8.0, b=9.0)
    assert float(t.min()) >= 8.0 and float(t.max()) <= 9.0
