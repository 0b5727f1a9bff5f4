"""nabla.compile: one trace per signature, counters that explain every recompile, inputs that
are never stale (scalars, captured tensors, seeds), in-place updates replayed, clear errors.

These run on the NumPy executor (a "model" is a replayed Program there, counted the same way);
`test_compile_max.py` compiles the training step on MAX.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import nabla as nb
import nabla_nn as nn
from nabla.ops.base import Operation
from nabla_nn import Parameter
from nabla_optim import SGD

RNG = np.random.default_rng(0)


def _data(n: int, d_in: int = 4, d_out: int = 3):
    x = nb.tensor(RNG.standard_normal((n, d_in)).astype(np.float32))
    y = nb.tensor(RNG.standard_normal((n, d_out)).astype(np.float32))
    return x, y


def loss(w, b, x, y):
    return ((nb.relu(x @ w + b) - y) ** 2).mean()


def train_step(params, x, y, lr):
    gw, gb = nb.grad(loss, argnums=(0, 1))(params["w"], params["b"], x, y)
    new = {"w": params["w"] - lr * gw, "b": params["b"] - lr * gb}
    return new, loss(params["w"], params["b"], x, y)


def _params():
    return {"w": nb.tensor(RNG.standard_normal((4, 3)).astype(np.float32)), "b": nb.zeros(3)}


def test_train_step_50_calls_fresh_data_changing_lr_compiles_once():
    step = nb.compile(train_step)
    params = ref = _params()
    for i in range(50):
        x, y = _data(8)
        lr = 0.1 / (1 + i)
        params, got = step(params, x, y, lr)
        ref, want = train_step(ref, x, y, lr)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["w"].numpy(), ref["w"].numpy(), rtol=1e-5, atol=1e-6)
    assert (step.stats.misses, step.stats.hits, step.stats.traces) == (1, 49, 1)
    assert step.stats.recompile_reasons == []


def test_batch_size_change_recompiles_exactly_once_and_says_why(capsys):
    step = nb.compile(train_step)
    params = _params()
    nb.set_log_recompiles(True)
    try:
        for n in (8, 8, 16, 16, 8):
            step(params, *_data(n), 0.1)
    finally:
        nb.set_log_recompiles(False)
    assert (step.stats.misses, step.stats.hits) == (2, 3)
    assert step.stats.recompile_reasons == ["x shape (8, 4) -> (16, 4)"]
    assert "recompiling: x shape (8, 4) -> (16, 4)" in capsys.readouterr().err


def test_declared_dynamic_dim_never_recompiles_and_matches():
    step = nb.compile(train_step, dynamic_dims={1: 0, 2: 0})
    params = _params()
    for n in (8, 16, 5, 1, 8):
        x, y = _data(n)
        got_p, got = step(params, x, y, 0.05)
        want_p, want = train_step(params, x, y, 0.05)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_p["w"].numpy(), want_p["w"].numpy(), rtol=1e-5, atol=1e-6)
    assert (step.stats.misses, step.stats.hits) == (1, 4)
    assert step.stats.recompile_reasons == []


def test_dynamic_dim_that_cannot_be_symbolic_is_specialized_with_a_reason():
    # 1 / n**2 is not affine in n: each size gets its own model, and the stats say why.
    f = nb.compile(lambda x: x.sum() / float(x.shape[0] ** 2), dynamic_dims={0: 0})
    for n in (2, 3, 3):
        np.testing.assert_allclose(f(nb.ones(n)).numpy(), n / n**2, rtol=1e-6)
    assert (f.stats.misses, f.stats.hits) == (2, 1)
    assert any("specialized per size" in r for r in f.stats.recompile_reasons)


def test_hits_do_no_op_dispatch(monkeypatch):
    step = nb.compile(train_step)
    params = _params()
    step(params, *_data(8), 0.1)

    def refuse(*a, **k):
        raise AssertionError("op dispatch on a cache hit")

    monkeypatch.setattr(Operation, "_record", refuse)  # every op call records through _record
    for _ in range(3):
        params, _ = step(params, *_data(8), 0.01)
    assert step.stats.hits == 3


def test_pytrees_in_and_out_and_python_values_pass_through():
    @nb.compile
    def f(tree, scale):
        a, (b, c) = tree["a"], tree["bc"]
        return {"sum": a + b, "list": [b * scale, c]}, "tag", None

    tree = {"a": nb.ones(2), "bc": (nb.full((2,), 2.0), nb.zeros(3))}
    out, tag, none = f(tree, 3.0)
    assert tag == "tag" and none is None
    np.testing.assert_allclose(out["sum"].numpy(), [3.0, 3.0])
    np.testing.assert_allclose(out["list"][0].numpy(), [6.0, 6.0])
    np.testing.assert_allclose(out["list"][1].numpy(), np.zeros(3))
    f(tree, 4.0)
    assert f.stats.misses == 1


def test_static_argnums_recompile_per_value_and_must_be_hashable():
    f = nb.compile(lambda x, k: x * k, static_argnums=1)
    np.testing.assert_allclose(f(nb.ones(2), 2).numpy(), [2.0, 2.0])
    np.testing.assert_allclose(f(nb.ones(2), 3).numpy(), [3.0, 3.0])
    f(nb.ones(2), 3)
    assert (f.stats.misses, f.stats.hits) == (2, 1)
    assert f.stats.recompile_reasons == ["k static value 2 -> 3"]
    g = nb.compile(lambda x, k: x, static_argnums=(1,))
    with pytest.raises(TypeError, match="static argument 1 must be hashable"):
        g(nb.ones(2), [1, 2])


def test_python_int_used_as_a_shape_is_specialized():
    f = nb.compile(lambda x, n: x.sum() + nb.ones(n).sum())
    assert f(nb.ones(2), 3).item() == 5.0
    assert f(nb.ones(2), 4).item() == 6.0
    assert f(nb.ones(2), 4).item() == 6.0
    assert (f.stats.misses, f.stats.hits) == (2, 1)


def test_python_scalars_are_inputs_not_constants():
    f = nb.compile(lambda x, a, k: x * a + k)
    for a, k in [(1.5, 2), (2.5, 7), (-1.0, 0)]:
        np.testing.assert_allclose(f(nb.ones(3), a, k).numpy(), np.full(3, a + k))
    assert f.stats.misses == 1


def test_max_cache_size_evicts_least_recent():
    f = nb.compile(lambda x: x * 2, max_cache_size=2)
    for n in (1, 2, 3, 1):
        f(nb.ones(n))
    assert f.stats.misses == 4  # size 1 was evicted by size 3
    assert f.stats.recompile_reasons[-1].startswith("x shape")


W_GLOBAL = nb.ones(3)


def test_rebound_global_tensor_is_not_stale():
    global W_GLOBAL
    f = nb.compile(lambda x: x * W_GLOBAL)
    np.testing.assert_allclose(f(nb.ones(3)).numpy(), np.ones(3))
    W_GLOBAL = nb.full((3,), 5.0)
    np.testing.assert_allclose(f(nb.ones(3)).numpy(), np.full(3, 5.0))
    W_GLOBAL = nb.ones(3)


def test_closure_tensor_updated_in_place_and_rebound_is_not_stale():
    w = nb.tensor([1.0, 2.0])
    f = nb.compile(lambda x: x + w)
    np.testing.assert_allclose(f(nb.zeros(2)).numpy(), [1.0, 2.0])
    w.add_(10.0)  # in-place: the facade now holds a new value
    np.testing.assert_allclose(f(nb.zeros(2)).numpy(), [11.0, 12.0])
    assert f.stats.misses == 1


def test_a_tensor_pending_when_first_traced_and_reached_by_attribute_is_an_input():
    # m.w is an attribute, not a name the scan of globals and closure cells finds; it is still
    # a recipe (w * 2) at the first call. It must be computed and read on every call, not inlined.
    class Holder:
        pass

    m = Holder()
    m.w = nb.tensor([1.0, 2.0])
    m.w.mul_(2.0)
    assert not m.w.is_realized
    f = nb.compile(lambda x: x + m.w)
    np.testing.assert_allclose(f(nb.zeros(2)).numpy(), [2.0, 4.0])
    m.w.copy_(nb.tensor([10.0, 20.0]))
    np.testing.assert_allclose(f(nb.zeros(2)).numpy(), [10.0, 20.0])
    m.w.mul_(3.0)  # pending again at a later call: computed before the model runs
    np.testing.assert_allclose(f(nb.zeros(2)).numpy(), [30.0, 60.0])
    assert f.stats.misses == 1


def test_captured_tensor_changing_shape_retraces():
    holder = {"w": nb.ones(2)}
    f = nb.compile(lambda x: x.sum() + holder["w"].sum())
    assert f(nb.ones(2)).item() == 4.0
    holder["w"] = nb.ones(5)
    assert f(nb.ones(2)).item() == 7.0
    assert f.stats.misses == 2


def test_a_captured_tensor_read_into_python_retraces_when_it_is_updated():
    """`w.item()` inside the trace bakes w's value into the model, so an in-place update of w
    traces again (torch.compile re-runs the read; JAX's arrays cannot change)."""
    w = nb.tensor(2.0)
    f = nb.compile(lambda x: x * w.item())
    np.testing.assert_array_equal(f(nb.ones(2)).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(f(nb.ones(2)).numpy(), [2.0, 2.0])
    assert (f.stats.misses, f.stats.hits) == (1, 1)
    w.fill_(3.0)
    np.testing.assert_array_equal(f(nb.ones(2)).numpy(), [3.0, 3.0])
    w.add_(1.0)  # pending at the next call: computed, then read again
    np.testing.assert_array_equal(f(nb.ones(2)).numpy(), [4.0, 4.0])
    assert f.stats.misses == 3
    assert "captured tensor () read with .item()/.numpy() changed" in f.stats.recompile_reasons[-1]


def test_a_value_computed_from_a_captured_tensor_retraces_when_the_tensor_is_updated():
    """`if thr > 2` and `(thr * 2).item()` read a value computed from a captured tensor inside
    the trace: each captured tensor it came from is guarded, as a direct `.item()` is."""
    thr, k = nb.tensor(1.0), nb.tensor(1.0)

    def f(x):
        y = x * 10 if thr > 2 else x
        return y * (k * 2).item()

    cf = nb.compile(f)
    assert cf(nb.ones(1)).item() == 2.0
    assert cf(nb.ones(1)).item() == 2.0
    thr.fill_(5.0)
    assert cf(nb.ones(1)).item() == 20.0
    k.fill_(3.0)
    assert cf(nb.ones(1)).item() == 60.0
    assert (cf.stats.misses, cf.stats.hits) == (3, 1)
    assert "captured tensor () read with .item()/.numpy() changed" in cf.stats.recompile_reasons[-1]


class _Cfg:
    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.log: list = []


def test_attributes_two_levels_down_are_guarded():
    """`m.cfg.scale` (a user object's attribute holding another object): a change of the value
    read, or a new `cfg`, traces again; a list beside it that the code never reads does not."""

    class Holder:
        def __init__(self) -> None:
            self.cfg = _Cfg(2.0)

    m = Holder()
    f = nb.compile(lambda x: x * m.cfg.scale)
    assert f(nb.ones(1)).item() == 2.0
    m.cfg.log.append(1)
    assert f(nb.ones(1)).item() == 2.0
    m.cfg.scale = 5.0
    assert f(nb.ones(1)).item() == 5.0
    m.cfg = _Cfg(7.0)
    assert f(nb.ones(1)).item() == 7.0
    assert (f.stats.misses, f.stats.hits) == (3, 1)


def test_a_module_attribute_object_read_by_forward_is_guarded():
    """`self.cfg.scale` in a compiled module's forward: changed in place (no `__setattr__` on
    the module sees it), the forward traces again."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cfg = _Cfg(2.0)

        def forward(self, x):
            return x * self.cfg.scale

    net = Net()
    net.compile()
    assert net(nb.ones(1)).item() == 2.0
    net.cfg.log.append(1)  # not read by forward: no retrace
    assert net(nb.ones(1)).item() == 2.0
    net.cfg.scale = 4.0
    assert net(nb.ones(1)).item() == 4.0
    assert (net.compile_stats.misses, net.compile_stats.hits) == (2, 1)


def test_a_compiled_bound_method_reads_its_object_on_every_call():
    """`nabla.compile(obj.run)` / `nabla.compile(model.forward)`: the object is an argument, as
    for a decorated method, so its attributes, rebound tensors and layers are not baked in."""

    class Scaler:
        def __init__(self) -> None:
            self.w, self.k = nb.tensor([1.0]), 2.0

        def run(self, x, n):
            return x * self.w * self.k * n

    s = Scaler()
    f = nb.compile(s.run, static_argnums=1)
    assert f(nb.ones(1), 1).item() == 2.0
    s.w = nb.tensor([3.0])
    assert f(nb.ones(1), 1).item() == 6.0
    s.k = 1.0
    assert f(nb.ones(1), 2).item() == 6.0

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.k = nn.Linear(1, 1, bias=False), 2.0
            nn.init.ones_(self.lin.weight)

        def forward(self, x):
            return self.lin(x) * self.k

    net = Net()
    g = nb.compile(net.forward)
    assert g(nb.ones(1, 1)).item() == 2.0
    net.k = 3.0
    assert g(nb.ones(1, 1)).item() == 3.0
    net.lin = nn.Linear(1, 1, bias=False)
    nn.init.zeros_(net.lin.weight)
    assert g(nb.ones(1, 1)).item() == 0.0
    assert "Scaler.run" in repr(f)


SCALE = 2.0
NAN = float("nan")


def test_captured_python_values_the_code_reads_are_guarded():
    """Python values read by name are baked into the trace; a change traces again (as
    torch.compile guards them), and the reason names the value."""
    global SCALE
    bank, cfg = [nb.ones(1)], {"s": 2.0}
    f = nb.compile(lambda x: x * SCALE * cfg["s"] + sum(t for t in bank))
    assert f(nb.ones(1)).item() == 5.0
    SCALE = 3.0
    try:
        assert f(nb.ones(1)).item() == 7.0
        assert f.stats.recompile_reasons[-1] == "global 'SCALE' changed"
    finally:
        SCALE = 2.0
    cfg["s"] = 5.0
    assert f(nb.ones(1)).item() == 11.0
    bank.append(nb.full((1,), 4.0))
    assert f(nb.ones(1)).item() == 15.0
    assert f(nb.ones(1)).item() == 15.0
    assert (f.stats.misses, f.stats.hits) == (4, 1)


def test_value_guards_cover_read_attributes_only_and_settle():
    class Holder:
        pass

    h = Holder()
    h.scale, h.calls, h.w = 2.0, 0, nb.ones(1)
    history = []

    def step(x):
        history.append(1)  # written during the trace: keyed after it, so no retrace per call
        return x * h.scale + h.w * float(NAN != NAN)  # a NaN global: keyed so that it equals itself

    f = nb.compile(step)
    for i in range(3):
        h.calls = i  # an attribute the code never names: no retrace
        assert f(nb.ones(1)).item() == 3.0
    assert (f.stats.misses, f.stats.hits) == (1, 2)
    h.scale = 4.0
    assert f(nb.ones(1)).item() == 5.0
    assert f.stats.misses == 2


def test_pytorch_style_step_with_backward_and_inplace_update():
    w = nb.tensor(RNG.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    w_ref = nb.tensor(w.numpy(), requires_grad=True)

    def step(x, y, lr, param):
        param.grad = None
        out = ((x @ param - y) ** 2).mean()
        out.backward()
        with nb.no_grad():
            param.sub_(lr * param.grad)
        return out

    compiled = nb.compile(lambda x, y, lr: step(x, y, lr, w))
    for _ in range(5):
        x, y = _data(6)
        got = compiled(x, y, 0.1)
        want = step(x, y, 0.1, w_ref)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.numpy(), w_ref.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.stats.misses == 1 and compiled.stats.hits == 4


def test_inplace_update_of_an_argument_is_replayed_on_the_callers_tensor():
    f = nb.compile(lambda x: x.mul_(2.0).sum())
    t = nb.ones(3)
    assert f(t).item() == 6.0
    np.testing.assert_allclose(t.numpy(), [2.0, 2.0, 2.0])
    assert f(t).item() == 12.0


def test_random_ops_draw_fresh_numbers_each_call_and_follow_manual_seed():
    f = nb.compile(lambda x: x + nb.rand(4))
    nb.manual_seed(7)
    a, b = f(nb.zeros(4)).numpy(), f(nb.zeros(4)).numpy()
    assert not np.allclose(a, b)
    nb.manual_seed(7)
    np.testing.assert_array_equal(f(nb.zeros(4)).numpy(), a)
    assert f.stats.misses == 1


def test_random_ops_with_a_generator_draw_from_it_under_compile():
    g = nb.Generator()
    f = nb.compile(lambda x: (x + nb.rand(4, generator=g), x + nb.randn(4)))
    g.manual_seed(1)
    nb.manual_seed(2)
    eager = [(nb.rand(4, generator=g).numpy(), nb.randn(4).numpy()) for _ in range(2)]
    g.manual_seed(1)
    nb.manual_seed(2)
    compiled = [tuple(t.numpy() for t in f(nb.zeros(4))) for _ in range(2)]  # tracing draws from neither
    np.testing.assert_array_equal(compiled, eager)
    g.manual_seed(1)  # only g rewound: its draws repeat, the global generator's go on
    mine, global_draw = (t.numpy() for t in f(nb.zeros(4)))
    np.testing.assert_array_equal(mine, eager[0][0])
    assert not np.array_equal(global_draw, eager[0][1]) and f.stats.misses == 1


@pytest.mark.parametrize(
    "body",
    [lambda x: x.sum().item(), lambda x: x.numpy(), lambda x: bool(x.sum() > 0), lambda x: float(x.sum())],
    ids=["item", "numpy", "bool", "float"],
)
def test_reading_a_traced_value_raises_a_clear_error(body):
    f = nb.compile(body)
    with pytest.raises(nb.ConcretizationError, match="needs the value of a tensor that depends on its inputs"):
        f(nb.ones(2))


def test_reading_a_constant_inside_compile_is_fine():
    table = nb.tensor([1.0, 2.0, 3.0])
    f = nb.compile(lambda x: x * float(table.sum()))
    np.testing.assert_allclose(f(nb.ones(2)).numpy(), [6.0, 6.0])


def test_bad_dynamic_dims_and_numpy_arguments_get_clear_errors():
    with pytest.raises(TypeError, match="dynamic_dims must be a dict"):
        nb.compile(lambda x: x, dynamic_dims=[0])
    f = nb.compile(lambda x: x, dynamic_dims={0: 3})
    with pytest.raises(ValueError, match=r"dim 3 of x, which has shape \(2,\)"):
        f(nb.ones(2))
    with pytest.raises(TypeError, match="NumPy array"):
        nb.compile(lambda x: x)(np.ones(2))
    with pytest.raises(TypeError, match=r"compile: x is a NumPy array"):  # named after params' two leaves
        nb.compile(lambda params, x: x)({"a": nb.ones(2), "b": nb.ones(2)}, np.ones(2))
    with pytest.raises(TypeError, match=r"compile: rest\[1\]\['b'\] is a NumPy array"):
        nb.compile(lambda *rest: rest)(nb.ones(2), {"a": nb.ones(2), "b": np.ones(2)})


def test_decorator_forms_and_methods():
    @nb.compile(static_argnums=1)
    def f(x, k):
        return x + k

    class Model:
        scale = 3.0

        @nb.compile
        def forward(self, x):
            return x * self.scale

    assert f(nb.ones(1), 2).item() == 3.0
    assert Model().forward(nb.ones(1)).item() == 3.0


def _mlp_loss(params, x, y):
    h = nb.tanh(x @ params["w1"])
    return ((h @ params["w2"] - y) ** 2).sum()


def test_compiled_transforms_match_uncompiled():
    params = {
        "w1": nb.tensor(RNG.standard_normal((4, 5)).astype(np.float32)),
        "w2": nb.tensor(RNG.standard_normal((5, 2)).astype(np.float32)),
    }
    x, y = _data(6, 4, 2)
    cases = {
        "per_example_grads": (nb.vmap(nb.grad(_mlp_loss), in_axes=(None, 0, 0)), (params, x, y)),
        "jacrev": (nb.jacrev(lambda v: nb.sin(v) * v.sum()), (x[0],)),
        "jacfwd": (nb.jacfwd(lambda v: nb.sin(v) * v.sum()), (x[0],)),
        "hessian": (nb.hessian(lambda v: (v**3).sum() * v[0]), (x[0],)),
        "vmap_nested": (nb.vmap(nb.vmap(lambda a: a * a.sum())), (nb.stack([x, x]),)),
    }
    for name, (fn, args) in cases.items():
        want = nb.tree_leaves(fn(*args))
        got = nb.tree_leaves(nb.compile(fn)(*args))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


def test_trace_prints_the_op_graph():
    w = nb.ones((4, 3))
    text = str(nb.trace(lambda x, b: nb.relu(x @ w + b).sum())(nb.ones((8, 4)), nb.zeros(3)))
    assert "trace of test_trace_prints_the_op_graph.<locals>.<lambda>" in text
    assert "float32[8, 4]   x" in text and "float32[3]   b" in text
    assert "= matmul(%0, %1)" in text and "relu(" in text
    g = nb.trace(lambda x: nb.dropout(x, 0.5))(nb.ones((2, 2)))
    assert "random seed" in str(g) and g.ops[0] == "random"


def test_python_scalar_inputs_keep_python_scalar_promotion():
    f = nb.compile(lambda x, a: x * a)
    h = nb.ones(2).astype(nb.float16)
    assert f(h, 0.5).dtype == (h * 0.5).dtype == nb.float16
    i = nb.tensor(np.array([1, 2], np.int32))
    assert f(i, 3).dtype == (i * 3).dtype == nb.int32
    np.testing.assert_array_equal(f(i, 3).numpy(), [3, 6])
    assert f(i, 2.5).dtype == (i * 2.5).dtype == nb.float32


def test_compiled_function_is_one_call_op_under_grad_and_inlined_under_jvp_and_vmap():
    f = nb.compile(lambda x, w: (nb.sin(x) * w).sum())
    x, w = nb.tensor([0.5, 1.0]), nb.tensor([2.0, 3.0])
    np.testing.assert_allclose(nb.grad(f)(x, w).numpy(), np.cos([0.5, 1.0]) * [2.0, 3.0], rtol=1e-6)
    _, t = nb.jvp(lambda v: f(v, w), (x,), (nb.ones(2),))
    np.testing.assert_allclose(t.numpy(), (np.cos([0.5, 1.0]) * [2.0, 3.0]).sum(), rtol=1e-6)
    per_row = nb.vmap(f, in_axes=(0, None))(nb.stack([x, 2 * x]), w)
    np.testing.assert_allclose(
        per_row.numpy(), [(np.sin([0.5, 1.0]) * [2, 3]).sum(), (np.sin([1.0, 2.0]) * [2, 3]).sum()], rtol=1e-6
    )
    # grad recorded it as one `call` op (one trace); jvp and vmap ran its ops inline.
    assert (f.stats.misses, f.stats.traces) == (1, 1)


def test_tensor_kwargs_are_inputs():
    f = nb.compile(lambda x, *, scale: x * scale)
    np.testing.assert_allclose(f(nb.ones(2), scale=nb.full((2,), 3.0)).numpy(), [3.0, 3.0])
    np.testing.assert_allclose(f(nb.ones(2), scale=nb.full((2,), 4.0)).numpy(), [4.0, 4.0])
    assert (f.stats.misses, f.stats.hits) == (1, 1)


def test_no_recompile_covers_compiled_functions():
    f = nb.compile(lambda x: x + 1)
    f(nb.ones(2))
    with nb.no_recompile():
        f(nb.ones(2))
        with pytest.raises(nb.RecompileError, match=r"would recompile: x shape \(2,\) -> \(3,\)"):
            f(nb.ones(3))


# -- the caller's .grad: backward() accumulates into it, as in eager mode ------------------------
def _sgd_step_without_zeroing(w):
    def step(x):
        loss = (w * x).sum()
        loss.backward()  # adds to w.grad when there is one
        with nb.no_grad():
            w.sub_(0.1 * w.grad)
        return loss

    return step


def test_backward_accumulates_into_grad_across_compiled_calls_like_eager():
    w, w_ref = nb.tensor([1.0, 2.0], requires_grad=True), nb.tensor([1.0, 2.0], requires_grad=True)
    compiled, eager = nb.compile(_sgd_step_without_zeroing(w)), _sgd_step_without_zeroing(w_ref)
    for i in range(4):
        x = nb.tensor([1.0, float(i + 1)])
        np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.numpy(), w_ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 10.0])
    # a None .grad and a present one take different paths: two models, then only hits
    assert (compiled.stats.misses, compiled.stats.hits) == (2, 2)
    assert compiled.stats.recompile_reasons == [".grad of closure variable 'w' None -> a float32 tensor of shape (2,)"]


def test_grad_present_at_trace_time_is_an_input_and_none_is_another_model():
    w = nb.tensor([1.0, 2.0], requires_grad=True)

    def backward_only(x):
        (w * x).sum().backward()

    f, x = nb.compile(backward_only), nb.tensor([1.0, 1.0])
    for before, after in [([5.0, 5.0], [6.0, 6.0]), ([10.0, 20.0], [11.0, 21.0]), (None, [1.0, 1.0])]:
        w.grad = None if before is None else nb.tensor(before)
        f(x)
        np.testing.assert_allclose(w.grad.numpy(), after)
    w.grad = nb.tensor([2.0, 2.0])  # the model for a present .grad is still cached
    f(x)
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])
    assert (f.stats.misses, f.stats.hits) == (2, 2)
    assert f.stats.recompile_reasons == [".grad of closure variable 'w' a float32 tensor of shape (2,) -> None"]


def test_backward_accumulates_into_the_grad_of_an_argument():
    def step(w, x):
        (w * x).sum().backward()

    f, x = nb.compile(step), nb.tensor([1.0, 2.0])
    w, w_ref = nb.tensor([1.0, 1.0], requires_grad=True), nb.tensor([1.0, 1.0], requires_grad=True)
    for _ in range(3):
        f(w, x)
        step(w_ref, x)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy())
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 6.0])
    assert f.stats.recompile_reasons == [".grad of w None -> a float32 tensor"]


def test_the_grad_of_an_argument_follows_its_dynamic_dims():
    def step(w, x):
        (w * x).sum().backward()

    f = nb.compile(step, dynamic_dims={0: 0, 1: 0})
    for n in (3, 4, 5):
        w = nb.ones(n, requires_grad=True)
        w.grad = nb.full((n,), 2.0)
        f(w, nb.arange(n).astype(nb.float32))
        np.testing.assert_allclose(w.grad.numpy(), 2.0 + np.arange(n))
    assert (f.stats.misses, f.stats.hits) == (1, 2)


def test_zero_grad_inside_the_step_keeps_one_model_whatever_grad_held_before():
    w = Parameter(nb.tensor([1.0, 2.0]))
    opt = SGD([w], lr=0.1)

    @nb.compile
    def step(x):
        opt.zero_grad()
        loss = (w * x).sum()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):  # .grad is None before the first call, a tensor before the others
        step(nb.tensor([1.0, 1.0]))
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(w.numpy(), [0.7, 1.7], rtol=1e-6)
    assert (step.stats.traces, step.stats.hits, step.stats.recompile_reasons) == (1, 2, [])


def test_gradient_accumulation_over_compiled_micro_steps_and_a_compiled_update():
    def run(compile_fn):
        w = Parameter(nb.tensor([1.0, 2.0]))
        opt = SGD([w], lr=0.1)

        def micro(x):
            (w * x).sum().backward()

        def update():
            opt.step()
            opt.zero_grad()

        micro, update = compile_fn(micro), compile_fn(update)
        for k in range(3):
            micro(nb.tensor([1.0, float(k)]))
            micro(nb.tensor([2.0, 1.0]))
            update()
        return w.numpy(), micro, update

    got, micro, update = run(nb.compile)
    want, _, _ = run(lambda f: f)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(want, [0.1, 1.4], rtol=1e-6)
    assert (micro.stats.traces, update.stats.traces) == (2, 1)


def test_a_pending_grad_from_eager_backward_is_read_on_each_call():
    w = nb.tensor([1.0, 2.0], requires_grad=True)

    class Holder:  # reached through an attribute: not found by name
        pass

    h = Holder()
    h.w = w
    apply = nb.compile(lambda: h.w.grad * 2.0)
    for scale in (1.0, 3.0, 5.0):
        w.grad = None
        (w * scale).sum().backward()  # a pending .grad, not yet computed
        np.testing.assert_allclose(apply().numpy(), [2 * scale, 2 * scale])
    assert (apply.stats.misses, apply.stats.hits) == (1, 2)


# -- Python scalars -----------------------------------------------------------------------------
def test_python_scalar_changing_type_recompiles_with_a_reason():
    f = nb.compile(lambda x, n: x * n)
    x = nb.tensor([1.0, 2.0])
    np.testing.assert_allclose(f(x, 2).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(x, 0.5).numpy(), [0.5, 1.0])
    np.testing.assert_allclose(f(x, 3).numpy(), [3.0, 6.0])
    np.testing.assert_allclose(f(x, np.float64(1.5)).numpy(), [1.5, 3.0])  # a float: the float model
    assert (f.stats.misses, f.stats.hits) == (2, 2)
    assert f.stats.recompile_reasons == ["n type int -> float"]
    g = nb.compile(lambda x, n: x * (2.0 if n > 1 else 3.0))  # `n > 1` needs n's value: specialized
    np.testing.assert_allclose(g(x, 3).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(g(x, 0.5).numpy(), [3.0, 6.0])
    assert g.stats.recompile_reasons == ["n type int -> float"]


def _accumulating_run(compiled: bool, zero) -> tuple[np.ndarray, list]:
    """Steps that reset the caller's .grad in place (`zero(p)`), then backward() and update."""
    p = Parameter(nb.ones(3))

    def step(x):
        if p.grad is not None:
            zero(p)
        (p * p * x).sum().backward()
        with nb.no_grad():
            p.sub_(p.grad * 0.1)

    run = nb.compile(step) if compiled else step
    grads = []
    for _ in range(4):
        run(nb.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
        grads.append(p.grad.numpy().copy())
    return p.numpy(), grads


@pytest.mark.parametrize(
    "zero",
    [lambda p: p.grad.mul_(0.0), lambda p: setattr(p.grad, "data", nb.zeros(3))],
    ids=["mul_", "data"],
)
def test_in_place_writes_to_the_callers_grad_inside_a_compiled_step(zero):
    """The value an in-place op gives the caller's `.grad` inside the trace is the trace's own
    (it was computed once and baked in, or read back from the old gradient, before)."""
    p_eager, g_eager = _accumulating_run(False, zero)
    p_comp, g_comp = _accumulating_run(True, zero)
    np.testing.assert_allclose(p_comp, p_eager, rtol=1e-6)
    np.testing.assert_allclose(g_comp, g_eager, rtol=1e-6)


def test_in_place_updates_of_returned_tensors_are_kept():
    """What the function returns is its value after its in-place ops (`y[0] = v`, an updated
    argument, a `.grad` scaled in place); the undo that keeps the trace from changing real
    tensors ran first, so these were lost."""

    def f(x):
        y = x * 2
        y.add_(1)
        y[0] = -5.0
        return y

    def g(x):
        x.add_(1)
        return x

    x = nb.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    np.testing.assert_array_equal(nb.compile(f)(x).numpy(), [-5.0, -3.0, 7.0])
    a = nb.tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(nb.compile(g)(a).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0])

    w = Parameter(nb.ones(3))

    @nb.compile
    def step(x):
        (w * x).sum().backward()
        w.grad.div_(2)

    step(nb.ones(3))
    np.testing.assert_array_equal(w.grad.numpy(), [0.5, 0.5, 0.5])


def test_a_residual_block_with_in_place_ops_under_module_compile():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.fc(x)
            out += x
            return self.act(out)

    nb.manual_seed(0)
    eager = Block()
    nb.manual_seed(0)
    compiled = Block()
    compiled.compile()
    x = nb.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-6)
    with nb.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-6)


