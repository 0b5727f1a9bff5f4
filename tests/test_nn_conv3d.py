"""3-D convolution: nabla.conv3d / conv_transpose3d, F.conv3d / F.conv_transpose3d and the
Conv3d / ConvTranspose3d layers.

Against PyTorch (when installed): forward values and input, weight and bias gradients for
stride / padding / dilation / groups combinations, unbatched input, every padding mode,
output_padding and output_size, reprs and state_dicts. Without torch: the naive NumPy references
of the op registry, reductions to the 2-D convolution, the transpose identity, init bounds and
input checks. The MAX lowering is checked by the registry's conformance tests
(tests/op_registry/conv.py lists a conv3d and a conv_transpose3d sample for MAX).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import needs_torch, torch
from op_registry import REGISTRY
from op_registry.conv import _conv3d_ref, _conv_transpose3d_ref

import nabla as nb
import nabla_nn.functional as F
from nabla_nn.modules.conv import Conv3d, ConvTranspose3d

RNG = np.random.default_rng(3)


def _r(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _t(a: np.ndarray, grad: bool = False) -> nb.Tensor:
    return nb.tensor(a, requires_grad=grad)


# -- functional, against NumPy ----------------------------------------------------------------------
CONV_CASES = [
    ((2, 4, 5, 6, 5), (6, 4, 2, 3, 2), {}),
    ((2, 4, 5, 6, 5), (6, 4, 3, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 4, 5, 6, 5), (6, 2, 2, 2, 3), {"stride": (1, 2, 3), "padding": (2, 0, 1), "dilation": (2, 1, 1), "groups": 2}),
    ((2, 4, 5, 6, 5), (4, 1, 3, 2, 3), {"padding": "same", "dilation": (1, 2, 1), "groups": 4}),
    ((2, 4, 7, 6, 5), (3, 4, 2, 2, 2), {"padding": "valid", "stride": 3}),
    ((4, 5, 6, 5), (3, 4, 3, 3, 3), {"padding": 1}),  # unbatched
]
TRANSPOSE_CASES = [
    ((2, 4, 3, 4, 3), (4, 3, 2, 3, 2), {}),
    ((2, 4, 3, 4, 3), (4, 2, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    (
        (2, 4, 3, 4, 3),
        (4, 1, 2, 2, 3),
        {"stride": (1, 2, 3), "padding": (0, 1, 1), "output_padding": (0, 1, 2), "groups": 2},
    ),
    ((2, 4, 3, 4, 3), (4, 2, 2, 3, 2), {"dilation": (2, 1, 2), "stride": 2, "output_padding": (1, 0, 1)}),
    ((4, 3, 2, 3), (4, 1, 3, 3, 3), {"groups": 4, "padding": 1}),  # unbatched
]


@pytest.mark.parametrize("xs, ws, kw", CONV_CASES)
def test_conv3d_matches_numpy_reference(xs, ws, kw):
    x, w, b = _r(*xs, dtype=np.float64), _r(*ws, dtype=np.float64), _r(ws[0], dtype=np.float64)
    out = nb.conv3d(_t(x), _t(w), _t(b), **kw)
    np.testing.assert_allclose(out.numpy(), _conv3d_ref(x, w, b, **kw), rtol=1e-12, atol=1e-12)
    assert F.conv3d(input=_t(x), weight=_t(w), **kw).shape == out.shape


@pytest.mark.parametrize("xs, ws, kw", TRANSPOSE_CASES)
def test_conv_transpose3d_matches_numpy_reference(xs, ws, kw):
    groups = kw.get("groups", 1)
    x, w, b = _r(*xs, dtype=np.float64), _r(*ws, dtype=np.float64), _r(ws[1] * groups, dtype=np.float64)
    out = nb.conv_transpose3d(_t(x), _t(w), _t(b), **kw)
    np.testing.assert_allclose(out.numpy(), _conv_transpose3d_ref(x, w, b, **kw), rtol=1e-12, atol=1e-12)
    assert F.conv_transpose3d(_t(x), _t(w), **kw).shape == out.shape


def test_output_size_formulas():
    assert nb.conv3d(nb.ones(1, 3, 4, 8, 8), nb.ones(2, 3, 3, 3, 3), padding=1).shape == (1, 2, 4, 8, 8)
    assert nb.conv3d(nb.ones(1, 3, 9, 8, 7), nb.ones(2, 3, 3, 2, 1), stride=(2, 3, 1)).shape == (1, 2, 4, 3, 7)
    out = nb.conv_transpose3d(nb.ones(1, 4, 2, 3, 3), nb.ones(4, 2, 3, 3, 3), stride=2)
    assert out.shape == (1, 2, 5, 7, 7)
    # (n - 1) * s - 2 * p + d * (k - 1) + q + 1 per dim
    kw = {"stride": (3, 1, 2), "padding": (1, 0, 0), "output_padding": (2, 0, 1), "dilation": (1, 2, 1)}
    out = nb.conv_transpose3d(nb.ones(3, 4, 5, 6), nb.ones(3, 2, 2, 3, 1), **kw)
    assert out.shape == (2, 3 * 3 - 2 + 1 + 2 + 1, 4 + 4 + 1, 10 + 0 + 1 + 1)


def test_depth_one_kernel_is_conv2d_per_slice():
    x, w = _r(2, 4, 3, 6, 5, dtype=np.float64), _r(6, 2, 1, 3, 3, dtype=np.float64)
    out = nb.conv3d(_t(x), _t(w), stride=(1, 2, 1), padding=(0, 1, 1), groups=2).numpy()
    for d in range(3):
        want = nb.conv2d(_t(x[:, :, d]), _t(w[:, :, 0]), stride=(2, 1), padding=1, groups=2).numpy()
        np.testing.assert_allclose(out[:, :, d], want, rtol=1e-12, atol=1e-12)


def test_conv_transpose3d_is_the_input_gradient_of_conv3d():
    x, w = _r(2, 4, 7, 6, 5, dtype=np.float64), _r(6, 2, 3, 2, 3, dtype=np.float64)
    kw = {"stride": (2, 2, 1), "padding": (1, 0, 1), "dilation": (1, 2, 1), "groups": 2}
    xt = _t(x, grad=True)
    y = nb.conv3d(xt, _t(w), **kw)
    g = _r(*y.shape, dtype=np.float64)
    (y * _t(g)).sum().backward()
    # output_padding recovers the input size where a strided window leaves trailing rows unread
    want = nb.conv_transpose3d(_t(g), _t(w), output_padding=(0, 1, 0), **kw)
    np.testing.assert_allclose(xt.grad.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_weight_and_bias_gradients_match_finite_differences():
    x, w, b = _r(2, 4, 4, 5, 4, dtype=np.float64), _r(4, 2, 2, 3, 2, dtype=np.float64), _r(4, dtype=np.float64)
    kw = {"stride": (2, 1, 2), "padding": (1, 1, 0), "groups": 2}
    eps = 1e-6
    for fn in (nb.conv3d, nb.conv_transpose3d):  # w fits both: 4 channels in and out
        params = [_t(w, grad=True), _t(b, grad=True)]
        y = fn(_t(x), *params, **kw)
        cot = _r(*y.shape, dtype=np.float64)
        (y * _t(cot)).sum().backward()
        for i, p in enumerate(params):
            v = _r(*p.shape, dtype=np.float64)
            plus, minus = [w, b], [w, b]
            plus[i], minus[i] = plus[i] + eps * v, minus[i] - eps * v
            diff = fn(_t(x), *map(_t, plus), **kw) - fn(_t(x), *map(_t, minus), **kw)
            numeric = (diff.numpy() * cot).sum() / (2 * eps)
            np.testing.assert_allclose((p.grad.numpy() * v).sum(), numeric, rtol=1e-6, atol=1e-8)


def test_batched_and_unbatched_agree_and_vmap_matches_a_loop():
    x, w = _r(3, 2, 4, 4, 4), _r(3, 2, 2, 2, 2)
    batched = nb.conv3d(_t(x), _t(w), padding=1).numpy()
    for i in range(3):
        np.testing.assert_allclose(nb.conv3d(_t(x[i]), _t(w), padding=1).numpy(), batched[i], rtol=1e-5, atol=1e-6)
    wt = _t(np.ascontiguousarray(w.transpose(1, 0, 2, 3, 4)))  # (in, out, ...) for the transpose
    mapped = nb.vmap(lambda a: nb.conv_transpose3d(a, wt, stride=2))(_t(x)).numpy()
    for i in range(3):
        single = nb.conv_transpose3d(_t(x[i]), wt, stride=2).numpy()
        np.testing.assert_allclose(mapped[i], single, rtol=1e-5, atol=1e-6)


# -- functional, against PyTorch --------------------------------------------------------------------
def _check_fn_against_torch(fn, tfn, x, w, b, atol=1e-5, **kw):
    """Same output and the same input, weight and bias gradients as the torch function."""
    xs = [_t(a, grad=True) if a is not None else None for a in (x, w, b)]
    ts = [torch.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
    y, yt = fn(*xs, **kw), tfn(*ts, **kw)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-4, atol=atol)
    cot = _r(*yt.shape)
    (y * _t(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    for a, t, name in zip(xs, ts, ("input", "weight", "bias"), strict=True):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=atol * 10, err_msg=name)


@needs_torch
@pytest.mark.parametrize("xs, ws, kw", CONV_CASES)
def test_conv3d_matches_torch(xs, ws, kw):
    _check_fn_against_torch(F.conv3d, torch.nn.functional.conv3d, _r(*xs), _r(*ws), _r(ws[0]), **kw)


@needs_torch
@pytest.mark.parametrize("xs, ws, kw", TRANSPOSE_CASES)
def test_conv_transpose3d_matches_torch(xs, ws, kw):
    b = _r(ws[1] * kw.get("groups", 1))
    _check_fn_against_torch(F.conv_transpose3d, torch.nn.functional.conv_transpose3d, _r(*xs), _r(*ws), b, **kw)


@needs_torch
def test_without_bias_and_in_float64_matches_torch():
    x, w = _r(2, 3, 4, 4, 4, dtype=np.float64), _r(5, 3, 2, 2, 2, dtype=np.float64)
    _check_fn_against_torch(F.conv3d, torch.nn.functional.conv3d, x, w, None, atol=1e-12, stride=2, padding=1)
    wt, kw = _r(3, 5, 2, 2, 2, dtype=np.float64), {"stride": 2, "dilation": 2, "output_padding": 1}
    _check_fn_against_torch(F.conv_transpose3d, torch.nn.functional.conv_transpose3d, x, wt, None, atol=1e-12, **kw)


# -- layers ---------------------------------------------------------------------------------------
def _load_from_torch(layer, ref) -> None:
    layer.load_state_dict({k: v.detach().numpy().copy() for k, v in ref.state_dict().items()})


def _check_layer_against_torch(layer, ref, x: np.ndarray, **kwargs) -> None:
    """Same output and the same input and parameter gradients as the torch layer (torch's weights)."""
    _load_from_torch(layer, ref)
    xn, xt = _t(x, grad=True), torch.tensor(x, requires_grad=True)
    y, yt = layer(xn, **kwargs), ref(xt, **kwargs)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    cot = _r(*yt.shape)
    (y * _t(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref.get_parameter(name).grad.numpy(), rtol=1e-4, atol=1e-4)


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 2, "padding": 1},
        {"stride": (1, 2, 1), "padding": (1, 0, 2), "dilation": (2, 1, 1), "groups": 2, "bias": False},
        {"padding": "same", "dilation": (1, 2, 1)},
        {"padding": "valid", "stride": (2, 1, 3)},
        {"padding": 1, "padding_mode": "reflect"},
        {"padding": (2, 1, 0), "padding_mode": "circular", "groups": 2},
        {"padding": "same", "padding_mode": "replicate"},
    ],
)
def test_conv3d_layer_matches_torch(kwargs):
    _check_layer_against_torch(Conv3d(4, 6, 3, **kwargs), torch.nn.Conv3d(4, 6, 3, **kwargs), _r(2, 4, 5, 6, 5))


