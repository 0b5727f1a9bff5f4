"""jvp, vjp, jacrev, jacfwd, hessian and linearize: closed forms, central finite differences
(float64), jacrev == jacfwd, pytree arguments and outputs, composition, and error messages.
torch.func comparisons run where torch is importable."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch
from _oracle import torch_func as tf

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

RNG = np.random.default_rng(11)
EPS = 1e-6


def _r(*shape: int, dtype=np.float64) -> np.ndarray:
    return RNG.uniform(-1.5, 1.5, size=shape).astype(dtype)


def _close(got, want, rtol=1e-6, atol=1e-8):
    got = got.numpy() if isinstance(got, nb.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def numeric_jacobian(fn, x: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Central differences of array-valued `fn` (called on float64 nabla tensors): S_out + S_in."""
    out_shape = fn(nb.tensor(x)).shape
    jac = np.zeros((*out_shape, *x.shape))
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        diff = (fn(nb.tensor(plus)).numpy() - fn(nb.tensor(minus)).numpy()) / (2 * eps)
        jac[(Ellipsis, *idx)] = diff
    return jac


# Functions R^(2,3) -> various shapes, smooth everywhere; torch twins for the comparisons.
FUNCS = {
    "elementwise": lambda x: nb.sin(x) * nb.exp(x * 0.5),
    "reduce": lambda x: (nb.tanh(x) * nb.tanh(x)).sum(axis=1),
    "matmul": lambda x: x @ x.T,
    "softmax": lambda x: nb.softmax(x, axis=-1),
    "scalar": lambda x: nb.logsumexp(x * x),
    "mixed": lambda x: nb.concatenate([x.sum(0) * x[0], nb.cos(x).reshape((6,))]),
}
TORCH_FUNCS = {
    "elementwise": lambda x: torch.sin(x) * torch.exp(x * 0.5),
    "reduce": lambda x: (torch.tanh(x) * torch.tanh(x)).sum(dim=1),
    "matmul": lambda x: x @ x.T,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "scalar": lambda x: torch.logsumexp((x * x).reshape(-1), dim=0),
    "mixed": lambda x: torch.cat([x.sum(0) * x[0], torch.cos(x).reshape((6,))]),
}


@pytest.mark.parametrize("name", FUNCS)
def test_jacrev_and_jacfwd_match_finite_differences(name):
    fn = FUNCS[name]
    x = _r(2, 3)
    want = numeric_jacobian(fn, x)
    jr = nb.jacrev(fn)(nb.tensor(x))
    jf = nb.jacfwd(fn)(nb.tensor(x))
    assert jr.dtype == nb.float64 and jf.dtype == nb.float64
    _close(jr, want, rtol=1e-6, atol=1e-7)
    _close(jf, want, rtol=1e-6, atol=1e-7)
    _close(jr, jf.numpy(), rtol=1e-12, atol=1e-12)


def test_jacobian_closed_forms():
    a = _r(4, 3)
    x = _r(3)
    _close(nb.jacrev(lambda v: nb.tensor(a) @ v)(nb.tensor(x)), a, rtol=1e-12)
    _close(nb.jacfwd(lambda v: nb.tensor(a) @ v)(nb.tensor(x)), a, rtol=1e-12)
    # outer product: d(x x^T)_ij / dx_k = delta_ik x_j + x_i delta_jk
    eye = np.eye(3)
    want = np.einsum("ik,j->ijk", eye, x) + np.einsum("i,jk->ijk", x, eye)
    _close(nb.jacrev(lambda v: v[:, None] * v[None, :])(nb.tensor(x)), want, rtol=1e-12)
    # scalar input and scalar output
    t = nb.tensor(0.7)
    _close(nb.jacrev(lambda s: s * nb.arange(3).astype(nb.float64))(t), np.arange(3.0))
    _close(nb.jacfwd(lambda s: nb.sin(s))(t), np.cos(0.7))
    _close(nb.jacfwd(lambda v: (v * v).sum())(nb.tensor(x)), 2 * x)


