"""nabla_nn.Module: registration, PyTorch names, traversal, modes, hooks, state_dict checks,
layer-path errors, and modules as pytrees through grad / vmap / compile.

Layers are defined here by hand so these tests depend only on Module and Parameter.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
from nabla.core.common.pytree import leaf_paths
from nabla_nn import init
from nabla_nn.module import IncompatibleKeys, Module
from nabla_nn.parameter import Parameter


class Affine(Module):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.in_features, self.out_features = n_in, n_out
        self.weight = Parameter(nb.empty(n_out, n_in))
        self.bias = Parameter(nb.empty(n_out))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        init.uniform_(self.bias, -1 / math.sqrt(n_in), 1 / math.sqrt(n_in))

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise self.input_error(x.shape, f"(..., {self.in_features})")
        return x @ self.weight.T + self.bias


class Counter(Module):
    """A layer with a persistent int buffer and a non-persistent float buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("steps", nb.Tensor.from_numpy(np.zeros((), np.int64)))
        self.register_buffer("scratch", nb.Tensor.from_numpy(np.ones(2, np.float32)), persistent=False)

    def forward(self, x):
        if self.training:
            self.steps.add_(1)
        return x


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = Chain(Affine(4, 8), Affine(8, 3))
        self.count = Counter()

    def forward(self, x):
        return self.count(self.body(x))


class Chain(Module):
    def __init__(self, *layers: Module) -> None:
        super().__init__()
        for i, layer in enumerate(layers):
            self.add_module(str(i), layer)

    def forward(self, x):
        for layer in self._modules.values():
            x = nb.relu(layer(x))
        return x


def _x(n: int = 5) -> nb.Tensor:
    return nb.tensor(np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32))


def test_names_follow_pytorch_and_traversal_orders_match():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["body.0.weight", "body.0.bias", "body.1.weight", "body.1.bias"]
    assert [n for n, _ in net.named_buffers()] == ["count.steps", "count.scratch"]
    assert list(net.state_dict()) == ["body.0.weight", "body.0.bias", "body.1.weight", "body.1.bias", "count.steps"]
    assert [n for n, _ in net.named_modules()] == ["", "body", "body.0", "body.1", "count"]
    assert [n for n, _ in net.named_children()] == ["body", "count"]
    assert net.get_submodule("body.1") is net.body._modules["1"]
    assert net.get_parameter("body.0.bias") is net.body._modules["0"].bias
    assert net.get_buffer("count.steps") is net.count.steps
    assert [n for n, _ in net.named_parameters(prefix="m", recurse=True)][0] == "m.body.0.weight"
    assert list(net.body._modules["0"].named_parameters(recurse=False))[0][0] == "weight"
    with pytest.raises(AttributeError, match="has no attribute `nope` \\(looking up 'body.nope'\\)"):
        net.get_submodule("body.nope")


def test_compile_flatten_walk_matches_the_traversals_with_shared_and_missing_members():
    net = Net()
    shared = net.body._modules["1"]
    net.body.add_module("2", shared)  # a module reachable twice is listed once
    net.body.add_module("3", None)
    net.count.register_buffer("tied", net.count.scratch)  # a buffer under two names: once
    net.extra = Affine(3, 3)
    net.extra.bias = shared.bias  # a parameter shared with an earlier module: listed once
    net.count.eval()
    named, modes = net._tree()
    assert named == [*net.named_parameters(), *net.named_buffers()]
    assert modes[0] is None  # no hooks on every module
    assert [(m, training) for m, training, _, _ in modes[1:]] == [(m, m.training) for m in net.modules()]
    assert [training for _, training, _, _ in modes[1:]] == [True, True, True, True, False, True]
    assert all(hooks is None for _, _, hooks, _ in modes[1:])
    assert [n for n, _ in named][-3:] == ["extra.weight", "count.steps", "count.scratch"]


