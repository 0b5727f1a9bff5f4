"""The `call` op (nabla/ops/call.py): a compiled function recorded as one differentiable op.

`Module.compile()` in a training loop and `nabla.compile` under `grad` record the whole
function as one op and its gradient as one more. Results, gradients and second derivatives
equal op-by-op recording; random ops and in-place buffer updates (BatchNorm) behave the same;
retraces are explained and `no_recompile` covers them.
"""

from __future__ import annotations

import numpy as np
import pytest

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.autograd import replay
from nabla.ops import base

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 12)).astype(np.float32)
Y = RNG.integers(0, 4, 16)


def _model(kind: str) -> nn.Module:
    nb.manual_seed(0)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))
    if kind == "bn":
        return nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 4))


def _train(kind: str, compiled: bool, steps: int = 4) -> tuple[list, dict, list]:
    model = _model(kind)
    if compiled:
        model.compile()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    nb.manual_seed(1)
    losses, ops_per_step = [], []
    for _ in range(steps):
        before = _OpCounter.count
        opt.zero_grad()
        loss = F.cross_entropy(model(nb.tensor(X)), nb.tensor(Y))
        loss.backward()
        opt.step()
        ops_per_step.append(_OpCounter.count - before)
        losses.append(loss.item())
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}, ops_per_step


class _OpCounter:
    count = 0


@pytest.fixture(autouse=True)
def count_ops(monkeypatch):
    original = base.Operation._record  # every op call records through it

    def counting(self, *args):
        _OpCounter.count += 1
        return original(self, *args)

    monkeypatch.setattr(base.Operation, "_record", counting)