def test_float32_jacobian_keeps_dtype():
    x = _r(3, dtype=np.float32)
    j = nb.jacrev(nb.sin)(nb.tensor(x))
    assert j.dtype == nb.float32
    _close(j, np.diag(np.cos(x)), rtol=1e-6, atol=1e-7)
    assert nb.jacfwd(nb.sin)(nb.tensor(x)).dtype == nb.float32


def test_jacobian_argnums_tuple_and_pytree_outputs():
    x, y = _r(3), _r(2)

    def f(a, b):
        return {"prod": a[:, None] * b[None, :], "sum": (a.sum() + b.sum(),)}

    for jac in (nb.jacrev, nb.jacfwd):
        j = jac(f, argnums=(0, 1))(nb.tensor(x), nb.tensor(y))
        assert set(j) == {"prod", "sum"}
        da, db = j["prod"]
        assert da.shape == (3, 2, 3) and db.shape == (3, 2, 2)
        _close(da, np.einsum("ik,j->ijk", np.eye(3), y))
        _close(db, np.einsum("i,jk->ijk", x, np.eye(2)))
        (sa, sb) = j["sum"][0]
        _close(sa, np.ones(3))
        _close(sb, np.ones(2))
        # a single int argnums gives the bare Jacobian, for the second argument here
        j1 = jac(f, argnums=1)(nb.tensor(x), nb.tensor(y))
        _close(j1["prod"], db.numpy())
        jneg = jac(f, argnums=-1)(nb.tensor(x), nb.tensor(y))
        _close(jneg["prod"], db.numpy())


def test_jacobian_of_pytree_inputs():
    params = {"w": _r(2, 3), "b": _r(2)}
    x = _r(3)

    def f(p):
        return nb.tanh(p["w"] @ nb.tensor(x) + p["b"])

    z = params["w"] @ x + params["b"]
    d = 1 - np.tanh(z) ** 2
    for jac in (nb.jacrev, nb.jacfwd):
        j = jac(f)(nb.tree_map(nb.tensor, params))
        assert set(j) == {"w", "b"}
        _close(j["b"], np.diag(d))
        _close(j["w"], np.einsum("i,ij,k->ijk", d, np.eye(2), x))


def test_jacobian_has_aux():
    x = _r(3)
    for jac in (nb.jacrev, nb.jacfwd):
        j, aux = jac(lambda v: (nb.sin(v), {"norm": (v * v).sum()}), has_aux=True)(nb.tensor(x))
        _close(j, np.diag(np.cos(x)))
        _close(aux["norm"], (x * x).sum())


def test_jacobian_kwargs_are_not_differentiated():
    x = _r(3)
    j = nb.jacrev(lambda v, scale=1.0: v * scale)(nb.tensor(x), scale=3.0)
    _close(j, 3 * np.eye(3))


def test_jacobian_of_unused_input_is_zero():
    x, y = _r(3), _r(2)
    for jac in (nb.jacrev, nb.jacfwd):
        _, jy = jac(lambda a, b: a * 2, argnums=(0, 1))(nb.tensor(x), nb.tensor(y))
        _close(jy, np.zeros((3, 2)))


def test_higher_order_compositions_agree():
    x = _r(3)

    def f(v):
        return (nb.sin(v) * v.sum()).sum()

    want = nb.hessian(f)(nb.tensor(x)).numpy()
    s, c = np.sin(x), np.cos(x)
    # f = S sum_i sin(v_i) with S = sum v: d2f/dv_i dv_j = delta_ij (-S sin v_i) + cos v_i + cos v_j
    closed = np.diag(-s * x.sum()) + c[:, None] + c[None, :]
    _close(want, closed, rtol=1e-10)
    for name, h in {
        "jacrev(jacrev)": nb.jacrev(nb.jacrev(f)),
        "jacfwd(jacrev)": nb.jacfwd(nb.jacrev(f)),
        "jacrev(jacfwd)": nb.jacrev(nb.jacfwd(f)),
        "jacrev(grad)": nb.jacrev(nb.grad(f)),
        "jacfwd(grad)": nb.jacfwd(nb.grad(f)),
    }.items():
        np.testing.assert_allclose(h(nb.tensor(x)).numpy(), closed, rtol=1e-10, atol=1e-12, err_msg=name)