def test_flattening_a_module_twice_gives_one_structure_until_it_changes():
    net = Net()
    leaves, first = nb.tree_flatten(net)
    again = nb.tree_flatten(net)[1]
    assert again == first and again.aux is first.aux  # a compiled call compares it by identity
    net.count.eval()  # the modes are part of the structure: a new one
    after = nb.tree_flatten(net)[1]
    assert after.aux is not first.aux and after != first
    twin = copy.deepcopy(net)  # a copy has a structure of its own, not the original's
    assert nb.tree_flatten(twin)[1].aux.module is twin and nb.tree_flatten(twin)[1] != after
    assert len(nb.tree_flatten(twin)[0]) == len(leaves)


def test_parameters_are_realized_leaves_after_init():
    layer = Affine(3, 2)
    for p in layer.parameters():
        assert isinstance(p, Parameter) and p.is_realized and p.is_leaf and p.requires_grad
    bound = 1 / math.sqrt(3)
    assert np.all(np.abs(layer.weight.numpy()) <= bound + 1e-7)


def test_registration_rules_and_errors():
    m = Module()
    m.w = Parameter(nb.ones(2))
    assert "w" in m._parameters
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = nb.ones(2)
    m.w = None
    assert m._parameters["w"] is None and list(m.parameters()) == []
    m.register_buffer("b", nb.zeros(2))
    with pytest.raises(TypeError, match="buffer 'b'"):
        m.b = 3
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="Parameter or None"):
        m.register_parameter("c", nb.ones(1))
    m.child = Affine(2, 2)
    assert "child" in m._modules
    del m.child
    assert "child" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
        _ = m.missing

    class Early(Module):
        def __init__(self):
            self.p = Parameter(nb.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_shared_parameter_listed_once_but_under_both_state_dict_keys():
    net = Chain(Affine(3, 3), Affine(3, 3))
    net._modules["1"].weight = net._modules["0"].weight
    assert len(list(net.parameters())) == 3
    assert len(list(net.named_parameters(remove_duplicate=False))) == 4
    assert {"0.weight", "1.weight"} <= set(net.state_dict())


def test_train_eval_apply_requires_grad_and_zero_grad():
    net = Net()
    assert net.training and net.count.training
    assert net.eval() is net and not net.count.training
    net.train()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Affine", "Affine", "Chain", "Counter", "Net"]
    net(_x()).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    grads = [p.grad for p in net.parameters()]
    net.zero_grad(set_to_none=False)  # in place, as torch's grad.zero_(): the same tensors
    assert all(p.grad is g and np.all(g.numpy() == 0) for p, g in zip(net.parameters(), grads, strict=True))
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_buffers_update_in_training_only():
    net = Net()
    net(_x())
    net(_x())
    assert int(net.count.steps.item()) == 2
    net.eval()(_x())
    assert int(net.count.steps.item()) == 2


def test_forward_hooks_can_replace_output_and_be_removed():
    layer = Affine(4, 2)
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    post = layer.register_forward_hook(lambda m, args, out: out * 0)
    assert np.all(layer(_x()).numpy() == 0) and calls == ["pre"]
    pre.remove()
    post.remove()
    assert not np.all(layer(_x()).numpy() == 0) and calls == ["pre"]


def test_bad_input_names_the_layer_path_and_expected_shape():
    net = Net()
    net.body._modules["1"] = Affine(16, 3)
    with pytest.raises(ValueError) as err:
        net(_x(3))
    assert "body.1 (Affine in_features=16 out_features=3) got input (3, 8), expected (..., 16)" in str(err.value)
    with pytest.raises(ValueError, match=r"^\(Affine in_features=4 out_features=2\) got input \(3, 5\)"):
        Affine(4, 2)(nb.ones(3, 5))


def test_state_dict_round_trip_and_load_checks_everything_before_changing_anything():
    src, dst = Net(), Net()
    sd = {k: v.numpy() for k, v in src.state_dict().items()}
    assert dst.load_state_dict(sd) == IncompatibleKeys([], [])
    for (k, a), b in zip(src.state_dict().items(), dst.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
        assert b.is_realized
    before = dst.body._modules["0"].weight.numpy().copy()
    bad = dict(sd, **{"body.0.weight": np.zeros((8, 4), np.float32), "body.1.bias": np.zeros(5, np.float32)})
    with pytest.raises(RuntimeError, match=r"body.1.bias: shape \(5,\) in the state_dict, the module has \(3,\)"):
        dst.load_state_dict(bad)
    np.testing.assert_array_equal(dst.body._modules["0"].weight.numpy(), before)  # unchanged
    dst.load_state_dict(dict(sd, **{"body.0.bias": np.full(8, 0.5, np.float64)}))  # cast, as torch's copy_
    bias = dst.body._modules["0"].bias
    assert bias.dtype == nb.float32 and bias.tolist() == [0.5] * 8
    partial = {k: v for k, v in sd.items() if k != "count.steps"} | {"extra": np.ones(1)}
    with pytest.raises(RuntimeError) as err:
        dst.load_state_dict(partial)
    assert "missing key(s): count.steps" in str(err.value) and "unexpected key(s): extra" in str(err.value)
    assert dst.load_state_dict(partial, strict=False) == IncompatibleKeys(["count.steps"], ["extra"])


def test_loaded_parameter_stays_a_parameter():
    layer = Affine(2, 2)
    weight = layer.weight
    layer.load_state_dict({"weight": np.eye(2, dtype=np.float32), "bias": np.zeros(2, np.float32)})
    assert layer.weight is weight and isinstance(layer.weight, Parameter) and layer.weight.requires_grad


def test_to_dtype_casts_floating_tensors_only():
    net = Net().to(nb.float64)
    assert all(p.dtype == nb.float64 and isinstance(p, Parameter) for p in net.parameters())
    assert net.count.steps.dtype == nb.int64 and net.count.scratch.dtype == nb.float64
    assert net.body._modules["0"].weight.is_realized
    with pytest.raises(ValueError, match="device gpu:63 is not available"):
        net.to(device="cuda:63")


def test_repr_prints_the_tree_like_pytorch():
    assert repr(Net()) == (
        "Net(\n"
        "  (body): Chain(\n"
        "    (0): Affine(in_features=4, out_features=8)\n"
        "    (1): Affine(in_features=8, out_features=3)\n"
        "  )\n"
        "  (count): Counter()\n"
        ")"
    )


def test_deepcopy_gives_independent_parameters():
    net = Net()
    twin = copy.deepcopy(net)
    w, w2 = net.body._modules["0"].weight, twin.body._modules["0"].weight
    assert w2 is not w and isinstance(w2, Parameter) and w2.requires_grad
    np.testing.assert_array_equal(w.numpy(), w2.numpy())
    with nb.no_grad():
        w2.mul_(0.0)
    assert not np.all(w.numpy() == 0)


def test_grad_of_a_module_returns_a_module_of_gradients():
    net = Net()
    x = _x()
    net(x).sum().backward()
    g = nb.grad(lambda m, x: m(x).sum())(net, x)
    assert type(g) is Net and g.count.steps is None  # the int buffer is carried, not differentiated
    for (name, p), gp in zip(net.named_parameters(), g.parameters(), strict=True):
        np.testing.assert_allclose(gp.numpy(), p.grad.numpy(), rtol=1e-6, err_msg=name)
    assert net.body._modules["0"].weight.grad is not None  # the original module is untouched


def test_vmap_over_inputs_with_a_module_argument():
    layer = Affine(4, 2)
    xs = nb.tensor(np.random.default_rng(1).standard_normal((6, 3, 4)).astype(np.float32))
    out = nb.vmap(lambda m, x: m(x), in_axes=(None, 0))(layer, xs)
    np.testing.assert_allclose(out.numpy(), layer(xs).numpy(), rtol=1e-6)


def test_module_compile_recompile_reasons_name_forward_and_its_tensors(capsys):
    net = Net()
    net.compile()
    nb.set_log_recompiles(True)
    try:
        with nb.no_grad():
            net(_x(5))
            net.get_submodule("body.0").weight.data = nb.zeros((8, 4), dtype=nb.float64)
            net(_x(5))
    finally:
        nb.set_log_recompiles(False)
    assert net.compile_stats.recompile_reasons == ["self.body.0.weight dtype float32 -> float64"]
    assert "nabla.compile(Net.forward): recompiling: self.body.0.weight" in capsys.readouterr().err
    assert leaf_paths(net)[:2] == [".body.0.weight", ".body.0.bias"]


def test_module_compile_matches_uncompiled_and_caches_per_signature():
    net = Net()
    ref = copy.deepcopy(net)
    net.compile()
    with nb.no_grad():
        for n in (5, 5, 5, 7):
            np.testing.assert_allclose(net(_x(n)).numpy(), ref(_x(n)).numpy(), rtol=1e-6)
    stats = net.compile_stats
    assert (stats.misses, stats.hits) == (2, 2) and stats.recompile_reasons == ["x shape (5, 4) -> (7, 4)"]
    assert int(net.count.steps.item()) == int(ref.count.steps.item()) == 4  # buffer updates replayed
    net.eval()
    with nb.no_grad():
        net(_x(5))
    assert net.compile_stats.misses == 3 and int(net.count.steps.item()) == 4  # eval mode is a new trace
    # With autodiff recorded the forward is traced once more and recorded as one `call` op;
    # backward works as usual and gives the uncompiled gradients.
    net.train()
    ref.train()
    net(_x()).sum().backward()
    ref(_x()).sum().backward()
    np.testing.assert_allclose(
        net.body._modules["0"].weight.grad.numpy(), ref.body._modules["0"].weight.grad.numpy(), rtol=1e-6
    )
    assert net.compile_stats.misses == 4


def test_forward_hooks_with_kwargs_and_prepend():
    class Scale(Module):
        def forward(self, x, *, factor=1.0):
            return x * factor

    m, order = Scale(), []
    m.register_forward_hook(lambda mod, args, out: order.append("first"))
    m.register_forward_hook(lambda mod, args, out: order.append("prepended"), prepend=True)
    seen = m.register_forward_hook(lambda mod, args, kwargs, out: order.append(kwargs), with_kwargs=True)
    # A kwargs pre-hook may replace both: here it doubles the factor.
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": kwargs["factor"] * 2}), with_kwargs=True)
    out = m(nb.ones(2), factor=3.0)
    np.testing.assert_allclose(out.numpy(), [6.0, 6.0])
    assert order == ["prepended", "first", {"factor": 6.0}]
    seen.remove()
    m(nb.ones(2), factor=1.0)
    assert order[3:] == ["prepended", "first"]
    m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple \(args, kwargs\)"):
        m(nb.ones(2), factor=1.0)


class _Mul(Module):
    """(x * z * k, sum(x * z)): two tensor inputs (x requires grad, z not), two outputs."""

    def forward(self, x, z, k=1.0):
        h = x * z
        return h * k, h.sum()


def test_full_backward_hooks_see_and_replace_the_modules_gradients():
    xa, za = np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 4.0, -1.0], np.float32)
    x, z = nb.tensor(xa, requires_grad=True), nb.tensor(za)
    m, log = _Mul(), []

    def pre(mod, grad_output):  # runs first, with the gradients of the outputs
        log.append(("pre", [g.numpy() for g in grad_output]))
        return (grad_output[0] * 2, grad_output[1])

    def full(mod, grad_input, grad_output):  # then with the inputs' (after pre's replacement)
        log.append(("full", [g.numpy() for g in grad_input], [g.numpy() for g in grad_output]))
        return (grad_input[0] * 10, None)

    m.register_full_backward_hook(full)
    m.register_full_backward_pre_hook(pre)
    a, b = m(x, z, k=3.0)
    ((a * a).sum() + b + x.sum()).backward()  # x is also used outside the module
    h = xa * za
    go = [2 * 3 * h, np.float32(1.0)]  # d/da of sum(a^2) with a = 3h; d/db = 1
    assert log[0][0] == "pre" and log[1][0] == "full"
    np.testing.assert_allclose(log[0][1][0], go[0], rtol=1e-6)
    np.testing.assert_allclose(log[1][2][0], 2 * go[0], rtol=1e-6)  # pre doubled it
    gi = (2 * go[0] * 3 + 1) * za  # what flows to x through the module
    np.testing.assert_allclose(log[1][1][0], gi, rtol=1e-6)
    np.testing.assert_allclose(log[1][1][1], np.zeros(3))  # z takes no gradient: zeros, as in torch
    np.testing.assert_allclose(x.grad.numpy(), 10 * gi + 1, rtol=1e-6)  # only the module's part scaled