@pytest.mark.parametrize("kind", ["mlp", "bn", "dropout"])
def test_compiled_module_trains_exactly_like_the_op_by_op_loop(kind, monkeypatch):
    monkeypatch.setattr(replay, "_PLANS", {})  # the loop's first backward runs its rules (no replay yet)
    monkeypatch.setattr(replay, "_LAST", [None])
    ref_losses, ref_state, ref_ops = _train(kind, compiled=False)
    losses, state, ops = _train(kind, compiled=True)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert state.keys() == ref_state.keys()
    for k in state:  # BatchNorm running stats included: the call's in-place updates are replayed
        np.testing.assert_allclose(state[k], ref_state[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # After the first step (which traces), the forward is 1 op and its gradient 1 more. The
    # op-by-op loop calls every op of its forward each step, and its backward's rules in the first
    # (later backwards are one replayed call op).
    assert max(ops[1:]) <= 10 < ref_ops[0], (ops, ref_ops)
    assert max(ops[1:]) < min(ref_ops[1:]), (ops, ref_ops)


def test_training_step_traces_once_and_is_one_cached_model(monkeypatch):
    monkeypatch.setattr(replay, "_PLANS", {})
    monkeypatch.setattr(replay, "_LAST", [None])
    model = _model("mlp")
    model.compile()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    nb.reset_cache_info()
    replays = replay.TAPE.replays
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(nb.tensor(X)), nb.tensor(Y)).backward()
        opt.step()
    info = nb.cache_info()
    assert (info.misses, info.hits, info.graph_builds) == (1, 4, 1)
    stats = model.compile_stats
    assert (stats.traces, stats.misses, stats.hits) == (1, 1, 4)
    # The first backward traces the call's backward program on placeholders while it records
    # its tape: those traced nodes are not the tape's, so every later backward is replayed.
    assert replay.TAPE.replays == replays + 4


def test_new_input_shape_retraces_with_a_reason_and_no_recompile_catches_it():
    model = _model("mlp")
    model.compile()
    F.cross_entropy(model(nb.tensor(X)), nb.tensor(Y)).backward()
    with nb.no_recompile(), pytest.raises(nb.RecompileError, match=r"shape \(16, 12\) -> \(8, 12\)"):
        model(nb.tensor(X[:8]))
    model(nb.tensor(X[:8]))
    assert any("(16, 12) -> (8, 12)" in r for r in model.compile_stats.recompile_reasons)


def test_grad_through_a_compiled_function_and_second_derivatives():
    def f(w, x):
        return (nb.tanh(x @ w) ** 2).sum()

    cf = nb.compile(f)
    w, x = nb.tensor(RNG.standard_normal((12, 3)).astype(np.float32)), nb.tensor(X)
    np.testing.assert_allclose(nb.grad(cf)(w, x).numpy(), nb.grad(f)(w, x).numpy(), rtol=1e-5)
    v = nb.tensor(RNG.standard_normal((12, 3)).astype(np.float32))

    def hvp(fn):
        return nb.grad(lambda w_: (nb.grad(fn)(w_, x) * v).sum())(w).numpy()

    np.testing.assert_allclose(hvp(cf), hvp(f), rtol=1e-4, atol=1e-6)
    assert cf.stats.traces == 1  # grad and grad-of-grad reuse one trace (its vjp is traced once more)


def test_gradient_reaches_only_the_arguments_that_require_it():
    model = _model("mlp")
    model.compile()
    x = nb.tensor(X, requires_grad=True)
    F.cross_entropy(model(x), nb.tensor(Y)).backward()
    ref = _model("mlp")
    xr = nb.tensor(X, requires_grad=True)
    F.cross_entropy(ref(xr), nb.tensor(Y)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-7)
    model[0].weight.requires_grad_(False)
    model.zero_grad()
    F.cross_entropy(model(nb.tensor(X)), nb.tensor(Y)).backward()
    assert model[0].weight.grad is None and model[2].weight.grad is not None


def test_eval_without_grad_runs_the_compiled_model_directly():
    model = _model("mlp")
    model.compile()
    with nb.no_grad():
        out = model(nb.tensor(X))
    assert out._impl.is_realized  # executed at once: no op recorded
    np.testing.assert_allclose(out.numpy(), _model("mlp")(nb.tensor(X)).numpy(), rtol=1e-5)


def test_module_compile_dynamic_dims_count_forward_arguments():
    """`model.compile(dynamic_dims={0: 0})` makes dim 0 of forward's input dynamic (not of the
    module, which the compiled function takes first): one trace serves every batch size under
    no_grad, and training at several sizes records one `call` per size with its own shapes."""
    model = _model("mlp")
    model.compile(dynamic_dims={0: 0})
    opt = optim.SGD(model.parameters(), lr=0.1)
    reference = _model("mlp")
    ref_opt = optim.SGD(reference.parameters(), lr=0.1)
    for n in (16, 9, 5):
        for m, o in ((model, opt), (reference, ref_opt)):
            o.zero_grad()
            F.cross_entropy(m(nb.tensor(X[:n])), nb.tensor(Y[:n])).backward()
            o.step()
    before = model.compile_stats.misses
    with nb.no_grad():
        for n in (16, 9, 5, 3):
            out = model(nb.tensor(X[:n]))
            np.testing.assert_allclose(out.numpy(), reference(nb.tensor(X[:n])).numpy(), rtol=1e-5, atol=1e-6)
    assert model.compile_stats.misses - before == 1


def test_vmap_and_jvp_run_a_compiled_module_inline():
    model = _model("mlp")
    model.compile()
    ref = _model("mlp")
    batched = nb.vmap(model)(nb.tensor(X.reshape(4, 4, 12)))
    np.testing.assert_allclose(batched.numpy(), ref(nb.tensor(X)).numpy().reshape(4, 4, 4), rtol=1e-5)
    _, t = nb.jvp(model, (nb.tensor(X),), (nb.ones_like(nb.tensor(X)),))
    _, t_ref = nb.jvp(ref, (nb.tensor(X),), (nb.ones_like(nb.tensor(X)),))
    np.testing.assert_allclose(t.numpy(), t_ref.numpy(), rtol=1e-5)


def test_outputs_of_a_compiled_function_carry_autodiff_like_torch_compile():
    """Outputs that depend on tensors requiring grad (an argument, or a parameter the function
    captures) carry autodiff history, as torch.compile's do: backward() after the call fills the
    same grads as the plain function. No backward inside, so the function is recorded as one op."""
    model = _model("mlp")
    ref = _model("mlp")
    forward = nb.compile(lambda x: model(x))
    x, xr = nb.tensor(X, requires_grad=True), nb.tensor(X, requires_grad=True)
    for _ in range(2):
        F.cross_entropy(forward(x), nb.tensor(Y)).backward()
        F.cross_entropy(ref(xr), nb.tensor(Y)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-7)
    for p, pr in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), pr.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert (forward.stats.traces, forward.stats.misses, forward.stats.hits) == (1, 1, 1)
    with nb.no_grad():  # without autodiff it runs a compiled model at once
        out = forward(x)
    assert out._impl.is_realized and not out.requires_grad
    assert forward.stats.recompile_reasons[-1] == "grad mode enabled -> disabled (no_grad)"