def test_third_derivative_by_reverse_over_reverse():
    x = _r(2)
    t = nb.jacrev(nb.jacrev(nb.grad(lambda v: (v * v * v * v).sum())))(nb.tensor(x))
    want = np.zeros((2, 2, 2))
    for i in range(2):
        want[i, i, i] = 24 * x[i]
    _close(t, want, rtol=1e-10)


# -- hessian -----------------------------------------------------------------------------------


def test_hessian_of_a_quadratic_form():
    a = _r(4, 4)
    x = _r(4)
    h = nb.hessian(lambda v: v @ (nb.tensor(a) @ v))(nb.tensor(x))
    _close(h, a + a.T, rtol=1e-12)


def _numeric_hessian(fn, x):
    return numeric_jacobian(lambda v: nb.grad(fn)(v), x, eps=1e-5)


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: (nb.sin(v) * nb.exp(v.sum() * 0.3)).sum(),
        lambda v: nb.logsumexp(v @ v.T),
        lambda v: (nb.tanh(v) * nb.tanh(v)).mean() * v[0, 1],
        lambda v: nb.sqrt((v * v).sum() + 1.0),
    ],
    ids=["sin-exp", "logsumexp", "tanh-mean", "norm"],
)
def test_hessian_of_matrix_input_matches_finite_differences(fn):
    x = _r(2, 3)
    h = nb.hessian(fn)(nb.tensor(x))
    assert h.shape == (2, 3, 2, 3) and h.dtype == nb.float64
    _close(h, _numeric_hessian(fn, x), rtol=1e-6, atol=1e-7)
    flat = h.numpy().reshape(6, 6)
    _close(flat, flat.T, rtol=1e-10, atol=1e-12)  # symmetric


def test_hessian_argnums_gives_all_blocks():
    x, y = _r(3), _r(2)

    def f(a, b):
        return (a * a).sum() * (b * b * b).sum()

    (haa, hab), (hba, hbb) = nb.hessian(f, argnums=(0, 1))(nb.tensor(x), nb.tensor(y))
    sa, sb = (x * x).sum(), (y**3).sum()
    _close(haa, 2 * sb * np.eye(3), rtol=1e-10)
    _close(hbb, sa * np.diag(6 * y), rtol=1e-10)
    _close(hab, np.outer(2 * x, 3 * y * y), rtol=1e-10)
    _close(hba, np.outer(3 * y * y, 2 * x), rtol=1e-10)
    _close(nb.hessian(f, argnums=1)(nb.tensor(x), nb.tensor(y)), hbb.numpy(), rtol=1e-12)


def test_hessian_of_mlp_loss_wrt_a_parameter_dict():
    p = {"w": _r(3, 2), "b": _r(2)}
    x, y = _r(4, 3), _r(4, 2)

    def loss(params):
        err = nb.tanh(nb.tensor(x) @ params["w"] + params["b"]) - nb.tensor(y)
        return (err * err).mean()

    h = nb.hessian(loss)(nb.tree_map(nb.tensor, p))
    assert h["w"]["w"].shape == (3, 2, 3, 2) and h["w"]["b"].shape == (3, 2, 2) and h["b"]["b"].shape == (2, 2)

    def loss_b(b):
        return loss({"w": nb.tensor(p["w"]), "b": b})

    _close(h["b"]["b"], _numeric_hessian(loss_b, p["b"]), rtol=1e-6, atol=1e-8)
    _close(h["w"]["b"], np.moveaxis(h["b"]["w"].numpy(), 0, -1), rtol=1e-10, atol=1e-12)


# -- jvp, vjp, linearize -----------------------------------------------------------------------


