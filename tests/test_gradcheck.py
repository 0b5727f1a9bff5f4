"""nabla.autograd.gradcheck / gradgradcheck: finite differences against nabla's autodiff, with
torch's defaults, messages and error class (compared with torch where installed)."""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla.autograd.gradcheck import GradcheckError, _numerical

X = np.array([0.3, -1.2, 2.0])
Y = np.array([[1.0, 2.0], [0.5, -0.1]])


def _x(values: np.ndarray = X, dtype=nb.float64) -> nb.Tensor:
    return nb.tensor(values, dtype=dtype, requires_grad=True)


class WrongBackward(nb.autograd.Function):
    """x**2 with the derivative 3x: gradcheck must catch it."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 3 * a


class DetachedBackward(nb.autograd.Function):
    """x**3 with a correct first derivative whose own derivative is lost (detached)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 3 * a.detach() ** 2


def test_correct_gradients_pass_with_every_check():
    fn = lambda a, b: (nb.sin(a).sum() * b, a * 2)  # noqa: E731
    assert nb.autograd.gradcheck(fn, (_x(), _x(Y)), check_batched_grad=True, check_forward_ad=True) is True
    assert nb.autograd.gradcheck(nb.exp, _x()) is True  # a bare tensor is one input
    assert nb.autograd.gradgradcheck(lambda t: (t**3).sum() * t, (_x(),)) is True


def test_a_wrong_backward_raises_with_both_jacobians():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0") as info:
        nb.autograd.gradcheck(WrongBackward.apply, (_x(),))
    text = str(info.value)
    assert "numerical:" in text and "analytical:" in text and "-3.6" in text  # 3 * -1.2: the analytical value
    assert isinstance(info.value, RuntimeError)
    assert nb.autograd.gradcheck(WrongBackward.apply, (_x(),), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_second_derivative():
    assert nb.autograd.gradcheck(DetachedBackward.apply, (_x(),)) is True
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        nb.autograd.gradgradcheck(DetachedBackward.apply, (_x(),))


def test_non_float64_inputs_warn_and_need_an_input_requiring_grad():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nb.autograd.gradcheck(lambda t: t * 2, (_x(dtype=nb.float32),), raise_exception=False)
    assert any("Input #0 requires gradient and is not a double precision" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        nb.autograd.gradcheck(nb.exp, (nb.tensor(X, dtype=nb.float64),))


def test_non_tensor_inputs_pass_through_and_outputs_without_grad_must_be_constant():
    assert nb.autograd.gradcheck(lambda t, k: t * k, (_x(), 3.0)) is True
    const = nb.tensor(Y, dtype=nb.float64)
    assert nb.autograd.gradcheck(lambda t: const, (_x(),)) is True
    leak = lambda t: nb.tensor(t.numpy() * 2)  # noqa: E731 (depends on t, but outside autodiff)
    with pytest.raises(GradcheckError, match="expected to be zero"):
        nb.autograd.gradcheck(leak, (_x(),))


def test_the_module_path_and_signature_are_torchs():
    module = importlib.import_module("nabla.autograd.gradcheck")  # (the attribute is the function, as torch's)
    assert module.GradcheckError is GradcheckError and callable(nb.autograd.gradcheck)
    with pytest.raises(TypeError):
        nb.autograd.gradcheck(nb.exp, (_x(),), 1e-6)  # eps is keyword-only, as in torch


@needs_torch
def test_agrees_with_torch_and_lays_jacobians_out_as_torch():
    def ours(a):
        return nb.stack([(a * a).sum(), nb.sin(a[0])])

    def theirs(a):
        return torch.stack([(a * a).sum(), torch.sin(a[0])])

    assert nb.autograd.gradcheck(ours, (_x(),)) == torch.autograd.gradcheck(
        theirs, (torch.tensor(X, requires_grad=True),)
    )
    (blocks,) = _numerical(ours, (_x(),), [0], [0], [2], 1e-6)
    jac = torch.autograd.functional.jacobian(theirs, torch.tensor(X)).numpy()
    np.testing.assert_allclose(blocks[0], jac.T, rtol=1e-6)  # rows: input elements, as torch's
    with pytest.raises(sys.modules["torch.autograd.gradcheck"].GradcheckError) as ref:
        torch.autograd.gradcheck(lambda a: a * a.detach(), (torch.tensor(X, requires_grad=True),), eps=0.5)
    with pytest.raises(GradcheckError) as got:
        nb.autograd.gradcheck(lambda a: a * a.detach(), (_x(),), eps=0.5)
    assert str(got.value).split(",")[0] == str(ref.value).split(",")[0]