def test_full_backward_hook_matches_torch_and_errors():
    torch = pytest.importorskip("torch")
    log = {"nabla": [], "torch": []}

    def hook(name):
        return lambda mod, gi, go: log[name].append([None if g is None else g.detach().numpy() for g in gi + go])

    lin = nn.Linear(3, 2)
    tlin = torch.nn.Linear(3, 2)
    lin.load_state_dict({k: v.detach().numpy() for k, v in tlin.state_dict().items()})
    lin.register_full_backward_hook(hook("nabla"))
    tlin.register_full_backward_hook(hook("torch"))
    xa = np.arange(6, dtype=np.float32).reshape(2, 3)
    (lin(nb.tensor(xa)) ** 2).sum().backward()  # no input takes a gradient: grad_input is (None,)
    (tlin(torch.tensor(xa)) ** 2).sum().backward()
    for a, b in zip(log["nabla"][0], log["torch"][0], strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-5)
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="a full backward hook returned 2 values, but grad_input has 1"):
        (lin(nb.tensor(xa)) ** 2).sum().backward()


def test_replacing_a_child_parameter_or_buffer_keeps_its_place_in_the_state_dict():
    # As PyTorch: fine-tuning's `model.fc = nn.Linear(...)` keeps the key order of the checkpoint.
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    keys = list(model.state_dict())
    model[0] = nn.Linear(2, 3)
    model.add_module("1", nn.Tanh())
    assert list(model.state_dict()) == keys and list(model._modules) == ["0", "1", "2"]
    bn = nn.BatchNorm1d(3)
    bn.weight = nn.Parameter(nb.ones(3))
    bn.register_buffer("running_mean", nb.zeros(3))
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    bn.extra = 5
    bn.extra = nn.Parameter(nb.ones(1))  # a plain attribute becomes a parameter
    assert "extra" in dict(bn.named_parameters())