def test_jvp_and_vjp_agree_with_the_jacobian():
    x, t, c = _r(2, 3), _r(2, 3), _r(2, 2)
    fn = FUNCS["matmul"]
    jac = nb.jacrev(fn)(nb.tensor(x)).numpy()
    out, tan = nb.jvp(fn, (nb.tensor(x),), (nb.tensor(t),))
    _close(out, x @ x.T, rtol=1e-12)
    _close(tan, np.einsum("ijkl,kl->ij", jac, t), rtol=1e-10)
    out, pull = nb.vjp(fn, nb.tensor(x))
    (ct,) = pull(nb.tensor(c))
    _close(ct, np.einsum("ij,ijkl->kl", c, jac), rtol=1e-10)


def test_jvp_and_vjp_with_pytrees_and_aux():
    a, b = _r(3), _r(3)
    ta, tb = _r(3), _r(3)

    def f(d):
        return {"p": d["a"] * d["b"]}, d["a"].sum()

    out, tan, aux = nb.jvp(
        f, ({"a": nb.tensor(a), "b": nb.tensor(b)},), ({"a": nb.tensor(ta), "b": nb.tensor(tb)},), has_aux=True
    )
    _close(out["p"], a * b)
    _close(tan["p"], ta * b + a * tb)
    _close(aux, a.sum())
    out, pull, aux = nb.vjp(f, {"a": nb.tensor(a), "b": nb.tensor(b)}, has_aux=True)
    (g,) = pull({"p": nb.tensor(ta)})
    _close(g["a"], ta * b)
    _close(g["b"], ta * a)


def test_jvp_outputs_can_be_used_again():
    # Tangents attached during a jvp must not linger on its inputs, intermediates or aux:
    # later ops on them (another jvp, a VJP rule in backward) would run forward mode again.
    x = nb.tensor(_r(3))
    out, tan, aux = nb.jvp(lambda v: (nb.sin(v), nb.exp(v)), (x,), (nb.ones(3, dtype=nb.float64),), has_aux=True)
    _, tan2 = nb.jvp(nb.cos, (aux,), (nb.ones(3, dtype=nb.float64),))  # not a nested jvp
    _close(tan2, -np.sin(np.exp(x.numpy())))
    _close(tan, np.cos(x.numpy()))


def test_linearize_matches_jvp():
    x = _r(2, 3)
    fn = FUNCS["softmax"]
    out, f_jvp = nb.linearize(fn, nb.tensor(x))
    _close(out, fn(nb.tensor(x)).numpy())
    jac = nb.jacfwd(fn)(nb.tensor(x)).numpy()
    for _ in range(2):
        t = _r(2, 3)
        _close(f_jvp(nb.tensor(t)), np.einsum("ijkl,kl->ij", jac, t), rtol=1e-10, atol=1e-12)


# -- errors ------------------------------------------------------------------------------------


def test_jvp_tangent_shape_or_dtype_mismatch_names_both():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match=r"tangents\[0\] has shape \(3, 4\).*primals\[0\] has shape \(4, 3\)"):
        nb.jvp(nb.sin, (x,), (nb.tensor(_r(3, 4)),))
    with pytest.raises(ValueError, match=r"tangents\[0\] has shape \(4, 3\) and dtype float32.*dtype float64"):
        nb.jvp(nb.sin, (x,), (nb.tensor(_r(4, 3, dtype=np.float32)),))
    with pytest.raises(ValueError, match=r"tangents\[1\]\['b'\] has shape \(2,\)"):
        nb.jvp(lambda u, d: u, (x, {"b": x}), (x, {"b": nb.ones(2)}))
    with pytest.raises(ValueError, match=r"tangents structure \(\*,\) does not match primals structure \(\*, \*\)"):
        nb.jvp(lambda u, v: u + v, (x, x), (x,))
    with pytest.raises(TypeError, match="primals and tangents must be tuples"):
        nb.jvp(nb.sin, x, x)


