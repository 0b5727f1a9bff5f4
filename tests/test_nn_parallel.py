"""nabla_nn.parallel: data, tensor (Megatron) and 2-D parallel training on simulated meshes.

Sharded training must end exactly where single-device training ends, be one cached model per
step like any other loop; also shard_module and shard_batch, state_dict and checkpoints of
sharded models, optimizer state_dict, SyncBatchNorm and DataParallel. What each kind of
parallelism communicates is tested in `test_nn_parallel_communication.py`, which imports the
meshes, models and training loop defined here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh, P
from nabla_nn import serialization as S
from nabla_nn.parallel import colwise, count_collectives, rowwise, shard_batch, shard_module

RNG = np.random.default_rng(0)
DP = DeviceMesh("dp2", (2,), ("dp",))
TP = DeviceMesh("tp2", (2,), ("tp",))
DP3 = DeviceMesh("dp3", (3,), ("dp",))
MESH = DeviceMesh("m22", (2, 2), ("dp", "tp"))
MEGATRON = {"0": colwise("tp"), "2": rowwise("tp")}  # Linear -> GELU -> Linear


def mlp() -> nn.Module:
    nb.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4))


def transformer_layer() -> nn.Module:
    nb.manual_seed(0)
    return nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)


def classification(steps: int, n: int = 8) -> list:
    teacher = RNG.standard_normal((12, 4)).astype(np.float32)
    out = []
    for _ in range(steps):
        x = RNG.standard_normal((n, 12)).astype(np.float32)
        out.append((x, np.argmax(x @ teacher, 1)))
    return out


def sequences(steps: int) -> list:
    return [
        (RNG.standard_normal((4, 6, 16)).astype(np.float32), RNG.standard_normal((4, 6, 16)).astype(np.float32))
        for _ in range(steps)
    ]


def adam(params):
    return optim.Adam(params, lr=1e-2)


def sgd_momentum(params):
    return optim.SGD(params, lr=0.05, momentum=0.9)


def train(make, make_opt, loss_fn, batches, mesh=None, plan=None, axis=None) -> tuple[nn.Module, list[float]]:
    """The PyTorch loop, sharded when `mesh` is given; checks it is one cached model per step."""
    model = make()
    if mesh is not None:
        shard_module(model, mesh, plan)
    opt = make_opt(model.parameters())
    nb.GRAPH.clear_cache()  # an earlier test may have built this very program
    nb.reset_cache_info()
    losses = []
    for i, (x, y) in enumerate(batches):
        x, y = nb.tensor(x), nb.tensor(y)
        if axis is not None:
            x, y = shard_batch((x, y), mesh, axis)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if i == 0:
            assert nb.cache_info().executions == 0, "nothing may be evaluated before opt.step()"
        opt.step()
        losses.append(loss.item())
    info = nb.cache_info()
    n = len(batches)
    assert (info.misses, info.hits, info.graph_builds, info.executions) == (1, n - 1, 1, n)
    return model, losses


def assert_same_state(model: nn.Module, reference: nn.Module) -> None:
    got, want = model.state_dict(), reference.state_dict()
    assert list(got) == list(want)
    for key in want:
        assert got[key].sharding is None, f"{key}: a state_dict holds assembled tensors"
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-5, atol=1e-6, err_msg=key)


def layouts(model: nn.Module) -> dict:
    return {n: p.sharding for n, p in model.named_parameters()}


# -- training matches single-device training ------------------------------------------------------
MLP_CASES = {
    "data parallel": (DP, None, "dp", adam),
    "data parallel, uneven batch split": (DP3, None, "dp", adam),
    "data parallel over both axes of a 2x2 mesh": (MESH, None, ("dp", "tp"), sgd_momentum),
    "tensor parallel (Megatron)": (TP, MEGATRON, None, sgd_momentum),
    "data x tensor parallel": (MESH, MEGATRON, "dp", adam),
}


@pytest.mark.parametrize("case", list(MLP_CASES))
def test_mlp_training_matches_single_device(case):
    mesh, plan, axis, make_opt = MLP_CASES[case]
    batches = classification(20)
    reference, ref_losses = train(mlp, make_opt, F.cross_entropy, batches)
    model, losses = train(mlp, make_opt, F.cross_entropy, batches, mesh, plan, axis)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    assert_same_state(model, reference)
    want = shard_module(mlp(), mesh, plan)  # training keeps every parameter's layout
    assert layouts(model) == layouts(want)


def test_megatron_plan_layouts():
    model = shard_module(mlp(), MESH, MEGATRON)
    assert {n: (s.dim_axes, s.is_replicated) for n, s in layouts(model).items()} == {
        "0.weight": ((("tp",), ()), False),  # (out_features, in_features): column parallel
        "0.bias": ((("tp",),), False),
        "2.weight": (((), ("tp",)), False),  # row parallel
        "2.bias": (((),), True),
    }
    assert all(p.sharding.mesh == MESH for p in model.parameters())


# Megatron attention with PyTorch's packed in_proj (rows q, k, v): a device's rows of it are not
# one head group, so splitting q, k and v off moves rows between devices (windows, no gather)
MEGATRON_LAYER = {
    "self_attn": {"in_proj_weight": P("tp", None), "in_proj_bias": P("tp")},
    "self_attn.out_proj": rowwise("tp"),
    "linear1": colwise("tp"),
    "linear2": rowwise("tp"),
}
TRANSFORMER_CASES = {
    "data parallel": (DP, None),
    "data x tensor parallel feed-forward": (MESH, {"linear1": colwise("tp"), "linear2": rowwise("tp")}),
    "data x tensor parallel attention and feed-forward": (MESH, MEGATRON_LAYER),
}


@pytest.mark.parametrize("case", list(TRANSFORMER_CASES))
def test_transformer_layer_training_matches_single_device(case):
    mesh, plan = TRANSFORMER_CASES[case]
    batches = sequences(8)
    reference, ref_losses = train(transformer_layer, sgd_momentum, F.mse_loss, batches)
    model, losses = train(transformer_layer, sgd_momentum, F.mse_loss, batches, mesh, plan, "dp")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    assert_same_state(model, reference)


def test_sharded_step_compiles_once_then_hits_the_cache():
    model = shard_module(mlp(), MESH, MEGATRON)
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    batches = classification(6)
    nb.GRAPH.clear_cache()
    nb.reset_cache_info()
    for i, (x, y) in enumerate(batches):
        x, y = shard_batch((x, y), MESH, "dp")
        if i == 1:
            guard = nb.no_recompile()
            guard.__enter__()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    guard.__exit__(None, None, None)
    info = nb.cache_info()
    assert (info.misses, info.hits, info.graph_builds, info.executions) == (1, 5, 1, 6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_data_parallel_cross_entropy_matches(reduction):
    x = RNG.standard_normal((10, 5)).astype(np.float32)
    t = RNG.integers(0, 5, 10)
    t[3] = -1
    w = nb.tensor(RNG.uniform(0.5, 2.0, 5).astype(np.float32))
    kw = {"weight": w, "ignore_index": -1, "label_smoothing": 0.1, "reduction": reduction}

    def loss_and_grad(xt, tt):
        xt.requires_grad_(True)
        loss = F.cross_entropy(xt, tt, **kw)
        (loss.sum() if reduction == "none" else loss).backward()
        return loss.numpy(), xt.grad.numpy()

    want = loss_and_grad(nb.tensor(x), nb.tensor(t))
    xs, ts = shard_batch((x, t), DP3)
    got = loss_and_grad(xs, ts)
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-6)


# -- shard_module --------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 4, bias=False)
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.fc2(F.relu(self.fc1(x))))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_shard_module_patterns_subplans_and_default():
    net = Net()
    params = {n: p for n, p in net.named_parameters()}
    before = {n: t.numpy().copy() for n, t in net.state_dict().items()}
    out = shard_module(
        net,
        MESH,
        {
            "layers.*.fc1": colwise("tp"),
            "layers.*.fc2": rowwise("tp"),  # no bias: the sub-plan's bias is skipped
            re.compile(r"head\.(weight|bias)"): None,
            "*.running_mean": P("tp"),
        },
    )
    assert out is net
    assert {n: p for n, p in net.named_parameters()} == params, "parameters keep their identity"
    got = {n: t.sharding for n, t in net._all_tensors()}
    assert got["layers.1.fc1.weight"].dim_axes == (("tp",), ())
    assert got["layers.0.fc1.bias"].dim_axes == (("tp",),)
    assert got["layers.0.fc2.weight"].dim_axes == ((), ("tp",))
    assert got["layers.0.norm.running_mean"].dim_axes == (("tp",),)
    for name in (
        "head.weight",
        "layers.0.norm.weight",
        "layers.1.norm.running_var",
        "layers.0.norm.num_batches_tracked",
    ):
        assert got[name].is_replicated and got[name].mesh == MESH, name
    assert all(p.requires_grad for p in net.parameters())
    after = net.state_dict()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key].numpy(), value)
    net.train()
    x, _ = shard_batch((RNG.standard_normal((6, 4)).astype(np.float32), None), MESH, "dp")
    assert net(x).shape == (6, 2)


def test_shard_module_default_spec_and_resharding():
    model = shard_module(mlp(), TP, default=P())
    assert all(p.sharding.is_replicated for p in model.parameters())
    shard_module(model, MESH, MEGATRON)  # onto another mesh and layout
    assert model[0].weight.sharding.mesh == MESH and model[0].weight.sharding.dim_axes == (("tp",), ())
    np.testing.assert_array_equal(model[0].weight.numpy(), mlp()[0].weight.numpy())
    shard_module(model, MESH, {"0.weight": P(None, "dp")})  # another layout on the same mesh
    assert model[0].weight.sharding.dim_axes == ((), ("dp",)) and model[0].bias.sharding.is_replicated
    assert all(p.is_realized for p in model.parameters())
    for a, b in zip(model.parameters(), mlp().parameters(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (
            {"*.fc3.weight": P()},
            r"pattern '\*\.fc3\.weight' matches no parameter or buffer; available names: 0\.weight",
        ),
        ({re.compile("fc"): P()}, r"pattern re 'fc' matches no parameter"),
        ({"fc1": colwise()}, r"module pattern 'fc1' matches no submodule; available modules: 0, 1, 2"),
        ({"0": {"gamma": P()}}, r"'0' matches module '0' \(Linear\), which has no parameter or buffer 'gamma'"),
        (
            {"0.weight": P("tp")},
            r"'0\.weight' gives 0\.weight \(shape \(32, 12\)\) the spec P\('tp'\) with 1 entries, "
            r"the tensor has rank 2",
        ),
        ({"*.bias": P(None, "tp")}, r"gives 0\.bias \(shape \(32,\)\) the spec P\(None, 'tp'\) with 2 entries"),
        ({"0.weight": P("xx", None)}, r"gives 0\.weight \(shape \(32, 12\)\) the spec P\('xx', None\)"),
        ({"0.weight": "tp"}, r"gives 0\.weight \(shape \(32, 12\)\) 'tp'; expected a P"),
        (
            {"*.weight": P(), "0.*": P("tp", None)},
            r"0\.weight is matched by '\*\.weight' \(spec P\(\)\) and by '0\.\*'",
        ),
        ({3: P()}, r"plan keys must be str \(glob\) or re\.Pattern"),
    ],
)
def test_shard_module_errors(plan, message):
    model = mlp()
    with pytest.raises((ValueError, TypeError), match=message):
        shard_module(model, TP, plan)
    assert all(p.sharding is None for p in model.parameters()), "a bad plan changes nothing"


def test_shard_module_argument_errors():
    with pytest.raises(TypeError, match="expected a Module"):
        shard_module({"w": nb.ones(2)}, TP)
    with pytest.raises(TypeError, match="mesh must be a DeviceMesh"):
        shard_module(mlp(), ("tp",))
    other = DeviceMesh("other", (2,), ("tp",))
    spec = nb.shard(nb.ones((32, 12)), other, P("tp", None)).sharding
    with pytest.raises(ValueError, match="a spec on mesh 'other', expected mesh 'tp2'"):
        shard_module(mlp(), TP, {"0.weight": spec})


def test_overlapping_patterns_that_agree_are_fine():
    model = shard_module(mlp(), TP, {"*.weight": P(), "0.*": P()})
    assert all(p.sharding.is_replicated for p in model.parameters())


# -- shard_batch -------------------------------------------------------------------------------------
def test_shard_batch_nested():
    batch = {
        "x": RNG.standard_normal((8, 3)).astype(np.float32),
        "pair": (nb.arange(8), np.float32(2.0)),
        "n": 5,
        "name": "batch",
    }
    out = shard_batch(batch, MESH, "dp")
    assert out["x"].sharding.dim_axes == (("dp",), ())
    assert out["pair"][0].sharding.dim_axes == (("dp",),)
    assert out["pair"][1].sharding.is_replicated  # 0-d: replicated
    assert out["n"] == 5 and out["name"] == "batch"
    np.testing.assert_array_equal(out["x"].numpy(), batch["x"])
    assert [s.shape for s in out["x"].shards()] == [(4, 3)] * 4
    both = shard_batch(batch["x"], MESH, ("dp", "tp"))
    assert [s.shape for s in both.shards()] == [(2, 3)] * 4
    with pytest.raises(ValueError, match=r"'batch' is not an axis of mesh 'm22' \('dp', 'tp'\)"):
        shard_batch(batch, MESH, "batch")
    with pytest.raises(TypeError, match="mesh must be a DeviceMesh"):
        shard_batch(batch, "dp")


# -- state_dict and checkpoints --------------------------------------------------------------------------
def test_state_dict_of_a_sharded_model_is_layout_independent():
    model = shard_module(mlp(), MESH, MEGATRON)
    state = model.state_dict()
    want = mlp().state_dict()
    assert list(state) == list(want)
    for key, value in state.items():
        assert value.sharding is None and value.shape == want[key].shape
        np.testing.assert_array_equal(value.numpy(), want[key].numpy())
    assert all(p.sharding is not None for p in model.parameters()), "state_dict() leaves the model alone"
    kept = model.state_dict(keep_vars=True)
    assert kept["0.weight"] is model[0].weight


def test_tied_sharded_parameters_assemble_once():
    model = mlp()
    model[2].weight = nn.Parameter(nb.zeros((4, 32)))
    model.extra = nn.Linear(32, 4)
    model.extra.weight = model[2].weight
    shard_module(model, TP, {"2.weight": P(None, "tp")})
    assert model.extra.weight.sharding == model[2].weight.sharding
    state = model.state_dict()
    assert state["2.weight"]._impl.data is state["extra.weight"]._impl.data


def test_save_and_load_round_trip_keeps_each_models_layout(tmp_path):
    batches = classification(3)
    trained, _ = train(mlp, adam, F.cross_entropy, batches, MESH, MEGATRON, "dp")
    path = tmp_path / "mlp.safetensors"
    nn.save(trained, path)
    want = {k: v.numpy() for k, v in trained.state_dict().items()}
    for mesh, plan in ((TP, MEGATRON), (DP, None), (None, None)):
        model = mlp() if mesh is None else shard_module(mlp(), mesh, plan)
        before = layouts(model)
        model.load_weights(path)
        assert layouts(model) == before
        for key, value in model.state_dict().items():
            np.testing.assert_array_equal(value.numpy(), want[key])
    loaded = nn.load(path)
    assert all(v.sharding is None for v in loaded.values())


def test_load_state_dict_between_layouts():
    source = shard_module(mlp(), MESH, MEGATRON)
    for p in source.parameters():
        p.data = p.data * 2.0
    nb.evaluate(*source.parameters())
    plain = mlp()
    plain.load_state_dict(source.state_dict(keep_vars=True))  # sharded values into an unsharded model
    assert all(p.sharding is None for p in plain.parameters())
    np.testing.assert_array_equal(plain[0].weight.numpy(), 2.0 * mlp()[0].weight.numpy())
    target = shard_module(mlp(), TP, {"0": rowwise("tp")})
    target.load_state_dict(source.state_dict(keep_vars=True))  # one layout into another
    assert target[0].weight.sharding.dim_axes == ((), ("tp",))
    np.testing.assert_array_equal(target[0].weight.numpy(), plain[0].weight.numpy())
    target.load_state_dict({k: v.numpy() for k, v in plain.state_dict().items()})  # NumPy values
    assert target[0].weight.sharding.dim_axes == ((), ("tp",))


def test_bfloat16_sharded_model_saves_and_loads(tmp_path):
    model = shard_module(mlp().to(nb.bfloat16), TP, MEGATRON)
    assert model[0].weight.dtype == nb.bfloat16 and model[0].weight.sharding is not None
    path = tmp_path / "bf16.safetensors"
    nn.save(model, path)
    fresh = shard_module(mlp().to(nb.bfloat16), TP, MEGATRON)
    for p in fresh.parameters():
        p.data = p.data * 0.0
    fresh.load_weights(path)
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert b.dtype == nb.bfloat16 and b.sharding is None, name
        # (the NumPy executor holds bf16 values unrounded; the file holds them rounded)
        np.testing.assert_array_equal(S.bf16_bits_to_float32(S.float32_to_bf16_bits(a.numpy())), b.numpy())
    assert fresh[0].weight.sharding.dim_axes == (("tp",), ())


# -- optimizer state_dict ----------------------------------------------------------------------------
def setup(make_opt, mesh=None, plan=None) -> tuple[nn.Module, optim.Optimizer]:
    model = mlp() if mesh is None else shard_module(mlp(), mesh, plan)
    return model, make_opt(model.parameters())


def fit(model: nn.Module, opt: optim.Optimizer, batches: list, mesh=None, axis=None) -> None:
    for x, y in batches:
        x, y = nb.tensor(x), nb.tensor(y)
        if axis is not None:
            x, y = shard_batch((x, y), mesh, axis)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


def state_layouts(opt: optim.Optimizer) -> list[dict]:
    return [{k: v.sharding for k, v in opt.state[p].items()} for g in opt.param_groups for p in g["params"]]


def assert_same_optimizer_state(got: dict, want: dict, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert got["param_groups"] == want["param_groups"]
    assert list(got["state"]) == list(want["state"])
    for i, entry in want["state"].items():
        assert list(got["state"][i]) == list(entry)
        for key, value in entry.items():
            value = value.numpy() if isinstance(value, nb.Tensor) else value.detach().numpy()
            assert got["state"][i][key].sharding is None, f"{i}.{key}: a state_dict holds assembled tensors"
            assert got["state"][i][key].numpy().dtype == value.dtype, f"{i}.{key}"
            np.testing.assert_allclose(got["state"][i][key].numpy(), value, rtol=rtol, atol=atol, err_msg=f"{i}.{key}")


RESUME_CASES = {
    "data parallel, Adam": (DP, None, "dp", adam),
    "data parallel, SGD with momentum": (DP, None, "dp", sgd_momentum),
    "tensor parallel (Megatron), Adam": (TP, MEGATRON, None, adam),
    "tensor parallel (Megatron), SGD with momentum": (TP, MEGATRON, None, sgd_momentum),
}


@pytest.mark.parametrize("case", list(RESUME_CASES))
def test_optimizer_state_dict_of_sharded_training_is_single_devices_and_resumes(case):
    mesh, plan, axis, make_opt = RESUME_CASES[case]
    batches = classification(5)
    reference, ref_opt = setup(make_opt)
    fit(reference, ref_opt, batches[:3])
    ref_state = ref_opt.state_dict()
    fit(reference, ref_opt, batches[3:])

    nb.GRAPH.clear_cache()
    nb.reset_cache_info()
    model, opt = setup(make_opt, mesh, plan)
    fit(model, opt, batches[:3], mesh, axis)
    layouts_before = state_layouts(opt)
    assert layouts_before[0]["step" if make_opt is adam else "momentum_buffer"].mesh == mesh
    assert all(s is not None for entry in layouts_before for s in entry.values()), "state lives on the mesh"
    if make_opt is adam:
        assert layouts_before[0]["exp_avg"] == model[0].weight.sharding.without_partial()
        assert layouts_before[0]["step"].is_replicated
    state = opt.state_dict()
    assert_same_optimizer_state(state, ref_state)
    assert state_layouts(opt) == layouts_before, "state_dict() leaves the optimizer alone"
    weights = model.state_dict()
    assert nb.cache_info().misses == 1

    # a sharded run's checkpoint and a single-device run's, into a sharded model; a sharded one into a plain one
    for target, source in ((mesh, state), (mesh, ref_state), (None, state)):
        resumed, resumed_opt = setup(make_opt, target, plan)
        resumed.load_state_dict(weights)
        resumed_opt.load_state_dict(source)
        if target is None:
            assert all(s is None for entry in state_layouts(resumed_opt) for s in entry.values())
            fit(resumed, resumed_opt, batches[3:])
        else:
            assert state_layouts(resumed_opt) == layouts_before
            fit(resumed, resumed_opt, batches[3:], mesh, axis)
            assert nb.cache_info().misses == 1, "the resumed step is the uninterrupted run's cached step"
        assert_same_state(resumed, reference)
        assert_same_optimizer_state(resumed_opt.state_dict(), ref_opt.state_dict())


@needs_torch
def test_torch_optimizer_state_dict_round_trips_through_a_sharded_optimizer():
    batches = classification(5)
    tmodel = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mlp().state_dict().items()})
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-2, foreach=False)

    def torch_fit(steps: list) -> None:
        for x, y in steps:
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tmodel(torch.tensor(x)), torch.tensor(y)).backward()
            topt.step()

    torch_fit(batches[:3])
    model, opt = setup(adam, MESH, MEGATRON)
    model.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    opt.load_state_dict(topt.state_dict())
    for p in model.parameters():
        assert opt.state[p]["exp_avg"].sharding == p.sharding.without_partial()
        assert opt.state[p]["exp_avg_sq"].sharding == p.sharding.without_partial()
        assert opt.state[p]["step"].sharding.mesh == MESH and opt.state[p]["step"].sharding.is_replicated
    assert_same_optimizer_state(opt.state_dict(), topt.state_dict(), rtol=0, atol=0)
    torch_fit(batches[3:])
    fit(model, opt, batches[3:], MESH, "dp")
    for (name, got), want in zip(model.state_dict().items(), tmodel.state_dict().values(), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert_same_optimizer_state(opt.state_dict(), topt.state_dict())


# -- SyncBatchNorm -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(8, 3), (6, 3, 5, 4)], ids=["NC", "NCHW"])
def test_sync_batch_norm_takes_statistics_over_the_whole_split_batch(shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3 + 1
    sync, plain = nn.SyncBatchNorm(3), nn.BatchNorm1d(3) if len(shape) == 2 else nn.BatchNorm2d(3)
    xs = shard_batch(nb.tensor(x), DP, "dp")
    y = sync(xs)
    assert "all_gather" not in count_collectives(y) and count_collectives(y).get("all_reduce", 0) >= 1
    np.testing.assert_allclose(y.numpy(), plain(nb.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(sync, name).numpy(), getattr(plain, name).numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"SyncBatchNorm.*\(N, 3, \*\)"):
        sync(nb.ones(3))


def test_convert_sync_batchnorm_keeps_parameters_buffers_and_mode():
    nb.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.Flatten(), nn.BatchNorm1d(16)))
    model[2][1].eval()
    x = nb.tensor(RNG.standard_normal((5, 3, 4, 4)).astype(np.float32))
    weight = model[1].weight
    want = model(x).numpy()
    model[1].running_mean.data = nb.zeros(4)  # undo the reference forward's running-stat update
    model[1].running_var.data = nb.ones(4)
    model[1].num_batches_tracked.data = nb.tensor(np.array(0, np.int64))
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and type(model[1]) is nn.SyncBatchNorm and type(model[2][1]) is nn.SyncBatchNorm
    assert model[1].weight is weight and model[1].training and not model[2][1].training
    assert list(model.state_dict()) == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
        "2.1.weight", "2.1.bias", "2.1.running_mean", "2.1.running_var", "2.1.num_batches_tracked",
    ]  # fmt: skip
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="process_group must be None"):
        nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group="world")


@needs_torch
def test_sync_batch_norm_matches_torch_outside_distributed_training():
    x = RNG.standard_normal((6, 3, 5)).astype(np.float32)
    ours, theirs = nn.SyncBatchNorm(3, momentum=None), torch.nn.SyncBatchNorm(3, momentum=None)
    np.testing.assert_allclose(ours(nb.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-5)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5)


# -- DataParallel ---------------------------------------------------------------------------------
def test_data_parallel_splits_the_batch_and_trains_like_the_module():
    nb.manual_seed(0)
    ref = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4))
    nb.manual_seed(0)
    model = nn.DataParallel(nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4)), device_ids=[0, 1, 2])
    assert list(model.state_dict()) == [f"module.{k}" for k in ref.state_dict()]  # PyTorch's keys
    opts = [optim.SGD(m.parameters(), lr=0.1) for m in (ref, model)]
    for x, y in classification(3, n=7):  # 7 rows over 3 devices: an uneven split
        losses = []
        for m, opt in zip((ref, model), opts, strict=True):
            opt.zero_grad()
            out = m(nb.tensor(x))
            loss = F.cross_entropy(out, nb.tensor(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert out.sharding is None and out.shape == (7, 4)  # gathered back whole
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    for a, b in zip(ref.parameters(), model.parameters(), strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    seen = []
    model.module.register_forward_pre_hook(lambda mod, args: seen.append(args[0].sharding))
    model(nb.tensor(classification(1)[0][0]))
    assert seen[0].mesh.size == 3 and seen[0].dim_axes[0] == ("dp",)  # the module ran on the split batch
    with pytest.raises(ValueError, match=r"split along dim 0 over 3 devices, got a tensor of shape \(2, 12\)"):
        model(nb.ones(2, 12))
    assert nn.DataParallel(ref)(nb.ones(2, 12)).shape == (2, 4)  # one device: the module's own forward
