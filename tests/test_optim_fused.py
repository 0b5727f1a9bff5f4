"""nabla_optim's fused step: one op per param group, its MAX graph, compiled steps that trace again when
what they bake in changes, hooks, and the step counts the parameters stepped together share."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _optim_cases import ALL_OPTIMIZERS, CASES, make_data, shapes_of
from _oracle import needs_torch, torch
from max.graph import DeviceRef, Graph, TensorType

import nabla as nb
import nabla_optim as optim
from nabla.ops.base import Operation
from nabla_nn.parameter import Parameter
from nabla_optim.fused import fused_update


# -- one fused op per param group --------------------------------------------------------------
def _count_ops(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts: dict[str, int] = {}
    original = Operation._record  # every op call records through it

    def counting(self: Operation, *args: object) -> object:
        counts[self.name] = counts.get(self.name, 0) + 1
        return original(self, *args)

    monkeypatch.setattr(Operation, "_record", counting)
    return counts


@pytest.mark.parametrize("name", list(ALL_OPTIMIZERS))
def test_a_step_records_one_fused_op_per_param_group(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inits, grads = make_data(2, shapes=shapes_of(name)[:2])
    params = [Parameter(nb.tensor(a)) for a in inits]
    frozen = Parameter(nb.tensor(np.ones((1, 2) if name == "Muon" else 2, np.float32)), requires_grad=False)
    groups = [{"params": [params[0], frozen]}, {"params": [params[1]], "lr": 0.05}]
    opt = getattr(optim, name)(groups, **ALL_OPTIMIZERS[name])
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        with monkeypatch.context() as patch:
            counts = _count_ops(patch)
            opt.step()
        assert counts == {"optimizer_update": 2}
        assert all(p.is_realized for p in params)
    np.testing.assert_array_equal(frozen.numpy(), np.ones(frozen.shape))
    assert not np.array_equal(params[0].numpy(), inits[0])


def test_params_whose_state_differs_get_their_own_op(monkeypatch: pytest.MonkeyPatch) -> None:
    # `a` starts with dampening (a "momentum_started" flag); `b` joins after dampening is
    # switched off, so its state has no flag: two ops, each with PyTorch's semantics.
    rng = np.random.default_rng(3)
    a, b = (Parameter(nb.tensor(rng.standard_normal(3).astype(np.float32))) for _ in range(2))
    wa, wb = a.numpy().astype(np.float64), b.numpy().astype(np.float64)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9, dampening=0.5)
    buf_a = buf_b = None
    for step in range(4):
        ga, gb = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
        a.grad, b.grad = nb.tensor(ga), (nb.tensor(gb) if step > 0 else None)
        damp = 0.5 if step == 0 else 0.0
        opt.param_groups[0]["dampening"] = damp
        buf_a = ga if buf_a is None else 0.9 * buf_a + (1 - damp) * ga
        wa = wa - 0.1 * buf_a
        if step > 0:
            buf_b = gb if buf_b is None else 0.9 * buf_b + gb
            wb = wb - 0.1 * buf_b
        with monkeypatch.context() as patch:
            counts = _count_ops(patch)
            opt.step()
        assert counts == {"optimizer_update": 1 if step == 0 else 2}
    np.testing.assert_allclose(a.numpy(), wa, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), wb, rtol=1e-5, atol=1e-6)
    assert "momentum_started" in opt.state[a] and "momentum_started" not in opt.state[b]


def test_a_mixed_dtype_group_keeps_each_dtype() -> None:
    p32 = Parameter(nb.tensor(np.ones(3, np.float32)))
    p64 = Parameter(nb.tensor(np.ones(2, np.float64)))
    opt = optim.Adam([p32, p64], lr=0.1)
    p32.grad, p64.grad = nb.tensor(np.ones(3, np.float32)), nb.tensor(np.ones(2, np.float64))
    opt.step()
    assert (p32.dtype, p64.dtype) == (nb.float32, nb.float64)
    assert opt.state[p64]["exp_avg"].dtype == nb.float64 and opt.state[p64]["step"].dtype == nb.float32
    # the first Adam step moves every coordinate by lr * m_hat / (sqrt(v_hat) + eps), m_hat = v_hat = 1
    np.testing.assert_allclose(p32.numpy(), [0.9] * 3, rtol=1e-6)
    np.testing.assert_allclose(p64.numpy(), [1 - 0.1 / (1 + 1e-8)] * 2, rtol=1e-15)


def test_a_rule_that_changes_a_dtype_is_rejected() -> None:
    def promoting(xp: object, p: np.ndarray, g: np.ndarray, state: tuple, s: dict) -> tuple:
        return p - g * s["lr"], state  # float64 lr not cast: the result would be float64

    p = Parameter(nb.tensor(np.ones(3, np.float32)))
    lr = nb.Tensor.from_numpy(np.array(0.1, np.float64))
    [(new_p, _)] = fused_update(promoting, [p], [nb.tensor(np.ones(3, np.float32))], [()], {"lr": lr})
    with pytest.raises(TypeError, match="output 0 is float64"):
        new_p.numpy()


def test_a_custom_optimizer_with_update_still_works() -> None:
    class HalfStep(optim.Optimizer):
        def __init__(self, params: list) -> None:
            super().__init__(params, {"lr": 0.5})

        def _update(self, p: Parameter, grad: nb.Tensor, state: dict, group: dict) -> None:
            p.sub_(grad * group["lr"])

    p = Parameter(nb.tensor(np.ones(2, np.float32)))
    p.grad = nb.tensor(np.array([1.0, 2.0], np.float32))
    HalfStep([p]).step()
    np.testing.assert_array_equal(p.numpy(), [0.5, 0.0])


# Every optimizer and flag combination, for the MAX graph construction check.
MAX_CASES = [
    *CASES,
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5, "nesterov": False, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01, "maximize": True, "decoupled_weight_decay": True}),
    ("Lion", {"lr": 0.01}),
    ("Lion", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
]


@pytest.mark.parametrize(("name", "kwargs"), MAX_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MAX_CASES)])
def test_fused_update_builds_a_max_graph(name: str, kwargs: dict) -> None:
    # Graph construction only (MAX type-checks each op as it is added; no compile): the
    # recorded op's MAX kernel, on inputs of the recorded types, gives outputs of those types.
    inits, grads = make_data(1, shapes=shapes_of(name))
    params = [Parameter(nb.tensor(a)) for a in inits]
    opt = getattr(optim, name)(params, **kwargs)
    for p, g in zip(params, grads[0], strict=True):
        p.grad = nb.tensor(g)
    with nb.no_grad():
        opt._record_updates()
    node = params[0]._impl.output_refs
    assert node.op.name == "optimizer_update" and params[1]._impl.output_refs is node
    types = [TensorType(a.dtype, a.physical_shape, device=DeviceRef.CPU()) for a in node.args]
    with Graph(f"optimizer_update_{name}", input_types=types) as graph:
        outs = node.op.kernel(*[v.tensor for v in graph.inputs], **node.adapted_kwargs)
        graph.output(*outs)
    # (every recorded output, those no tensor holds included: the parameters' shared step
    # counts keep one of theirs)
    assert [(o.dtype, tuple(int(d) for d in o.shape)) for o in outs] == [(d, s) for s, d in node.out_avals]
    assert any(o.dtype == nb.float32 for o in outs)
    nb.evaluate(*params)  # the recorded step itself, on the NumPy executor


@pytest.mark.parametrize("name", list(ALL_OPTIMIZERS))
def test_fused_update_builds_a_max_graph_for_a_mixed_dtype_group(name: str) -> None:
    dtypes = (nb.float64, nb.bfloat16, nb.float16)
    shape = (1, 3) if name == "Muon" else 3
    params = []
    for dtype in dtypes:
        t = nb.tensor(np.ones(shape, np.float32)).to(dtype)
        t.realize()
        params.append(Parameter(t))
    # weight decay exercises the parameter in the update (Rprop has none)
    kwargs = {**ALL_OPTIMIZERS[name], **({"weight_decay": 0.1} if name != "Rprop" else {})}
    opt = getattr(optim, name)(params, **kwargs)
    for p in params:
        p.grad = nb.tensor(np.full(shape, 0.5, np.float32)).to(p.dtype)
    with nb.no_grad():
        opt._record_updates()
    node = params[0]._impl.output_refs
    types = [TensorType(a.dtype, a.physical_shape, device=DeviceRef.CPU()) for a in node.args]
    with Graph(f"optimizer_update_mixed_{name}", input_types=types) as graph:
        outs = node.op.kernel(*[v.tensor for v in graph.inputs], **node.adapted_kwargs)
        graph.output(*outs)
    assert {o.dtype for o in outs} >= set(dtypes)
    nb.evaluate(*params)
    assert [p.dtype for p in params] == list(dtypes)


def test_pytorch_implementation_switches_are_accepted_and_change_nothing():
    # foreach / fused / capturable choose how torch runs the same update (nanoGPT passes
    # fused=True to AdamW); nabla always fuses, so the steps are identical.
    flags = {
        optim.SGD: {"foreach": False, "fused": True},
        optim.Adam: {"foreach": True, "fused": True, "capturable": True},
        optim.AdamW: {"fused": True},
        optim.Adagrad: {"foreach": False, "fused": True},
        optim.Adamax: {"foreach": True, "capturable": True},
        optim.NAdam: {"foreach": True, "capturable": True},
        optim.RMSprop: {"foreach": True, "capturable": True},
        optim.RAdam: {"foreach": True, "capturable": True},
        optim.Adadelta: {"foreach": True, "capturable": True},
        optim.Rprop: {"foreach": True, "capturable": True},
        optim.ASGD: {"foreach": True, "capturable": True},
    }
    for cls, kw in flags.items():
        results = []
        for extra in ({}, kw):
            w = Parameter(nb.tensor(np.array([1.0, -2.0], np.float32)))
            opt = cls([w], lr=0.1, **extra)
            for _ in range(2):
                opt.zero_grad()
                (w * w).sum().backward()
                opt.step()
            results.append(w.numpy())
        np.testing.assert_array_equal(results[0], results[1], err_msg=cls.__name__)
        with pytest.raises(NotImplementedError, match="differentiable=True"):
            cls([Parameter(nb.ones(2))], lr=0.1, differentiable=True)


def _quadratic_run(make_opt, change, compiled: bool, steps: int = 4) -> tuple[np.ndarray, dict, object]:
    """`steps` SGD-style steps on sum(p * p * x); `change(opt)` runs after the second."""
    p = Parameter(nb.tensor(np.linspace(0.5, 1.5, 3, dtype=np.float32)))
    opt = make_opt([p])
    x = nb.tensor(np.array([1.0, 2.0, 3.0], np.float32))

    def step(x):
        opt.zero_grad()
        (p * p * x).sum().backward()
        opt.step()

    run = nb.compile(step) if compiled else step
    for i in range(steps):
        if i == 2:
            change(opt)
        run(x)
    state = {k: v.numpy() for k, v in opt.state[p].items()} if opt.state[p] else {}
    return p.numpy(), state, getattr(run, "stats", None)


def _set(**values):
    def change(opt):
        opt.param_groups[0].update(values)

    return change


@pytest.mark.parametrize(
    ("make_opt", "change"),
    [
        (lambda ps: optim.SGD(ps, lr=0.1), _set(weight_decay=1.0)),
        (lambda ps: optim.SGD(ps, lr=0.1), _set(maximize=True)),
        (lambda ps: optim.SGD(ps, lr=0.1), _set(momentum=0.9)),  # a momentum buffer appears
        (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), _set(nesterov=True)),
        (lambda ps: optim.Adam(ps, lr=0.1), _set(eps=1e-2, weight_decay=0.5)),
        (lambda ps: optim.RMSprop(ps, lr=0.01), _set(alpha=0.5, centered=True)),
        (
            lambda ps: optim.Adam(ps, lr=0.1),
            lambda o: o.load_state_dict(optim.Adam([Parameter(nb.ones(3))]).state_dict()),
        ),
    ],
)
def test_a_compiled_step_retraces_when_baked_in_hyperparameters_or_the_loaded_state_change(make_opt, change):
    """Constants baked into the traced step (weight decay, eps, flags, whether momentum is zero)
    and the state a state_dict load installs are guarded: the compiled step traces again and
    matches the eager loop (it kept the old values before)."""
    p_eager, state_eager, _ = _quadratic_run(make_opt, change, compiled=False)
    p_comp, state_comp, stats = _quadratic_run(make_opt, change, compiled=True)
    np.testing.assert_allclose(p_comp, p_eager, rtol=1e-6)
    assert state_comp.keys() == state_eager.keys()
    for k in state_eager:
        np.testing.assert_allclose(state_comp[k], state_eager[k], rtol=1e-6)
    assert stats.misses == 2 and stats.recompile_reasons[-1].endswith(
        "hyperparameters, param groups or loaded state changed"
    )


def test_a_scheduled_learning_rate_does_not_retrace_a_compiled_step():
    _, _, stats = _quadratic_run(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), _set(lr=0.01, momentum=0.5), True)
    assert (stats.misses, stats.hits) == (1, 3)


def test_zero_grad_without_set_to_none_zeroes_the_gradient_in_place():
    p = Parameter(nb.ones(3))
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g._impl.is_realized  # as torch's grad.zero_(): a reference sees zeros
    np.testing.assert_array_equal(g.numpy(), np.zeros(3, np.float32))


def _hook_trace(lib, opt_cls, make_param) -> list:
    """Which optimizer hooks run, in order, with what they see (the same code for both libraries)."""
    p = make_param()
    opt = opt_cls([p], lr=0.1)
    seen: list = []
    handles = [
        lib.register_optimizer_step_pre_hook(lambda o, a, k: seen.append(("global pre", len(a), sorted(k)))),
        opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", o is opt))),
        opt.register_step_post_hook(lambda o, a, k: seen.append(("post", len(a)))),
        opt.register_state_dict_pre_hook(lambda o: seen.append("sd pre")),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"}),
        opt.register_load_state_dict_post_hook(lambda o: seen.append("load post")),
    ]
    (p * p).sum().backward()
    opt.step()
    opt.step(lambda: None)
    sd = opt.state_dict()
    seen.append(sorted(sd))
    opt.load_state_dict(sd)
    for h in handles:
        h.remove()
    opt.step()
    return seen


@needs_torch
def test_optimizer_hooks_match_torch():
    ours = _hook_trace(optim, optim.SGD, lambda: Parameter(nb.ones(3)))
    theirs = _hook_trace(
        sys.modules[torch.optim.Optimizer.__module__], torch.optim.SGD, lambda: torch.nn.Parameter(torch.ones(3))
    )
    assert ours == theirs
    assert ours[0] == ("global pre", 1, []) and ours[-2] == ["extra", "param_groups", "state"]


def test_a_step_pre_hook_can_replace_the_closure():
    p = Parameter(nb.ones(2))
    opt = optim.SGD([p], lr=0.5)
    opt.register_step_pre_hook(lambda o, args, kwargs: ((o, lambda: 42.0), {}))
    (p * p).sum().backward()
    assert opt.step() == 42.0
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])


def test_zero_grad_without_set_to_none_in_a_compiled_step_matches_eager():
    def run(compiled: bool) -> np.ndarray:
        p = Parameter(nb.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
        opt = optim.SGD([p], lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad(set_to_none=False)
            (p * p * x).sum().backward()
            opt.step()

        f = nb.compile(step) if compiled else step
        for _ in range(4):
            f(nb.ones(3))
        return p.numpy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


# -- step counts shared by the parameters stepped together --------------------------------------
def _three_params() -> list[Parameter]:
    rng = np.random.default_rng(3)
    return [Parameter(nb.tensor(rng.standard_normal(s).astype(np.float32))) for s in ((4, 3), (3,), (2, 2))]


def _step(opt: optim.Optimizer, params: list, skip: Parameter | None = None) -> None:
    opt.zero_grad()
    for p in params:
        if p is not skip:
            p.grad = nb.tensor(np.full(p.shape, 0.5, np.float32))
    opt.step()


def test_parameters_stepped_together_share_one_step_value_behind_their_own_tensors():
    params = _three_params()
    opt = optim.Adam(params, lr=0.1)
    for _ in range(3):
        _step(opt, params)
    steps = [opt.state[p]["step"] for p in params]
    assert len({id(s) for s in steps}) == 3  # each parameter keeps its own Tensor object
    assert len({id(s._impl) for s in steps}) == 1  # one value: one graph input, computed once
    assert [s.item() for s in steps] == [3.0, 3.0, 3.0]
    # state_dict gives each parameter its own storage, as PyTorch's per-parameter step tensors
    saved = [s["step"] for s in opt.state_dict()["state"].values()]
    assert len({id(s._impl.data) for s in saved}) == 3 and [s.item() for s in saved] == [3.0, 3.0, 3.0]
    # a user's in-place change of one parameter's step leaves the others alone
    steps[0].add_(10.0)
    assert [s.item() for s in steps] == [13.0, 3.0, 3.0]


def test_a_parameter_without_a_gradient_keeps_its_step_while_the_others_advance():
    params = _three_params()
    opt, ref = optim.AdamW(params, lr=0.1), optim.AdamW([Parameter(nb.tensor(p.numpy())) for p in params], lr=0.1)
    for i in range(4):
        _step(opt, params, skip=params[1] if i in (1, 2) else None)
        _step(ref, ref.param_groups[0]["params"], skip=ref.param_groups[0]["params"][1] if i in (1, 2) else None)
    assert [opt.state[p]["step"].item() for p in params] == [4.0, 2.0, 4.0]
    for p, q in zip(params, ref.param_groups[0]["params"], strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    # parameters 0 and 2 still share their value; parameter 1 has its own since it skipped
    impls = [opt.state[p]["step"]._impl for p in params]
    assert impls[0] is impls[2] and impls[1] is not impls[0]


def test_a_loaded_state_shares_equal_step_counts_only():
    params = _three_params()
    opt = optim.Adam(params, lr=0.1)
    for i in range(3):
        _step(opt, params, skip=params[2] if i == 0 else None)
    saved = opt.state_dict()
    resumed = [Parameter(nb.tensor(p.numpy())) for p in params]
    opt2 = optim.Adam(resumed, lr=0.1)
    opt2.load_state_dict(saved)
    steps = [opt2.state[p]["step"] for p in resumed]
    assert [s.item() for s in steps] == [3.0, 3.0, 2.0]
    assert steps[0]._impl is steps[1]._impl and steps[2]._impl is not steps[0]._impl
    nb.reset_cache_info()
    _step(opt, params)
    _step(opt2, resumed)
    assert nb.cache_info().misses == 0  # the loaded state has the live one's structure
    for p, q in zip(params, resumed, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_a_loaded_state_shares_entries_only_where_all_shared_entries_are_equal():
    """ASGD's `mu` is 1 until averaging starts at step t0: two parameters at steps 4 and 2
    hold equal `mu` but must not share it (the lagging one would start averaging early)."""
    params = _three_params()
    opt = optim.ASGD(params, lr=0.05, t0=3)
    for i in range(8):
        _step(opt, params, skip=params[2] if i < 2 else None)
        if i == 3:
            saved = opt.state_dict()
            resumed = [Parameter(nb.tensor(p.numpy())) for p in params]
    opt2 = optim.ASGD(resumed, lr=0.05, t0=3)
    opt2.load_state_dict(saved)
    rows = [opt2.state[p] for p in resumed]
    assert [(r["step"].item(), r["mu"].item()) for r in rows] == [(4.0, 1.0), (4.0, 1.0), (2.0, 1.0)]
    assert rows[0]["mu"]._impl is rows[1]["mu"]._impl and rows[2]["mu"]._impl is not rows[0]["mu"]._impl
    for _ in range(4):
        _step(opt2, resumed)
    for p, q in zip(params, resumed, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    for k in ("mu", "eta", "ax"):
        np.testing.assert_array_equal(opt.state[params[2]][k].numpy(), opt2.state[resumed[2]][k].numpy())


def test_a_compiled_step_traces_again_when_shared_step_counts_part():
    # The trace reads the parameters' shared step value once; a loaded state whose counts
    # differ must not run that trace (it would give every parameter the first one's count).
    params = _three_params()
    ref = [Parameter(nb.tensor(p.numpy())) for p in params]
    opt, ref_opt = optim.Adam(params, lr=0.1), optim.Adam(ref, lr=0.1)

    @nb.compile
    def train_step() -> None:
        _step(opt, params)

    for _ in range(3):
        train_step()
    for i in range(3):
        _step(ref_opt, ref, skip=ref[2] if i == 0 else None)  # parameter 2 one step behind
    opt.load_state_dict(ref_opt.state_dict())
    for p, q in zip(params, ref, strict=True):
        p.data = nb.tensor(q.numpy())
    traces = train_step.stats.traces
    train_step()
    _step(ref_opt, ref)
    assert train_step.stats.traces == traces + 1
    assert [opt.state[p]["step"].item() for p in params] == [4.0, 4.0, 3.0]
    for p, q in zip(params, ref, strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("change", ["clear", "replace"])
def test_a_compiled_step_sees_optimizer_state_cleared_or_replaced(change: str) -> None:
    # The step read the old state tensors: clear() kept the old momentum, a replaced buffer was
    # never read. Now the state's tensors are a guard: the step traces again, as eager runs.
    results = []
    for compiled in (False, True):
        w = Parameter(nb.tensor([1.0, 2.0]))
        opt = optim.SGD([w], lr=0.1, momentum=0.9)

        def step(w=w, opt=opt):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()

        f = nb.compile(step) if compiled else step
        f()
        f()
        if change == "clear":
            opt.state.clear()
        else:
            opt.state[w]["momentum_buffer"] = nb.zeros(2)
        f()
        f()
        results.append((w.numpy(), opt.state[w]["momentum_buffer"].numpy()))
    for eager, compiled in zip(*results, strict=True):
        np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert f.stats.recompile_reasons == ["SGD's state tensors (cleared or replaced) changed"]