@needs_torch
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_layer_unbatched_input_matches_torch(mode):
    kw = {"kernel_size": (2, 3, 3), "padding": 1, "padding_mode": mode}
    _check_layer_against_torch(Conv3d(3, 2, **kw), torch.nn.Conv3d(3, 2, **kw), _r(3, 4, 5, 4))


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"stride": (1, 2, 3), "output_padding": (0, 1, 2), "groups": 2, "bias": False},
        {"stride": 2, "dilation": (1, 2, 1), "output_padding": (1, 1, 0), "padding": (0, 1, 1)},
    ],
)
def test_conv_transpose3d_layer_matches_torch(kwargs):
    layer, ref = ConvTranspose3d(4, 6, 3, **kwargs), torch.nn.ConvTranspose3d(4, 6, 3, **kwargs)
    _check_layer_against_torch(layer, ref, _r(2, 4, 3, 4, 3))
    _check_layer_against_torch(layer, ref, _r(4, 3, 2, 3))  # unbatched


@needs_torch
def test_conv_transpose3d_output_size_matches_torch():
    layer, ref = ConvTranspose3d(3, 2, 3, stride=2), torch.nn.ConvTranspose3d(3, 2, 3, stride=2)
    _check_layer_against_torch(layer, ref, _r(1, 3, 3, 4, 3), output_size=(8, 9, 7))
    _check_layer_against_torch(layer, ref, _r(3, 3, 4, 3), output_size=(1, 7, 10, 8))  # with the leading dims
    with pytest.raises(ValueError, match="requested an output size"):
        layer(nb.ones(1, 3, 3, 4, 3), output_size=(10, 9, 7))


