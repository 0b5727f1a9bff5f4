"""`Tensor.backward`'s arguments as PyTorch defines them: `retain_graph` defaults to
`create_graph` (a gradient penalty backpropagates twice), and `inputs=` accumulates into the
`.grad` of the tensors it names only, flowing through one named input to another. And
`nabla.autograd.grad`, torch.autograd.grad: gradients returned, not accumulated."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn

X = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)


def test_create_graph_keeps_the_graph_for_a_second_backward():
    x = nb.tensor(X, requires_grad=True)
    y = (nb.tanh(x) ** 2).sum()
    y.backward(create_graph=True)
    first = x.grad.detach().numpy().copy()
    (x.grad**2).sum().backward()  # raised "backward through the graph a second time" before
    t = np.tanh(X)
    np.testing.assert_allclose(first, 2 * t * (1 - t**2), rtol=1e-5)
    assert not np.allclose(x.grad.numpy(), first)  # the penalty's gradient was added


def test_without_create_graph_the_graph_is_still_released():
    x = nb.tensor(X, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


@needs_torch
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_gradient_penalty_matches_torch():
    model = nn.Linear(5, 1)
    x = nb.tensor(X, requires_grad=True)
    (nb.tanh(model(x)) ** 2).sum().backward(create_graph=True)
    (x.grad**2).sum().backward()
    ref = torch.nn.Linear(5, 1)
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    tx = torch.tensor(X, requires_grad=True)
    (torch.tanh(ref(tx)) ** 2).sum().backward(create_graph=True)
    (tx.grad**2).sum().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), ref.weight.grad.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_inputs_accumulates_only_into_the_named_tensors():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[b])
    assert a.grad is None
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])
    (a * b).sum().backward(inputs=a)  # one tensor
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])


def test_inputs_flow_through_a_named_non_leaf():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    c = a * b
    (c * a).sum().backward(inputs=[b, c])
    assert a.grad is None
    np.testing.assert_array_equal(c.grad.numpy(), [1.0, 2.0])  # d/dc = a
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 4.0])  # through c: a * a


def test_inputs_errors_name_the_problem():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    frozen = nb.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="must not be empty"):
        (a * a).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match=r"backward: inputs\[1\] does not require grad \(a tensor of shape \(2,\)\)"):
        (a * a).sum().backward(inputs=[a, frozen])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a Tensor, got list"):
        (a * a).sum().backward(inputs=[[1.0]])


def test_autograd_grad_returns_gradients_without_accumulating():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    c = a * b
    gb, gc = nb.autograd.grad((c * a).sum(), [b, c])
    np.testing.assert_array_equal(gb.numpy(), [1.0, 4.0])  # through c
    np.testing.assert_array_equal(gc.numpy(), [1.0, 2.0])
    assert a.grad is None and b.grad is None
    (g,) = nb.autograd.grad((a**3).sum(), a, create_graph=True)
    np.testing.assert_array_equal(nb.autograd.grad(g.sum(), a)[0].numpy(), [6.0, 12.0])  # second derivative
    (h,) = nb.autograd.grad(a * 2, a, grad_outputs=nb.tensor([1.0, 3.0]))
    np.testing.assert_array_equal(h.numpy(), [2.0, 6.0])


def test_autograd_grad_unused_inputs_and_errors():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"inputs\[1\] \(shape \(2,\)\) was not used.*allow_unused=True"):
        nb.autograd.grad((a * a).sum(), [a, b])
    assert nb.autograd.grad((a * a).sum(), [a, b], allow_unused=True)[1] is None
    np.testing.assert_array_equal(nb.autograd.grad((a * a).sum(), [a, b], materialize_grads=True)[1].numpy(), [0, 0])
    with pytest.raises(RuntimeError, match=r"scalar outputs; outputs\[0\] has shape \(2,\).*pass grad_outputs\[0\]"):
        nb.autograd.grad(a * 2, a)
    with pytest.raises(RuntimeError, match=r"inputs\[0\] does not require grad"):
        nb.autograd.grad((a * 2).sum(), nb.tensor([1.0]))


@needs_torch
def test_wgan_gradient_penalty_matches_torch():
    rng = np.random.default_rng(1)
    real, fake = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    alpha = rng.uniform(size=(4, 1)).astype(np.float32)
    critic = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in critic.state_dict().items()})
    for lib, model in ((nb, critic), (torch, ref)):
        mixed = lib.tensor(alpha * real + (1 - alpha) * fake, requires_grad=True)
        out = model(mixed)
        (g,) = lib.autograd.grad(out, mixed, grad_outputs=lib.ones_like(out), create_graph=True, retain_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        (out.mean() + 10 * penalty).backward()
    for (name, p), q in zip(critic.named_parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_autograd_backward_of_several_tensors_accumulates_their_sum():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    shared = a * a
    nb.autograd.backward([shared.sum(), (shared * 3).sum()])  # one graph, backpropagated twice
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 16.0])  # 4a
    nb.autograd.backward(a * 2, grad_tensors=nb.tensor([1.0, 0.5]))
    np.testing.assert_array_equal(a.grad.numpy(), [10.0, 17.0])