@needs_torch
def test_train_goes_through_each_childs_train_like_torch():
    def model(lib):
        class Frozen(lib.Module):  # keeps its BatchNorm in eval mode (a common fine-tuning override)
            def __init__(self):
                super().__init__()
                self.bn = lib.BatchNorm1d(3)

            def train(self, mode=True):
                super().train(mode)
                self.bn.eval()
                return self

        return lib.Sequential(Frozen()).eval().train()

    modes = [[m.training for m in model(lib).modules()] for lib in (nn, torch.nn)]
    assert modes[0] == modes[1] == [True, True, False]


def test_to_converts_existing_grads_and_zero_grad_keeps_the_grads_dtype():
    layer = Affine(4, 2)
    layer(_x()).sum().backward()
    layer.to(nb.float64)  # PyTorch's _apply converts each .grad with its parameter
    assert all(p.dtype == p.grad.dtype == nb.float64 and p.grad.is_realized for p in layer.parameters())
    with pytest.raises(RuntimeError, match="assign a gradient with dtype float32 to a tensor with dtype float64"):
        layer.weight.grad = nb.zeros((2, 4), dtype=nb.float32)  # (as torch)
    layer.zero_grad(set_to_none=False)
    assert layer.weight.grad.dtype == layer.bias.grad.dtype == nb.float64
    assert np.all(layer.weight.grad.numpy() == 0)