@needs_torch
def test_reprs_and_state_dicts_match_torch():
    for args, kwargs in (
        ((16, 33, 3), {"stride": 2}),
        ((4, 6, (3, 5, 2)), {"stride": (2, 1, 1), "padding": (4, 2, 0), "dilation": 2, "groups": 2, "bias": False}),
        ((2, 4, 3), {"padding": "same", "padding_mode": "circular"}),
    ):
        layer, ref = Conv3d(*args, **kwargs), torch.nn.Conv3d(*args, **kwargs)
        assert repr(layer) == repr(ref)
        assert {k: tuple(v.shape) for k, v in layer.state_dict().items()} == {
            k: tuple(v.shape) for k, v in ref.state_dict().items()
        }
    kwargs = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": (1, 1, 2)}
    layer, ref = ConvTranspose3d(4, 6, 3, **kwargs), torch.nn.ConvTranspose3d(4, 6, 3, **kwargs)
    assert repr(layer) == repr(ref)
    assert {k: tuple(v.shape) for k, v in layer.state_dict().items()} == {
        k: tuple(v.shape) for k, v in ref.state_dict().items()
    }


def test_layer_layouts_init_and_repr():
    c = Conv3d(16, 32, (3, 5, 2), stride=2, padding=1, groups=4)
    assert c.weight.shape == (32, 4, 3, 5, 2) and c.bias.shape == (32,)
    bound = 1 / math.sqrt(4 * 3 * 5 * 2)  # kaiming_uniform_(a=sqrt(5)) and the bias share it
    w = c.weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(c.bias.numpy()).max() <= bound
    assert repr(c) == "Conv3d(16, 32, kernel_size=(3, 5, 2), stride=(2, 2, 2), padding=(1, 1, 1), groups=4)"
    assert repr(Conv3d(2, 3, 3, bias=False, padding="same", padding_mode="reflect")) == (
        "Conv3d(2, 3, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same, bias=False, padding_mode=reflect)"
    )
    t = ConvTranspose3d(6, 8, 3, stride=2, groups=2, output_padding=1)
    assert t.weight.shape == (6, 4, 3, 3, 3)  # (in, out / groups, kD, kH, kW), as torch
    assert np.abs(t.bias.numpy()).max() <= 1 / math.sqrt(4 * 27)
    assert repr(t) == (
        "ConvTranspose3d(6, 8, kernel_size=(3, 3, 3), stride=(2, 2, 2), output_padding=(1, 1, 1), groups=2)"
    )
    assert list(t.state_dict()) == ["weight", "bias"]
    assert Conv3d(2, 3, 1, dtype=nb.float64).weight.dtype == nb.float64