def test_nested_forward_mode():
    x = nb.tensor(_r(3))
    xv = x.numpy()
    # d/dt [cos(v) * v] at v = x + t x: the inner jvp's tangent, differentiated by the outer one
    _, t2 = nb.jvp(lambda v: nb.jvp(nb.sin, (v,), (v,))[1], (x,), (x,))
    _close(t2, (-np.sin(xv) * xv + np.cos(xv)) * xv)
    f = lambda v: nb.sin(v).sum() * v[0] + (v * v * v).sum()  # noqa: E731
    _close(nb.jacfwd(nb.jacfwd(f))(x), nb.hessian(f)(x).numpy())
    _close(nb.jacrev(nb.jacfwd(f))(x), nb.hessian(f)(x).numpy())
    # forward mode still works afterwards
    _close(nb.jvp(nb.sin, (x,), (nb.ones_like(x),))[1], np.cos(xv))


def test_nested_forward_mode_has_no_perturbation_confusion():
    # d/dx [x * (d/dy (x + y))] = d/dx [x * 1] = 1 (confusing the two perturbations gives 2)
    def f(x):
        inner = nb.jvp(lambda y: x + y, (nb.tensor(1.0),), (nb.tensor(1.0),))[1]
        return x * inner

    _, t = nb.jvp(f, (nb.tensor(2.0),), (nb.tensor(1.0),))
    assert t.item() == 1.0


def test_grad_of_non_scalar_output_names_the_shape():
    with pytest.raises(TypeError, match=r"grad: fn must return a scalar Tensor, got \(4, 3\).*jacrev"):
        nb.grad(lambda v: v * 2)(nb.ones((4, 3)))
    with pytest.raises(TypeError, match=r"got \(3,\)"):  # the logical shape under vmap
        nb.vmap(nb.grad(lambda v: v * 2))(nb.ones((4, 3)))


def test_differentiating_integer_inputs_names_the_argument():
    ints = nb.tensor([1, 2])
    with pytest.raises(TypeError, match=r"grad: .*floating-point.*args\[1\] has dtype int64"):
        nb.grad(lambda a, b: (a * b).sum(), argnums=1)(nb.ones(2), ints)
    with pytest.raises(TypeError, match=r"jacrev: .*args\[0\]\['i'\] has dtype int64"):
        nb.jacrev(lambda d: d["f"] * 2)({"f": nb.ones(2), "i": ints})
    with pytest.raises(TypeError, match=r"jacfwd: .*args\[0\] has dtype int64"):
        nb.jacfwd(lambda v: v * 2)(ints)
    with pytest.raises(TypeError, match=r"vjp: .*primals\[0\] has dtype int64"):
        nb.vjp(lambda v: v * 2, ints)


def test_bad_argnums_and_has_aux():
    x = nb.ones(3)
    with pytest.raises(ValueError, match="jacrev: argnums 2 is out of range for 1 positional"):
        nb.jacrev(nb.sin, argnums=2)(x)
    with pytest.raises(ValueError, match="jacfwd: argnums"):
        nb.jacfwd(nb.sin, argnums=(0, 3))(x)
    with pytest.raises(TypeError, match=r"grad: with has_aux=True, fn must return a pair"):
        nb.grad(lambda v: v.sum(), has_aux=True)(x)
    with pytest.raises(TypeError, match=r"jacrev: with has_aux=True"):
        nb.jacrev(nb.sin, has_aux=True)(x)
    with pytest.raises(TypeError, match=r"jvp: with has_aux=True"):
        nb.jvp(nb.sin, (x,), (x,), has_aux=True)


def test_vjp_cotangent_errors():
    _, pull = nb.vjp(lambda v: (v, v.sum()), nb.ones((4, 3)))
    with pytest.raises(ValueError, match=r"cotangent structure \* does not match output structure \(\*, \*\)"):
        pull(nb.ones((4, 3)))
    with pytest.raises(ValueError, match=r"cotangent 0 has shape \(3, 4\), output has shape \(4, 3\)"):
        pull((nb.ones((3, 4)), nb.tensor(1.0)))