@needs_torch
def test_registering_over_another_kind_of_member_raises_like_torch():
    def attempts(lib, t):
        m = lib.Linear(2, 2)
        m.register_parameter("none", None)
        m.plain = 3
        yield lambda: m.register_buffer("weight", t)
        yield lambda: m.register_parameter("none2", None) or m.register_buffer("none2", None)
        yield lambda: m.register_parameter("plain", None)
        yield lambda: m.add_module("weight", lib.ReLU())
        yield lambda: m.add_module("training", lib.ReLU())
        yield lambda: m.register_buffer("b", t) or m.register_parameter("b", None)
        yield lambda: m.get_parameter("none")
        yield lambda: m.get_parameter("b")
        yield lambda: m.get_parameter("nope")
        yield lambda: m.get_buffer("weight")
        yield lambda: m.get_buffer("nope")

    def outcome(f):
        try:
            f()
        except (KeyError, AttributeError) as e:
            return type(e).__name__, str(e)
        return "ok"

    ours = [outcome(f) for f in attempts(nn, nb.zeros(2))]
    ref = [outcome(f) for f in attempts(torch.nn, torch.zeros(2))]
    assert ours == ref
    assert ours[0] == ("KeyError", "\"attribute 'weight' already exists\"")
    assert ours[6] == ("AttributeError", "`none` is not an nn.Parameter")


