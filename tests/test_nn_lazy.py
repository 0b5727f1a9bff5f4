"""Lazy modules (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*),
UninitializedParameter / UninitializedBuffer and nn.Buffer.

Without torch: placeholders before the dry run, shapes and classes after it, default init,
outputs equal to the regular layer holding the same weights, state_dict loading into an
uninitialized module, directly or through a parent module (and its undo on failure),
optimizers after the dry run, Buffer registration. Against PyTorch (when installed): state_dict
keys and shapes after the dry run, reprs before and after, outputs and gradients with torch's
weights, loading through a parent (classes, shapes, outputs, missing keys), and Buffer semantics.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_optim as optim
from nabla_nn.module import Module
from nabla_nn.modules.activation import ReLU
from nabla_nn.modules.container import Sequential
from nabla_nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from nabla_nn.modules.lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from nabla_nn.modules.linear import Linear
from nabla_nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from nabla_nn.parameter import Buffer, Parameter, is_lazy

RNG = np.random.default_rng(5)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def assert_close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# (lazy class, constructor args, input shape, the class it becomes, the regular constructor's args)
CASES = [
    (LazyLinear, (4,), (2, 3, 5), Linear, (5, 4)),
    (LazyLinear, (4, False), (5,), Linear, (5, 4, False)),
    (LazyConv1d, (6, 3), (2, 4, 9), Conv1d, (4, 6, 3)),
    (LazyConv1d, (6, 3, 2, 1, 1, 2), (4, 9), Conv1d, (4, 6, 3, 2, 1, 1, 2)),
    (LazyConv2d, (6, 3), (2, 4, 7, 7), Conv2d, (4, 6, 3)),
    (LazyConv2d, (4, (3, 1), 1, "same", 1, 2, False, "reflect"), (2, 6, 5, 5), Conv2d, None),
    (LazyConvTranspose1d, (6, 3, 2), (2, 4, 5), ConvTranspose1d, (4, 6, 3, 2)),
    (LazyConvTranspose2d, (6, 3, 1, 1, 0, 2), (4, 5, 5), ConvTranspose2d, (4, 6, 3, 1, 1, 0, 2)),
    (LazyBatchNorm1d, (), (5, 4), BatchNorm1d, (4,)),
    (LazyBatchNorm1d, (1e-3, None), (5, 4, 3), BatchNorm1d, (4, 1e-3, None)),
    (LazyBatchNorm2d, (), (5, 4, 2, 2), BatchNorm2d, (4,)),
    (LazyBatchNorm2d, (1e-5, 0.1, False, False), (5, 4, 2, 2), BatchNorm2d, (4, 1e-5, 0.1, False, False)),
    (LazyInstanceNorm1d, (), (2, 4, 6), InstanceNorm1d, (4, 1e-5, 0.1, True, True)),
    (LazyInstanceNorm1d, (1e-5, 0.1, False, False), (4, 6), InstanceNorm1d, (4,)),
    (LazyInstanceNorm2d, (1e-5, 0.1, True, False), (2, 4, 3, 3), InstanceNorm2d, (4, 1e-5, 0.1, True)),
    (LazyInstanceNorm2d, (1e-5, 0.1, True, True), (4, 3, 3), InstanceNorm2d, (4, 1e-5, 0.1, True, True)),
    (LazyConv3d, (6, 3), (2, 4, 4, 5, 5), Conv3d, (4, 6, 3)),
    (LazyConvTranspose3d, (6, 3, 2), (4, 3, 3, 3), ConvTranspose3d, (4, 6, 3, 2)),
    (LazyBatchNorm3d, (), (3, 4, 2, 2, 2), BatchNorm3d, (4,)),
    (LazyInstanceNorm3d, (1e-5, 0.1, True, False), (2, 4, 2, 3, 3), InstanceNorm3d, (4, 1e-5, 0.1, True)),
]
IDS = [f"{c[0].__name__}{c[1]}" for c in CASES]
# PyTorch's lazy instance norms read the channels of an unbatched input from dim 1 (its length).
_UNBATCHED_INSTANCE = {(LazyInstanceNorm1d, 2), (LazyInstanceNorm2d, 3)}
TORCH_CASES = [c for c in CASES if (c[0], len(c[2])) not in _UNBATCHED_INSTANCE]
NORMS = (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)


def _case_id(case: tuple) -> str:
    return f"{case[0].__name__}{case[1]}"


def _lazy_tensors(m: Module) -> list:
    return [t for t in (*m._parameters.values(), *m._buffers.values()) if is_lazy(t)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_dry_run_materializes_and_changes_class(case):
    cls, args, shape, target, _ = case
    m = cls(*args)
    params = list(m.parameters())
    assert all(isinstance(p, UninitializedParameter) for p in params)
    for t in _lazy_tensors(m):
        with pytest.raises(RuntimeError, match="uninitialized parameter or buffer.*dry run"):
            t.shape  # noqa: B018
    x = nb.tensor(randn(*shape))
    out = m(x)
    assert type(m) is target
    assert not _lazy_tensors(m)
    assert "_initialize_hook" not in m.__dict__ and not m._forward_pre_hooks
    # The same objects, now ordinary parameters (references taken before stay valid).
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(type(p) is Parameter for p in params)
    assert out.shape == m(x).shape


@pytest.mark.parametrize("case", [c for c in CASES if c[4] is not None], ids=_case_id)
def test_matches_the_regular_layer(case):
    """Same state_dict names and shapes as the regular layer; with its weights, the same output."""
    cls, args, shape, target, regular_args = case
    m, ref = cls(*args), target(*regular_args)
    x = nb.tensor(randn(*shape))
    m(x)
    assert {k: v.shape for k, v in m.state_dict().items()} == {k: v.shape for k, v in ref.state_dict().items()}
    assert list(m.state_dict()) == list(ref.state_dict())
    assert repr(m) == repr(ref)
    m.load_state_dict(ref.state_dict())
    m.train(False), ref.train(False)
    assert_close(m(x).numpy(), ref(x).numpy())


def test_default_initialization():
    """Weights are drawn with the regular layer's init at the dry run, none at construction."""
    nb.manual_seed(0)
    m = LazyLinear(40)
    after_lazy = Linear(7, 3).weight.numpy()
    nb.manual_seed(0)
    assert_close(Linear(7, 3).weight.numpy(), after_lazy, 0)  # constructing LazyLinear drew nothing
    m(nb.ones(2, 9))
    bound = 1 / math.sqrt(9)
    w, b = m.weight.numpy(), m.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound and w.std() > bound / 4
    conv = LazyConv2d(8, 3)
    conv(nb.ones(1, 2, 5, 5))
    assert np.abs(conv.weight.numpy()).max() <= 1 / math.sqrt(2 * 9) and conv.weight.numpy().std() > 0
    bn = LazyBatchNorm2d()
    bn(nb.ones(2, 3, 2, 2))
    assert_close(bn.weight.numpy(), np.ones(3), 0)
    assert_close(bn.running_var.numpy(), np.full(3, 1.0 - 0.1), 1e-6)  # one batch of variance 0 seen
    assert bn.num_batches_tracked.item() == 1