def test_layer_forward_matches_the_functional_form():
    c = Conv3d(2, 4, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), padding_mode="replicate")
    x = _r(2, 2, 4, 6, 5)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)), mode="edge")
    want = _conv3d_ref(xp, c.weight.numpy(), c.bias.numpy(), stride=(1, 2, 2))
    np.testing.assert_allclose(c(_t(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    t = ConvTranspose3d(2, 3, 2, stride=2, output_padding=1)
    want = _conv_transpose3d_ref(x, t.weight.numpy(), t.bias.numpy(), stride=2, output_padding=1)
    np.testing.assert_allclose(t(_t(x)).numpy(), want, rtol=1e-4, atol=1e-5)


# -- errors ---------------------------------------------------------------------------------------
def _x(*shape: int) -> nb.Tensor:
    return nb.ones(*shape)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: nb.conv3d(_x(1, 3, 2, 4, 4), _x(2, 3, 3, 3, 3)), ValueError, r"conv3d: kernel size \(3, 3, 3\)"),
        (lambda: nb.conv3d(_x(3, 4, 4), _x(2, 3, 3, 3, 3)), ValueError, r"conv3d: expected a 4-D .* 5-D .*\(3, 4, 4\)"),
        (lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 3, 3)), ValueError, r"conv3d: weight must have rank 5"),
        (lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 2, 1, 1, 1)), ValueError, r"conv3d: expected input with 2 chan"),
        (lambda: nb.conv3d(_x(1, 4, 4, 4, 4), _x(3, 2, 1, 1, 1), groups=2), ValueError, r"out_channels=3 .*groups"),
        (lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 1, 1, 1), stride=(1, 1)), TypeError, r"tuple of 3 ints"),
        (lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 1, 1, 1), padding="full"), ValueError, r"padding must be"),
        (
            lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 3, 3, 3), padding="same", stride=2),
            ValueError,
            r"padding='same' is not supported for strided",
        ),
        (lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 1, 1, 1), _x(3)), ValueError, r"bias must have shape \(2,\)"),
        (
            lambda: nb.conv3d(_x(1, 3, 4, 4, 4), _x(2, 3, 1, 1, 1).astype(nb.float64)),
            TypeError,
            r"input dtype float32 and weight dtype float64 differ",
        ),
        (lambda: nb.conv_transpose3d(_x(1, 3, 4, 4, 4), _x(2, 3, 1, 1, 1)), ValueError, r"expected input with 2"),
        (lambda: nb.conv_transpose3d(_x(1, 3, 4, 4, 4), _x(3, 2, 1, 1)), ValueError, r"weight must have rank 5"),
        (
            lambda: nb.conv_transpose3d(_x(1, 2, 4, 4, 4), _x(2, 2, 3, 3, 3), padding="same"),
            ValueError,
            r"conv_transpose3d: padding must be an int or a tuple of 3 ints",
        ),
        (
            lambda: nb.conv_transpose3d(_x(1, 2, 4, 4, 4), _x(2, 2, 3, 3, 3), stride=2, output_padding=2),
            ValueError,
            r"output_padding .* must be smaller than either stride",
        ),
        (
            lambda: nb.conv_transpose3d(_x(1, 2, 1, 1, 1), _x(2, 2, 1, 1, 1), padding=1),
            ValueError,
            r"calculated output size .* is too small",
        ),
        (lambda: nb.conv_transpose3d(_x(1, 3, 2, 2, 2), _x(3, 1, 1, 1, 1), groups=2), ValueError, r"in_channels=3"),
    ],
)
def test_functional_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_layer_errors():
    with pytest.raises(ValueError, match=r"got input \(1, 3, 4, 4, 4\), expected \(N, 2, D, H, W\) or \(2, D, H, W\)"):
        Conv3d(2, 3, 3)(nb.ones(1, 3, 4, 4, 4))
    with pytest.raises(ValueError, match=r"got input \(2, 4, 4\)"):
        Conv3d(2, 3, 3)(nb.ones(2, 4, 4))
    with pytest.raises(ValueError, match=r"expected \(N, 4, D, H, W\)"):
        ConvTranspose3d(4, 2, 3)(nb.ones(1, 2, 3, 3, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        Conv3d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        Conv3d(3, 6, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        Conv3d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(TypeError, match="kernel_size must be an int or a tuple of 3 ints"):
        Conv3d(3, 6, (3, 3))
    with pytest.raises(ValueError, match="zeros"):
        ConvTranspose3d(3, 6, 3, padding_mode="reflect")


def test_registry_entries_include_max_samples():
    """tests/test_conformance_max.py compiles the registry samples marked `max` (its "nn" group)."""
    specs = {s.name: s for s in REGISTRY}
    for name in ("conv3d", "conv_transpose3d"):
        assert any(sample.max for sample in specs[name].samples), name