@needs_torch
def test_state_dict_prefix_is_prepended_as_given_and_named_modules_memo_holds_modules():
    def keys(lib):
        m = lib.Sequential(lib.Linear(2, 2), lib.Sequential(lib.Linear(2, 1)))
        memo = {m[1]}  # PyTorch's memo is a set of modules: those are skipped
        return [list(m.state_dict(prefix=p)) for p in ("pre", "pre.")], [n for n, _ in m.named_modules(memo=memo)]

    assert keys(nn) == keys(torch.nn)
    assert keys(nn)[0][0][0] == "pre0.weight"


def test_always_call_forward_hook_runs_when_the_call_raises():
    layer = Affine(4, 2)
    seen = []
    layer.register_forward_hook(lambda m, args, out: seen.append(("plain", out)))
    layer.register_forward_hook(
        lambda m, args, kw, out: seen.append(("always", out)), always_call=True, with_kwargs=True
    )
    with pytest.raises(ValueError, match="got input"):
        layer(nb.ones(3, 5))
    assert seen == [("always", None)]  # forward failed: the always_call hook sees None, the plain one never runs
    seen.clear()

    def failing(m, args, out):
        raise RuntimeError("hook failed")

    layer.register_forward_hook(failing, prepend=True)
    with pytest.raises(RuntimeError, match="hook failed"):
        layer(nb.ones(3, 4))
    assert [kind for kind, _ in seen] == ["always"] and seen[0][1].shape == (3, 2)  # the output so far


@needs_torch
def test_always_call_hook_order_and_silenced_errors_match_torch():
    def run(lib, x):
        log = []
        m = lib.Linear(2, 2)

        def broken(mod, args, out):
            log.append("broken")
            raise ValueError("inner")

        m.register_forward_hook(broken, always_call=True)
        m.register_forward_pre_hook(lambda mod, args: (_ for _ in ()).throw(KeyError("pre")))
        with pytest.warns(UserWarning, match="silenced as another error was raised in forward: inner"):
            with pytest.raises(KeyError):
                m(x)
        return log

    assert run(nn, nb.ones(1, 2)) == run(torch.nn, torch.ones(1, 2)) == ["broken"]


@needs_torch
def test_set_submodule_matches_torch():
    def attempts(lib):
        m = lib.Sequential(lib.Linear(2, 2), lib.Sequential(lib.ReLU()))
        yield lambda: (m.set_submodule("1.0", lib.Tanh()), type(m[1][0]).__name__)[1]
        yield lambda: (m.set_submodule("1.new", lib.ReLU()), list(m[1]._modules))[1]
        yield lambda: m.set_submodule("1.other", lib.ReLU(), strict=True)
        yield lambda: m.set_submodule("0.weight", lib.ReLU())
        yield lambda: m.set_submodule("", lib.ReLU())
        yield lambda: m.set_submodule("0", 3)

    def outcome(f):
        try:
            return f()
        except (ValueError, AttributeError) as e:
            return type(e).__name__, str(e).replace("torch.nn.modules.", "").replace("<class 'int'>", "int")

    ours = [outcome(f) for f in attempts(nn)]
    ref = [outcome(f) for f in attempts(torch.nn)]
    assert ours == ref


