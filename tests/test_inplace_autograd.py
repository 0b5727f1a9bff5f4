"""In-place writes and autodiff, as PyTorch: a tensor keeps its place in the graph when its
value is replaced (`y.zero_()`, `y.data = ...`, writes through `.data`/`detach()`), a copied
leaf still gets its gradient, `.grad` accumulates in place, and `detach()` is a constant to
forward mode too. Each case runs the same code in nabla and (where installed) torch."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb

# (code, the tensor whose .grad is checked): `T` is the library (nabla or torch), `x` a leaf
CASES = [
    ("buf = T.zeros(2); buf.copy_(x); loss = (x * buf).sum()", "x"),
    ("buf = T.zeros(2); buf[:] = x; loss = (x * buf).sum()", "x"),
    ("buf = T.zeros(2); buf[...] = x; loss = (x * buf).sum()", "x"),
    ("y = x * 1; y.data = y.data.round(); loss = (y * y).sum()", "x"),  # the straight-through estimator
    ("y = x * 1; y.data.round_(); loss = (y * y).sum()", "x"),
    ("y = x * 1; y.detach().round_(); loss = (y * y).sum()", "x"),
    ("y = x * 3; y.detach().zero_(); loss = (y * x).sum()", "x"),
    ("y = x * 2; y.zero_(); loss = y.sum()", "x"),
    ("y = x * 2; y.fill_(1.5); loss = (y * x).sum()", "x"),
    ("y = x * 2; y.copy_(T.tensor([5.0, 6.0])); loss = (y * y).sum()", "x"),
    ("y = x * 2; y[:] = 3.0; loss = (y * x).sum()", "x"),
    ("y = x * 2\nwith T.no_grad():\n    y.add_(1)\nloss = (y * y).sum()", "x"),
    ("y = x * 2; y[0] = 7.0; loss = (y * y).sum()", "x"),
    # overwritten by a value with history of its own: x gets zeros (it got None), w its gradient
    ("w = T.ones(2, requires_grad=True); y = x * 2; y.copy_(w * x); loss = (y * w).sum()", "x"),
    ("w = T.ones(2, requires_grad=True); y = x * 2; y.copy_(w); loss = (y * w).sum()", "x"),
    ("w = T.ones(2, requires_grad=True); y = x * 2; y[:] = w * 3; loss = y.sum()", "x"),
    ("w = T.ones(2, requires_grad=True); y = x * 2; y[...] = w; loss = (y * y).sum()", "x"),
]


def _run(lib, code: str) -> dict:
    x = lib.tensor([1.2, 2.7], requires_grad=True)
    env = {"T": lib, "x": x}
    exec(code, env)
    env["loss"].backward()
    return {"grad": x.grad.detach().numpy().tolist(), "loss": float(env["loss"].item())}


@pytest.mark.parametrize(("code", "leaf"), CASES, ids=[c for c, _ in CASES])
def test_in_place_writes_keep_the_graph_like_torch(code: str, leaf: str) -> None:
    got = _run(nb, code)
    if torch is not None:
        want = _run(torch, code)
        np.testing.assert_allclose(got["grad"], want["grad"], rtol=1e-6)
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-6)
    assert all(np.isfinite(got["grad"]))


def test_expected_gradients_without_torch() -> None:
    assert _run(nb, CASES[0][0])["grad"] == pytest.approx([2.4, 5.4])  # the copied leaf's gradient
    assert _run(nb, CASES[3][0])["grad"] == pytest.approx([2.0, 6.0])  # 2 * round(x), passed to x
    assert _run(nb, CASES[7][0])["grad"] == [0.0, 0.0]  # zero_: still in the graph, a zero gradient
    assert _run(nb, CASES[11][0])["grad"] == pytest.approx([2 * 2 * 3.4, 2 * 2 * 6.4])  # no_grad add_


def test_overwritten_non_leaf_still_requires_grad_and_copy_target_is_no_leaf() -> None:
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.zero_()
    assert y.requires_grad and not y.is_leaf
    buf = nb.zeros(2)
    buf.copy_(x)
    assert buf.requires_grad and not buf.is_leaf and x.is_leaf


def test_grad_accumulates_in_place() -> None:
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    (x * x).sum().backward()
    assert g is x.grad and g.tolist() == [4.0, 8.0]  # a held reference sees the sum, as torch's


def test_detach_is_a_constant_to_forward_mode() -> None:
    x = nb.tensor([0.3, 1.7])
    ste = nb.jvp(lambda a: a + (nb.round(a) - a).detach(), (x,), (nb.ones(2),))[1]
    assert ste.tolist() == [1.0, 1.0]
    assert nb.jvp(lambda a: a * a.detach(), (x,), (nb.ones(2),))[1].tolist() == pytest.approx([0.3, 1.7])
    assert nb.jvp(lambda a: a * nb.stop_gradient(a), (x,), (nb.ones(2),))[1].tolist() == pytest.approx([0.3, 1.7])
    hess = nb.hessian(lambda a: (a**2 * a.detach()).sum())(x)
    np.testing.assert_allclose(hess.numpy(), np.diag([0.6, 3.4]), rtol=1e-6)
    if torch is not None:
        want = torch.func.hessian(lambda a: (a**2 * a.detach()).sum())(torch.tensor([0.3, 1.7]))
        np.testing.assert_allclose(hess.numpy(), want.numpy(), rtol=1e-6)
    # forward-over-reverse still sees tangents through grad's own results
    d2 = nb.jvp(nb.grad(lambda a: (a**3).sum()), (x,), (nb.ones(2),))[1]
    np.testing.assert_allclose(d2.numpy(), 6 * x.numpy(), rtol=1e-6)


def test_grad_fn_names_the_recorded_op_like_torch() -> None:
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    assert x.grad_fn is None and nb.ones(2).grad_fn is None and (x * 2).detach().grad_fn is None
    assert y.grad_fn.name() == "SumBackward0" and y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        assert (tx * 2).sum().grad_fn.name() == y.grad_fn.name()


def test_transform_errors_name_the_problem() -> None:
    with pytest.raises(TypeError, match="grad: fn must return a floating-point scalar, got dtype int32"):
        nb.grad(lambda a: (a * 2).sum().int())(nb.ones(2))
    with pytest.raises(TypeError, match="jvp: fn must return Tensors, got float"):
        nb.jvp(lambda a: 3.0, (nb.ones(2),), (nb.ones(2),))
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\) names argument 3, but .* takes 1 positional"):
        nb.compile(lambda a: a, static_argnums=3)


def test_data_and_detach_of_a_parameters_index_view_write_into_it():
    """`m.weight[0].data.fill_(1)`, `emb.weight[pad].data.zero_()`: the common init idioms
    write into the parameter outside autodiff, as torch (they raised)."""
    w = nb.zeros((3, 2)).requires_grad_()  # (a leaf, as a Parameter)
    w[1].data.fill_(1.0)
    w[2:].data.fill_(2.0)
    w[0].detach().fill_(5.0)
    np.testing.assert_array_equal(w.numpy(), [[5.0, 5.0], [1.0, 1.0], [2.0, 2.0]])
    assert w.is_leaf and w.requires_grad
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 3.0))
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w[1].fill_(0.0)  # (without .data: torch raises too)