def test_reprs_and_placeholders():
    m = LazyLinear(4)
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert repr(m.weight) == "<UninitializedParameter>"
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"] and all(is_lazy(v) for v in sd.values())
    bn = LazyBatchNorm1d()
    assert repr(bn) == "LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert isinstance(bn.running_mean, UninitializedBuffer) and not bn.running_mean.requires_grad
    assert repr(LazyConv2d(6, 3, stride=2)) == "LazyConv2d(0, 6, kernel_size=(3, 3), stride=(2, 2))"
    with pytest.raises(TypeError, match="no value to pickle"):
        copy.copy(m.weight).__reduce_ex__(2)


@needs_torch
@pytest.mark.parametrize("name, shape", [("LazyBatchNorm1d", (6, 3)), ("LazyInstanceNorm2d", (2, 3, 4, 4))])
def test_lazy_norm_without_bias_matches_torch(name, shape):
    # torch 2.13's lazy norms take a keyword-only bias: bias=False leaves an affine weight alone.
    layer, ref = globals()[name](bias=False), getattr(torch.nn, name)(bias=False)
    assert repr(layer) == repr(ref) and layer.bias is None
    assert list(layer.state_dict()) == list(ref.state_dict())
    x = RNG.standard_normal(shape).astype(np.float32)
    xt, xn = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    yt, y = ref(xt), layer(xn)
    assert_close(y.numpy(), yt.detach().numpy(), 1e-5)
    assert repr(layer) == repr(ref) and list(layer.state_dict()) == list(ref.state_dict())
    cot = RNG.standard_normal(shape).astype(np.float32)
    (yt * torch.tensor(cot)).sum().backward()
    (y * nb.tensor(cot)).sum().backward()
    assert_close(xn.grad.numpy(), xt.grad.numpy(), 1e-4)
    assert_close(layer.weight.grad.numpy(), ref.weight.grad.numpy(), 1e-4)