@needs_torch
def test_extra_state_is_saved_and_loaded_like_torch():
    def make(lib):
        class Stateful(lib.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.Linear(2, 2)
                self.note = "fresh"

            def get_extra_state(self):
                return {"note": self.note}

            def set_extra_state(self, state):
                self.note = state["note"]

        return lib.Sequential(Stateful(), lib.ReLU())

    ours, ref = make(nn), make(torch.nn)
    assert (
        list(ours.state_dict(prefix="m."))
        == list(ref.state_dict(prefix="m."))
        == [
            "m.0._extra_state",  # a module's own entries come before its children's
            "m.0.fc.weight",
            "m.0.fc.bias",
        ]
    )
    sd = {k: v.numpy() if isinstance(v, nb.Tensor) else v for k, v in ours.state_dict().items()}
    sd["0._extra_state"] = {"note": "loaded"}
    assert ours.load_state_dict(sd) == IncompatibleKeys([], [])
    assert ours[0].note == "loaded"
    # missing: reported by a module that reads extra state; unexpected: by one that does not
    del sd["0._extra_state"]
    assert ours.load_state_dict(sd, strict=False) == IncompatibleKeys(["0._extra_state"], [])
    plain = Affine(2, 2)
    extra = {**plain.state_dict(), "_extra_state": 1}
    assert plain.load_state_dict(extra, strict=False) == IncompatibleKeys([], ["_extra_state"])
    tsd = {k: v for k, v in ref.state_dict().items() if k != "0._extra_state"}
    assert tuple(ref.load_state_dict(tsd, strict=False)) == (["0._extra_state"], [])


def test_error_under_compile_names_the_same_layer_path_as_eager():
    net = Net()
    net.body._modules["1"] = Affine(16, 3)
    messages = []
    for compiled in (False, True):
        if compiled:
            net.compile()
        with pytest.raises(ValueError) as err:
            net(_x(3))
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert messages[1].startswith("body.1 (Affine in_features=16 out_features=3) got input (3, 8)")


def _global_hook_log(lib, seq, x) -> list:
    """Which modules every-module hooks see, in order, for a forward and backward of `seq`."""
    log = []
    mod = lib if lib is nn else lib.nn.modules.module
    handles = [
        mod.register_module_forward_pre_hook(lambda m, args: log.append(("pre", type(m).__name__))),
        mod.register_module_forward_hook(lambda m, args, out: log.append(("fwd", type(m).__name__))),
        mod.register_module_full_backward_pre_hook(lambda m, go: log.append(("bpre", type(m).__name__))),
        mod.register_module_full_backward_hook(lambda m, gi, go: log.append(("bwd", type(m).__name__))),
    ]
    try:
        seq(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return log


def test_every_module_hooks_see_each_call_as_torch():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = nb.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    log = _global_hook_log(nn, seq, x)
    assert log[:6] == [
        ("pre", "Sequential"),
        ("pre", "Linear"),
        ("fwd", "Linear"),
        ("pre", "ReLU"),
        ("fwd", "ReLU"),
        ("pre", "Linear"),
    ]
    assert ("bwd", "Sequential") in log and log.count(("bpre", "Linear")) == 2
    if torch is not None:
        tseq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
        tx = torch.ones(2, 3, requires_grad=True)
        assert log == _global_hook_log(torch, tseq, tx)
    seq(x)  # removed: nothing more is logged
    assert len(log) == len(_global_hook_log(nn, seq, x))


def test_every_module_hooks_run_before_the_modules_own():
    lin = nn.Linear(2, 2)
    order = []
    lin.register_forward_hook(lambda m, a, out: order.append("own"))
    with nn.register_module_forward_hook(lambda m, a, out: order.append("global")):
        with nn.register_module_forward_pre_hook(lambda m, args: (args[0] * 0,)):
            out = lin(nb.ones(1, 2))
    np.testing.assert_allclose(out.numpy(), lin.bias.numpy()[None], rtol=1e-6)  # the pre-hook zeroed x
    assert order == ["global", "own"]
    lin(nb.ones(1, 2))
    assert order == ["global", "own", "own"]


def test_get_submodule_errors_use_torchs_wording_and_name_the_path():
    seq = nn.Sequential(nn.Linear(2, 2))
    expected = {
        "1": "Sequential has no attribute `1`",
        "0.x": "Linear has no attribute `x`",
        "0.weight": "`weight` is not an nn.Module",
    }
    for path, message in expected.items():
        with pytest.raises(AttributeError) as err:
            seq.get_submodule(path)
        assert str(err.value) == f"{message} (looking up '{path}')"
        if torch is not None:
            with pytest.raises(AttributeError, match=message):
                torch.nn.Sequential(torch.nn.Linear(2, 2)).get_submodule(path)


def test_load_with_assign_keeps_the_given_parameters_and_to_takes_a_tensor():
    shared = nn.Parameter(nb.ones((2, 2)))
    a, b = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    a.load_state_dict({"weight": shared}, assign=True)
    b.load_state_dict({"weight": shared}, assign=True)
    assert a.weight is shared and b.weight is shared  # tied, as torch's assign
    assert len(list(nn.Sequential(a, b).parameters())) == 1
    c = nn.Linear(2, 2)
    c.load_state_dict({"weight": nb.ones((2, 2), dtype=nb.float64), "bias": nb.zeros(2)}, assign=True)
    assert c.weight.dtype == nb.float64 and isinstance(c.weight, nn.Parameter) and c.weight.requires_grad
    d = nn.Linear(2, 2).to(nb.zeros(1, dtype=nb.float64), non_blocking=True)  # torch's to(tensor)
    assert d.weight.dtype == d.bias.dtype == nb.float64
    assert d.type(nb.float32) is d and d.weight.dtype == nb.float32
    if torch is not None:
        ta, tb = torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 2, bias=False)
        tshared = torch.nn.Parameter(torch.ones(2, 2))
        ta.load_state_dict({"weight": tshared}, assign=True)
        tb.load_state_dict({"weight": tshared}, assign=True)
        assert ta.weight is tb.weight


def test_backward_hook_passes_none_for_an_unused_output_and_leaves_its_parameters_without_grad():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.h1, self.h2 = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.h1(x), self.h2(x)

    m, seen = Two(), []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append([None if g is None else g.shape for g in go]))
    _, b = m(nb.ones(3, 2))
    b.sum().backward()
    assert seen == [[None, (3, 2)]]  # torch's grad_output
    assert m.h1.weight.grad is None and m.h2.weight.grad is not None  # an optimizer skips h1, as torch's


