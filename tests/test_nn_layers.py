"""nabla_nn layers: PyTorch's constructor arguments, parameter layouts, initialisation, repr,
train/eval behaviour and input checks; outputs and gradients against PyTorch (when installed,
with torch's weights loaded through `load_state_dict`) and against NumPy formulas otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn

RNG = np.random.default_rng(0)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _load_from_torch(layer: nn.Module, ref) -> None:
    layer.load_state_dict({k: v.detach().numpy().copy() for k, v in ref.state_dict().items()})


def _check_against_torch(layer, ref, *inputs, atol=1e-5, grad=True, load=True, grad_inputs=None, **kwargs):
    """Same output and the same input/parameter gradients as the torch layer (for the float
    inputs, or those `grad_inputs` marks)."""
    if load:
        _load_from_torch(layer, ref)
    floats = [np.issubdtype(a.dtype, np.floating) for a in inputs]
    floats = floats if grad_inputs is None else [f and g for f, g in zip(floats, grad_inputs, strict=True)]
    ts = [torch.tensor(a, requires_grad=f and grad) for a, f in zip(inputs, floats, strict=True)]
    xs = [nb.tensor(a, requires_grad=f and grad) for a, f in zip(inputs, floats, strict=True)]
    yt, y = ref(*ts, **kwargs), layer(*xs, **kwargs)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), atol=atol, rtol=1e-4)
    if not grad:
        return
    cot = _r(*yt.shape)
    (yt * torch.tensor(cot)).sum().backward()
    (y * nb.tensor(cot)).sum().backward()
    for x, t, f in zip(xs, ts, floats, strict=True):
        if f:
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=atol * 10, rtol=1e-4)
    for name, p in layer.named_parameters():
        tp = ref.get_parameter(name)
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=atol * 10, rtol=1e-4, err_msg=name)


# -- Linear, Bilinear, Identity, Flatten -------------------------------------------------------------
def test_linear_layout_init_and_repr():
    m = nn.Linear(400, 300)
    assert m.weight.shape == (300, 400) and m.bias.shape == (300,)
    assert repr(m) == "Linear(in_features=400, out_features=300, bias=True)"
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) == U(+-1/sqrt(fan_in))
    w, b = m.weight.numpy(), m.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
    assert m.weight.is_realized and m.weight.requires_grad
    assert nn.Linear(3, 2, bias=False).bias is None
    assert list(nn.Linear(3, 2, bias=False).state_dict()) == ["weight"]
    assert nn.Linear(3, 2, dtype=nb.float64).weight.dtype == nb.float64


def test_linear_numpy_and_checks():
    m = nn.Linear(4, 3)
    x = _r(2, 5, 4)
    expected = x @ m.weight.numpy().T + m.bias.numpy()
    np.testing.assert_allclose(m(nb.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"\(Linear in_features=4 out_features=3 bias=True\) got input \(2, 5\), "):
        m(nb.ones(2, 5))
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(-1, 3)
    # As in PyTorch, a layer does not promote: float64 input to a float32 Linear is an error
    # (the core matmul would silently compute in float64).
    with pytest.raises(TypeError, match="linear: expected one dtype, got input float64, weight float32, bias float32"):
        m(nb.tensor(x.astype(np.float64)))
    with pytest.raises(TypeError, match="bilinear: expected one dtype, got input1 float32, input2 float16"):
        nn.Bilinear(2, 2, 1)(nb.ones(1, 2), nb.ones(1, 2, dtype=nb.float16))
    assert m.to(nb.float64)(nb.tensor(x.astype(np.float64))).dtype == nb.float64


def test_linear_non_tensor_input_is_a_type_error_naming_the_layer():
    # Was AttributeError ('list' object has no attribute 'ndim'); PyTorch raises TypeError.
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    for bad in ([[1.0, 2.0, 3.0, 4.0]], np.ones((1, 4), np.float32)):
        kind = type(bad).__name__
        with pytest.raises(TypeError, match=rf"^\(Linear in_features=4 out_features=2 bias=True\): .* got {kind}$"):
            nn.Linear(4, 2)(bad)
        with pytest.raises(TypeError, match=rf"^0 \(Linear in_features=4 .*input must be a Tensor, got {kind}$"):
            model(bad)


@needs_torch
def test_non_dynamically_quantizable_linear_is_a_linear_named_as_torch():
    m, ref = nn.NonDynamicallyQuantizableLinear(3, 2), torch.nn.modules.linear.NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(m, nn.Linear) and repr(m) == repr(ref)
    _check_against_torch(m, ref, _r(4, 3))


def test_identity_and_bilinear_shapes():
    x = nb.ones(2, 3)
    assert nn.Identity(54, unused=1)(x) is x
    m = nn.Bilinear(3, 5, 4)
    assert m.weight.shape == (4, 3, 5)
    assert np.abs(m.weight.numpy()).max() <= 1 / math.sqrt(3)
    a, b = _r(2, 3), _r(2, 5)
    expected = np.einsum("ni,kij,nj->nk", a, m.weight.numpy(), b) + m.bias.numpy()
    np.testing.assert_allclose(m(nb.tensor(a), nb.tensor(b)).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=5, out_features=4, bias=True)"
    with pytest.raises(ValueError, match="Bilinear"):
        m(nb.ones(2, 3), nb.ones(2, 4))


@needs_torch
def test_linear_bilinear_match_torch():
    _check_against_torch(nn.Linear(4, 3), torch.nn.Linear(4, 3), _r(2, 5, 4))
    _check_against_torch(nn.Linear(4, 3, bias=False), torch.nn.Linear(4, 3, bias=False), _r(6, 4))
    _check_against_torch(nn.Bilinear(3, 5, 4), torch.nn.Bilinear(3, 5, 4), _r(6, 3), _r(6, 5))


def test_flatten_unflatten():
    x = nb.ones(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Flatten()(nb.zeros(0, 3, 4)).shape == (0, 12)  # an empty batch (torch too)
    assert nb.zeros(2, 0, 4).flatten(1).shape == (2, 0)
    assert nn.Unflatten(1, (2, 5, 6))(nb.ones(2, 60)).shape == (2, 2, 5, 6)
    assert nn.Unflatten(-1, (-1, 3))(nb.ones(2, 6)).shape == (2, 2, 3)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.Unflatten(1, (2, 5))) == "Unflatten(dim=1, unflattened_size=(2, 5))"
    with pytest.raises(ValueError, match=r"Flatten start_dim=1 end_dim=-1\) got input \(3,\)"):
        nn.Flatten()(nb.ones(3))
    with pytest.raises(ValueError, match="dim 1 of size 10"):
        nn.Unflatten(1, (2, 5))(nb.ones(2, 12))


# -- convolutions ---------------------------------------------------------------------------------
def test_conv_layouts_init_and_repr():
    c = nn.Conv2d(16, 32, (3, 5), stride=2, padding=1, groups=4)
    assert c.weight.shape == (32, 4, 3, 5) and c.bias.shape == (32,)
    bound = 1 / math.sqrt(4 * 3 * 5)
    assert np.abs(c.weight.numpy()).max() <= bound and np.abs(c.bias.numpy()).max() <= bound
    assert repr(c) == "Conv2d(16, 32, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), groups=4)"
    assert repr(nn.Conv1d(2, 3, 3, bias=False, padding="same", padding_mode="reflect")) == (
        "Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=same, bias=False, padding_mode=reflect)"
    )
    t = nn.ConvTranspose2d(6, 8, 3, stride=2, groups=2, output_padding=1)
    assert t.weight.shape == (6, 4, 3, 3)  # (in, out / groups, kH, kW), as torch
    assert np.abs(t.bias.numpy()).max() <= 1 / math.sqrt(4 * 9)
    assert "output_padding=(1, 1)" in repr(t)
    assert nn.ConvTranspose1d(4, 6, 3).weight.shape == (4, 6, 3)


def test_conv_constructor_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 6, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(3, 6, 3, padding_mode="reflect")


def test_conv2d_numpy_and_input_checks():
    c = nn.Conv2d(2, 3, 3, padding=1)
    x = _r(1, 2, 4, 4)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    w = c.weight.numpy()
    expected = np.zeros((1, 3, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            expected[0, :, i, j] = np.einsum("chw,ochw->o", xp[0, :, i : i + 3, j : j + 3], w)
    expected += c.bias.numpy()[:, None, None]
    np.testing.assert_allclose(c(nb.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
    assert c(nb.tensor(x[0])).shape == (3, 4, 4)  # unbatched input
    with pytest.raises(ValueError, match=r"got input \(1, 3, 4, 4\), expected \(N, 2, H, W\) or \(2, H, W\)"):
        c(nb.ones(1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"got input \(4, 4\)"):
        c(nb.ones(4, 4))


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 2, "padding": 1},
        {"padding": "same", "dilation": 2, "bias": False},
        {"groups": 2, "padding": (1, 2)},
        {"padding": 1, "padding_mode": "reflect"},
        {"padding": 2, "padding_mode": "circular"},
        {"padding": "same", "padding_mode": "replicate"},
    ],
)
def test_conv2d_matches_torch(kwargs):
    _check_against_torch(nn.Conv2d(4, 6, 3, **kwargs), torch.nn.Conv2d(4, 6, 3, **kwargs), _r(2, 4, 7, 6))


@needs_torch
def test_conv1d_and_transposed_match_torch():
    kw = {"stride": 2, "padding": 1, "groups": 2}
    _check_against_torch(nn.Conv1d(4, 6, 3, **kw), torch.nn.Conv1d(4, 6, 3, **kw), _r(2, 4, 9))
    kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": 1}
    _check_against_torch(nn.ConvTranspose2d(4, 6, 3, **kw), torch.nn.ConvTranspose2d(4, 6, 3, **kw), _r(2, 4, 5, 4))
    _check_against_torch(
        nn.ConvTranspose1d(4, 2, 3, stride=2), torch.nn.ConvTranspose1d(4, 2, 3, stride=2), _r(2, 4, 5)
    )
    t, ref = nn.ConvTranspose2d(3, 2, 3, stride=2), torch.nn.ConvTranspose2d(3, 2, 3, stride=2)
    _check_against_torch(t, ref, _r(1, 3, 4, 4), output_size=(10, 9))
    with pytest.raises(ValueError, match="requested an output size"):
        t(nb.ones(1, 3, 4, 4), output_size=(12, 12))


# -- pooling --------------------------------------------------------------------------------------
def test_pooling_numpy_and_repr():
    x = _r(2, 3, 4, 6)
    np.testing.assert_allclose(nn.MaxPool2d(2)(nb.tensor(x)).numpy(), x.reshape(2, 3, 2, 2, 3, 2).max((3, 5)))
    np.testing.assert_allclose(
        nn.AvgPool2d(2)(nb.tensor(x)).numpy(), x.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        nn.AdaptiveAvgPool2d(1)(nb.tensor(x)).numpy(), x.mean((2, 3), keepdims=True), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(nn.AdaptiveMaxPool2d((1, 1))(nb.tensor(x)).numpy(), x.max((2, 3), keepdims=True))
    y = _r(2, 3, 8)
    np.testing.assert_allclose(nn.MaxPool1d(2)(nb.tensor(y)).numpy(), y.reshape(2, 3, 4, 2).max(-1))
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    with pytest.raises(ValueError, match=r"MaxPool2d kernel_size=2 .* got input \(4, 4\)"):
        nn.MaxPool2d(2)(nb.ones(4, 4))


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.MaxPool2d(3, stride=2, padding=1),
        lambda m: m.MaxPool2d((2, 3), dilation=(1, 2), ceil_mode=True),
        lambda m: m.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        lambda m: m.AvgPool2d(2, ceil_mode=True, divisor_override=3),
        lambda m: m.AdaptiveAvgPool2d((3, 2)),
        lambda m: m.AdaptiveMaxPool2d((3, None)),
        lambda m: m.LPPool2d(2, 2),
    ],
)
def test_pool2d_matches_torch(make):
    _check_against_torch(make(nn), make(torch.nn), _r(2, 3, 7, 5))


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.MaxPool1d(3, stride=2, padding=1),
        lambda m: m.AvgPool1d(3, stride=2, padding=1),
        lambda m: m.AdaptiveAvgPool1d(3),
        lambda m: m.AdaptiveMaxPool1d(4),
    ],
)
def test_pool1d_matches_torch(make):
    _check_against_torch(make(nn), make(torch.nn), _r(2, 3, 9))


# -- normalization --------------------------------------------------------------------------------
def test_batchnorm_buffers_state_dict_and_repr():
    bn = nn.BatchNorm2d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype == nb.int64 and bn.num_batches_tracked.shape == ()
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3))
    np.testing.assert_array_equal(bn.weight.numpy(), np.ones(3))
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    plain = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    assert list(plain.state_dict()) == [] and plain.running_mean is None


_NORMS = [
    "BatchNorm1d(3)",
    "BatchNorm2d(3, bias=False)",
    "BatchNorm3d(3, affine=False)",
    "BatchNorm1d(3, momentum=None, bias=False)",
    "SyncBatchNorm(3, bias=False)",
    "InstanceNorm1d(3)",
    "InstanceNorm2d(3, affine=True, bias=False)",
    "InstanceNorm3d(3, track_running_stats=True)",
    "GroupNorm(2, 4)",
    "GroupNorm(2, 4, bias=False)",
    "GroupNorm(2, 4, eps=1e-3, affine=False)",
    "LayerNorm(8)",
    "LayerNorm((2, 3), bias=False)",
    "LayerNorm(8, elementwise_affine=False)",
    "RMSNorm([2, 3], eps=1e-3)",
    "LocalResponseNorm(2)",
    "CrossMapLRN2d(3)",
]


@needs_torch
@pytest.mark.parametrize("src", _NORMS)
def test_norm_repr_and_state_dict_keys_match_torch(src):
    # torch 2.13 prints bias= in every norm but RMSNorm, and takes a keyword-only bias on the
    # batch / instance / group norms (bias=False: an affine weight without a bias).
    layer, ref = eval(f"nn.{src}"), eval(f"torch.nn.{src}")
    assert repr(layer) == repr(ref)
    assert list(layer.state_dict()) == list(ref.state_dict())


@needs_torch
@pytest.mark.parametrize(
    "src, shape",
    [
        ("BatchNorm1d(3, bias=False)", (6, 3)),
        ("BatchNorm2d(3, bias=False)", (4, 3, 2, 2)),
        ("SyncBatchNorm(3, bias=False)", (4, 3, 5)),
        ("InstanceNorm1d(3, affine=True, bias=False)", (2, 3, 5)),
        ("GroupNorm(2, 4, bias=False)", (2, 4, 3)),
    ],
)
def test_norm_without_bias_matches_torch(src, shape):
    layer, ref = eval(f"nn.{src}"), eval(f"torch.nn.{src}")
    _check_against_torch(layer, ref, _r(*shape) * 2 + 1, atol=1e-4)


def test_convert_sync_batchnorm_keeps_a_missing_bias():
    out = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3, bias=False)))
    assert type(out[0]).__name__ == "SyncBatchNorm" and out[0].bias is None
    assert list(out.state_dict()) == ["0.weight", "0.running_mean", "0.running_var", "0.num_batches_tracked"]


@needs_torch
def test_batchnorm_loads_a_state_dict_without_num_batches_tracked():
    # PyTorch's _NormBase._load_from_state_dict: a version-less state_dict (a plain dict, as
    # nabla's) without num_batches_tracked loads, and the module keeps its own counter.
    ref = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    sd = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items() if "num_batches" not in k}
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    model[1].num_batches_tracked.add_(5)
    keys = list(sd)
    assert model.load_state_dict(sd) == ([], [])
    assert ref.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}) == ([], [])
    assert model[1].num_batches_tracked.item() == 5 and list(sd) == keys  # the caller's dict is unchanged
    np.testing.assert_array_equal(model[1].running_var.numpy(), ref[1].running_var.numpy())
    instance = nn.InstanceNorm1d(2, track_running_stats=True)
    stats = {"running_mean": np.zeros(2, np.float32), "running_var": np.ones(2, np.float32)}
    assert instance.load_state_dict(stats) == ([], [])
    # A torch state_dict says it is version 2 (num_batches_tracked exists): missing, as in torch.
    tsd = ref.state_dict()
    del tsd["1.num_batches_tracked"]
    with pytest.raises(RuntimeError, match="num_batches_tracked"):
        ref.load_state_dict(tsd)
    with pytest.raises(RuntimeError, match="missing key.*1.num_batches_tracked"):
        model.load_state_dict(tsd)


def test_batchnorm_train_eval_numpy():
    bn = nn.BatchNorm2d(3)
    x = _r(4, 3, 2, 2) * 2 + 1
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    y = bn(nb.tensor(x)).numpy()
    expected = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * 16 / 15, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    y = bn(nb.tensor(x)).numpy()
    np.testing.assert_allclose(y, (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1  # eval mode changes no buffer
    np.testing.assert_array_equal(bn.running_mean.numpy(), rm)


def test_batchnorm_cumulative_momentum_and_checks():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [_r(5, 2) + i for i in range(3)]
    for x in xs:
        bn(nb.tensor(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0), rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3
    with pytest.raises(ValueError, match=r"\(BatchNorm1d 2 .*got input \(5, 3\), expected \(N, 2\) or \(N, 2, L\)"):
        bn(nb.ones(5, 3))
    with pytest.raises(ValueError, match=r"got input \(5, 3, 4\), expected \(N, 3, H, W\)"):
        nn.BatchNorm2d(3)(nb.ones(5, 3, 4))


@needs_torch
@pytest.mark.parametrize(
    "kwargs", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"momentum": 0.3}]
)
def test_batchnorm_matches_torch_train_and_eval(kwargs):
    for n, shape in ((1, (6, 3, 4)), (2, (4, 3, 3, 2))):
        layer, ref = getattr(nn, f"BatchNorm{n}d")(3, **kwargs), getattr(torch.nn, f"BatchNorm{n}d")(3, **kwargs)
        _load_from_torch(layer, ref)
        for _ in range(2):
            _check_against_torch(layer, ref, _r(*shape) * 3 + 1, atol=1e-4, load=False)
        for name, buf in layer.named_buffers():
            np.testing.assert_allclose(buf.numpy(), ref.get_buffer(name).numpy(), rtol=1e-5, atol=1e-6)
        layer.eval()
        ref.eval()
        _check_against_torch(layer, ref, _r(*shape), atol=1e-4, load=False)


def test_layer_rms_group_norm_numpy():
    x = _r(2, 4, 6)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(nn.LayerNorm(6)(nb.tensor(x)).numpy(), (x - mean) / np.sqrt(var + 1e-5), atol=1e-5)
    rms = nn.RMSNorm(6, eps=1e-6)(nb.tensor(x)).numpy()
    np.testing.assert_allclose(rms, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), rtol=1e-5, atol=1e-5)
    g = x.reshape(2, 2, 12)
    expected = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(nn.GroupNorm(2, 4)(nb.tensor(x)).numpy(), expected, atol=1e-5)
    assert repr(nn.LayerNorm((4, 6))) == "LayerNorm((4, 6), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.RMSNorm(3)) == "RMSNorm((3,), eps=None, elementwise_affine=True)"
    assert nn.LayerNorm(5, bias=False).bias is None
    with pytest.raises(ValueError, match=r"LayerNorm \(6,\).* got input \(2, 5\), expected \(\*, 6\)"):
        nn.LayerNorm(6)(nb.ones(2, 5))
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected \(N, 4, \*\)"):
        nn.GroupNorm(2, 4)(nb.ones(2, 3, 5))


@needs_torch
def test_norms_match_torch():
    x = _r(3, 4, 5, 6)
    _check_against_torch(nn.LayerNorm((5, 6)), torch.nn.LayerNorm((5, 6)), x)
    _check_against_torch(nn.LayerNorm(6, bias=False), torch.nn.LayerNorm(6, bias=False), x)
    _check_against_torch(nn.RMSNorm([5, 6]), torch.nn.RMSNorm([5, 6]), x)
    _check_against_torch(nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), x)
    _check_against_torch(nn.InstanceNorm2d(4, affine=True), torch.nn.InstanceNorm2d(4, affine=True), x)
    _check_against_torch(nn.InstanceNorm1d(5), torch.nn.InstanceNorm1d(5), x[0])
    _check_against_torch(nn.LocalResponseNorm(3), torch.nn.LocalResponseNorm(3), x)
    layer, ref = nn.InstanceNorm2d(4, track_running_stats=True), torch.nn.InstanceNorm2d(4, track_running_stats=True)
    _check_against_torch(layer, ref, x)
    np.testing.assert_allclose(layer.running_var.numpy(), ref.running_var.numpy(), rtol=1e-5)
    _check_against_torch(layer.eval(), ref.eval(), x, load=False)


# -- embedding ------------------------------------------------------------------------------------
def test_embedding_init_padding_and_repr():
    emb = nn.Embedding(1000, 16, padding_idx=-1)
    w = emb.weight.numpy()
    assert emb.padding_idx == 999 and emb.weight.shape == (1000, 16)
    np.testing.assert_array_equal(w[999], 0)
    assert abs(w[:999].mean()) < 0.03 and abs(w[:999].std() - 1) < 0.03
    assert repr(emb) == "Embedding(1000, 16, padding_idx=999)"
    idx = nb.tensor(np.array([[1, 999], [3, 1]]))
    out = emb(idx)
    np.testing.assert_array_equal(out.numpy(), w[[[1, 999], [3, 1]]])
    out.sum().backward()
    g = emb.weight.grad.numpy()
    assert g[1].tolist() == [2.0] * 16 and g[999].tolist() == [0.0] * 16 and g[3].tolist() == [1.0] * 16
    with pytest.raises(ValueError, match="Embedding 1000 16 padding_idx=999.*integer tensor of indices.*float32"):
        emb(nb.ones(2))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 3, padding_idx=10)


def test_embedding_from_pretrained():
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.num_embeddings == 3
    np.testing.assert_array_equal(emb(nb.tensor(np.array([2, 0]))).numpy(), table[[2, 0]])
    assert nn.Embedding.from_pretrained(nb.tensor(table), freeze=False).weight.requires_grad
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.Embedding.from_pretrained(np.ones(3, np.float32))


@needs_torch
def test_embedding_matches_torch():
    idx = RNG.integers(0, 10, size=(3, 4))
    _check_against_torch(nn.Embedding(10, 5, padding_idx=2), torch.nn.Embedding(10, 5, padding_idx=2), idx)


# -- dropout --------------------------------------------------------------------------------------
def test_dropout_train_eval():
    x = nb.ones(100, 100)
    drop = nn.Dropout(0.3)
    assert repr(drop) == "Dropout(p=0.3, inplace=False)"
    y = drop(x).numpy()
    kept = y != 0
    assert 0.65 < kept.mean() < 0.75
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    drop.eval()
    assert np.array_equal(drop(x).numpy(), np.ones((100, 100)))
    y2 = nn.Dropout2d(0.5)(nb.ones(8, 50, 3, 3)).numpy()
    per_channel = y2.reshape(8, 50, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))  # whole channels
    assert nn.Dropout1d(0.5).eval()(nb.ones(2, 3, 4)).numpy().min() == 1
    assert nn.AlphaDropout(0.2).eval()(x).numpy().max() == 1
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match=r"Dropout2d p=0.5 inplace=False\) got input \(3, 4\)"):
        nn.Dropout2d()(nb.ones(3, 4))


# -- activations ----------------------------------------------------------------------------------
def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


_ERF = np.vectorize(math.erf)
ACTIVATIONS = [
    ("ReLU", (), lambda x: np.maximum(x, 0)),
    ("ReLU6", (), lambda x: np.clip(x, 0, 6)),
    ("LeakyReLU", (0.2,), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("ELU", (0.5,), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("SELU", (), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("CELU", (2.0,), lambda x: np.maximum(x, 0) + np.minimum(0, 2 * np.expm1(x / 2))),
    ("GELU", (), lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2)))),
    ("GELU", ("tanh",), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    ("SiLU", (), lambda x: x * _sig(x)),
    ("Mish", (), lambda x: x * np.tanh(_softplus(x))),
    ("Sigmoid", (), _sig),
    ("Tanh", (), np.tanh),
    ("Hardtanh", (-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7)),
    ("Hardsigmoid", (), lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("Hardswish", (), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("Softplus", (2.0, 3.0), lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    ("Softsign", (), lambda x: x / (1 + np.abs(x))),
    ("Tanhshrink", (), lambda x: x - np.tanh(x)),
    ("Hardshrink", (0.4,), lambda x: np.where(np.abs(x) > 0.4, x, 0)),
    ("Softshrink", (0.4,), lambda x: np.where(x > 0.4, x - 0.4, np.where(x < -0.4, x + 0.4, 0))),
    ("LogSigmoid", (), lambda x: np.log(_sig(x))),
    ("Threshold", (0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0)),
    ("PReLU", (), lambda x: np.where(x > 0, x, 0.25 * x)),
    ("GLU", (), lambda x: x[..., :3] * _sig(x[..., 3:])),
    ("Softmax", (-1,), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    ("LogSoftmax", (1,), lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
    ("Softmin", (0,), lambda x: np.exp(-x) / np.exp(-x).sum(0, keepdims=True)),
    ("Softmax2d", (), lambda x: np.exp(x) / np.exp(x).sum(-3, keepdims=True)),
    ("RReLU", (0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),
]


@pytest.mark.parametrize(("name", "args", "ref"), ACTIVATIONS, ids=[f"{n}{a}" for n, a, _ in ACTIVATIONS])
def test_activation_numpy(name, args, ref):
    x = _r(4, 5, 6) * 3
    layer = getattr(nn, name)(*args).eval()  # eval: RReLU's fixed slope
    np.testing.assert_allclose(layer(nb.tensor(x)).numpy(), ref(x), rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize(("name", "args", "ref"), ACTIVATIONS, ids=[f"{n}{a}" for n, a, _ in ACTIVATIONS])
def test_activation_matches_torch(name, args, ref):
    layer, tref = getattr(nn, name)(*args).eval(), getattr(torch.nn, name)(*args).eval()
    assert repr(layer) == repr(tref)
    _check_against_torch(layer, tref, _r(4, 5, 6) * 3)


@needs_torch
def test_prelu_channels_matches_torch():
    layer = nn.PReLU(5, init=0.1)
    assert layer.weight.shape == (5,) and np.allclose(layer.weight.numpy(), 0.1)
    assert repr(layer) == "PReLU(num_parameters=5)"
    _check_against_torch(layer, torch.nn.PReLU(5, init=0.1), _r(2, 5, 3))
    with pytest.raises(ValueError, match=r"PReLU num_parameters=5\) got input \(2, 4, 3\)"):
        layer(nb.ones(2, 4, 3))


def test_activation_reprs():
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.Softshrink()) == "Softshrink(0.5)"
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match=r"GLU dim=-1\) got input \(2, 3\)"):
        nn.GLU()(nb.ones(2, 3))


# -- losses ---------------------------------------------------------------------------------------
def _probs(*shape):
    return RNG.uniform(0.05, 0.95, size=shape).astype(np.float32)


def _signs(*shape):
    return RNG.choice([-1.0, 1.0], size=shape).astype(np.float32)


CLASS_W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)
LOSSES = [
    ("MSELoss", {}, lambda: (_r(3, 4), _r(3, 4))),
    ("L1Loss", {"reduction": "sum"}, lambda: (_r(3, 4), _r(3, 4))),
    ("SmoothL1Loss", {"beta": 0.5}, lambda: (_r(3, 4), _r(3, 4))),
    ("HuberLoss", {"delta": 0.7, "reduction": "none"}, lambda: (_r(3, 4), _r(3, 4))),
    ("CrossEntropyLoss", {}, lambda: (_r(5, 4), RNG.integers(0, 4, 5))),
    ("CrossEntropyLoss", {"weight": CLASS_W, "ignore_index": 1}, lambda: (_r(5, 4, 2), RNG.integers(0, 4, (5, 2)))),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, lambda: (_r(5, 4), _probs(5, 4))),
    ("NLLLoss", {"weight": CLASS_W}, lambda: (_r(5, 4), RNG.integers(0, 4, 5))),
    ("BCELoss", {"weight": np.float32([1.0, 2.0, 0.5])}, lambda: (_probs(2, 3), _probs(2, 3))),
    ("BCEWithLogitsLoss", {"pos_weight": np.float32([1.0, 3.0, 0.5])}, lambda: (_r(2, 3), _probs(2, 3))),
    ("KLDivLoss", {"reduction": "batchmean"}, lambda: (np.log(_probs(3, 4)), _probs(3, 4))),
    ("KLDivLoss", {"log_target": True, "reduction": "sum"}, lambda: (np.log(_probs(3, 4)), np.log(_probs(3, 4)))),
    ("CosineEmbeddingLoss", {"margin": 0.2}, lambda: (_r(4, 5), _r(4, 5), _signs(4))),
    ("MarginRankingLoss", {"margin": 0.3}, lambda: (_r(6), _r(6), _signs(6))),
    ("HingeEmbeddingLoss", {}, lambda: (_r(6), _signs(6))),
    ("SoftMarginLoss", {}, lambda: (_r(6), _signs(6))),
    ("MultiLabelSoftMarginLoss", {}, lambda: (_r(3, 4), RNG.integers(0, 2, (3, 4)).astype(np.float32))),
    ("TripletMarginLoss", {"swap": True}, lambda: (_r(4, 5), _r(4, 5), _r(4, 5))),
    ("PoissonNLLLoss", {}, lambda: (_r(6), RNG.poisson(2.0, 6).astype(np.float32))),
    ("GaussianNLLLoss", {}, lambda: (_r(6), _r(6), _probs(6))),
]


def _torch_kwargs(kwargs):
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


@needs_torch
@pytest.mark.parametrize(("name", "kwargs", "data"), LOSSES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOSSES)])
def test_loss_matches_torch(name, kwargs, data):
    layer, ref = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**_torch_kwargs(kwargs))
    assert list(layer.state_dict()) == list(ref.state_dict())
    inputs = data()
    targets = {"CosineEmbeddingLoss": 2, "MarginRankingLoss": 2, "TripletMarginLoss": None, "GaussianNLLLoss": 1}
    target = targets.get(name, 1)
    grad_inputs = [i != target for i in range(len(inputs))]
    _check_against_torch(layer, ref, *inputs, atol=1e-5, grad_inputs=grad_inputs)


def test_loss_numpy_and_buffers():
    x, y = _r(3, 4), _r(3, 4)
    assert np.isclose(nn.MSELoss()(nb.tensor(x), nb.tensor(y)).item(), ((x - y) ** 2).mean(), rtol=1e-5)
    assert np.isclose(nn.L1Loss(reduction="sum")(nb.tensor(x), nb.tensor(y)).item(), np.abs(x - y).sum(), rtol=1e-5)
    logits, target = _r(5, 4), np.array([0, 3, 1, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    w = CLASS_W[target]
    expected = -(w * logp[np.arange(5), target]).sum() / w.sum()
    ce = nn.CrossEntropyLoss(weight=CLASS_W)
    assert np.isclose(ce(nb.tensor(logits), nb.tensor(target)).item(), expected, rtol=1e-5)
    assert list(ce.state_dict()) == ["weight"] and ce.weight.is_realized
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert list(nn.BCEWithLogitsLoss(pos_weight=np.ones(3)).state_dict()) == ["pos_weight"]
    assert nn.MSELoss(size_average=False).reduction == "sum"  # legacy arguments
    assert repr(nn.MSELoss()) == "MSELoss()"
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.L1Loss(reduction="avg")
    with pytest.raises(ValueError, match=r"CrossEntropyLoss\) got input \(\(5, 4\), \(4,\)\)"):
        ce(nb.tensor(logits), nb.tensor(target[:4]))
    with pytest.raises(ValueError, match="same shape"):
        nn.BCELoss()(nb.ones(2, 3) * 0.5, nb.ones(3))


# -- a whole model --------------------------------------------------------------------------------
def _cnn(m):
    return m.Sequential(
        m.Conv2d(3, 8, 3, padding=1),
        m.BatchNorm2d(8),
        m.ReLU(),
        m.MaxPool2d(2),
        m.Conv2d(8, 4, 3, stride=2, bias=False),
        m.BatchNorm2d(4, momentum=None),
        m.ReLU(),
        m.Flatten(),
        m.Linear(4 * 1 * 1, 5),
    )


def test_cnn_torch_free():
    model = _cnn(nn)
    keys = list(model.state_dict())
    assert keys[:7] == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked"]  # fmt: skip
    assert keys[-2:] == ["8.weight", "8.bias"] and "4.bias" not in keys
    x = nb.tensor(_r(2, 3, 8, 8))
    out = model(x)
    assert out.shape == (2, 5)
    assert model[1].num_batches_tracked.item() == 1 and np.abs(model[1].running_mean.numpy()).sum() > 0
    model.eval()
    before = model[1].running_mean.numpy()
    e1, e2 = model(x).numpy(), model(x).numpy()
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(model[1].running_mean.numpy(), before)
    with pytest.raises(ValueError, match=r"^0 \(Conv2d 3 8 .*got input \(2, 4, 8, 8\)"):
        model(nb.ones(2, 4, 8, 8))


@needs_torch
def test_cnn_matches_torch_train_and_eval():
    torch.manual_seed(0)
    model, ref = _cnn(nn), _cnn(torch.nn)
    model.load_state_dict({k: v.numpy().copy() for k, v in ref.state_dict().items()}, strict=True)
    x = _r(4, 3, 8, 8)
    _check_against_torch(model, ref, x, atol=1e-4, load=False)
    for name, buf in model.named_buffers():
        np.testing.assert_allclose(buf.numpy(), ref.get_buffer(name).numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    model.eval()
    ref.eval()
    _check_against_torch(model, ref, x, atol=1e-4, load=False)


@needs_torch
def test_batchnorm_running_stats_update_under_grad_as_in_torch():
    """A module passed to `nb.grad` runs on aliases of its tensors; its in-place updates
    (running stats, num_batches_tracked) reach the module itself, consistently, as in PyTorch."""
    xa = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    bn, ref = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    for _ in range(2):
        nb.grad(lambda m, x: (m(x) ** 2).sum())(bn, nb.tensor(xa))
        ref(torch.tensor(xa))
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.running_var.numpy(), rtol=1e-5, atol=1e-7)
    assert int(bn.num_batches_tracked.item()) == 2
    assert not bn.running_mean.requires_grad and bn.weight.requires_grad


@pytest.mark.parametrize(
    "make",
    [lambda m: m.LayerNorm(4), lambda m: m.BatchNorm1d(4), lambda m: m.GroupNorm(2, 4), lambda m: m.RMSNorm(4)],
    ids=["LayerNorm", "BatchNorm1d", "GroupNorm", "RMSNorm"],
)
def test_norms_keep_a_half_input_half_with_float_parameters(make):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float16)
    layer = make(nn)
    for training in (True, False):
        layer.train(training)
        out = layer(nb.tensor(x))
        assert out.dtype == nb.float16  # mixed precision keeps the norms' parameters in float32
        if torch is not None:
            ref = make(torch.nn).train(training)
            ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
            want = ref(torch.tensor(x))
            assert want.dtype == torch.float16
            np.testing.assert_allclose(out.numpy(), want.detach().numpy(), atol=2e-2)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.LayerNorm(64),
        lambda m: m.RMSNorm(64),
        lambda m: m.GroupNorm(4, 64),
        lambda m: m.BatchNorm1d(64),
        lambda m: m.InstanceNorm1d(64),
    ],
    ids=["LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "InstanceNorm1d"],
)
def test_half_precision_norms_compute_in_float32(make):
    # One deviation of 300: its square (9e4) is inf in float16, and every output was 0.
    x = np.random.default_rng(0).standard_normal((2, 64, 3)).astype(np.float32)
    x[:, 5] = 300.0
    if "LayerNorm" in repr(make(nn)) or "RMSNorm" in repr(make(nn)):
        x = x.transpose(0, 2, 1).copy()
    layer = make(nn).half()
    out = layer(nb.tensor(x).half())
    assert out.dtype == nb.float16 and np.isfinite(out.numpy()).all() and np.abs(out.numpy()).max() > 1.0
    want = make(nn)(nb.tensor(x)).numpy()  # the float32 result, rounded
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_torch_module_paths_and_sibling_activations_for_isinstance_dispatch():
    """Init loops written for torch: `nn.modules.batchnorm._BatchNorm`, and CELU is not an ELU."""
    assert isinstance(nn.BatchNorm2d(3), nn.modules.batchnorm._BatchNorm)
    assert isinstance(nn.LazyBatchNorm1d(), nn.modules.batchnorm._NormBase)
    assert isinstance(nn.InstanceNorm1d(3), nn.modules.instancenorm._InstanceNorm)
    assert isinstance(nn.ConvTranspose2d(2, 2, 3), nn.modules.conv._ConvTransposeNd)
    assert not isinstance(nn.CELU(), nn.ELU) and not isinstance(nn.Softshrink(), nn.Hardshrink)
    assert repr(nn.CELU(2.0)) == "CELU(alpha=2.0)" and repr(nn.Softshrink(0.3)) == "Softshrink(0.3)"