def test_dtype_set_before_the_dry_run():
    m = LazyConv1d(3, 2, dtype=nb.float64)
    assert m.weight.dtype == nb.float64
    m = Sequential(LazyLinear(3), LazyBatchNorm1d())
    m.to(nb.float64)
    m(nb.ones(4, 2, dtype=nb.float64))
    assert all(t.dtype == nb.float64 for t in m.parameters())
    assert m[1].running_mean.dtype == nb.float64
    with pytest.raises(TypeError, match="floating dtype"):
        LazyLinear(3, dtype=nb.int64)


def test_load_state_dict_materializes():
    ref = Linear(5, 3)
    m = LazyLinear(3)
    result = m.load_state_dict(ref.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert m.in_features == 5 and m.weight.shape == (3, 5) and type(m.weight) is Parameter
    assert_close(m.weight.numpy(), ref.weight.numpy(), 0)
    x = nb.tensor(randn(2, 5))
    assert_close(m(x).numpy(), ref(x).numpy())  # the dry run keeps the loaded values
    assert type(m) is Linear
    conv, ref = LazyConvTranspose2d(4, 3, groups=2), ConvTranspose2d(6, 4, 3, groups=2)
    conv.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})  # NumPy values too
    assert conv.in_channels == 6
    bn, ref = LazyBatchNorm2d(affine=False), BatchNorm2d(7, affine=False)
    bn.load_state_dict(ref.state_dict())
    assert bn.num_features == 7 and bn.running_mean.shape == (7,)


def test_failed_load_leaves_the_module_lazy():
    m = LazyLinear(3)
    bad = {"weight": np.zeros((3, 5), np.float32), "bias": np.zeros((4,), np.float32)}
    with pytest.raises(RuntimeError, match=r"bias: shape \(4,\) in the state_dict, expected \(3,\)"):
        m.load_state_dict(bad)
    assert isinstance(m.weight, UninitializedParameter) and isinstance(m.bias, UninitializedParameter)
    assert m.in_features == 0 and type(m) is LazyLinear
    with pytest.raises(RuntimeError, match="unexpected key"):
        m.load_state_dict({**Linear(5, 3).state_dict(), "extra": np.zeros(1)})
    assert isinstance(m.weight, UninitializedParameter) and m.in_features == 0
    with pytest.raises(RuntimeError, match=r"weight: the module's tensor is an uninitialized placeholder"):
        m.load_state_dict({"weight": "w", "bias": np.zeros(3, np.float32)})
    assert isinstance(m.weight, UninitializedParameter)
    m(nb.ones(1, 2))
    assert m.weight.shape == (3, 2)


def test_nested_lazy_module_after_a_dry_run_loads():
    model = Sequential(LazyLinear(4), LazyLinear(2))
    model(nb.ones(1, 3))
    other = Sequential(Linear(3, 4), Linear(4, 2))
    model.load_state_dict(other.state_dict())
    assert_close(model[1].weight.numpy(), other[1].weight.numpy(), 0)