def test_frozen_module_compiled_still_differentiates_its_input():
    model = _model("mlp")
    model.requires_grad_(False)
    model.compile()
    x = nb.tensor(X, requires_grad=True)
    (model(x) ** 2).sum().backward()
    xr = nb.tensor(X, requires_grad=True)
    (_model("mlp")(xr) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in model.parameters())


def test_thawing_a_captured_parameter_retraces_so_its_gradient_flows():
    model = _model("mlp")
    model.requires_grad_(False)
    forward = nb.compile(lambda x: model(x).sum())
    assert not forward(nb.tensor(X)).requires_grad  # nothing requires grad: a compiled model
    model[0].weight.requires_grad_(True)
    forward(nb.tensor(X)).backward()
    assert model[0].weight.grad is not None and model[2].weight.grad is None
    assert forward.stats.recompile_reasons == ["a captured tensor changed requires_grad"]


def test_a_compiled_step_that_calls_backward_keeps_its_compiled_model():
    """A function that calls backward() inside (a training step) is compiled as before, even
    though the loss it returns has autodiff history."""
    model = _model("mlp")
    opt = optim.SGD(model.parameters(), lr=0.1)

    @nb.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    losses = [step(nb.tensor(X), nb.tensor(Y)).item() for _ in range(3)]
    assert losses[-1] < losses[0]
    assert (step.stats.traces, step.stats.hits) == (1, 2)


def _forward_twice(model: nn.Module, x: nb.Tensor) -> np.ndarray:
    """Two calls, so the second is answered by the compiled call's last-hit record."""
    with nb.no_grad():
        model(x)
        return model(x).numpy()


def test_last_hit_record_sees_every_change_to_the_module_tree():
    """A compiled module skips flattening itself while no module tree changed: replacing a
    parameter (by attribute or in the dict), adding a buffer, switching to eval or thawing a
    parameter is seen on the next call, whose output equals the op-by-op forward's."""
    model = _model("dropout")
    model.compile()
    x = nb.tensor(X)
    reference = _model("dropout")

    def same() -> None:
        expected = reference(x).numpy()
        np.testing.assert_allclose(_forward_twice(model, x), expected, rtol=1e-5, atol=1e-6)

    model.eval()
    reference.eval()
    same()
    hits = model.compile_stats.hits
    same()
    assert model.compile_stats.hits == hits + 2  # both calls hit (the second without flattening)
    w = RNG.standard_normal((32, 12)).astype(np.float32)
    model[0].weight = nn.Parameter(nb.tensor(w))  # the same shape: the new object is read
    reference[0].weight = nn.Parameter(nb.tensor(w))
    same()
    b = RNG.standard_normal(4).astype(np.float32)
    _forward_twice(model, x)
    model[3]._parameters["bias"] = nn.Parameter(nb.tensor(b))  # the dict itself, as some torch code does
    reference[3].bias.data = nb.tensor(b)  # (no module change: the dict's is the only one)
    with nb.no_grad():
        np.testing.assert_allclose(model(x).numpy(), reference(x).numpy(), rtol=1e-5, atol=1e-6)
    model[0].weight.data = nb.tensor(w * 2)  # new values in the same Parameter
    reference[0].weight.data = nb.tensor(w * 2)
    same()
    traces = model.compile_stats.traces
    model.train()
    with nb.no_grad():
        out = model(x).numpy()
    assert model.compile_stats.traces == traces + 1  # training mode is another trace
    assert not np.allclose(out, reference(x).numpy())  # with dropout on


