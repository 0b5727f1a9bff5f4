"""nabla_nn.utils: gradient clipping (lazy, joins the step graph) and parameter vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim
from nabla_nn.parameter import Parameter
from nabla_nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = ((3, 4), (5,), (2, 2, 2))


def _grads(scale: float = 1.0, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(scale * rng.standard_normal(s)).astype(np.float32) for s in SHAPES]


def _params_with(grads: list[np.ndarray]) -> list[Parameter]:
    params = [Parameter(nb.tensor(np.zeros(g.shape, np.float32))) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = nb.tensor(g)
    return params


def _numpy_norm(grads: list[np.ndarray], p: float) -> float:
    flat = np.concatenate([g.ravel() for g in grads]).astype(np.float64)
    return float(np.abs(flat).max()) if math.isinf(p) else float((np.abs(flat) ** p).sum() ** (1 / p))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, "inf", 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_numpy(norm_type: float | str, max_norm: float) -> None:
    grads = _grads()
    params = _params_with(grads)
    total = clip_grad_norm_(params, max_norm, norm_type)
    p = math.inf if norm_type == "inf" else norm_type
    expected = _numpy_norm(grads, p)
    assert total.shape == () and total.item() == pytest.approx(expected, rel=1e-5)
    coef = min(1.0, max_norm / (expected + 1e-6))
    for param, g in zip(params, grads, strict=True):
        np.testing.assert_allclose(param.grad.numpy(), g * coef, rtol=1e-5, atol=1e-7)
    clipped = [q.grad.numpy() for q in params]
    assert _numpy_norm(clipped, p) <= max(max_norm, expected) * (1 + 1e-5)


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.5])
def test_clip_grad_norm_matches_torch(norm_type: float) -> None:
    grads = _grads(scale=3.0)
    params = _params_with(grads)
    tparams = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for tp, g in zip(tparams, grads, strict=True):
        tp.grad = torch.tensor(g)
    total = clip_grad_norm_(params, 1.0, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tparams, 1.0, norm_type)
    np.testing.assert_allclose(total.numpy(), ttotal.numpy(), rtol=1e-6)
    for p, tp in zip(params, tparams, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-8)


@needs_torch
def test_clip_grad_value_matches_torch() -> None:
    grads = _grads(scale=2.0)
    params = _params_with(grads)
    tparams = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for tp, g in zip(tparams, grads, strict=True):
        tp.grad = torch.tensor(g)
    clip_grad_value_(params, 0.7)
    torch.nn.utils.clip_grad_value_(tparams, 0.7)
    for p, tp in zip(params, tparams, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())


def test_clip_grad_value_matches_numpy() -> None:
    grads = _grads(scale=2.0)
    params = _params_with(grads)
    clip_grad_value_(params, 0.7)
    for p, g in zip(params, grads, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.7, 0.7))
    with pytest.raises(ValueError, match="clip_value must be nonnegative, got -1.0"):
        clip_grad_value_(params, -1)


def test_clipping_is_lazy_and_joins_the_step_graph() -> None:
    rng = np.random.default_rng(0)
    w = Parameter(nb.tensor(rng.standard_normal((4, 3)).astype(np.float32)))
    b = Parameter(nb.tensor(np.zeros(3, np.float32)))
    x = nb.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = nb.tensor(10 * rng.standard_normal((8, 3)).astype(np.float32))
    opt = optim.Adam([w, b], lr=0.01)
    nb.clear_cache()
    nb.reset_cache_info()
    norms = []
    for _ in range(10):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        total = clip_grad_norm_([w, b], max_norm=1.0)
        assert not total.is_realized and not w.grad.is_realized
        opt.step()
        assert total.is_realized  # computed by the step's graph
        norms.append(total.item())
    info = nb.cache_info()
    assert (info.misses, info.hits, info.executions) == (1, 9, 10)
    assert all(n > 1.0 for n in norms)


def test_error_if_nonfinite() -> None:
    grads = _grads()
    grads[1][0] = np.inf
    params = _params_with(grads)
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(_params_with(grads), 1.0)
    assert math.isinf(total.item())


def test_no_gradients_and_single_tensor() -> None:
    p = Parameter(nb.tensor(np.ones(3, np.float32)))
    assert clip_grad_norm_([p], 1.0).item() == 0.0
    p.grad = nb.tensor(np.array([3.0, 4.0, 0.0], np.float32))
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8, 0.0], rtol=1e-5)


def test_get_total_norm_and_clip_grads_with_norm() -> None:
    grads = _grads()
    params = _params_with(grads)
    total = get_total_norm([p.grad for p in params], 2.0)
    assert total.item() == pytest.approx(_numpy_norm(grads, 2.0), rel=1e-6)
    clip_grads_with_norm_(params, 1.0, total)
    assert _numpy_norm([p.grad.numpy() for p in params], 2.0) == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(ValueError, match="norm_type must be a number or a string such as 'inf' or '-inf', got 'fro'"):
        get_total_norm(params, "fro")
    smallest = min(float(np.abs(p.grad.numpy()).min()) for p in params)
    assert get_total_norm([p.grad for p in params], "-inf").item() == pytest.approx(
        smallest
    )  # (PyTorch reads float(s))


def test_parameters_to_vector_and_back() -> None:
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    params = [Parameter(nb.tensor(v)) for v in values]
    vec = parameters_to_vector(params)
    np.testing.assert_array_equal(vec.numpy(), np.concatenate([v.ravel() for v in values]))
    vector_to_parameters(vec * 2, params)
    for p, v in zip(params, values, strict=True):
        assert p.requires_grad and p.shape == v.shape
        np.testing.assert_allclose(p.numpy(), 2 * v)
    with pytest.raises(ValueError, match="1-D tensor of 25 elements"):
        vector_to_parameters(nb.zeros(24), params)
    with pytest.raises(TypeError, match="expected vec to be a Tensor"):
        vector_to_parameters(np.zeros(25), params)


@needs_torch
def test_parameters_to_vector_matches_torch() -> None:
    values = [np.arange(np.prod(s), dtype=np.float32).reshape(s) for s in SHAPES]
    ours = parameters_to_vector([Parameter(nb.tensor(v)) for v in values]).numpy()
    theirs = torch.nn.utils.parameters_to_vector([torch.nn.Parameter(torch.tensor(v)) for v in values])
    np.testing.assert_array_equal(ours, theirs.detach().numpy())


def test_torch_spellings_foreach_and_the_deprecated_alias():
    m = nn.Linear(2, 2)
    m(nb.ones(1, 2)).sum().backward()
    total = nn.utils.get_total_norm([p.grad for p in m.parameters()], foreach=True)
    nn.utils.clip_grads_with_norm_(m.parameters(), 0.5, total, foreach=None)
    assert nn.utils.get_total_norm([p.grad for p in m.parameters()]).item() == pytest.approx(0.5, rel=1e-4)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        nn.utils.clip_grad_norm(m.parameters(), 1.0)
    assert nn.init._calculate_correct_fan(m.weight, "fan_out") == 2
    out = nn.utils.stateless.functional_call(
        m, parameters_and_buffers={"weight": nb.zeros(2, 2)}, args=(nb.ones(1, 2),)
    )
    np.testing.assert_allclose(out.numpy(), m.bias.numpy()[None], rtol=1e-6)