# (lazy class, its args, the regular class, its args, input shape, the size attribute)
PARENT_CASES = [
    (LazyLinear, (4,), Linear, (5, 4), (3, 5), "in_features"),
    (LazyConv2d, (4, 3, 1, 1), Conv2d, (3, 4, 3, 1, 1), (2, 3, 6, 6), "in_channels"),
    (LazyBatchNorm1d, (), BatchNorm1d, (7,), (6, 7), "num_features"),
]


def _parent_sd(ref: Module, prefix: str = "0.") -> dict:
    return {prefix + k: v for k, v in ref.state_dict().items()}


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
@pytest.mark.parametrize("case", PARENT_CASES, ids=lambda c: c[0].__name__)
def test_load_through_a_parent_materializes(case, strict):
    """model.load_state_dict(sd) materializes a lazy submodule from its prefix's entries; the
    first forward keeps the loaded values and makes it the regular class."""
    cls, args, regular, regular_args, shape, size = case
    ref = regular(*regular_args)
    x = nb.tensor(randn(*shape))
    ref(x)  # a BatchNorm's running stats move away from their defaults
    ref.train(False)
    model = Sequential(Sequential(cls(*args), ReLU()))  # nested: the prefix is "0.0."
    lazy = model[0][0]
    result = model.load_state_dict(_parent_sd(ref, "0.0."), strict=strict)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert type(lazy) is cls and not _lazy_tensors(lazy)  # PyTorch's class until the first forward
    assert getattr(lazy, size) == getattr(ref, size)
    for name, value in ref.state_dict().items():
        assert_close(lazy.state_dict()[name].numpy(), value.numpy(), 0)
    model.train(False)
    assert_close(model(x).numpy(), np.maximum(ref(x).numpy(), 0))
    assert type(lazy) is regular and repr(lazy) == repr(ref)
    for name, value in ref.state_dict().items():  # the dry run did not re-initialize them
        assert_close(lazy.state_dict()[name].numpy(), value.numpy(), 0)


def test_load_through_a_parent_missing_keys_stay_lazy():
    model = Sequential(LazyLinear(4), ReLU(), LazyLinear(2))
    sd = _parent_sd(Linear(3, 4))
    with pytest.raises(RuntimeError, match=r"for Sequential:\n  missing key\(s\): 2\.weight, 2\.bias$"):
        model.load_state_dict(sd)
    assert isinstance(model[0].weight, UninitializedParameter) and model[0].in_features == 0  # unchanged
    result = model.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["2.weight", "2.bias"] and result.unexpected_keys == []
    assert model[0].weight.shape == (4, 3) and model[0].in_features == 3
    assert len(_lazy_tensors(model[2])) == 2 and model[2].in_features == 0 and type(model[2]) is LazyLinear
    assert_close(model[0].weight.numpy(), sd["0.weight"].numpy(), 0)
    assert model(nb.ones(5, 3)).shape == (5, 2)  # the dry run initializes what was not loaded
    assert model[2].weight.shape == (2, 4) and type(model[2]) is Linear
    assert_close(model[0].weight.numpy(), sd["0.weight"].numpy(), 0)


