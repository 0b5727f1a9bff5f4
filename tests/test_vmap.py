"""vmap: in_axes/out_axes forms, pytrees, nesting, composition with grad/jacobians/backward(),
per-example gradients, and the errors for bad input. Reference values are closed forms, Python
loops over the batch, and torch.func where torch is importable."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch
from _oracle import torch_func as tf

import nabla as nb

RNG = np.random.default_rng(7)


def _r(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _close(got, want, rtol=1e-5, atol=1e-5):
    got = got.numpy() if isinstance(got, nb.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want), f"shape {got.shape}, expected {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -- forward semantics ---------------------------------------------------------------------


def test_batched_dot_and_logical_shape_inside():
    a, b = _r(5, 3), _r(5, 3)
    seen = []

    def dot(u, v):
        seen.append(u.shape)
        return (u * v).sum()

    _close(nb.vmap(dot)(nb.tensor(a), nb.tensor(b)), (a * b).sum(1))
    assert seen == [(3,)]  # the mapped axis is invisible inside


@pytest.mark.parametrize("in_axis", [0, 1, 2, -1, -3])
def test_in_axes_int_moves_that_axis(in_axis):
    x = _r(2, 3, 4)
    got = nb.vmap(lambda t: t * 2.0 + t.sum(), in_axes=in_axis)(nb.tensor(x))
    moved = np.moveaxis(x, in_axis, 0)
    want = np.stack([m * 2 + m.sum() for m in moved])
    _close(got, want)


@pytest.mark.parametrize("out_axis", [0, 1, 2, -1, -2, -3])
def test_out_axes_int_places_the_batch_axis(out_axis):
    x = _r(4, 2, 3)
    got = nb.vmap(lambda t: nb.sin(t), out_axes=out_axis)(nb.tensor(x))
    _close(got, np.moveaxis(np.sin(x), 0, out_axis))


def test_in_axes_none_broadcasts_an_argument():
    x, w = _r(6, 3), _r(3, 2)
    got = nb.vmap(lambda row, m: row @ m, in_axes=(0, None))(nb.tensor(x), nb.tensor(w))
    _close(got, x @ w)
    got = nb.vmap(lambda m, col: m @ col, in_axes=(None, 1))(nb.tensor(w.T), nb.tensor(x.T))
    _close(got, x @ w)


def test_in_axes_as_list_and_python_scalars_unmapped():
    x = _r(4, 3)
    got = nb.vmap(lambda t, s: t * s, in_axes=[0, None])(nb.tensor(x), 3.0)
    _close(got, x * 3)


def test_numpy_arrays_are_accepted_as_mapped_inputs():
    x = _r(4, 3)
    _close(nb.vmap(lambda t: t.sum())(x), x.sum(1))


def test_kwargs_are_passed_unmapped():
    x, b = _r(4, 3), _r(3)
    got = nb.vmap(lambda t, bias=None, scale=1.0: t * scale + bias)(nb.tensor(x), bias=nb.tensor(b), scale=2.0)
    _close(got, x * 2 + b)


def test_pytree_inputs_with_prefix_in_axes():
    params = {"w": _r(3, 2), "b": _r(2)}
    xs = _r(5, 3)

    def f(p, x):
        return x @ p["w"] + p["b"]

    want = xs @ params["w"] + params["b"]
    p_nb = nb.tree_map(nb.tensor, params)
    _close(nb.vmap(f, in_axes=(None, 0))(p_nb, nb.tensor(xs)), want)
    # a dict inside the tuple: per-leaf axes (w stays, b mapped)
    bs = _r(5, 2)
    got = nb.vmap(f, in_axes=({"w": None, "b": 0}, 0))({"w": p_nb["w"], "b": nb.tensor(bs)}, nb.tensor(xs))
    _close(got, xs @ params["w"] + bs)
    # tuples and lists inside arguments, mapped along different axes
    a, b = _r(3, 5), _r(5, 2)
    got = nb.vmap(lambda pair: pair[0] * pair[1][0], in_axes=((1, [0]),))((nb.tensor(a), [nb.tensor(b[:, 0])]))
    _close(got, a.T * b[:, :1])


def test_pytree_outputs_with_prefix_out_axes():
    x = _r(4, 3)

    def f(t):
        return {"sum": t.sum(), "both": (t * 2, [nb.cos(t)])}

    out = nb.vmap(f)(nb.tensor(x))
    _close(out["sum"], x.sum(1))
    _close(out["both"][0], x * 2)
    _close(out["both"][1][0], np.cos(x))
    out = nb.vmap(f, out_axes={"sum": 0, "both": (1, [-1])})(nb.tensor(x))
    _close(out["both"][0], (x * 2).T)
    _close(out["both"][1][0], np.cos(x).T)
    # a list of out_axes for a tuple of outputs
    first, second = nb.vmap(lambda t: (t, t.sum()), out_axes=[1, 0])(nb.tensor(x))
    _close(first, x.T)
    _close(second, x.sum(1))


def test_outputs_that_do_not_depend_on_the_batch():
    x, c = _r(4, 3), _r(2)
    const = nb.tensor(c)
    out = nb.vmap(lambda t: (t.sum(), const, 5.0, None))(nb.tensor(x))
    _close(out[0], x.sum(1))
    _close(out[1], np.broadcast_to(c, (4, 2)))  # broadcast along the batch (as JAX does)
    _close(out[2], np.full(4, 5.0))
    assert out[3] is None
    out = nb.vmap(lambda t: (t, const, 5.0), out_axes=(0, None, None))(nb.tensor(x))
    _close(out[1], c)
    assert out[2] == 5.0


def test_axis_size_with_no_mapped_input():
    c = _r(3)
    _close(nb.vmap(lambda t: t * 2, in_axes=None, axis_size=4)(nb.tensor(c)), np.broadcast_to(2 * c, (4, 3)))
    _close(nb.vmap(lambda: nb.ones(2), axis_size=3)(), np.ones((3, 2)))
    # a consistent axis_size is fine
    _close(nb.vmap(lambda t: t.sum(), axis_size=4)(nb.tensor(_r(4, 3))).shape, (4,))


def test_batch_of_one_and_of_zero():
    x = _r(1, 3)
    _close(nb.vmap(lambda t: t.sum())(nb.tensor(x)), x.sum(1))
    assert nb.vmap(lambda t: t * 2)(nb.zeros((0, 3))).shape == (0, 3)


def test_matches_a_python_loop_for_a_mix_of_ops():
    x, y = _r(5, 4, 3), _r(5, 3)

    def f(a, b):
        h = nb.tanh(a @ b)  # (4,)
        s = nb.softmax(a, axis=-1) * b
        return nb.concatenate([h, s.mean(0), nb.logsumexp(a, axis=0)]), a.T[1:, ::2]

    got = nb.vmap(f)(nb.tensor(x), nb.tensor(y))
    for k in range(5):
        want = f(nb.tensor(x[k]), nb.tensor(y[k]))
        _close(got[0][k], want[0].numpy())
        _close(got[1][k], want[1].numpy())


def test_nested_vmap_outer_product_and_axes():
    a, b = _r(5, 3), _r(6, 3)
    dist = nb.vmap(nb.vmap(lambda u, v: ((u - v) ** 2).sum(), in_axes=(None, 0)), in_axes=(0, None))
    _close(dist(nb.tensor(a), nb.tensor(b)), ((a[:, None] - b[None]) ** 2).sum(-1))
    # inner maps axis 1 and puts the result at axis 1; outer maps axis 0
    x = _r(2, 3, 4)
    got = nb.vmap(nb.vmap(lambda t: t * 2, in_axes=1, out_axes=1))(nb.tensor(x))
    _close(got, 2 * x)


def test_triple_nesting_with_closures_from_outer_levels():
    x = _r(2, 3, 4)

    def level1(a):  # a: (3, 4)
        def level2(row):  # row: (4,)
            return nb.vmap(lambda e: e * row.sum() + a.sum())(row)

        return nb.vmap(level2)(a)

    want = x * x.sum(-1, keepdims=True) + x.sum((1, 2), keepdims=True)
    _close(nb.vmap(level1)(nb.tensor(x)), want, rtol=1e-4)


@needs_torch
def test_nested_vmap_matches_torch_func():
    x, y = _r(3, 4, 5), _r(5, 2)

    def f(row, w):
        return (row @ w).relu().sum() + row.max()

    got = nb.vmap(nb.vmap(f, in_axes=(0, None)), in_axes=(0, None))(nb.tensor(x), nb.tensor(y))
    want = tf.vmap(tf.vmap(f, in_dims=(0, None)), in_dims=(0, None))(torch.tensor(x), torch.tensor(y))
    _close(got, want.numpy())


def test_random_ops_inside_vmap_follow_randomness():
    x = nb.zeros((4, 3))
    out = nb.vmap(lambda t: t + nb.randn(3) + nb.rand_like(t))(x).numpy()  # default: "different"
    assert out.shape == (4, 3) and np.isfinite(out).all()
    assert len({tuple(r) for r in out.round(6)}) == 4, "each batch element draws its own numbers"
    same = nb.vmap(lambda t: t + nb.rand(3), randomness="same")(x).numpy()
    assert np.allclose(same, same[0])
    with pytest.raises(RuntimeError, match="randomness='error'"):
        nb.vmap(lambda t: t + nb.rand(3), randomness="error")(x)
    with pytest.raises(ValueError, match="randomness must be"):
        nb.vmap(lambda t: t, randomness="maybe")
    # dropout keeps about 1 - p of each row, with a mask per row; nested levels mix modes
    drop = nb.vmap(lambda t: nb.dropout(t, 0.5))(nb.ones((64, 32))).numpy()
    assert len({tuple(r) for r in drop}) > 60 and 0.3 < (drop > 0).mean() < 0.7
    nested = nb.vmap(nb.vmap(lambda t: t + nb.rand(()), randomness="same"))(nb.zeros((3, 5))).numpy()
    assert np.allclose(nested, nested[:, :1]) and not np.allclose(nested, nested[:1])


def test_inner_output_that_depends_only_on_the_outer_level():
    x, y = _r(3, 2), _r(4)
    out = nb.vmap(lambda a: nb.vmap(lambda b: a.sum() * 2.0)(nb.tensor(y)))(nb.tensor(x))
    _close(out, np.broadcast_to(2 * x.sum(1)[:, None], (3, 4)))
    out = nb.vmap(lambda a: nb.vmap(lambda b: a * b, in_axes=(0,))(nb.tensor(y)))(nb.tensor(x))
    _close(out, x[:, None, :] * y[None, :, None])


def test_vmap_over_a_pullback():
    # A batch of cotangents through one vjp, with and without a vmap inside the function.
    x, cots = _r(4, 3), _r(5, 4, 3)
    for f in (lambda v: nb.sin(v) * 2.0, nb.vmap(lambda v: nb.sin(v) * 2.0)):
        _, pull = nb.vjp(f, nb.tensor(x))
        (got,) = nb.vmap(pull)(nb.tensor(cots))
        _close(got, cots * 2 * np.cos(x), rtol=1e-5)
    w, c = _r(3), _r(5, 4)

    def h(p):
        return nb.vmap(lambda q, v: nb.sin(q * v).sum(), in_axes=(None, 0))(p, nb.tensor(x))

    _, pull = nb.vjp(h, nb.tensor(w))
    (got,) = nb.vmap(pull)(nb.tensor(c))
    _close(got, c @ (np.cos(w * x) * x), rtol=1e-4, atol=1e-5)


# -- errors ----------------------------------------------------------------------------------


def test_error_in_axes_tuple_of_wrong_length():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match="in_axes has 1 entries but the function was called with 2 positional"):
        nb.vmap(lambda a, b: a + b, in_axes=(0,))(x, x)


def test_error_in_axes_structure_mismatch_names_the_argument():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match=r"in_axes\[0\].*keys not in the argument: \['c'\].*missing: \['b'\]"):
        nb.vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))({"a": x, "b": x})
    with pytest.raises(ValueError, match=r"in_axes\[1\]\[0\].*3 entries for 2"):
        nb.vmap(lambda u, d: u + d[0][0], in_axes=(0, ((0, 0, 0),)))(x, ((x, x),))
    with pytest.raises(ValueError, match=r"in_axes\[0\].*\[\*, \*\].*\(\*, \*\)"):
        nb.vmap(lambda d: d[0], in_axes=([0, 0],))((x, x))


@pytest.mark.parametrize("bad", [1.0, "0", True, {"a": 0}])
def test_error_in_axes_of_the_wrong_type(bad):
    with pytest.raises(TypeError, match="in_axes must be an int, None or a tuple"):
        nb.vmap(lambda a: a, in_axes=bad)(nb.ones((2, 2)))


def test_error_in_axes_leaf_of_the_wrong_type():
    with pytest.raises(TypeError, match=r"in_axes entries must be ints or None, got 1.5 for args\[0\]"):
        nb.vmap(lambda a: a, in_axes=(1.5,))(nb.ones((2, 2)))


def test_error_inconsistent_sizes_names_arguments_and_sizes():
    a, b = nb.tensor(_r(4, 3)), nb.tensor(_r(5, 3))
    with pytest.raises(ValueError, match=r"args\[0\] has size 4 along axis 0.*args\[1\] has size 5 along axis 0"):
        nb.vmap(lambda u, v: u + v)(a, b)
    with pytest.raises(ValueError, match=r"args\[0\]\['a'\] has size 4 .*args\[0\]\['b'\] has size 5"):
        nb.vmap(lambda d: d["a"] + d["b"])({"a": a, "b": b})
    with pytest.raises(ValueError, match=r"args\[1\] has size 3 along axis 1 \(shape \(5, 3\)\)"):
        nb.vmap(lambda u, v: u + v, in_axes=(0, 1))(a, b)
    with pytest.raises(ValueError, match=r"size 4 along axis 0 .* but axis_size=7"):
        nb.vmap(lambda u: u, axis_size=7)(a)


def test_error_axis_out_of_range():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match=r"in_axes=2 is out of range for args\[0\] of shape \(4, 3\) \(rank 2\)"):
        nb.vmap(lambda a: a, in_axes=2)(x)
    with pytest.raises(ValueError, match=r"in_axes=-3 is out of range"):
        nb.vmap(lambda a: a, in_axes=-3)(x)
    with pytest.raises(ValueError, match=r"in_axes=0 is out of range for args\[1\] of shape \(\)"):
        nb.vmap(lambda a, s: a * s)(x, nb.tensor(2.0))
    with pytest.raises(ValueError, match=r"out_axes=3 is invalid for output of shape \(3,\): the result has rank 2"):
        nb.vmap(lambda a: a, out_axes=3)(x)
    with pytest.raises(ValueError, match=r"out_axes=-4 is invalid for output\[1\]"):
        nb.vmap(lambda a: (a, a), out_axes=(0, -4))(x)


def test_error_out_axes_none_for_a_batched_output():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match=r"output\[0\] depends on the mapped axis, so its out_axes cannot be None"):
        nb.vmap(lambda a: (a, a), out_axes=(None, 0))(x)


def test_error_out_axes_structure_mismatch():
    x = nb.tensor(_r(4, 3))
    with pytest.raises(ValueError, match=r"out_axes: structure \(\*, \*, \*\) does not match the output's"):
        nb.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(x)
    with pytest.raises(ValueError, match=r"keys not in the output: \['y'\]"):
        nb.vmap(lambda a: {"x": a}, out_axes={"y": 0})(x)


def test_error_nothing_mapped_needs_axis_size():
    with pytest.raises(ValueError, match="no input is mapped.*pass axis_size"):
        nb.vmap(lambda a: a, in_axes=None)(nb.ones(3))


def test_error_mapped_non_array_argument():
    with pytest.raises(TypeError, match=r"args\[1\] is mapped .* got float; use in_axes=None"):
        nb.vmap(lambda a, s: a * s)(nb.ones((2, 3)), 3.0)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "3"])
def test_error_bad_axis_size(bad):
    with pytest.raises(ValueError, match=f"axis_size must be a non-negative int, got {bad!r}"):
        nb.vmap(lambda a: a, axis_size=bad)


def test_error_output_of_an_unsupported_type():
    with pytest.raises(TypeError, match=r"output\[1\] is a str"):
        nb.vmap(lambda a: (a, "label"))(nb.ones((2, 3)))


def test_error_tensor_that_escaped_its_vmap():
    leaked = []

    def f(a):
        leaked.append(a * 2)  # a side effect: the batched tensor outlives its vmap
        return a.sum()

    nb.vmap(f)(nb.ones((4, 3)))
    with pytest.raises(ValueError, match=r"args\[0\] is batched over 1 vmap levels but only 0 are active.*escaped"):
        nb.vmap(lambda b: b * 2)(leaked[0])


def test_error_fn_not_callable():
    with pytest.raises(TypeError, match="fn must be callable, got int"):
        nb.vmap(3)


def test_error_in_the_function_keeps_vmap_usable():
    with pytest.raises(ValueError):
        nb.vmap(lambda a: a @ nb.ones((5, 2)))(nb.ones((4, 3)))
    _close(nb.vmap(lambda a: a.sum())(nb.ones((4, 3))), np.full(4, 3.0))  # no vmap level leaked


# -- vmap with autodiff ----------------------------------------------------------------------


def _cube_sum(x):
    return (x**3).sum()


def test_vmap_of_grad_is_per_example():
    x = _r(4, 3)
    _close(nb.vmap(nb.grad(_cube_sum))(nb.tensor(x)), 3 * x**2)


def test_grad_of_vmap():
    x = _r(4, 3)
    f = nb.vmap(lambda r: nb.sin(r).sum() * r[0])
    g = nb.grad(lambda t: f(t).sum())(nb.tensor(x))
    s = np.sin(x).sum(1, keepdims=True)
    want = np.cos(x) * x[:, :1]
    want[:, 0] += s[:, 0]
    _close(g, want, rtol=1e-4)


def test_grad_of_vmap_with_broadcast_params():
    w, xs = _r(3), _r(5, 3)
    per_example = nb.vmap(lambda p, x: nb.tanh((p * x).sum()), in_axes=(None, 0))
    g = nb.grad(lambda p: per_example(p, nb.tensor(xs)).sum())(nb.tensor(w))
    want = ((1 - np.tanh(xs @ w) ** 2)[:, None] * xs).sum(0)
    _close(g, want, rtol=1e-4)


def test_nested_vmap_of_grad_and_grad_of_vmap_of_grad():
    x = _r(2, 4, 3)
    _close(nb.vmap(nb.vmap(nb.grad(_cube_sum)))(nb.tensor(x)), 3 * x**2)
    # d/dx sum_i (3 x_i^2) = 6 x
    _close(nb.grad(lambda t: nb.vmap(nb.grad(_cube_sum))(t).sum())(nb.tensor(x[0])), 6 * x[0], rtol=1e-4)
    # vmap(grad(vmap)): per outer element, grad of a sum over an inner batch
    _close(nb.vmap(nb.grad(lambda t: nb.vmap(_cube_sum)(t).sum()))(nb.tensor(x)), 3 * x**2)


def test_vmap_of_grad_in_axes_inside_and_outside():
    w, xs = _r(3), _r(5, 3)

    def loss(p, x):
        return nb.sin(p * x).sum()

    g = nb.vmap(nb.grad(loss), in_axes=(None, 0))(nb.tensor(w), nb.tensor(xs))
    _close(g, np.cos(w * xs) * xs, rtol=1e-4)
    g = nb.vmap(nb.grad(loss, argnums=1), in_axes=(None, 1))(nb.tensor(w), nb.tensor(xs.T))
    _close(g, np.cos(w * xs) * w, rtol=1e-4)


def test_vmap_of_value_and_grad_with_aux():
    xs = _r(4, 3)

    def f(x):
        return (x * x).sum(), x.max()

    (val, aux), g = nb.vmap(nb.value_and_grad(f, has_aux=True))(nb.tensor(xs))
    _close(val, (xs * xs).sum(1))
    _close(aux, xs.max(1))
    _close(g, 2 * xs)


def test_vmap_of_jacobians_and_hessian():
    xs = _r(4, 3)

    def f(x):
        return nb.sin(x) * x.sum()

    def jac(x):
        return np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]

    want = np.stack([jac(x) for x in xs])
    _close(nb.vmap(nb.jacrev(f))(nb.tensor(xs)), want, rtol=1e-4)
    _close(nb.vmap(nb.jacfwd(f))(nb.tensor(xs)), want, rtol=1e-4)
    h = nb.vmap(nb.hessian(lambda x: (x * x * x).sum() * x[0]))(nb.tensor(xs))
    for k, x in enumerate(xs):
        want_h = np.diag(6 * x * x[0])
        want_h[0, :] += 3 * x**2
        want_h[:, 0] += 3 * x**2
        _close(h[k], want_h, rtol=1e-4, atol=1e-4)


def test_jacobians_inside_vmap_closing_over_batched_values():
    # The tangents/cotangents carry the jacobian's level on top of the outer one while the
    # primal is batched over the outer level only.
    a, p = _r(4, 3), _r(3)
    want = np.stack([np.diag(np.cos(p) * r) for r in a])
    _close(nb.vmap(lambda r: nb.jacfwd(lambda x: nb.sin(x) * r)(nb.tensor(p)))(nb.tensor(a)), want, rtol=1e-5)
    _close(nb.vmap(lambda r: nb.jacrev(lambda x: nb.sin(x) * r)(nb.tensor(p)))(nb.tensor(a)), want, rtol=1e-5)
    h = nb.vmap(lambda r: nb.hessian(lambda x: (nb.sin(x) * r).sum())(nb.tensor(p)))(nb.tensor(a))
    _close(h, np.stack([np.diag(-np.sin(p) * r) for r in a]), rtol=1e-5, atol=1e-6)


def test_transforms_of_a_function_with_its_own_vmap_inside_vmap():
    xs, p, t = _r(5, 3), _r(4, 3), _r(4, 3)

    def f(q, x):  # q (4, 3), x (3,): a vmap over the rows of q inside
        return nb.vmap(lambda row: nb.sin((row * x).sum()))(q).sum()

    def grad_np(x):
        return np.cos(p @ x)[:, None] * x[None, :]

    want = np.stack([grad_np(x) for x in xs])
    _close(nb.vmap(nb.grad(f), in_axes=(None, 0))(nb.tensor(p), nb.tensor(xs)), want, rtol=1e-5, atol=1e-6)
    _close(nb.vmap(nb.jacfwd(f), in_axes=(None, 0))(nb.tensor(p), nb.tensor(xs)), want, rtol=1e-5, atol=1e-6)
    tan = nb.vmap(lambda x: nb.jvp(lambda q: f(q, x), (nb.tensor(p),), (nb.tensor(t),))[1])(nb.tensor(xs))
    _close(tan, (want * t).sum((1, 2)), rtol=1e-5, atol=1e-6)
    h = nb.vmap(lambda x: nb.hessian(lambda q: f(q, x))(nb.tensor(p)))(nb.tensor(xs))
    want_h = np.zeros((5, 4, 3, 4, 3), np.float32)
    for n, x in enumerate(xs):
        for i in range(4):
            want_h[n, i, :, i, :] = -np.sin(p[i] @ x) * np.outer(x, x)
    _close(h, want_h, rtol=1e-4, atol=1e-5)


def test_jacobians_of_vmap_are_block_diagonal():
    xs = _r(4, 3)
    f = nb.vmap(lambda x: nb.sin(x) * 2.0)
    want = np.zeros((4, 3, 4, 3), np.float32)
    for i in range(4):
        want[i, :, i, :] = np.diag(2 * np.cos(xs[i]))
    _close(nb.jacrev(f)(nb.tensor(xs)), want, rtol=1e-5)
    _close(nb.jacfwd(f)(nb.tensor(xs)), want, rtol=1e-5)


def test_vmap_of_jvp_and_vjp_and_their_reverse():
    xs, ts = _r(4, 3), _r(4, 3)

    def f(x):
        return nb.exp(x) * x.sum()

    def jvp_np(x, t):
        return np.exp(x) * t * x.sum() + np.exp(x) * t.sum()

    def vjp_np(x, c):
        return np.exp(x) * c * x.sum() + (np.exp(x) * c).sum()

    out, tan = nb.vmap(lambda x, t: nb.jvp(f, (x,), (t,)))(nb.tensor(xs), nb.tensor(ts))
    _close(out, np.exp(xs) * xs.sum(1, keepdims=True), rtol=1e-4)
    _close(tan, np.stack([jvp_np(x, t) for x, t in zip(xs, ts, strict=True)]), rtol=1e-4)
    _, tan = nb.jvp(nb.vmap(f), (nb.tensor(xs),), (nb.tensor(ts),))
    _close(tan, np.stack([jvp_np(x, t) for x, t in zip(xs, ts, strict=True)]), rtol=1e-4)
    (ct,) = nb.vmap(lambda x, c: nb.vjp(f, x)[1](c))(nb.tensor(xs), nb.tensor(ts))
    _close(ct, np.stack([vjp_np(x, c) for x, c in zip(xs, ts, strict=True)]), rtol=1e-4)
    _, pull = nb.vjp(nb.vmap(f), nb.tensor(xs))
    _close(pull(nb.tensor(ts))[0], np.stack([vjp_np(x, c) for x, c in zip(xs, ts, strict=True)]), rtol=1e-4)


def test_backward_through_vmap():
    xs, w = _r(4, 3), _r(3)
    x = nb.tensor(xs, requires_grad=True)
    p = nb.tensor(w, requires_grad=True)
    y = nb.vmap(lambda r: (nb.sin(r) * p).sum())(x)
    assert y.shape == (4,) and y.requires_grad
    (y * nb.arange(1, 5).astype(nb.float32)).sum().backward()
    weights = np.arange(1, 5, dtype=np.float32)[:, None]
    _close(x.grad, weights * np.cos(xs) * w, rtol=1e-5)
    _close(p.grad, (weights * np.sin(xs)).sum(0), rtol=1e-5)


def test_backward_through_vmap_with_in_axes_none_and_nesting():
    xs, w = _r(2, 3, 4), _r(4)
    p = nb.tensor(w, requires_grad=True)
    inner = nb.vmap(lambda r, q: (r * q).sum() ** 2, in_axes=(0, None))
    y = nb.vmap(inner, in_axes=(0, None))(nb.tensor(xs), p)
    y.sum().backward()
    _close(p.grad, (2 * (xs @ w)[..., None] * xs).sum((0, 1)), rtol=1e-4)


def test_backward_of_per_example_grads_create_graph():
    # backward() through vmap(grad): d/dw sum_n |grad_w loss_n|^2
    w, xs = _r(3), _r(5, 3)
    p = nb.tensor(w, requires_grad=True)
    g = nb.vmap(nb.grad(lambda q, x: nb.sin((q * x).sum())), in_axes=(None, 0))(p, nb.tensor(xs))
    (g * g).sum().backward()
    z = xs @ w
    # g_n = cos(z_n) x_n, |g_n|^2 = cos^2 |x_n|^2, d/dw = -2 cos sin |x_n|^2 x_n
    want = (-2 * np.cos(z) * np.sin(z) * (xs * xs).sum(1))[:, None] * xs
    _close(p.grad, want.sum(0), rtol=1e-4, atol=1e-5)


# -- per-example gradients of a small MLP --------------------------------------------------


def _mlp_params(dtype=np.float32):
    return {
        "w1": _r(3, 8, dtype=dtype),
        "b1": _r(8, dtype=dtype),
        "w2": _r(8, 2, dtype=dtype),
        "b2": _r(2, dtype=dtype),
    }


def _mlp_loss(p, x, y):
    h = nb.tanh(x @ p["w1"] + p["b1"])
    out = h @ p["w2"] + p["b2"]
    return ((out - y) ** 2).mean()


def test_per_example_grads_of_an_mlp_match_a_loop():
    params = nb.tree_map(nb.tensor, _mlp_params(np.float64))
    xs, ys = _r(6, 3, dtype=np.float64), _r(6, 2, dtype=np.float64)
    got = nb.vmap(nb.grad(_mlp_loss), in_axes=(None, 0, 0))(params, nb.tensor(xs), nb.tensor(ys))
    loop = [nb.grad(_mlp_loss)(params, nb.tensor(x), nb.tensor(y)) for x, y in zip(xs, ys, strict=True)]
    assert set(got) == set(params)
    for k in params:
        want = np.stack([g[k].numpy() for g in loop])
        assert got[k].shape == (6, *params[k].shape)
        _close(got[k], want, rtol=1e-10, atol=1e-12)
    # and the mean of the per-example grads is the batch gradient
    batch = nb.grad(lambda p: nb.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, nb.tensor(xs), nb.tensor(ys)).mean())(params)
    for k in params:
        _close(batch[k], got[k].numpy().mean(0), rtol=1e-10, atol=1e-12)


def test_per_example_grads_with_argnums_and_batch_on_axis_1():
    params = nb.tree_map(nb.tensor, _mlp_params())
    xs, ys = _r(3, 5), _r(5, 2)  # examples along axis 1 of xs
    gp, gx = nb.vmap(nb.grad(_mlp_loss, argnums=(0, 1)), in_axes=(None, 1, 0))(params, nb.tensor(xs), nb.tensor(ys))
    for n in range(5):
        wp, wx = nb.grad(_mlp_loss, argnums=(0, 1))(params, nb.tensor(xs[:, n]), nb.tensor(ys[n]))
        _close(gx[n], wx.numpy(), rtol=1e-4, atol=1e-6)
        for k in params:
            _close(gp[k][n], wp[k].numpy(), rtol=1e-4, atol=1e-6)


@needs_torch
def test_per_example_grads_match_torch_func():
    params = _mlp_params()
    xs, ys = _r(6, 3), _r(6, 2)
    got = nb.vmap(nb.grad(_mlp_loss), in_axes=(None, 0, 0))(nb.tree_map(nb.tensor, params), xs, ys)

    def torch_loss(p, x, y):
        h = torch.tanh(x @ p["w1"] + p["b1"])
        return ((h @ p["w2"] + p["b2"] - y) ** 2).mean()

    tp = {k: torch.tensor(v) for k, v in params.items()}
    want = tf.vmap(tf.grad(torch_loss), in_dims=(None, 0, 0))(tp, torch.tensor(xs), torch.tensor(ys))
    for k in params:
        _close(got[k], want[k].numpy(), rtol=1e-4, atol=1e-6)


@needs_torch
def test_vmap_of_hessian_and_jacrev_match_torch_func():
    xs = _r(4, 3)

    def f(x):
        return (x.sin() * x.sum()).exp().sum()

    _close(nb.vmap(nb.hessian(f))(nb.tensor(xs)), tf.vmap(tf.hessian(f))(torch.tensor(xs)).numpy(), rtol=1e-3)
    g = nb.vmap(nb.jacrev(lambda x: x.sin() * x.sum()))(nb.tensor(xs))
    _close(g, tf.vmap(tf.jacrev(lambda x: x.sin() * x.sum()))(torch.tensor(xs)).numpy(), rtol=1e-4)


def test_composed_transforms_build_valid_max_graphs():
    """MAX's shape inference agrees with ours for the batching ops as the transforms compose
    them (eager graph building; nothing is compiled)."""
    params = nb.tree_map(nb.tensor, _mlp_params())
    xs, ys = nb.tensor(_r(4, 3)), nb.tensor(_r(4, 2))
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        nb.vmap(nb.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
        nb.grad(lambda p: nb.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys).sum())(params)
        nb.vmap(nb.hessian(lambda v: (nb.sin(v) * v.sum()).sum()))(xs)
        nb.jacfwd(nb.vmap(lambda v: nb.tanh(v) * 2.0, in_axes=1, out_axes=1))(xs)
        nb.jacrev(nb.jacfwd(lambda v: nb.exp(v).sum()))(xs)
        nb.vmap(nb.vmap(nb.grad(lambda v: (v * v).sum())), in_axes=1)(nb.tensor(_r(2, 3, 4)))
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)


def test_in_place_write_of_a_mapped_value_into_an_unmapped_tensor_raises():
    """As torch.func.vmap: it would need a value per batch element; the tensor stays usable."""
    acc = nb.zeros((2,))
    with pytest.raises(RuntimeError, match="vmap: add_ is not possible"):
        nb.vmap(lambda x: (acc.add_(x), x)[1])(nb.ones((3, 2)))
    np.testing.assert_array_equal(acc.numpy(), [0.0, 0.0])


def _doubles_and_sums(x):
    x.mul_(2.0)
    return x.sum()


def _sets_first(v):
    v[0] = 5.0
    return v


def test_in_place_ops_on_mapped_arguments_write_through_to_the_caller():
    """As torch.func.vmap, whose batched tensors share the caller's storage: any in_axes,
    nested levels, setitem."""
    a, b = _r(3, 2), _r(2, 3)
    x = nb.tensor(a)
    out = nb.vmap(_doubles_and_sums, in_axes=1)(x)
    np.testing.assert_allclose(x.numpy(), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), (2 * a).sum(0), rtol=1e-6)
    y = nb.tensor(b)
    nb.vmap(_sets_first)(y)
    expected = b.copy()
    expected[:, 0] = 5.0
    np.testing.assert_array_equal(y.numpy(), expected)
    z = nb.zeros((2, 3, 4))
    nb.vmap(nb.vmap(lambda v: v.add_(1.0)), in_axes=1)(z)
    np.testing.assert_array_equal(z.numpy(), np.ones((2, 3, 4)))
    if torch is not None:
        t = torch.tensor(a)
        tf.vmap(_doubles_and_sums, in_dims=1)(t)
        np.testing.assert_allclose(t.numpy(), 2 * a, rtol=1e-6)
        t = torch.tensor(b)
        tf.vmap(_sets_first)(t)
        np.testing.assert_array_equal(t.numpy(), expected)


def test_a_draw_is_not_batched_over_same_levels_inside_the_last_different_one():
    """vmap(jacfwd(f, has_aux=True)) with a random aux: jacfwd's own level is "same", so the
    draw differs per outer element only and can leave jacfwd's level unbatched."""
    x = nb.ones((3, 4))
    jac, aux = nb.vmap(nb.jacfwd(lambda t: (nb.sin(t), nb.randn(3)), has_aux=True))(x)
    assert jac.shape == (3, 4, 4) and aux.shape == (3, 3)
    assert len({tuple(row) for row in aux.numpy().tolist()}) == 3  # one draw per outer element
    inner = nb.vmap(lambda t: nb.vmap(lambda u: nb.randn(3), randomness="same", out_axes=None)(t))(x)
    assert inner.shape == (3, 3) and len({tuple(row) for row in inner.numpy().tolist()}) == 3