def _nested_outputs_hooks(lib, module_base):
    """grad_output and grad_input a module's full backward hook sees for (a, (b, c), detached),
    and whether a module returning a list runs its hook (torch: it warns and does not)."""

    class Nested(module_base):
        def forward(self, x):
            return x * 2, (x * 3, x * 4), x.detach()

    class Listed(module_base):
        def forward(self, x):
            return [x * 2, x * 3]

    seen = []
    m = Nested()
    m.register_full_backward_hook(
        lambda mod, gi, go: seen.append(([None if g is None else float(g.sum()) for g in go], float(gi[0].sum())))
    )
    x = lib.ones(2, requires_grad=True)
    a, (b, c), _ = m(x)
    (a.sum() + b.sum() + c.sum()).backward()
    listed = Listed()
    listed.register_full_backward_hook(lambda *_: seen.append("list hook ran"))
    x2 = lib.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = listed(x2)
    (out[0].sum() + out[1].sum()).backward()
    return seen, float(x.grad.sum()), float(x2.grad.sum())


def test_backward_hook_grad_output_has_the_top_level_outputs_as_torch():
    seen, grad, grad2 = _nested_outputs_hooks(nb, nn.Module)
    assert seen == [([2.0, None, None], 18.0)]  # nested outputs get None, their gradient still flows in
    assert grad == 18.0 and grad2 == 10.0
    if torch is not None:
        assert _nested_outputs_hooks(torch, torch.nn.Module) == (seen, grad, grad2)


def test_a_0d_parameter_loads_a_1_element_value_as_torch():
    m = nn.Module()
    m.p = nn.Parameter(nb.tensor(1.0))
    assert m.load_state_dict({"p": nb.tensor([3.0])}) == ([], [])  # (older checkpoints' layout)
    assert m.p.shape == () and m.p.item() == 3.0
    with pytest.raises(RuntimeError, match=r"p: shape \(2,\) in the state_dict"):
        m.load_state_dict({"p": nb.tensor([3.0, 4.0])})