def test_failed_load_through_a_parent_leaves_the_model_unchanged():
    model = Sequential(LazyLinear(4), LazyBatchNorm1d(), Linear(4, 2))
    lin, bn, last = model
    before = last.weight.numpy().copy()
    good = {**_parent_sd(Linear(3, 4)), **_parent_sd(BatchNorm1d(4), "1."), **_parent_sd(Linear(4, 2), "2.")}

    def assert_unchanged():
        assert type(lin) is LazyLinear and type(bn) is LazyBatchNorm1d
        assert len(_lazy_tensors(lin)) == 2 and len(_lazy_tensors(bn)) == 4
        assert lin.in_features == 0 and bn.num_features == 0 and bn.num_batches_tracked.item() == 0
        assert_close(last.weight.numpy(), before, 0)

    bad_shape = {**good, "2.weight": np.zeros((3, 4), np.float32)}  # a regular layer's shape
    with pytest.raises(RuntimeError, match=r"2\.weight: shape \(3, 4\) in the state_dict, the module has"):
        model.load_state_dict(bad_shape)
    assert_unchanged()
    with pytest.raises(RuntimeError, match=r"unexpected key\(s\): extra"):
        model.load_state_dict({**good, "extra": np.zeros(1, np.float32)})
    assert_unchanged()
    bad_lazy = {**good, "0.bias": np.zeros(5, np.float32)}  # fits no LazyLinear(4)
    with pytest.raises(RuntimeError, match=r"for Sequential:\n  0\.bias: shape \(5,\) in the state_dict, expected"):
        model.load_state_dict(bad_lazy, strict=False)
    assert_unchanged()
    bad_value = {**good, "1.running_var": "v"}  # the second lazy module fails after the first
    with pytest.raises(RuntimeError, match=r"1\.running_var: the module's tensor is an uninitialized placeholder"):
        model.load_state_dict(bad_value)
    assert_unchanged()
    model.load_state_dict(good)  # and a good load still works afterwards
    assert lin.weight.shape == (4, 3) and bn.num_features == 4 and not _lazy_tensors(bn)
    assert_close(last.weight.numpy(), good["2.weight"].numpy(), 0)


@pytest.mark.parametrize("early", [False, True], ids=["after-dry-run", "before-dry-run"])
def test_optimizer_and_training(early):
    """The documented order: dry run, then the optimizer. One created before it also works in
    nabla (state is built at the first step; the placeholders became these parameters)."""
    model = Sequential(LazyLinear(4), LazyBatchNorm1d(), LazyLinear(1))
    x, y = nb.tensor(randn(8, 3)), nb.tensor(randn(8, 1))
    opt = optim.Adam(model.parameters(), lr=0.1) if early else None
    model(x)  # dry run
    opt = opt or optim.Adam(model.parameters(), lr=0.1)
    before = model[0].weight.numpy().copy()
    for _ in range(2):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert not np.allclose(model[0].weight.numpy(), before)


