"""torch.Tensor's remaining method names on nabla tensors: the in-place variants (`x.abs_()`,
`x.eq_(y)`, `x.unsqueeze_(0)`, `x.index_add_(...)`, random fills), PyTorch's aliases and small
compositions (`x.arccos()`, `x.sum_to_size(...)`, `x.nbytes`), and the methods of the ops added
with them (`x.logaddexp(y)`, `x.quantile(q)`, `x.unfold(0, 2, 1)`, ...).

Values, dtypes and in-place semantics against PyTorch where it is installed, and hard-coded
expectations everywhere. The ops themselves are checked by the registry (tests/op_registry):
values, gradients, vmap and sharding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

A = np.array([[0.5, -1.5, 2.25, 3.0], [-0.75, 1.0, -2.5, 0.25], [4.0, -3.5, 0.0, 1.5]], np.float32)
UNIT = np.array([[0.5, -0.25, 0.75, 0.1], [-0.6, 0.3, 0.9, -0.95], [0.05, 0.45, -0.4, 0.2]], np.float32)
POS = np.abs(A) + 0.5
INTS = np.array([[4, -6, 9, 0], [12, 7, -3, 5]], np.int64)


def _np(v) -> np.ndarray:
    return np.asarray(v.detach().numpy() if hasattr(v, "detach") else v.numpy())


def _same(ours, ref, tol: float = 1e-6) -> None:
    """Shape, dtype and values (nan where torch has nan) of one result or a tuple of them."""
    if isinstance(ref, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for o, r in zip(ours, ref, strict=True):
            _same(o, r, tol)
        return
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(_np(ours).dtype) == str(_np(ref).dtype).replace("torch.", "")
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=tol, atol=tol)


# -- out-of-place methods, against torch ----------------------------------------------------------
# expressions evaluated in both libraries with a, u, p, i = tensors of A, UNIT, POS, INTS (T: the library)
METHODS = """a.absolute()
a.negative()
a.positive()
a.fix()
a.sgn()
u.arccos()
u.arcsin()
a.arctan()
a.arcsinh()
(p + 1).arccosh()
u.arctanh()
a.asinh()
(p + 1).acosh()
u.atanh()
p.log10()
a.exp2()
a.sinc()
a.deg2rad()
a.rad2deg()
a.erfc()
a.i0()
a.lgamma()
p.digamma()
p.polygamma(2)
u.erfinv()
(p + 1).mvlgamma(2)
(u.abs() * 0.9 + 0.05).logit()
u.logit(eps=0.2)
a.signbit()
(a / 0).isposinf()
(a / 0).isneginf()
a.isreal()
a.angle()
i.angle()
a.hardshrink()
a.hardshrink(1.0)
a.conj()
a.resolve_conj()
a.resolve_neg()
a.conj_physical()
a.real
a.arctan2(p)
a.logaddexp(u)
a.logaddexp2(u)
a.hypot(u)
a.copysign(u)
a.heaviside(T.tensor(0.5))
p.xlogy(p)
a.fmax(u)
a.fmin(u)
p.float_power(2)
a.isclose(a + 1e-7)
i.gcd(T.tensor([6, 4, 3, 10]))
i.lcm(T.tensor([6, 4, 3, 10]))
a.ldexp(T.tensor([1, 2, -1, 0]))
a.addcmul(u, p, value=0.5)
a.addcdiv(u, p, value=-2)
(a > 0).bitwise_and(u > 0)
(a > 0).bitwise_or(u > 0)
(a > 0).bitwise_xor(u > 0)
(a > 0).bitwise_not()
a.nansum()
a.nansum(1, keepdim=True)
a.nanmean(0)
a.aminmax()
a.aminmax(dim=1)
a.logcumsumexp(1)
a.renorm(2, 0, 3.0)
a.msort()
a.nanmedian()
a.nanmedian(1)
a.quantile(0.3)
a.quantile(T.tensor([0.25, 0.5]), dim=1, keepdim=True)
a.nanquantile(0.5, dim=0)
i.mode(1)
a.histc(4, -4, 4)
i.abs().flatten().bincount()
a.cov()
a.corrcoef()
a.argwhere()
a.ravel()
a.rot90()
a.rot90(3, [1, 0])
a.fliplr()
a.flipud()
a.hsplit(2)
a.vsplit([1])
a[None].dsplit(2)
a.unfold(1, 2, 1)
a.unfold(0, 2, 2)
a.split_with_sizes([1, 2])
a.unsafe_split(2, 1)
a.unsafe_chunk(2)
a.narrow_copy(1, 1, 2)
a.sum_to_size(1, 4)
a.sum_to_size(3, 1)
a[None].sum_to_size(4)
a.H
a.mH
a.adjoint()
a.take(T.tensor([[0, 11], [-1, 5]]))
a.mv(T.tensor([1.0, -2.0, 0.5, 3.0]))
a[0].ger(a[1, :3])
a.inner(a)
a[0].vdot(a[1])
a[:, :3].addmm(a, a.T, beta=0.5, alpha=2.0)
a[0].addmv(a.T, a[1, :3])
a.addr(a[:, 0], a[0])
a[:, :3].addbmm(T.stack([a, a]), T.stack([a.T, a.T]), beta=2)
T.stack([a[:, :3], a[:, :3]]).baddbmm(T.stack([a, a]), T.stack([a.T, a.T]), alpha=0.5)
a[0].diag(1)
a.diag(-1)
a.diag_embed(1, 0, 2)
a.diagflat()
a[:, :3].trace()
a[:, :3].matrix_power(3)
a[:, :3].matrix_exp()
a[:, :3].inverse()
a[:, :3].det()
a[:, :3].logdet()
a[:, :3].slogdet()
a.qr()
a.T.qr(some=False)
a.put(T.tensor([0, -1]), T.tensor([9.0, 8.0]))
a.put(T.tensor([1, 1]), T.tensor([9.0, 8.0]), accumulate=True)
a.index_put((T.tensor([0, 2]), T.tensor([1, 3])), T.tensor(7.0))
a.index_put((T.tensor([0, 0]),), T.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
a.index_add(1, T.tensor([3, 0, 3]), u[:, :3], alpha=2)
a.index_copy(0, T.tensor([2, 0]), u[:2])
a.index_fill(1, T.tensor([1, 2]), -1.0)
a.scatter_reduce(0, T.tensor([[0, 2, 2, 1]]), u[:1], "amax", include_self=False)
a.scatter_reduce(1, T.tensor([[0, 0], [3, 1], [2, 2]]), u[:, :2], "mean")
a.scatter(1, T.tensor([[0], [3], [1]]), value=-1.0)
a.masked_scatter(a > 0, u.flatten())
a.select_scatter(u[1], 0, 2)
a.slice_scatter(u[:, :2], dim=1, start=1, end=4, step=2)
a.diagonal_scatter(T.tensor([7.0, 8.0, 9.0]))
a.bfloat16().float()
a.long()"""


def _run(lib, expr: str):
    tensors = {name: lib.tensor(v) for name, v in (("a", A), ("u", UNIT), ("p", POS), ("i", INTS))}
    return eval(expr, {**tensors, "T": lib})  # noqa: S307


@needs_torch
@pytest.mark.parametrize("expr", METHODS.splitlines())
def test_method_matches_torch(expr: str):
    ours, ref = _run(nb, expr), _run(torch, expr)
    _same(tuple(ours) if isinstance(ref, tuple) else ours, tuple(ref) if isinstance(ref, tuple) else ref, 2e-6)


# -- in-place variants, against torch --------------------------------------------------------------
# (method, args, data): each applied to a fresh tensor in both libraries; args may use T (the library)
IN_PLACE = [
    *[(m, "", A) for m in ("abs_", "absolute_", "neg_", "negative_", "sign_", "sgn_", "floor_", "ceil_")],
    *[(m, "", A) for m in ("trunc_", "fix_", "round_", "frac_", "exp_", "exp2_", "expm1_", "square_")],
    *[(m, "", A) for m in ("sin_", "cos_", "tan_", "sinh_", "cosh_", "tanh_", "atan_", "arctan_")],
    *[(m, "", A) for m in ("asinh_", "arcsinh_", "sigmoid_", "relu_", "erf_", "erfc_", "sinc_", "i0_")],
    *[(m, "", A) for m in ("deg2rad_", "rad2deg_", "lgamma_")],
    *[(m, "", POS) for m in ("digamma_",)],
    *[(m, "", UNIT) for m in ("erfinv_",)],
    ("polygamma_", "1", POS),
    ("mvlgamma_", "2", POS + 1),
    *[(m, "", UNIT) for m in ("asin_", "acos_", "arcsin_", "arccos_", "atanh_", "arctanh_")],
    *[(m, "", POS) for m in ("log_", "log2_", "log10_", "log1p_", "sqrt_", "rsqrt_", "reciprocal_")],
    *[(m, "", POS + 1) for m in ("acosh_", "arccosh_")],
    ("addmm_", "T.tensor(A), T.tensor(A).T, beta=0.5, alpha=2", A[:, :3]),
    ("addmv_", "T.tensor(A).T, T.tensor(A)[0, :3]", A[0]),
    ("addr_", "T.tensor(A)[:, 0], T.tensor(A)[0]", A),
    ("addbmm_", "T.ones(2, 3, 2), T.ones(2, 2, 4)", A),
    ("baddbmm_", "T.ones(2, 3, 2), T.ones(2, 2, 4), beta=0", np.stack([A, A])),
    ("round_", "decimals=1", A),
    ("logit_", "0.2", UNIT),
    ("nan_to_num_", "nan=1.0", np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)),
    ("clamp_min_", "0.5", A),
    ("clamp_max_", "0.5", A),
    ("clip_", "-1, 1", A),
    ("clip_", "max=T.tensor(0.25)", A),
    ("pow_", "2", A),
    ("pow_", "T.tensor(UNIT)", POS),
    ("remainder_", "1.5", A),
    ("fmod_", "-1.5", A),
    ("floor_divide_", "0.7", A),
    ("true_divide_", "4", A),
    ("divide_", "0.7, rounding_mode='trunc'", A),
    ("div_", "0.7, rounding_mode='floor'", A),
    ("multiply_", "T.tensor(UNIT)", A),
    ("subtract_", "T.tensor(UNIT), alpha=2", A),
    ("atan2_", "T.tensor(UNIT)", A),
    ("arctan2_", "T.tensor(UNIT)", A),
    ("hypot_", "T.tensor(UNIT)", A),
    ("copysign_", "T.tensor(UNIT)", A),
    ("heaviside_", "T.tensor([0.5])", A),
    ("xlogy_", "T.tensor(POS)", A),
    ("ldexp_", "T.tensor([1, 0, -2, 3])", A),
    ("lerp_", "T.tensor(UNIT), 0.25", A),
    ("addcmul_", "T.tensor(UNIT), T.tensor(POS), value=-1", A),
    ("addcdiv_", "T.tensor(UNIT), T.tensor(POS), value=0.5", A),
    ("logical_not_", "", A),
    *[(m, "T.tensor(UNIT)", A) for m in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_", "less_", "less_equal_")],
    *[(m, "0.5", A) for m in ("greater_", "greater_equal_", "not_equal_")],
    *[(m, "T.tensor(UNIT)", A) for m in ("logical_and_", "logical_or_", "logical_xor_")],
    ("eq_", "T.tensor([4, 7, -3, 0])", INTS),
    ("gcd_", "T.tensor([6, 4, 3, 10])", INTS),
    ("lcm_", "T.tensor([6, 4, 3, 10])", INTS),
    ("cumsum_", "1", A),
    ("cumsum_", "0", INTS.astype(np.int32)),
    ("cumprod_", "0", A),
    ("tril_", "", A),
    ("triu_", "1", A),
    ("renorm_", "1, 0, 2.0", A),
    ("scatter_", "1, T.tensor([[0, 1], [3, 3], [2, 0]]), T.tensor(UNIT)", A),
    ("scatter_", "0, T.tensor([[2, 0, 1, 0]]), value=9.0", A),
    ("scatter_", "1, T.tensor([[0, 1], [3, 3], [2, 0]]), T.tensor(UNIT), reduce='add'", A),
    ("scatter_add_", "1, T.tensor([[0, 0], [3, 3], [2, 0]]), T.tensor(UNIT)", A),
    ("scatter_reduce_", "0, T.tensor([[0, 2, 2, 1], [2, 2, 0, 0]]), T.tensor(UNIT), 'prod'", A),
    ("index_add_", "0, T.tensor([2, 2]), T.tensor(UNIT[:2]), alpha=-1", A),
    ("index_copy_", "1, T.tensor([3, 0]), T.tensor(UNIT[:, :2])", A),
    ("index_fill_", "0, T.tensor([1]), T.tensor(-2.0)", A),
    ("index_put_", "(T.tensor([0, 1]), T.tensor([2, 2])), T.tensor([5.0, 6.0])", A),
    ("put_", "T.tensor([0, 5, -1]), T.tensor([1.0, 2.0, 3.0])", A),
    ("masked_scatter_", "T.tensor(A < 0), T.tensor(POS)", A),
    ("fill_diagonal_", "-7.0", A),
    ("float_power_", "T.tensor(UNIT, dtype=T.float64)", POS.astype(np.float64)),
]


def _in_place(lib, method: str, args: str, data: np.ndarray):
    x = lib.tensor(data.copy())
    out = eval(f"x.{method}({args})", {"x": x, "T": lib, "A": A, "UNIT": UNIT, "POS": POS})  # noqa: S307
    assert out is x, f"{method} must return self"
    return x


@needs_torch
@pytest.mark.parametrize("method, args, data", IN_PLACE, ids=[f"{m}({a})" for m, a, _ in IN_PLACE])
def test_in_place_matches_torch(method: str, args: str, data: np.ndarray):
    ours, ref = _in_place(nb, method, args, data), _in_place(torch, method, args, data)
    _same(ours, ref, 2e-6)


def test_every_in_place_variant_has_its_out_of_place_method():
    """An in-place name `f_` is offered with the out-of-place `f` (the reverse is not required)."""
    names = {n for n in dir(nb.Tensor) if n.endswith("_") and not n.startswith("_")}
    out_of_place_only = {"requires_grad_", "zero_", "fill_", "copy_", "fill_diagonal_", "detach_", "index_put_"}
    out_of_place_only |= {"uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "log_normal_"}
    out_of_place_only |= {"cauchy_", "random_", "t_", "squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_"}
    out_of_place_only |= {"share_memory_"}  # (torch has no Tensor.share_memory either)
    missing = sorted(n for n in names - out_of_place_only if not hasattr(nb.Tensor, n[:-1]))
    assert not missing, f"in-place methods without an out-of-place twin: {missing}"


# -- in-place semantics, without torch ---------------------------------------------------------------
def test_in_place_returns_self_and_writes_through_views():
    x = nb.tensor(A.copy())
    row = x[1]
    assert row.abs_() is row
    np.testing.assert_array_equal(x.numpy()[1], np.abs(A[1]))
    col = x[:, 2]
    col.clamp_min_(1.0).sqrt_()
    np.testing.assert_allclose(x.numpy()[:, 2], [1.5, math.sqrt(2.5), 1.0])  # x[1] is |A[1]| now
    y = nb.tensor(A.copy())
    y.T.mul_(2)  # a permuted view
    np.testing.assert_array_equal(y.numpy(), A * 2)
    z = nb.tensor(A.copy())
    z.detach().neg_()  # detach() aliases the storage, as in PyTorch
    np.testing.assert_array_equal(z.numpy(), -A)


def test_in_place_comparisons_keep_the_dtype():
    x = nb.tensor([1.0, 2.0, 3.0])
    x.eq_(nb.tensor([1.0, 0.0, 3.0]))
    assert x.dtype == nb.float32 and x.tolist() == [1.0, 0.0, 1.0]
    i = nb.tensor([1, 5, -2])
    i.gt_(0)
    assert i.dtype == nb.int64 and i.tolist() == [1, 1, 0]
    b = nb.tensor([True, False, True])
    b.logical_xor_(nb.tensor([True, True, False]))
    assert b.dtype == nb.bool_ and b.tolist() == [False, True, True]


def test_in_place_promotion_errors():
    i = nb.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        i.div_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(0.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        nb.tensor([True, False]).add_(1)
    with pytest.raises(RuntimeError, match="float_power_: the base has dtype float32"):
        nb.tensor([1.0, 2.0]).float_power_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.sqrt_()  # float32 (PyTorch's math functions promote integers) into int64
    i.div_(2, rounding_mode="floor")
    assert i.tolist() == [0, 1, 1] and i.dtype == nb.int64


def test_in_place_on_a_leaf_that_requires_grad():
    w = nb.tensor(A.copy(), requires_grad=True)
    for fn in (lambda: w.abs_(), lambda: w.unsqueeze_(0), lambda: w.t_(), lambda: w.normal_()):
        with pytest.raises(RuntimeError, match="leaf"):
            fn()
    with nb.no_grad():
        w.tanh_()
        w.unsqueeze_(0)
        w.uniform_(-0.1, 0.1)
    assert w.requires_grad and w.is_leaf and w.shape == (1, 3, 4)
    assert float(w.abs().max()) <= 0.1


def test_in_place_on_non_leaves_is_differentiable():
    x = nb.tensor(A.copy(), requires_grad=True)
    y = x * 1.0
    y.sin_().mul_(2).clamp_max_(1.5)
    y.sum().backward()
    s = 2 * np.sin(A)
    want = np.where(s <= 1.5, 2 * np.cos(A), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-6)
    x.grad = None
    z = x * 1.0
    z.unsqueeze_(0).transpose_(0, 2)  # shape-changing in-place ops are views: gradients pass
    assert z.shape == (4, 3, 1)
    (z * nb.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3, 1))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12.0, dtype=np.float32).reshape(4, 3).T)


def test_shape_changing_in_place_ops():
    x = nb.tensor(A.copy())
    assert x.t_() is x and x.shape == (4, 3)
    np.testing.assert_array_equal(x.numpy(), A.T)
    x.swapdims_(0, 1).unsqueeze_(1)
    assert x.shape == (3, 1, 4)
    x.squeeze_(1)
    np.testing.assert_array_equal(x.numpy(), A)
    x.swapaxes_(-1, 0).squeeze_()
    assert x.shape == (4, 3)
    v = nb.ones(2, 3)
    v.squeeze_().unsqueeze_(-1)
    assert v.shape == (2, 3, 1)
    assert nb.ones(3).t_().shape == (3,)
    with pytest.raises(ValueError, match="t_\\(\\) expects"):
        nb.ones(2, 2, 2).t_()


def test_shape_changing_in_place_ops_on_views_still_write_through():
    base = nb.tensor(A.copy())
    view = base[:, 1:3]  # (3, 2)
    view.t_()
    assert view.shape == (2, 3)
    view.add_(100.0)
    want = A.copy()
    want[:, 1:3] += 100.0
    np.testing.assert_array_equal(base.numpy(), want)
    row = base[0]
    row.unsqueeze_(0).mul_(0.0)
    want[0] = 0.0
    np.testing.assert_array_equal(base.numpy(), want)
    alias = base.detach()
    alias.t_().fill_(1.0)  # an alias (shared storage) that was transposed
    np.testing.assert_array_equal(base.numpy(), np.ones_like(A))


def test_detach_():
    x = nb.tensor(A.copy(), requires_grad=True)
    y = x * 2
    assert y.detach_() is y and not y.requires_grad and y.is_leaf
    np.testing.assert_array_equal(y.numpy(), A * 2)
    with pytest.raises(RuntimeError, match="can't detach views in-place"):
        (x * 1)[0].detach_()


def test_in_place_values_without_torch():
    x = nb.tensor([0.5, -2.0, 4.0])
    assert x.clone().exp2_().tolist() == pytest.approx([math.sqrt(2), 0.25, 16.0])
    assert x.clone().copysign_(nb.tensor([-1.0, -0.0, 1.0])).tolist() == [-0.5, -2.0, 4.0]
    assert x.clone().heaviside_(nb.tensor(0.5)).tolist() == [1.0, 0.0, 1.0]
    assert x.clone().lerp_(nb.tensor([1.5, 0.0, 0.0]), 0.5).tolist() == [1.0, -1.0, 2.0]
    assert x.clone().addcmul_(x, x, value=2).tolist() == [1.0, 6.0, 36.0]
    assert nb.tensor([12, 18, -8]).gcd_(nb.tensor([8, 0, 6])).tolist() == [4, 18, 2]
    assert nb.tensor([4, 6, 0]).lcm_(nb.tensor([6, 4, 3])).tolist() == [12, 12, 0]
    m = nb.zeros(3, 4)
    m.index_add_(1, nb.tensor([0, 0, 3]), nb.ones(3, 3))
    assert m.tolist() == [[2.0, 0.0, 0.0, 1.0]] * 3
    m.scatter_reduce_(0, nb.tensor([[0, 0, 0, 0]]), nb.full((1, 4), 5.0), "amax", include_self=True)
    assert m.tolist()[0] == [5.0, 5.0, 5.0, 5.0]
    d = nb.zeros(2, 3)
    d.fill_diagonal_(1.0)
    assert d.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    c = nb.tensor([3.0, 1.0, 2.0])
    c.cumsum_(0).mul_(2)
    assert c.tolist() == [6.0, 8.0, 12.0]


def test_random_fills():
    w = nb.zeros(20000)
    w.uniform_(-2.0, 1.0)
    assert -2.0 <= float(w.min()) and float(w.max()) < 1.0 and abs(float(w.mean()) + 0.5) < 0.05
    w.normal_(3.0, 0.5)
    assert abs(float(w.mean()) - 3.0) < 0.02 and abs(float(w.std()) - 0.5) < 0.02
    w.bernoulli_(0.25)
    assert set(np.unique(w.numpy())) <= {0.0, 1.0} and abs(float(w.mean()) - 0.25) < 0.02
    w.bernoulli_(nb.tensor([0.0]))
    assert float(w.sum()) == 0.0
    w.exponential_(4.0)
    assert float(w.min()) >= 0 and abs(float(w.mean()) - 0.25) < 0.02
    w.geometric_(0.5)
    assert float(w.min()) >= 1 and abs(float(w.mean()) - 2.0) < 0.1
    w.log_normal_(0.0, 0.25)
    assert abs(float(w.log().mean())) < 0.02
    w.cauchy_(1.0, 0.5)
    assert abs(float(w.median()) - 1.0) < 0.05
    k = nb.zeros(5000, dtype=nb.int64)
    k.random_(3, 7)
    assert set(np.unique(k.numpy())) == {3, 4, 5, 6}
    k.random_(2)
    assert set(np.unique(k.numpy())) == {0, 1}
    assert nb.full((4,), 0.5).bernoulli().dtype == nb.float32
    assert set(np.unique(nb.zeros(100).bernoulli(0.5).numpy())) <= {0.0, 1.0}


# -- out-of-place values without torch -------------------------------------------------------------
def test_aliases_and_compositions_without_torch():
    x = nb.tensor(A)
    assert x.absolute().tolist() == np.abs(A).tolist() and x.fix().tolist() == np.trunc(A).tolist()
    assert x.positive() is x and x.negative().tolist() == (-A).tolist()
    assert x.sum_to_size(3, 1).shape == (3, 1) and x.sum_to_size(1, 1).item() == pytest.approx(A.sum())
    with pytest.raises(RuntimeError, match="not expandable"):
        x.sum_to_size(2, 4)
    assert [p.shape for p in x.split_with_sizes([1, 2])] == [(1, 4), (2, 4)]
    assert [p.shape for p in x.unsafe_chunk(2, 1)] == [(3, 2), (3, 2)]
    n = x.narrow_copy(0, 1, 1)
    n.zero_()  # a copy: x is untouched
    assert x.numpy()[1].tolist() == A[1].tolist()
    assert x.ravel().shape == (12,) and x.take(nb.tensor([0, -1])).tolist() == [0.5, 1.5]
    assert x.unfold(1, 3, 1).shape == (3, 2, 3) and x.unfold(1, 3, 1)[0, 1].tolist() == [-1.5, 2.25, 3.0]
    assert x.rot90().tolist() == np.rot90(A).tolist() and x.H.shape == (4, 3)
    assert x.angle().tolist()[0] == pytest.approx([0.0, math.pi, 0.0, 0.0])
    assert x.hardshrink(1.0).tolist()[1] == [0.0, 0.0, -2.5, 0.0]
    assert x.put(nb.tensor([1]), nb.tensor([10.0])).numpy()[0, 1] == 10.0


def test_new_math_values_without_torch():
    assert nb.logaddexp(nb.tensor(0.0), nb.tensor(0.0)).item() == pytest.approx(math.log(2))
    assert nb.logaddexp(nb.tensor(-math.inf), nb.tensor(-math.inf)).item() == -math.inf
    assert nb.logaddexp2(nb.tensor(3.0), nb.tensor(3.0)).item() == pytest.approx(4.0)
    assert nb.hypot(nb.tensor([3.0, 1e30]), nb.tensor([4.0, 1e30])).tolist() == pytest.approx(
        [5.0, 1e30 * math.sqrt(2)]
    )
    assert nb.xlogy(nb.tensor([0.0, 2.0]), nb.tensor([0.0, math.e])).tolist() == pytest.approx([0.0, 2.0])
    assert nb.fmax(nb.tensor([1.0, math.nan]), nb.tensor([math.nan, 2.0])).tolist() == [1.0, 2.0]
    assert nb.float_power(nb.tensor([2.0]), 3).dtype == nb.float64
    assert nb.gcd(nb.tensor([0, 21, -12]), nb.tensor([0, 14, 18])).tolist() == [0, 7, 6]
    assert nb.ldexp(nb.tensor([1.5]), nb.tensor([3])).tolist() == [12.0]
    assert nb.sinc(nb.tensor([0.0, 0.5])).tolist() == pytest.approx([1.0, 2 / math.pi])
    assert nb.signbit(nb.tensor([-0.0, 0.0, -1.0])).tolist() == [True, False, True]
    assert nb.i0(nb.tensor([0.0, 1.0, 20.0])).tolist() == pytest.approx([1.0, 1.2660658777520082, 43558282.559553534])
    assert nb.erfc(nb.tensor([0.0, 5.0])).tolist() == pytest.approx([1.0, 1.5374597944280349e-12], rel=1e-6)
    assert nb.asinh(nb.tensor([1e30, -1.0])).tolist() == pytest.approx([69.77069997038132, -0.881373587019543])
    assert nb.logit(nb.tensor([0.5, 0.0]), eps=0.25).tolist() == pytest.approx([0.0, -math.log(3)])
    assert nb.logcumsumexp(nb.tensor([0.0, 0.0, 1000.0]), 0).tolist() == pytest.approx([0.0, math.log(2), 1000.0])
    assert nb.quantile(nb.tensor([1.0, 2.0, 3.0, 4.0]), 0.5).item() == 2.5
    assert nb.nanmedian(nb.tensor([1.0, math.nan, 3.0, 2.0])).item() == 2.0
    assert (
        nb.mode(nb.tensor([3, 1, 3, 1, 2])).values.item() == 1
        and nb.mode(nb.tensor([3, 1, 3, 1, 2])).indices.item() == 3
    )
    assert nb.histc(nb.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 0.0]
    assert nb.bincount(nb.tensor([1, 3, 1]), minlength=5).tolist() == [0, 2, 0, 1, 0]
    assert nb.cov(nb.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist() == [[1.0, -1.0], [-1.0, 1.0]]
    assert nb.aminmax(nb.tensor([[2, 7], [-1, 4]]), dim=0).max.tolist() == [2, 7]
    x = nb.arange(12.0).reshape(3, 4)
    got = nb.scatter_reduce(nb.zeros(3), 0, nb.tensor([0, 0, 2]), nb.tensor([1.0, 3.0, 5.0]), "mean")
    assert got.tolist() == pytest.approx([4 / 3, 0.0, 2.5])  # x's 0 counts (include_self)
    assert nb.masked_scatter(nb.zeros(4), nb.tensor([True, False, True, False]), nb.tensor([7.0, 8.0])).tolist() == [
        7.0,
        0.0,
        8.0,
        0.0,
    ]
    assert nb.diagonal_scatter(nb.zeros(2, 2), nb.ones(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert [p.shape for p in nb.hsplit(x, [1])] == [(3, 1), (3, 3)]
    with pytest.raises(ValueError, match="cannot be split into 3 equal sections"):
        nb.hsplit(x, 3)


def test_metadata():
    x = nb.tensor(A)
    assert x.is_signed() and nb.tensor([1]).is_signed() and not nb.tensor([True]).is_signed()
    assert x.is_same_size(nb.zeros(3, 4)) and not x.is_same_size(nb.zeros(4, 3))
    assert nb.tensor([0.5]).is_nonzero() and not nb.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="ambiguous"):
        x.is_nonzero()
    assert x.is_cpu and x.get_device() == -1
    assert x.itemsize == 4 and x.nbytes == 48 and x.double().nbytes == 96
    assert x.bfloat16().dtype == nb.bfloat16 and x.real is x and not x.is_conj() and not x.is_neg()
    assert (x.byte().dtype, x.char().dtype, x.short().dtype) == (nb.uint8, nb.int8, nb.int16)


@needs_torch
def test_metadata_matches_torch():
    for data in (A, INTS, A > 0):
        ours, ref = nb.tensor(data), torch.tensor(data)
        assert ours.is_signed() == ref.is_signed()
        assert ours.nbytes == ref.nbytes and ours.itemsize == ref.itemsize
        assert ours.get_device() == ref.get_device() and ours.is_cpu == ref.is_cpu


@needs_torch
def test_in_place_gradients_match_torch():
    def chain(lib, x):
        y = x * 1.0
        y.atan_().addcmul_(x, x, value=0.5).hypot_(x).logaddexp(x)
        z = y.clone()
        z.unsqueeze_(0).transpose_(0, 2)
        return (z.squeeze(-1) ** 2).sum() + y.logaddexp(x).sum()

    ours_x = nb.tensor(UNIT, requires_grad=True)  # no zeros: hypot's gradient at (0, 0) is nan in torch
    chain(nb, ours_x).backward()
    ref_x = torch.tensor(UNIT, requires_grad=True)
    chain(torch, ref_x).backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-5, atol=1e-5)


def _storage_pattern(lib) -> list[bool]:
    """Which tensors share x's storage (data_ptr equality) for views without an offset."""
    x = lib.tensor(A)
    same = [x.T, x.view(12), x.detach(), x.data, x.reshape(3, 2, 2), x.unsqueeze(0)]
    other = [x.clone(), x + 1, x.T.contiguous(), x.T.reshape(12), lib.tensor(A)]
    return [t.data_ptr() == x.data_ptr() for t in same + other]


def test_data_ptr_names_the_storage_views_share():
    assert _storage_pattern(nb) == [True] * 6 + [False] * 5
    x = nb.tensor(A)
    before, row = x.data_ptr(), x[1]
    x.add_(1.0)  # an in-place op keeps the storage
    assert x.data_ptr() == before == row.data_ptr() and isinstance(before, int)
    x.data = nb.tensor(POS)  # new storage: the view taken before keeps the old one
    assert x.data_ptr() != before and row.data_ptr() == before
    assert nb.zeros(0, 3).data_ptr() == 0
    assert x.share_memory_() is x and x.is_shared() is False


@needs_torch
def test_data_ptr_sharing_matches_torch():
    assert _storage_pattern(nb) == _storage_pattern(torch)
    assert torch.zeros(0, 3).data_ptr() == nb.zeros(0, 3).data_ptr() == 0