def test_swapped_parameter_free_layers_and_later_hooks_trace_again():
    """What a compiled module traced in besides its tensors: which layer objects it holds (a
    swapped ReLU has no parameters to tell it) and the hooks on them and on every module, also
    when registered or removed after the first call."""
    model = _model("mlp")
    model.compile()
    closure = nn.Sequential(nn.Linear(12, 4), nn.ReLU())
    f = nb.compile(lambda t: closure(t))
    x = nb.tensor(X)

    def check(module: nn.Module, out: nb.Tensor) -> None:
        expected = nn.Sequential(*module) if isinstance(module, nn.Sequential) else module
        with nb.no_grad():
            np.testing.assert_allclose(out.numpy(), expected.forward(x).numpy(), rtol=1e-5, atol=1e-6)

    with nb.no_grad():
        for m, run in ((model, model), (closure, f)):
            run(x)
            m[1] = nn.LeakyReLU(0.5)
            check(m, run(x))
            m[1] = nn.Tanh()
            check(m, run(x))
    handle = model[2].register_forward_hook(lambda mod, args, out: out * 0)
    with nb.no_grad():
        np.testing.assert_array_equal(model(x).numpy(), 0)
        handle.remove()
        assert np.abs(model(x).numpy()).sum() > 0
        handle = nn.register_module_forward_hook(
            lambda mod, args, out: out * 0 if getattr(mod, "out_features", 0) == 32 else None
        )
        zeroed_first = model(x).numpy()
        handle.remove()
        plain = model(x).numpy()
    np.testing.assert_allclose(zeroed_first, np.broadcast_to(plain[:1] * 0 + _bias_only(model), plain.shape), atol=1e-6)


def _bias_only(model: nn.Module) -> np.ndarray:
    """The MLP's output when its first layer outputs zeros."""
    with nb.no_grad():
        return model[2](model[1](nb.zeros((1, 32)))).numpy()


def test_last_hit_record_keys_argument_shapes_dtypes_aliases_and_grad_mode():
    model = _model("mlp")
    model.compile()
    ref = _model("mlp")
    for n in (16, 16, 5, 5, 16):  # a new batch size retraces; the old one still hits
        x = nb.tensor(X[:n])
        np.testing.assert_allclose(_forward_twice(model, x), ref(x).numpy(), rtol=1e-5, atol=1e-6)
    x = nb.tensor(X, requires_grad=True)
    for _ in range(2):  # grad mode on, an input requiring grad: one `call` op, differentiable
        x.grad = None
        model(x).sum().backward()
    xr = nb.tensor(X, requires_grad=True)
    ref(xr).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-6)

    f = nb.compile(lambda a, b: a * 2 + b)
    a, b = nb.tensor(X), nb.tensor(X + 1)
    for _ in range(2):
        f(a, b)
    np.testing.assert_allclose(f(a, a).numpy(), X * 3, rtol=1e-5, atol=1e-6)  # the same tensor twice
    np.testing.assert_allclose(f(a, b).numpy(), X * 3 + 1, rtol=1e-5, atol=1e-6)
    out = f(a.double(), b.double()).numpy()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, X.astype(np.float64) * 2 + (X + 1).astype(np.float64), rtol=1e-12)
