"""torch.Tensor's method names and argument conventions on nabla tensors (`x.t()`,
`x.add(y, alpha=2)`, `x.new_zeros(3)`, `x.kthvalue(2, 1)`, ...): values against NumPy, and
against PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

A = np.array([[0.5, -1.5, 2.25, 3.0], [-0.75, 1.0, -2.5, 0.25], [4.0, -3.5, 0.0, 1.5]], np.float32)

# expressions evaluated with t = the tensor of A in both libraries (T: the library, I: its tensor())
CASES = """t.t()
t.contiguous()
t.add(1, alpha=2)
t.add(t, alpha=0.5)
t.sub(t * 2, alpha=0.5)
t.mul(2)
t.div(2)
t.div(0.7, rounding_mode="floor")
t.div(0.7, rounding_mode="trunc")
t.true_divide(4)
t.floor_divide(0.7)
t.fmod(0.7)
t.frac()
t.lerp(t * 2, 0.3)
t.clamp_min(0)
t.clamp_max(0.5)
t.mm(t.T)
t[None].bmm(t.T[None])
t.dist(t * 2)
t.dist(t * 2, 1)
t.eq(t.round())
t.ne(0)
t.gt(0)
t.ge(0)
t.lt(0)
t.le(0)
t.greater(0.5)
t.less_equal(0.5)
t.where(t > 0, 0.0)
t.amax(dim=1)
t.amin(dim=0, keepdim=True)
t.count_nonzero()
t.count_nonzero(dim=1)
t.kthvalue(2, dim=1).values
t.kthvalue(2, dim=1).indices
t.kthvalue(3, dim=0, keepdim=True).values
t.median()
t.median(dim=1).values
t.median(dim=1).indices
t.diff(dim=1)
t.diff(n=2, dim=0)
t.masked_select(t > 0)
t.nonzero()
t.narrow(1, 1, 2)
t.narrow(0, -2, 2)
t.select(1, 2)
t.swapdims(0, 1)
t.view_as(t.T)
t.reshape_as(t.T)
t.type_as(I([1, 2]))
t.new_zeros(2, 3)
t.new_ones((2,))
t.new_full((2, 2), 3.5)
t.new_tensor([1.0, 2.0])
t.to(I([1, 2]))
t.to("cpu")
t.to("cpu", T.float64)
t.sum(dtype=T.float64)
t.sum(1, dtype=T.float64)
t.mean(dtype=T.float64)
t.prod(1, dtype=T.float64)
t.cumsum(1, dtype=T.float64)
t.cumprod(0, dtype=T.float64)
t.softmax(1, dtype=T.float64)
t.log_softmax(0, T.float64)
t.var(1, False)
t.std(0, True, True)
t.var(False)
t.std(correction=0)
t.sort(dim=1, stable=True).indices
t.argsort(dim=0, stable=True)
T.where(t > 0)[1]
T.einsum(t, [0, 1], t, [0, 1], [0])
T.einsum(t, [0, 1], t, [2, 1])
T.einsum(t[None], [Ellipsis, 1], [Ellipsis])
T.sqrt(I([1, 4]))
T.sigmoid(I([0, 1]))"""


def _run(lib, expr: str):
    x = nb.tensor(A) if lib is nb else torch.tensor(A)
    return eval(expr, {"t": x, "T": lib, "I": lib.tensor})  # noqa: S307


def _np(v) -> np.ndarray:
    return np.asarray(v.detach().numpy() if hasattr(v, "detach") else v.numpy())


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
@pytest.mark.parametrize("expr", CASES.splitlines())
def test_method_matches_torch(expr):
    ours, ref = _run(nb, expr), _run(torch, expr)
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(_np(ours).dtype) == str(_np(ref).dtype).replace("torch.", "")
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-6, atol=1e-6)


def test_methods_on_numpy_values():
    t = nb.tensor(A)
    np.testing.assert_allclose(t.frac().numpy(), A - np.trunc(A))
    np.testing.assert_allclose(t.div(0.7, rounding_mode="floor").numpy(), np.floor_divide(A, np.float32(0.7)))
    np.testing.assert_allclose(t.lerp(t * 3, 0.5).numpy(), A * 2)
    values, indices = t.kthvalue(2, dim=1)
    np.testing.assert_array_equal(values.numpy(), np.sort(A, axis=1)[:, 1])
    np.testing.assert_array_equal(indices.numpy(), np.argsort(A, axis=1)[:, 1])
    assert t.median().item() == np.sort(A.reshape(-1))[(A.size - 1) // 2]  # the lower median
    np.testing.assert_array_equal(t.diff(dim=1).numpy(), np.diff(A, axis=1))
    np.testing.assert_array_equal(t.masked_select(t > 0).numpy(), A[A > 0])
    np.testing.assert_array_equal(t.nonzero().numpy(), np.argwhere(A))
    np.testing.assert_array_equal(t.narrow(1, 1, 2).numpy(), A[:, 1:3])
    np.testing.assert_array_equal(t.select(0, 1).numpy(), A[1])
    assert t.new_zeros(2).dtype == nb.float32 and t.new_full((1,), 2, dtype=nb.int64).dtype == nb.int64
    assert t.t().shape == (4, 3) and nb.ones(3).t().shape == (3,)
    assert t.is_floating_point() and not t.long().is_floating_point()
    assert t.nelement() == 12 and t.ndimension() == 2 and t.element_size() == 4 and t.is_contiguous()
    assert t.equal(nb.tensor(A)) and not t.equal(t * 2) and t.allclose(t + 1e-9)
    assert t.to(nb.float64).dtype == nb.float64 and t.to(nb.ones(1, dtype=nb.float16)).dtype == nb.float16


def test_methods_keep_gradients_and_views():
    x = nb.tensor(A, requires_grad=True)
    (x.narrow(1, 1, 2).sum() + x.masked_select(x > 0).sum() + x.lerp(x * 3, 0.5).sum()).backward()
    want = np.zeros_like(A)
    want[:, 1:3] += 1
    want += A > 0
    want += 2
    np.testing.assert_allclose(x.grad.numpy(), want)
    y = nb.tensor(A.copy())
    y.select(0, 1).zero_()  # a view: writes through, as in PyTorch
    assert (y.numpy()[1] == 0).all()


def test_method_errors():
    t = nb.tensor(A)
    with pytest.raises(ValueError, match="rounding_mode"):
        t.div(2, rounding_mode="up")
    with pytest.raises(ValueError, match=r"mm: expected 2-D tensors, got shapes \(3, 4\) and \(4,\)"):
        t.mm(nb.ones(4))
    with pytest.raises(ValueError, match="k=5 is out of range"):
        t.kthvalue(5, dim=1)
    with pytest.raises(IndexError, match="narrow"):
        t.narrow(1, 3, 2)
    with pytest.raises(ValueError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        nb.ones(2, 2, 2).t()


# -- PyTorch parity fixes, against torch -----------------------------------------------------
@needs_torch
def test_integer_div_with_rounding_keeps_the_dtype_exactly():
    a, b = [2**40 + 1, 123456789, -7, 7, -7], [3, 2, -2, -2, 5]
    for mode in ("trunc", "floor"):
        for other in (1, -2, b):
            ours = nb.tensor(a).div(nb.tensor(other) if isinstance(other, list) else other, rounding_mode=mode)
            ref = torch.tensor(a).div(torch.tensor(other) if isinstance(other, list) else other, rounding_mode=mode)
            assert ours.dtype == nb.int64 and ours.tolist() == ref.tolist()
    ours = nb.tensor([7, -7], dtype=nb.int32).div(2, rounding_mode="trunc")
    assert ours.dtype == nb.int32 and ours.tolist() == [3, -3]
    assert nb.tensor([7, -7]).div(2.0, rounding_mode="trunc").tolist() == [3.0, -3.0]  # a float divisor: float


@needs_torch
def test_median_with_nan_is_nan_as_torch():
    data = np.array([[1, np.nan, np.nan, 0], [4, 5, 6, 7], [3, 2, 1, np.nan]], np.float32)
    x, ref = nb.tensor(data), torch.tensor(data)
    assert np.isnan(x.median().item()) and np.isnan(ref.median().item())
    for dim, keepdim in [(1, False), (0, True)]:
        ours, want = x.median(dim, keepdim), ref.median(dim, keepdim)
        np.testing.assert_array_equal(ours.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), want.indices.numpy())
    assert nb.tensor([3, 1, 2]).median().item() == 2


@needs_torch
def test_take_flattens_and_wraps_negative_indices_as_torch():
    data, index = np.arange(12.0, dtype=np.float32).reshape(3, 4), np.array([[0, 11], [5, -1]])
    ours = nb.take(nb.tensor(data), nb.tensor(index))
    np.testing.assert_array_equal(ours.numpy(), torch.take(torch.tensor(data), torch.tensor(index)).numpy())
    assert nb.take(nb.tensor(data), [2, 0], axis=0).shape == (2, 4)  # NumPy's axis= still works
    assert nb.take(nb.tensor(data), nb.tensor([1, -12]) * 1).tolist() == [1.0, 0.0]  # computed indices
    with pytest.raises(IndexError, match="take: index 12 is out of bounds"):
        nb.take(nb.tensor(data), [12])


def test_full_median_shares_its_gradient_among_ties_as_torch():
    for values, grad in (([1.0, 2.0, 2.0, 3.0], [0, 0.5, 0.5, 0]), ([5.0, 1.0, 5.0, 5.0], [1 / 3, 0, 1 / 3, 1 / 3])):
        x = nb.tensor(np.array(values, np.float32), requires_grad=True)
        m = x.median()
        m.backward()
        assert m.item() == sorted(values)[(len(values) - 1) // 2]
        np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-6)
        if torch is not None:
            ref = torch.tensor(values, requires_grad=True)
            ref.median().backward()
            np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-6)


NAN, INF = float("nan"), float("inf")
# (values, the full median's gradient, nanmedian's), from torch 2.13: tied values share the
# gradient, as do the nans of a nan median and the infs of an infinite one.
MEDIAN_GRADIENTS = [
    ([NAN, 1.0, NAN, 3.0], [0.5, 0, 0.5, 0], [0, 1, 0, 0]),
    ([INF, 2.0, INF], [0.5, 0, 0.5], [0.5, 0, 0.5]),
    ([-INF, 2.0, 1.0], [0, 0, 1], [0, 0, 1]),
    ([0.1, 0.1, 0.1, 5.0, -1.0], [1 / 3, 1 / 3, 1 / 3, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0, 0]),
    ([NAN, 2.0, 1.0, 2.0, NAN], [0.5, 0, 0, 0, 0.5], [0, 0.5, 0, 0.5, 0]),
]


@pytest.mark.parametrize("values, median_grad, nanmedian_grad", MEDIAN_GRADIENTS)
def test_full_median_derivatives_in_both_modes(values, median_grad, nanmedian_grad):
    for name, want in (("median", median_grad), ("nanmedian", nanmedian_grad)):
        x = nb.tensor(np.array(values, np.float32), requires_grad=True)
        getattr(x, name)().backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, err_msg=name)
        # forward mode shares the same way (it gave the whole tangent to one element)
        forward = nb.jacfwd(lambda a, _n=name: getattr(a, _n)())(nb.tensor(np.array(values, np.float32)))
        if not (name == "median" and np.isnan(values).any()):  # (torch's jacfwd: all nan there)
            np.testing.assert_allclose(forward.numpy(), want, rtol=1e-6, err_msg=name)


def test_median_along_a_dim_sends_the_gradient_to_the_first_nan():
    data = np.array([[NAN, 1.0, NAN, 3.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    for keepdim in (False, True):
        x = nb.tensor(data, requires_grad=True)
        values, indices = x.median(1, keepdim)
        values.sum().backward()
        assert indices.reshape(-1).tolist() == [0, 1]
        np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 0, 0], [0, 1, 0, 0]])  # torch's