def test_bad_first_input_names_the_layer_and_keeps_it_lazy():
    m = LazyConv2d(4, 3)
    with pytest.raises(ValueError, match=r"\(LazyConv2d 0 4 .*\) got input \(2, 3\), expected \(N, C, H, W\) or"):
        m(nb.ones(2, 3))
    assert type(m) is LazyConv2d and isinstance(m.weight, UninitializedParameter)
    with pytest.raises(ValueError, match=r"got input \(2, 3\), expected \(N, C, D, H, W\) or \(C, D, H, W\)"):
        LazyConv3d(4, 3)(nb.ones(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups .*in_channels=3 .*groups=2"):
        LazyConv1d(4, 3, groups=2)(nb.ones(1, 3, 5))
    with pytest.raises(ValueError, match=r"got input \(5,\), expected \(N, C\) or \(N, C, L\)"):
        LazyBatchNorm1d()(nb.ones(5))
    with pytest.raises(ValueError, match=r"expected \(\*, in_features\)"):
        LazyLinear(3)(nb.tensor(1.0))
    with pytest.raises(ValueError, match="out_features must be a non-negative int"):
        LazyLinear(-1)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        LazyConv2d(5, 3, groups=2)


def test_uninitialized_tensors_materialize():
    p = UninitializedParameter(requires_grad=False, dtype=nb.float64)
    p.materialize((2, 3))
    assert type(p) is Parameter and p.shape == (2, 3) and p.dtype == nb.float64 and not p.requires_grad
    b = UninitializedBuffer(persistent=False)
    b.materialize((4,), dtype=nb.float16)
    assert type(b) is Buffer and b.shape == (4,) and b.dtype == nb.float16 and b.persistent is False
    with pytest.raises(ValueError, match="device argument: device gpu:63 is not available"):
        UninitializedParameter(device="cuda:63")
    with pytest.raises(ValueError, match="device must be 'cpu', 'gpu', 'gpu:N' or 'cuda:N', got 'tpu'"):
        UninitializedBuffer(device="tpu")


# -- Buffer -------------------------------------------------------------------------------------------
class _WithBuffers(Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = Buffer(nb.ones(3))
        self.cache = Buffer(nb.zeros(2), persistent=False)
        self.plain = nb.zeros(1)  # a plain tensor attribute is not registered

    def forward(self, x):
        return x * self.scale


def test_buffer_assignment_registers():
    m = _WithBuffers()
    assert [n for n, _ in m.named_buffers()] == ["scale", "cache"]
    assert list(m.state_dict()) == ["scale"]
    assert list(m.parameters()) == []
    assert isinstance(m.scale, Buffer) and m.scale.persistent and not m.cache.persistent
    m.cache = Buffer(nb.ones(2))  # persistent now
    assert list(m.state_dict()) == ["scale", "cache"]
    m.scale = nb.full((3,), 2.0)  # a plain tensor assigned to a buffer name stays a buffer
    assert_close(m(nb.ones(3)).numpy(), np.full(3, 2.0), 0)
    m.to(nb.float64)
    assert m.scale.dtype == nb.float64 and m.cache.dtype == nb.float64
    clone = copy.deepcopy(m)
    assert clone.cache.persistent and isinstance(clone.cache, Buffer)
    with pytest.raises(TypeError, match="cannot assign 'Buffer' as parameter 'w'"):
        m.register_parameter("w", None)
        m.w = Buffer(nb.ones(1))
    b = Buffer(nb.tensor([1.0, 2.0], requires_grad=True))
    assert b.requires_grad and b.is_leaf
    assert Buffer().shape == (0,)


def test_buffer_before_module_init_raises():
    class Early(Module):
        def __init__(self) -> None:
            self.b = Buffer(nb.ones(1))
            super().__init__()

    with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):
        Early()


@needs_torch
def test_buffer_matches_torch():
    class T(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Buffer(torch.ones(3))
            self.cache = torch.nn.Buffer(torch.zeros(2), persistent=False)

    t, m = T(), _WithBuffers()
    assert [n for n, _ in t.named_buffers()] == [n for n, _ in m.named_buffers()]
    assert list(t.state_dict()) == list(m.state_dict())


# -- against PyTorch ----------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("case", TORCH_CASES, ids=_case_id)
def test_lazy_matches_torch(case):
    cls, args, shape, target, _ = case
    m, tm = cls(*args), getattr(torch.nn, cls.__name__)(*args)
    if cls not in NORMS:  # torch >= 2.x norms also print bias=..., which nabla's norms do not take
        assert repr(m) == repr(tm)
    x = randn(*shape)
    tm(torch.tensor(x))
    m(nb.tensor(x))
    assert type(m).__name__ == type(tm).__name__ == target.__name__
    tsd = tm.state_dict()
    assert list(m.state_dict()) == list(tsd)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {k: tuple(v.shape) for k, v in tsd.items()}
    if cls not in NORMS:
        assert repr(m) == repr(tm)
    else:  # torch leaves num_features 0 when nothing was materialized
        assert getattr(tm, "num_features", 0) in (0, m.num_features)
        assert (m.affine, m.track_running_stats) == (tm.affine, tm.track_running_stats)
    # With torch's weights: the same outputs and gradients.
    m.load_state_dict(tsd)
    tx, nx = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    tout, nout = tm(tx), m(nx)
    assert_close(nout.numpy(), tout.detach().numpy(), 1e-4)
    cot = randn(*tout.shape)
    (tout * torch.tensor(cot)).sum().backward()
    (nout * nb.tensor(cot)).sum().backward()
    assert_close(nx.grad.numpy(), tx.grad.numpy(), 1e-4)
    grads = {n: p.grad for n, p in m.named_parameters()}
    for name, p in tm.named_parameters():
        assert_close(grads[name].numpy(), p.grad.numpy(), 1e-4)


@needs_torch
def test_load_torch_state_dict_into_uninitialized():
    tm = torch.nn.LazyConv1d(6, 3)
    tm(torch.randn(2, 4, 9))
    m = LazyConv1d(6, 3)
    m.load_state_dict(tm.state_dict())
    assert m.in_channels == 4
    x = randn(2, 4, 9)
    assert_close(m(nb.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), 1e-5)


def _torch_parent_sd(ref, x: np.ndarray) -> dict:
    ref(torch.tensor(x))  # a BatchNorm's running stats move away from their defaults
    return {"0." + k: v for k, v in ref.state_dict().items()}


@needs_torch
@pytest.mark.parametrize("case", PARENT_CASES, ids=lambda c: c[0].__name__)
def test_load_through_a_parent_matches_torch(case):
    cls, args, regular, regular_args, shape, size = case
    x = randn(*shape)
    sd = _torch_parent_sd(getattr(torch.nn, regular.__name__)(*regular_args), x)
    tmodel = torch.nn.Sequential(getattr(torch.nn, cls.__name__)(*args), torch.nn.ReLU())
    model = Sequential(cls(*args), ReLU())
    tresult, result = tmodel.load_state_dict(sd), model.load_state_dict(sd)
    assert (result.missing_keys, result.unexpected_keys) == (tresult.missing_keys, tresult.unexpected_keys) == ([], [])
    assert type(model[0]).__name__ == type(tmodel[0]).__name__ == cls.__name__
    tsd = tmodel.state_dict()
    assert list(model.state_dict()) == list(tsd)
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == {k: tuple(v.shape) for k, v in tsd.items()}
    assert getattr(tmodel[0], size) == 0  # torch leaves it 0 after a load
    tmodel.eval(), model.train(False)
    tout = tmodel(torch.tensor(x)).detach().numpy()
    assert_close(model(nb.tensor(x)).numpy(), tout, 1e-5)
    assert type(model[0]).__name__ == type(tmodel[0]).__name__ == regular.__name__
    # nabla took the size from the loaded shapes; torch's LazyLinear sets it now, LazyConv/LazyBatchNorm keep 0
    assert getattr(model[0], size) == shape[-1 if cls is LazyLinear else 1]
    assert getattr(tmodel[0], size) in (0, getattr(model[0], size))


@needs_torch
def test_missing_keys_through_a_parent_match_torch():
    sd = {"0.weight": torch.randn(4, 3), "0.bias": torch.randn(4)}
    tmodel = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU(), torch.nn.LazyLinear(2))
    model = Sequential(LazyLinear(4), ReLU(), LazyLinear(2))
    tresult, result = tmodel.load_state_dict(sd, strict=False), model.load_state_dict(sd, strict=False)
    assert (result.missing_keys, result.unexpected_keys) == (tresult.missing_keys, tresult.unexpected_keys)
    assert result.missing_keys == ["2.weight", "2.bias"]
    assert [type(p).__name__ for p in model.parameters()] == [type(p).__name__ for p in tmodel.parameters()]
    with pytest.raises(RuntimeError, match=r"2\.weight.*2\.bias"):
        tmodel.load_state_dict(sd)
    with pytest.raises(RuntimeError, match=r"missing key\(s\): 2\.weight, 2\.bias"):
        model.load_state_dict(sd)
    # An uninitialized torch state_dict loads into an uninitialized model (nothing to copy), as in torch.
    lazy_sd = torch.nn.Sequential(torch.nn.LazyLinear(4)).state_dict()
    fresh, tfresh = Sequential(LazyLinear(4)), torch.nn.Sequential(torch.nn.LazyLinear(4))
    assert tuple(fresh.load_state_dict(lazy_sd)) == tuple(tfresh.load_state_dict(lazy_sd)) == ([], [])
    assert len(_lazy_tensors(fresh[0])) == 2 and type(fresh[0]) is LazyLinear