# -- torch.func ----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", FUNCS)
def test_jacobians_match_torch_func(name):
    fn = FUNCS[name]
    x = _r(2, 3)
    want = tf.jacrev(TORCH_FUNCS[name])(torch.tensor(x)).numpy()
    _close(nb.jacrev(fn)(nb.tensor(x)), want, rtol=1e-10, atol=1e-12)
    _close(nb.jacfwd(fn)(nb.tensor(x)), want, rtol=1e-10, atol=1e-12)


@needs_torch
def test_hessian_jvp_vjp_match_torch_func():
    x, t = _r(2, 3), _r(2, 3)

    def f(v):  # the same code runs on nabla and torch tensors
        return (v.sin() * (v * 0.3).sum().exp()).sum()

    _close(nb.hessian(f)(nb.tensor(x)), tf.hessian(f)(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)
    _, tan = nb.jvp(FUNCS["softmax"], (nb.tensor(x),), (nb.tensor(t),))
    _, want = tf.jvp(TORCH_FUNCS["softmax"], (torch.tensor(x),), (torch.tensor(t),))
    _close(tan, want.numpy(), rtol=1e-10, atol=1e-12)
    _, pull = nb.vjp(FUNCS["matmul"], nb.tensor(x))
    _, tpull = tf.vjp(TORCH_FUNCS["matmul"], torch.tensor(x))
    c = _r(2, 2)
    _close(pull(nb.tensor(c))[0], tpull(torch.tensor(c))[0].numpy(), rtol=1e-10, atol=1e-12)


def test_jvp_of_power_with_a_constant_exponent_at_negative_base():
    x = nb.tensor([-1.0, 2.0])
    _, t = nb.jvp(lambda v: v**3, (x,), (nb.ones(2),))
    np.testing.assert_allclose(t.numpy(), [3.0, 12.0])
    np.testing.assert_allclose(nb.hessian(lambda v: (v**3).sum())(x).numpy(), np.diag([-6.0, 12.0]))


@pytest.mark.parametrize("name", FUNCS)
def test_forward_over_forward_equals_the_hessian(name):
    """jacfwd(jacfwd(f)): an inner level's rule that uses the op's outputs (exp's y * t, softmax)
    sees them with their outer tangents (it saw constants, and the result was wrong)."""
    w = nb.tensor(_r(*np.shape(FUNCS[name](nb.tensor(_r(2, 3))).numpy())))
    f = lambda x: (FUNCS[name](x) * w).sum()  # noqa: E731
    x = nb.tensor(_r(2, 3))
    _close(nb.jacfwd(nb.jacfwd(f))(x), nb.hessian(f)(x).numpy(), rtol=1e-5, atol=1e-6)
    xv = x.numpy()  # d/dt [exp(v) v] at v = x + t x
    _close(nb.jvp(lambda v: nb.jvp(nb.exp, (v,), (v,))[1], (x,), (x,))[1], np.exp(xv) * xv * (xv + 1))


@pytest.mark.parametrize(
    ("fn", "point"),
    [
        (
            lambda x: (nb.cumprod(x, 0) * nb.tensor([0.3, -1.2, 0.7, 2.0], dtype=nb.float64)).sum(),
            [1.5, 0.0, 2.0, -1.0],
        ),
        (lambda x: (nb.cumprod(x, 0) * nb.tensor([0.3, -1.2, 0.7, 2.0], dtype=nb.float64)).sum(), [0.0, 2.0, 3.0, 0.5]),
        (nb.prod, [1.5, 0.0, 2.0, -1.0]),
        (nb.prod, [0.0, 2.0, 0.0, -1.0]),
        (nb.prod, [0.0, 0.0, 0.0, 3.0]),
        (
            lambda x: (nb.prod(x.reshape(2, 2), 1) * nb.tensor([0.5, -2.0], dtype=nb.float64)).sum(),
            [0.0, 2.0, 3.0, 0.0],
        ),
    ],
)
def test_second_derivatives_of_cumprod_and_prod_at_zeros(fn, point):
    """cumprod's and prod's derivatives keep the zero factors (a constant 0 lost d/dx_zero):
    every mode's Hessian equals central differences of the gradient (exact for polynomials)."""
    x = np.array(point)
    want = numeric_jacobian(nb.grad(fn), x, eps=1e-3)
    for hess in (nb.hessian(fn), nb.jacfwd(nb.jacfwd(fn)), nb.jacrev(nb.jacrev(fn)), nb.jacfwd(nb.jacrev(fn))):
        _close(hess(nb.tensor(x)), want, rtol=1e-6, atol=1e-6)


def test_jacobians_run_fn_once_so_random_draws_and_side_effects_agree():
    calls = []

    def noisy(a):
        calls.append(1)
        return F.dropout(a, 0.5, training=True).sum() * nb.ones(3)

    nb.manual_seed(0)
    jac = nb.jacrev(noisy)(nb.ones(8)).numpy()
    assert len(calls) == 1 and (jac == jac[:1]).all()  # one mask: every row alike (torch.func, JAX)
    h = nb.hessian(lambda a: F.dropout(a, 0.5, training=True).sum() ** 2)(nb.ones(6)).numpy()
    np.testing.assert_array_equal(h, h.T)
    jac, aux = nb.jacfwd(lambda a: (lambda d: (d, d))(F.dropout(a, 0.5, training=True)), has_aux=True)(nb.ones(8))
    np.testing.assert_array_equal(np.diag(jac.numpy()), aux.numpy())  # aux from the same evaluation
    bn = nn.BatchNorm1d(2)
    nb.jacrev(bn)(nb.randn(4, 2))
    assert int(bn.num_batches_tracked) == 1


def test_top_level_transform_results_are_plain_values_and_jvp_needs_float_primals():
    x = nb.tensor([1.0, 2.0])
    (value, aux), g = nb.value_and_grad(lambda a: ((a**2).sum(), a * 3), has_aux=True)(x)
    hess = nb.hessian(lambda a: (a**3).sum())(x)
    out, tangent = nb.jvp(nb.grad(lambda a: (a**3).sum()), (x,), (nb.ones(2),))
    # no autodiff history kept alive (a loop summing the loss would hold every step's graph)
    assert not any(t.requires_grad for t in (value, aux, g, hess, out, tangent))
    np.testing.assert_allclose(tangent.numpy(), [6.0, 12.0])
    w = nb.tensor([1.0, 2.0], requires_grad=True)  # fn closes over a tensor that requires grad
    value, g = nb.value_and_grad(lambda a: (a * w).sum())(x)
    assert value.requires_grad and g.requires_grad  # (an outer backward differentiates through)
    with pytest.raises(TypeError, match="jvp: primals\\[0\\] has dtype int64"):
        nb.jvp(lambda i: i.float() * 2, (nb.tensor([1, 2]),), (nb.tensor([1, 1]),))


def test_forward_mode_through_a_conv_inside_another_vmap_level():
    """Per-sample jacfwd of a conv with a fixed weight, and jacfwd over a weight through a
    vmapped conv: the tangent is batched over more levels than the image (it crashed)."""
    x = nb.tensor(np.random.default_rng(0).standard_normal((3, 1, 5, 5)).astype(np.float32))
    w = nb.tensor(np.random.default_rng(1).standard_normal((2, 1, 3, 3)).astype(np.float32))
    fwd = nb.vmap(nb.jacfwd(lambda a: F.conv2d(a, w)))(x)
    rev = nb.vmap(nb.jacrev(lambda a: F.conv2d(a, w)))(x)
    assert fwd.shape == (3, 2, 3, 3, 1, 5, 5)
    np.testing.assert_allclose(fwd.numpy(), rev.numpy(), rtol=1e-5, atol=1e-6)
    jw = nb.jacfwd(lambda ww: nb.vmap(lambda a: F.conv2d(a, ww))(x))(w)
    jw_rev = nb.jacrev(lambda ww: nb.vmap(lambda a: F.conv2d(a, ww))(x))(w)
    np.testing.assert_allclose(jw.numpy(), jw_rev.numpy(), rtol=1e-5, atol=1e-6)