def test_a_compiled_function_called_inside_another_is_inlined():
    inner = nb.compile(lambda x: x.sin())
    outer = nb.compile(lambda x: inner(x) * 2)
    x = nb.tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(outer(x).numpy(), np.sin([1.0, 2.0]) * 2, rtol=1e-6)
    assert inner.stats.traces == 0  # its ops joined the outer trace


def test_a_tensor_passed_twice_is_one_input_so_in_place_ops_see_each_other():
    def f(a, b):
        a.add_(1)
        b.mul_(3)
        return a + b

    g = nb.compile(f)
    x, xe = nb.ones(2), nb.ones(2)
    np.testing.assert_array_equal(g(x, x).numpy(), f(xe, xe).numpy())  # [12, 12]
    np.testing.assert_array_equal(x.numpy(), xe.numpy())  # [6, 6]
    y, z = nb.ones(2), nb.ones(2)
    np.testing.assert_array_equal(g(y, z).numpy(), [5.0, 5.0])  # distinct tensors: another signature
    assert g.stats.recompile_reasons == ["b kind alias -> tensor"]


G = nb.ones(2)  # read by name by `_adds_global` below


def _adds_global(x):
    x.add_(1)
    return x + G


def test_an_argument_that_is_also_a_captured_global_is_one_tensor():
    """`f(G)` where f also reads the global G: as in eager, the in-place update of the argument
    is seen through the global (it was a placeholder and a captured constant: [3, 3])."""
    global G
    G = nb.ones(2)
    compiled = nb.compile(_adds_global)
    np.testing.assert_array_equal(compiled(G).numpy(), [4.0, 4.0])  # eager: 2 * (1 + 1)
    np.testing.assert_array_equal(G.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(compiled(G).numpy(), [6.0, 6.0])  # a hit, still one tensor
    assert compiled.stats.traces == 1
    other = nb.ones(2)
    np.testing.assert_array_equal(compiled(other).numpy(), [5.0, 5.0])  # another tensor: 2 + G
    np.testing.assert_array_equal(G.numpy(), [3.0, 3.0])  # untouched
    assert compiled.stats.recompile_reasons == [
        "x is no longer a tensor the function also captures (by name or through an attribute)"
    ]


def test_an_argument_the_function_also_reads_through_an_attribute_is_one_tensor():
    """As by name, so through an attribute of a captured object (`f(holder.w)` where f reads
    holder.w): an in-place update of either is seen through the other, as in eager."""
    holder = types.SimpleNamespace(w=nb.ones(2))

    def bump_arg(x):
        x.add_(1.0)
        return x + holder.w

    def bump_attr(x):
        holder.w.mul_(3.0)
        return x * 1.0

    compiled = nb.compile(bump_arg)
    np.testing.assert_array_equal(compiled(holder.w).numpy(), [4.0, 4.0])  # eager: 2 * (1 + 1)
    np.testing.assert_array_equal(holder.w.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(compiled(holder.w).numpy(), [6.0, 6.0])
    np.testing.assert_array_equal(compiled(nb.ones(2)).numpy(), [5.0, 5.0])  # another tensor: 2 + w
    np.testing.assert_array_equal(holder.w.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(nb.compile(bump_attr)(holder.w).numpy(), [9.0, 9.0])  # x is w, tripled
    np.testing.assert_array_equal(holder.w.numpy(), [9.0, 9.0])


def test_an_in_place_update_of_a_view_argument_writes_through_to_its_base():
    def scale(v):
        v.mul_(10.0)
        return v.sum()

    base = nb.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    eager_base = nb.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    compiled = nb.compile(scale)
    np.testing.assert_array_equal(compiled(base[0]).numpy(), scale(eager_base[0]).numpy())
    np.testing.assert_array_equal(base.numpy(), [[10.0, 20.0], [3.0, 4.0]])
    np.testing.assert_array_equal(base.numpy(), eager_base.numpy())


def test_an_argument_returned_is_the_argument_itself():
    """As eager (and torch.compile): `x.add_(1); return x` returns x, so later in-place ops on
    the result are x's; a new tensor computed from x is not x."""

    def bump(x):
        x.add_(1.0)
        return x, x * 2

    compiled = nb.compile(bump)
    x = nb.zeros(2)
    same, double = compiled(x)
    assert same is x and double is not x
    same.add_(5.0)
    np.testing.assert_array_equal(x.numpy(), [6.0, 6.0])
    np.testing.assert_array_equal(double.numpy(), [2.0, 2.0])
    w = nb.zeros(2, requires_grad=True)
    returned = nb.compile(lambda t: t)(w)
    assert returned is w


def test_a_captured_module_is_guarded_eval_and_replaced_layers_retrace():
    """A module the function reaches (not passed as an argument) is guarded by its training
    flags and which tensors its names hold: eval(), a new parameter, a swapped or appended layer
    trace again (they ran the stale trace before)."""
    x = nb.tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
    bn = nn.BatchNorm1d(4)
    f = nb.compile(lambda x: bn(x))
    seq = nn.Sequential(nn.Linear(4, 2))
    g = nb.compile(lambda x: seq(x))
    with nb.no_grad():
        f(x)
        bn.eval()
        np.testing.assert_allclose(f(x).numpy(), bn(x).numpy(), rtol=1e-6)
        g(x)
        for change in (
            lambda: setattr(seq[0], "weight", nn.Parameter(nb.zeros((2, 4)))),
            lambda: seq.__setitem__(0, nn.Linear(4, 2)),
            lambda: seq.append(nn.ReLU()),
        ):
            change()
            np.testing.assert_allclose(g(x).numpy(), seq(x).numpy(), rtol=1e-6)
    assert f.stats.recompile_reasons == ["BatchNorm1d's training mode, submodules or parameters changed"]
    assert g.stats.misses == 4


# A Python int argument used as a dim (or where only a Python value can go): the compiled
# function traces once per value and matches the uncompiled one.
DIM_ARGUMENT_CASES = {
    "sum": lambda a, d: a.sum(d),
    "sum_dim": lambda a, d: a.sum(dim=d),
    "mean": lambda a, d: a.mean(d),
    "std": lambda a, d: a.std(d),
    "amax": lambda a, d: a.amax(d),
    "max_values": lambda a, d: a.max(d)[0],
    "min_dim": lambda a, d: a.min(dim=d)[0],
    "flip": lambda a, d: nb.flip(a, d),
    "squeeze": lambda a, d: a[None].squeeze(d),
    "select": lambda a, d: a.select(d, 0),
    "narrow": lambda a, d: a.narrow(d, 0, 1),
    "diff": lambda a, d: a.diff(dim=d),
    "full": lambda a, d: a + nb.full((2,), d),
    "logsumexp": lambda a, d: a.logsumexp(d),
    "any": lambda a, d: (a > 1).any(d),
    "softmax": lambda a, d: a.softmax(d),
    "argmax": lambda a, d: a.argmax(d),
    "unbind": lambda a, d: a.unbind(d)[0],
}


@pytest.mark.parametrize("name", sorted(DIM_ARGUMENT_CASES))
def test_an_int_argument_used_as_a_dim_specializes(name):
    fn = DIM_ARGUMENT_CASES[name]
    x = nb.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    f = nb.compile(fn)
    for d in (0, 1, 0):
        got, want = f(x, d), fn(x, d)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_0d_tensor_is_not_iterable_and_an_elementwise_max_still_takes_a_tensor():
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(nb.tensor(5))
    assert [r.tolist() for r in nb.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    x = nb.tensor([[1.0, 5.0], [3.0, 2.0]])
    assert x.max(nb.tensor(2.5)).tolist() == [[2.5, 5.0], [3.0, 2.5]]  # torch's max(other)
    assert x.sum(nb.tensor(0)).tolist() == [4.0, 7.0]  # a 0-d int tensor as a dim, as torch


class _Holder:
    def __init__(self):
        self.w = nb.ones((2, 1))
        self.params = {"b": nb.zeros(1)}

    @nb.compile
    def forward(self, x):
        return x @ self.w + self.params["b"]


def test_tensor_attributes_of_user_objects_are_read_again_on_every_call():
    m, x = _Holder(), nb.ones((1, 2))
    assert m.forward(x).tolist() == [[2.0]]
    m.w = m.w * 3.0  # rebinding an attribute of `self` (an argument): traced again, not stale
    assert m.forward(x).tolist() == [[6.0]]
    m.params["b"] = nb.ones(1)
    assert m.forward(x).tolist() == [[7.0]]
    m.w.mul_(2)  # in place: the same tensor, read again
    assert m.forward(x).tolist() == [[13.0]]
    holder = types.SimpleNamespace(w=nb.ones(2))  # an object a closure holds
    f = nb.compile(lambda a: a * holder.w)
    assert f(nb.ones(2)).tolist() == [1.0, 1.0]
    holder.w = nb.full((2,), 5.0)
    assert f(nb.ones(2)).tolist() == [5.0, 5.0] and f.stats.misses == 2
    assert f.stats.recompile_reasons[-1] == "closure variable 'holder'.w was rebound to another tensor"


def test_recompile_reason_names_a_submodule_whose_training_flag_changed():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
    f = nb.compile(lambda m, a: m(a))
    with nb.no_grad():
        f(model, nb.ones((3, 2)))
        model[1].eval()
        f(model, nb.ones((3, 2)))
    assert f.stats.recompile_reasons == ["argument structure: 1 (Dropout) training True -> False (train()/eval())"]


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear, self.scale, self.mode, self.mask = nn.Linear(2, 2), 2.0, "relu", nb.ones(2)

    def forward(self, x):
        y = self.linear(x) * self.scale * self.mask
        return nb.relu(y) if self.mode == "relu" else nb.tanh(y)


def test_a_compiled_module_traces_again_when_a_plain_attribute_changes():
    # As torch.compile's guards: a number, string or unregistered tensor attribute a trace read
    # as a constant; the compiled module kept the old value.
    m, x = _Scaled(), nb.tensor([[1.0, -2.0]])
    f = nb.compile(lambda mod, a: mod(a))
    with nb.no_grad():
        for change in (None, ("scale", 10.0), ("mode", "tanh"), ("mask", nb.full((2,), 7.0))):
            if change is not None:
                setattr(m, *change)
            np.testing.assert_allclose(f(m, x).numpy(), m.forward(x).numpy(), rtol=1e-6)
            np.testing.assert_allclose(f(m, x).numpy(), m.forward(x).numpy(), rtol=1e-6)  # (a hit)
    assert f.stats.misses == 4 and f.stats.hits == 4
    reasons = f.stats.recompile_reasons  # (each against the first structure cached)
    assert reasons[0] == "argument structure: _Scaled.scale 2.0 -> 10.0" and len(reasons) == 3
    g = nb.compile(lambda mod, a: mod(a))
    with nb.no_grad():
        g(m, x)
        m.mask = nb.ones(2)
        g(m, x)
    assert g.stats.recompile_reasons == ["argument structure: _Scaled.mask is another tensor"]
    dropout = nn.Dropout(0.5)
    dropout.compile()
    assert (dropout(nb.ones(64)).numpy() == 0).any()
    dropout.p = 0.0
    assert (dropout(nb.ones(64)).numpy() == 1).all()


def test_a_compiled_module_sees_its_lists_and_dicts_changed_in_place():
    """A public list/dict attribute is guarded by content on every call (an in-place change
    does not go through __setattr__), as torch.compile's guards."""

    class Scales(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear, self.scales, self.cfg = nn.Linear(2, 2), [1.0, 2.0], {"shift": 0.0}

        def forward(self, x):
            y = self.linear(x)
            for s in self.scales:
                y = y * s
            return y + self.cfg["shift"]

    m, x = Scales(), nb.ones(1, 2)
    m.compile()
    with nb.no_grad():
        for change in (lambda: None, lambda: m.scales.append(10.0), lambda: m.cfg.update(shift=1.0)):
            change()
            np.testing.assert_allclose(m(x).numpy(), m.forward(x).numpy(), rtol=1e-6)
            np.testing.assert_allclose(m(x).numpy(), m.forward(x).numpy(), rtol=1e-6)  # (a hit)
    stats = m.compile_stats
    assert stats.misses == 3 and stats.hits == 3
    assert stats.recompile_reasons[0] == "argument structure: Scales.scales [1.0, 2.0] -> [1.0, 2.0, 10.0]"
    m.history = []  # a list forward never reads: appending to it does not retrace
    with nb.no_grad():
        for i in range(3):
            m(x)
            m.history.append(i)
    assert m.compile_stats.misses == 3


def test_a_compiled_sequential_sees_insert_and_del():
    seq, extra = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1)), nn.Linear(3, 3)
    seq.compile()
    x = nb.ones(1, 3)
    with nb.no_grad():
        seq(x)
        seq.insert(0, extra)  # (the compiled model kept the old layers)
        np.testing.assert_allclose(seq(x).numpy(), seq.forward(x).numpy(), rtol=1e-6)
        del seq[0]
        seq[0] = extra
        np.testing.assert_allclose(seq(x).numpy(), seq.forward(x).numpy(), rtol=1e-6)
    layers = nn.ModuleList([nn.Linear(3, 3)])
    layers.insert(0, nn.Identity())
    assert isinstance(layers[0], nn.Identity) and len(layers) == 2


def test_a_compiled_module_updating_a_parameter_under_no_grad_keeps_it_a_leaf():
    """Embedding(max_norm) renormalizes its weight rows in place on every forward."""
    emb = nn.Embedding.from_pretrained(nb.full((4, 2), 3.0), freeze=False, max_norm=1.0)
    emb.compile()
    (emb(nb.tensor([0, 1])).sum() + emb(nb.tensor([2, 3])).sum()).backward()
    assert emb.weight.is_leaf
    np.testing.assert_array_equal(emb.weight.grad.numpy(), np.ones((4, 2)))  # torch: every row (one was lost)
    emb(nb.tensor([0, 1])).sum().backward()  # (raised: backward through the graph a second time)
    np.testing.assert_array_equal(emb.weight.grad.numpy(), [[2, 2], [2, 2], [1, 1], [1, 1]])
    np.testing.assert_allclose(np.linalg.norm(emb.weight.numpy(), axis=1), 1.0, rtol=1e-6)


def test_a_compiled_backward_traces_again_when_a_gradient_hook_is_added_or_removed():
    w = nb.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        w.grad = None
        (w * x).sum().backward()
        return w.grad

    f, x = nb.compile(step), nb.ones(2)
    assert f(x).tolist() == [1.0, 1.0]
    handle = w.register_hook(lambda g: g * 10)  # (the compiled step kept running without it)
    assert f(x).tolist() == [10.0, 10.0] and f(x).tolist() == [10.0, 10.0]
    handle.remove()
    assert f(x).tolist() == [1.0, 1.0]
    assert f.stats.recompile_reasons == ["the tensors' gradient hooks changed"] * 2 and f.stats.hits == 1


def test_a_python_float_argument_keeps_float64_precision_with_float64_tensors():
    f = nb.compile(lambda x, c: x * c)
    x = nb.ones(2, dtype=nb.float64)
    assert f(x, 0.1).numpy()[0] == 0.1  # (fed as float32 it was 0.10000000149011612)
    assert f(x, 1e300).numpy()[0] == 1e300  # (float32: inf)
    assert f.stats.misses == 1
    out = f(nb.ones(2), 0.1)  # float32 tensors: a float32 input, as before
    assert out.dtype == nb.float32 and out.numpy()[0] == np.float32(0.1)


def test_compiling_a_module_returns_the_module_compiled_in_place():
    """`model = nabla.compile(model)` as with torch.compile: the result keeps the Module API."""
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    compiled = nb.compile(model, dynamic_dims={0: 0})
    assert compiled is model and list(compiled.state_dict())[:2] == ["0.weight", "0.bias"]
    compiled.eval()
    with nb.no_grad():
        np.testing.assert_allclose(compiled(nb.ones(2, 3)).numpy(), model.forward(nb.ones(2, 3)).numpy(), rtol=1e-6)
        compiled(nb.ones(5, 3))  # (dynamic batch: the same model)
    assert compiled.compile_stats.misses == 1 and compiled.compile_stats.hits == 1


def test_compiled_outputs_keep_half_dtypes():
    """bfloat16 outputs came back as float32 on the NumPy executor (it holds them in float32)."""
    f = nb.compile(lambda t: (t * 2, t.to(nb.bfloat16), t.argmax()))
    outs = f(nb.ones(2, dtype=nb.bfloat16))
    assert [o.dtype for o in outs] == [nb.bfloat16, nb.bfloat16, nb.int64]


def test_compiled_functions_key_on_the_default_dtype():
    g = nb.compile(lambda x: x * 0.1)
    x = nb.ones(2, dtype=nb.int64)
    assert g(x).dtype == nb.float32
    nb.set_default_dtype(nb.float64)
    try:
        assert g(x).dtype == nb.float64
    finally:
        nb.set_default_dtype(nb.float32)
    assert g(x).dtype == nb.float32
    assert g.stats.misses == 2 and g.stats.recompile_reasons == ["default dtype float32 -> float64"]


ACT = nb.relu
NP_SCALE = np.float32(1.0)
CFG = {"scale": 2.0, "log": []}


def test_rebound_globals_and_read_dict_items_are_guarded():
    """A global function (or model) is guarded by identity, a NumPy scalar by value, and only
    the dict items the code subscripts: a log list beside them does not retrace every step."""
    global ACT, NP_SCALE
    f = nb.compile(lambda x: ACT(x) * NP_SCALE * CFG["scale"])
    x = nb.tensor([-1.0])
    assert f(x).item() == 0.0
    try:
        ACT = nb.tanh
        np.testing.assert_allclose(f(x).item(), np.tanh(-1.0) * 2.0, rtol=1e-6)
        NP_SCALE = np.float32(3.0)
        np.testing.assert_allclose(f(x).item(), np.tanh(-1.0) * 6.0, rtol=1e-6)
        for i in range(3):
            CFG["log"].append(i)
            f(x)
        assert f.stats.misses == 3 and "global 'ACT' changed" in f.stats.recompile_reasons
    finally:
        ACT, NP_SCALE = nb.relu, np.float32(1.0)
        CFG["log"].clear()


def test_bincount_inside_compile_names_itself_and_the_index_add_form():
    f = nb.compile(lambda x: nb.bincount(x, minlength=4))
    with pytest.raises(nb.core.graph.tracing.ConcretizationError, match=r"bincount: its result's length.*index_add_"):
        f(nb.tensor([0, 1, 1]))
