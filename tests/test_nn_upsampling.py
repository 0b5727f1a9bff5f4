"""Upsampling: `interpolate` (every mode, size and scale_factor, align_corners, antialias), the
deprecated `upsample*` forms, pixel_shuffle / pixel_unshuffle and the modules. Values and input
gradients against PyTorch when it is installed; hand-computed values (NumPy only) otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
from nabla_nn.functional.upsampling import (
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from nabla_nn.modules.upsampling import (
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

RNG = np.random.default_rng(0)


def _r(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _interp(a, **kw) -> np.ndarray:
    return interpolate(nb.tensor(np.asarray(a, np.float32)), **kw).numpy()


def _check_against_torch(shape: tuple, dtype=np.float32, **kw) -> None:
    """Same output and the same input gradient (for a random cotangent) as torch's interpolate."""
    a = _r(*shape, dtype=dtype)
    t, x = torch.tensor(a, requires_grad=True), nb.tensor(a, requires_grad=True)
    yt, y = TF.interpolate(t, **kw), interpolate(x, **kw)
    assert y.shape == tuple(yt.shape) and y.dtype == x.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), atol=tol, rtol=tol)
    cot = _r(*yt.shape, dtype=dtype)
    (yt * torch.tensor(cot)).sum().backward()
    (y * nb.tensor(cot)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=tol * 10, rtol=tol * 10)


# Scale factors whose output size differs from the input's for the lengths used below (5, 7): where
# the sizes are equal PyTorch's forward and backward kernels disagree (see test_gradient_is_adjoint).
_FACTORS = [2, 3, 1.5, 0.7, 0.5, 1 / 3]


# -- against PyTorch ---------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(
    "mode, align_corners",
    [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True), ("area", None)],
)
def test_1d_sizes_match_torch(mode, align_corners):
    for n in (1, 5, 7):
        for m in (1, 4, 9, 13):
            _check_against_torch((2, 3, n), size=m, mode=mode, align_corners=align_corners)


@needs_torch
@pytest.mark.parametrize(
    "mode, align_corners",
    [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True), ("area", None)],
)
def test_1d_scale_factors_match_torch(mode, align_corners):
    for n in (5, 7):
        for sf in _FACTORS:
            for recompute in (None, True):
                kw = dict(scale_factor=sf, mode=mode, align_corners=align_corners, recompute_scale_factor=recompute)
                _check_against_torch((2, 3, n), **kw)


@needs_torch
@pytest.mark.parametrize(
    "mode, align_corners",
    [
        ("nearest", None),
        ("nearest-exact", None),
        ("bilinear", False),
        ("bilinear", True),
        ("bicubic", False),
        ("bicubic", True),
        ("area", None),
    ],
)
def test_2d_matches_torch(mode, align_corners):
    for size in [(1, 1), (5, 3), (8, 11), 4]:
        _check_against_torch((2, 3, 5, 7), size=size, mode=mode, align_corners=align_corners)
    for sf in [*_FACTORS, (1.5, 0.7), (2, 3)]:
        for recompute in (None, True):
            kw = dict(scale_factor=sf, mode=mode, align_corners=align_corners, recompute_scale_factor=recompute)
            _check_against_torch((2, 3, 5, 7), **kw)


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias_matches_torch(mode, align_corners):
    # No output width of 1 (PyTorch's antialiased kernel then repeats the first output row).
    for size in [(3, 4), (2, 3), (9, 11), (3, 12)]:
        _check_against_torch((2, 2, 5, 7), size=size, mode=mode, align_corners=align_corners, antialias=True)
    for sf in (0.7, 1.5, 0.4):
        _check_against_torch((2, 2, 5, 7), scale_factor=sf, mode=mode, align_corners=align_corners, antialias=True)


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear", "area"])
def test_float64_1d_matches_torch(mode):
    ac = False if mode == "linear" else None
    _check_against_torch((2, 2, 7), np.float64, size=12, mode=mode, align_corners=ac)
    _check_against_torch((2, 2, 7), np.float64, scale_factor=0.7, mode=mode, align_corners=ac)


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic", "area"])
def test_float64_2d_matches_torch(mode):
    ac = True if mode in ("bilinear", "bicubic") else None
    _check_against_torch((1, 2, 5, 7), np.float64, size=(9, 4), mode=mode, align_corners=ac)
    _check_against_torch((1, 2, 5, 7), np.float64, scale_factor=(1.5, 0.7), mode=mode, align_corners=ac)


@needs_torch
def test_nearest_index_rounding_matches_torch():
    """Sizes where float32 rounding picks the index: PyTorch's 1-D kernel works in the input's
    precision with a fused multiply-add, its 2-D one always in float32 (and they differ)."""
    for mode in ("nearest", "nearest-exact"):
        for n, m in [(2, 41), (2, 47), (3, 29), (5, 41), (7, 61), (6, 49)]:
            x = np.arange(n, dtype=np.float32)
            ref = TF.interpolate(torch.tensor(x).reshape(1, 1, n), size=m, mode=mode).numpy()
            np.testing.assert_array_equal(_interp(x.reshape(1, 1, n), size=m, mode=mode), ref)
            ref = TF.interpolate(torch.tensor(x).reshape(1, 1, 1, n), size=(1, m), mode=mode).numpy()
            np.testing.assert_array_equal(_interp(x.reshape(1, 1, 1, n), size=(1, m), mode=mode), ref)


# -- NumPy only: hand-computed values -----------------------------------------------------------
def test_nearest_values():
    x = np.array([[[1.0, 2.0, 3.0]]])
    np.testing.assert_array_equal(_interp(x, size=5), [[[1, 1, 2, 2, 3]]])  # floor(i * 3 / 5)
    np.testing.assert_array_equal(_interp(x, scale_factor=2), [[[1, 1, 2, 2, 3, 3]]])
    np.testing.assert_array_equal(_interp(x, size=2), [[[1, 2]]])  # floor(i * 1.5)
    img = np.arange(4.0).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(_interp(img, scale_factor=(1, 2))[0, 0], [[0, 0, 1, 1], [2, 2, 3, 3]])
    ints = interpolate(nb.tensor(np.arange(3).reshape(1, 1, 3)), scale_factor=2)  # integers are fine here
    assert ints.dtype == nb.int64 and ints.tolist() == [[[0, 0, 1, 1, 2, 2]]]


def test_nearest_exact_values():
    x = np.array([[[1.0, 2.0, 3.0]]])
    np.testing.assert_array_equal(_interp(x, size=5, mode="nearest-exact"), [[[1, 1, 2, 3, 3]]])  # floor((i+.5)*.6)
    np.testing.assert_array_equal(_interp(x, size=2, mode="nearest-exact"), [[[1, 3]]])  # floor((i+.5)*1.5)
    img = np.arange(9.0).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(_interp(img, size=(1, 1), mode="nearest-exact"), [[[[4]]]])  # the centre


def test_linear_values_and_align_corners():
    x = np.array([[[1.0, 2.0]]])
    np.testing.assert_allclose(_interp(x, size=4, mode="linear"), [[[1, 1.25, 1.75, 2]]])
    np.testing.assert_allclose(_interp(x, size=3, mode="linear", align_corners=True), [[[1, 1.5, 2]]])
    np.testing.assert_allclose(_interp(x, size=1, mode="linear", align_corners=True), [[[1]]])
    np.testing.assert_allclose(_interp(x, size=1, mode="linear"), [[[1.5]]])


def test_linear_scale_factor_uses_the_factor_not_the_size_ratio():
    """[0, 1, 2] by 1.5 gives 4 outputs; their positions step by 1 / 1.5 unless the factor is
    recomputed (then by 3 / 4, as an explicit size=4 would)."""
    x = np.array([[[0.0, 1.0, 2.0]]])
    np.testing.assert_allclose(_interp(x, scale_factor=1.5, mode="linear"), [[[0, 0.5, 7 / 6, 11 / 6]]], atol=1e-6)
    recomputed = _interp(x, scale_factor=1.5, mode="linear", recompute_scale_factor=True)
    np.testing.assert_allclose(recomputed, [[[0, 0.625, 1.375, 2]]], atol=1e-6)
    np.testing.assert_allclose(recomputed, _interp(x, size=4, mode="linear"))
    # align_corners=True ignores the factor: the corners map onto each other.
    aligned = _interp(x, scale_factor=1.5, mode="linear", align_corners=True)
    np.testing.assert_allclose(aligned, [[[0, 2 / 3, 4 / 3, 2]]], atol=1e-6)


def test_bilinear_values():
    img = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    out = _interp(img, size=3, mode="bilinear", align_corners=True)
    np.testing.assert_allclose(out[0, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    out = _interp(img, scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(out[0, 0, 0], [1, 1.25, 1.75, 2])
    np.testing.assert_allclose(out[0, 0, :, 0], [1, 1.5, 2.5, 3])


def test_bicubic_values_use_a_minus_075_and_clamp_the_border():
    """4 -> 7 with aligned corners samples at 0, 0.5, 1, ...: halfway taps weigh
    cubic(0.5) = 0.59375 and cubic(1.5) = -0.09375 with a = -0.75; the tap left of sample 0
    reads sample 0 again."""
    out = _interp(np.array([[[[0.0, 1.0, 0.0, 0.0]]]]), size=(1, 7), mode="bicubic", align_corners=True)
    np.testing.assert_allclose(out[0, 0, 0], [0, 0.59375, 1, 0.59375, 0, -0.09375, 0], atol=1e-6)
    out = _interp(np.array([[[[1.0, 0.0, 0.0, 0.0]]]]), size=(1, 7), mode="bicubic", align_corners=True)
    np.testing.assert_allclose(out[0, 0, 0, :3], [1, 0.5, 0], atol=1e-6)  # -0.09375 + 0.59375
    ones = _interp(np.ones((1, 2, 3, 5)), scale_factor=(2.5, 0.7), mode="bicubic")
    np.testing.assert_allclose(ones, np.ones((1, 2, 7, 3)), atol=1e-6)  # every row sums to 1


def test_area_values():
    x = np.arange(1.0, 7.0).reshape(1, 1, 6)
    np.testing.assert_allclose(_interp(x, size=3, mode="area"), [[[1.5, 3.5, 5.5]]])
    np.testing.assert_allclose(_interp(x, size=4, mode="area"), [[[1.5, 2.5, 4.5, 5.5]]])  # overlapping windows
    np.testing.assert_allclose(_interp(x, scale_factor=0.5, mode="area"), [[[1.5, 3.5, 5.5]]])
    img = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_allclose(_interp(img, scale_factor=0.5, mode="area")[0, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_antialias_values():
    """Halving 1..8 with antialias: a triangle twice as wide, normalised over the samples inside."""
    x = np.arange(1.0, 9.0).reshape(1, 1, 1, 8)
    out = _interp(x, size=(1, 4), mode="bilinear", antialias=True)[0, 0, 0]
    np.testing.assert_allclose(out, [12 / 7, 3.5, 5.5, 51 / 7], atol=1e-6)
    plain = _interp(x, size=(1, 4), mode="bilinear")[0, 0, 0]
    np.testing.assert_allclose(plain, [1.5, 3.5, 5.5, 7.5])  # reads 2 samples of each 2, no wider
    ones = _interp(np.ones((1, 1, 9, 9)), size=(4, 3), mode="bicubic", antialias=True)
    np.testing.assert_allclose(ones, np.ones((1, 1, 4, 3)), atol=1e-6)


@pytest.mark.parametrize(
    "kw",
    [
        dict(scale_factor=1.2, mode="nearest"),  # 3 -> 3 samples, not the identity: positions step by 1/1.2
        dict(scale_factor=0.7, mode="nearest-exact"),
        dict(size=5, mode="linear", align_corners=True),
        dict(scale_factor=(1.2, 1.7), mode="bicubic"),
        dict(size=(2, 5), mode="bilinear", antialias=True),
    ],
)
def test_gradient_is_adjoint(kw):
    """The input gradient is the transpose of the (linear) forward map, computed column by column
    from the forward pass (PyTorch's backward copies where the size is unchanged even when its
    forward resamples, e.g. nearest 1-D or bicubic with scale_factor 1.2 on 3 samples)."""
    shape = (1, 1, 3) if "linear" == kw["mode"] or kw["mode"].startswith("nearest") else (1, 1, 3, 3)
    n = int(np.prod(shape))
    columns = [interpolate(nb.tensor(np.eye(n, dtype=np.float32)[i].reshape(shape)), **kw).numpy() for i in range(n)]
    jac = np.stack([c.reshape(-1) for c in columns], axis=1)  # (out, in)
    x = nb.tensor(_r(*shape), requires_grad=True)
    y = interpolate(x, **kw)
    cot = _r(*y.shape)
    (y * nb.tensor(cot)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), jac.T @ cot.reshape(-1), atol=1e-5)


def test_vmap_and_jvp():
    a, t = _r(4, 2, 3, 5), _r(4, 2, 3, 5)

    def f(x):
        return interpolate(x, size=(4, 7), mode="bicubic", align_corners=True)

    batched = nb.vmap(f)(nb.tensor(a[:, None]))
    np.testing.assert_allclose(batched.numpy()[:, 0], f(nb.tensor(a)).numpy(), atol=1e-6)
    _, tangent = nb.jvp(f, (nb.tensor(a),), (nb.tensor(t),))
    np.testing.assert_allclose(tangent.numpy(), f(nb.tensor(t)).numpy(), atol=1e-6)  # the map is linear


def test_same_size_returns_a_new_tensor():
    x = nb.tensor(_r(1, 2, 3, 4))
    y = interpolate(x, size=(3, 4), mode="bilinear")
    assert y is not x
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_deprecated_forms():
    img = _r(1, 2, 3, 4)
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        out = upsample_nearest(nb.tensor(img), scale_factor=2)
    np.testing.assert_array_equal(out.numpy(), _interp(img, scale_factor=2))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        out = upsample_bilinear(nb.tensor(img), size=(5, 7))
    np.testing.assert_allclose(out.numpy(), _interp(img, size=(5, 7), mode="bilinear", align_corners=True))
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        out = upsample(nb.tensor(img), scale_factor=1.5, mode="bicubic")
    np.testing.assert_allclose(out.numpy(), _interp(img, scale_factor=1.5, mode="bicubic"))


# -- pixel shuffle ------------------------------------------------------------------------------
def test_pixel_shuffle_values_and_round_trip():
    x = np.arange(4.0).reshape(1, 4, 1, 1)
    np.testing.assert_array_equal(pixel_shuffle(nb.tensor(x), 2).numpy(), [[[[0, 1], [2, 3]]]])
    np.testing.assert_array_equal(pixel_unshuffle(nb.tensor([[[[0.0, 1.0], [2.0, 3.0]]]]), 2).numpy(), x)
    a = _r(2, 3, 18, 2, 4)  # extra leading dims are kept
    y = pixel_shuffle(nb.tensor(a), 3)
    assert y.shape == (2, 3, 2, 6, 12)
    np.testing.assert_array_equal(pixel_unshuffle(y, 3).numpy(), a)
    assert pixel_shuffle(nb.tensor(a), 1).shape == a.shape
    x = nb.tensor(_r(1, 8, 2, 3), requires_grad=True)
    (pixel_shuffle(x, 2) * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 8, 2, 3), 2.0))


@needs_torch
def test_pixel_shuffle_matches_torch():
    a = _r(2, 18, 3, 4)
    np.testing.assert_array_equal(
        pixel_shuffle(nb.tensor(a), 3).numpy(), torch.pixel_shuffle(torch.tensor(a), 3).numpy()
    )
    b = _r(3, 2, 6, 8)
    np.testing.assert_array_equal(
        pixel_unshuffle(nb.tensor(b), 2).numpy(), torch.pixel_unshuffle(torch.tensor(b), 2).numpy()
    )
    np.testing.assert_array_equal(
        PixelShuffle(3)(nb.tensor(a)).numpy(), torch.nn.PixelShuffle(3)(torch.tensor(a)).numpy()
    )


def test_pixel_shuffle_errors():
    with pytest.raises(ValueError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        pixel_shuffle(nb.ones(1, 3, 2, 2), 2)
    with pytest.raises(ValueError, match=r"expects a positive upscale_factor, but got 0"):
        pixel_shuffle(nb.ones(1, 4, 2, 2), 0)
    with pytest.raises(TypeError, match=r"upscale_factor must be an int, got 2.0"):
        pixel_shuffle(nb.ones(1, 4, 2, 2), 2.0)
    with pytest.raises(ValueError, match=r"at least 3 dimensions, but got input with 2 dimension"):
        pixel_shuffle(nb.ones(4, 2), 2)
    with pytest.raises(ValueError, match=r"height to be divisible by downscale_factor, but input.size\(-2\)=3"):
        pixel_unshuffle(nb.ones(1, 1, 3, 4), 2)
    with pytest.raises(ValueError, match=r"width to be divisible by downscale_factor, but input.size\(-1\)=3"):
        pixel_unshuffle(nb.ones(1, 1, 4, 3), 2)


# -- modules ------------------------------------------------------------------------------------
_MODULES = [
    ("Upsample", dict(scale_factor=2), "Upsample(scale_factor=2.0, mode='nearest')"),
    ("Upsample", dict(size=(3, 4), mode="bilinear"), "Upsample(size=(3, 4), mode='bilinear')"),
    ("Upsample", dict(scale_factor=(2, 1.5)), "Upsample(scale_factor=(2.0, 1.5), mode='nearest')"),
    (
        "Upsample",
        dict(scale_factor=2, mode="bicubic", align_corners=True),
        "Upsample(scale_factor=2.0, mode='bicubic')",
    ),
    ("Upsample", dict(size=5, scale_factor=0), "Upsample(size=5, mode='nearest')"),  # a 0 factor is stored as None
    ("UpsamplingNearest2d", dict(size=3), "UpsamplingNearest2d(size=3, mode='nearest')"),
    ("UpsamplingBilinear2d", dict(scale_factor=2), "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"),
    ("PixelShuffle", dict(upscale_factor=3), "PixelShuffle(upscale_factor=3)"),
    ("PixelUnshuffle", dict(downscale_factor=2), "PixelUnshuffle(downscale_factor=2)"),
]
_CLASSES = {c.__name__: c for c in (Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle, PixelUnshuffle)}


@pytest.mark.parametrize("name, kwargs, text", _MODULES)
def test_module_repr(name, kwargs, text):
    assert repr(_CLASSES[name](**kwargs)) == text
    if torch is not None:
        assert repr(getattr(torch.nn, name)(**kwargs)) == text


def test_modules_call_the_functional_forms():
    img = _r(2, 3, 4, 5)
    x = nb.tensor(img)
    m = Upsample(scale_factor=1.5, mode="bicubic", align_corners=True, recompute_scale_factor=True)
    assert m.name == "Upsample" and m.scale_factor == 1.5 and list(m.parameters()) == []
    kw = dict(scale_factor=1.5, mode="bicubic", align_corners=True, recompute_scale_factor=True)
    np.testing.assert_allclose(m(x).numpy(), _interp(img, **kw))
    np.testing.assert_array_equal(UpsamplingNearest2d(scale_factor=2)(x).numpy(), _interp(img, scale_factor=2))
    out = UpsamplingBilinear2d(size=(7, 9))(x).numpy()
    np.testing.assert_allclose(out, _interp(img, size=(7, 9), mode="bilinear", align_corners=True))
    np.testing.assert_array_equal(PixelUnshuffle(2)(PixelShuffle(2)(nb.tensor(_r(1, 8, 2, 3)))).shape, (1, 8, 2, 3))


@needs_torch
def test_modules_match_torch():
    a = _r(2, 3, 4, 5)
    for name, kwargs in [
        ("Upsample", dict(scale_factor=0.7, mode="bilinear")),
        ("Upsample", dict(size=(6, 3), mode="nearest-exact")),
        ("UpsamplingNearest2d", dict(scale_factor=3)),
        ("UpsamplingBilinear2d", dict(size=(7, 9))),
    ]:
        ref = getattr(torch.nn, name)(**kwargs)(torch.tensor(a)).numpy()
        np.testing.assert_allclose(_CLASSES[name](**kwargs)(nb.tensor(a)).numpy(), ref, atol=1e-6)


# -- errors -------------------------------------------------------------------------------------
_ERRORS = [
    (dict(size=2, scale_factor=2), ValueError, r"only one of size or scale_factor should be defined, got size=2"),
    (dict(), ValueError, r"either size or scale_factor should be defined"),
    (
        dict(size=2, align_corners=True),
        ValueError,
        r"align_corners option can only be set with the interpolating modes.*mode='nearest' and align_corners=True",
    ),
    (dict(size=2, mode="area", align_corners=False), ValueError, r"mode='area' and align_corners=False"),
    (dict(size=2, mode="linear"), NotImplementedError, r"got 4D input, but linear mode needs 3D input"),
    (dict(size=2, mode="trilinear"), NotImplementedError, r"got 4D input, but trilinear mode needs 5D input"),
    (
        dict(size=2, mode="cubic"),
        NotImplementedError,
        r"Only 3D, 4D and 5D input Tensors supported \(got 4D\).*'cubic'",
    ),
    (dict(size=(2, 2, 2)), ValueError, r"spatial dimensions of \[4, 4\] and output size of \(2, 2, 2\)"),
    (dict(scale_factor=(2,)), ValueError, r"spatial dimensions of \[4, 4\] and scale_factor of shape \(2,\)"),
    (dict(size=(2.0, 2)), TypeError, r"expected size to be one of int.*\(2.0, 2\)"),
    (dict(scale_factor="2"), TypeError, r"scale_factor must be a number"),
    (
        dict(size=2, recompute_scale_factor=True),
        ValueError,
        r"recompute_scale_factor is not meaningful with an explicit",
    ),
    (dict(size=2, antialias=True), ValueError, r"Anti-alias option is restricted.*mode='nearest'"),
    (
        dict(size=(0, 2)),
        ValueError,
        r"sizes should be greater than 0, but got input \(H: 4, W: 4\) output \(H: 0, W: 2\)",
    ),
    (dict(scale_factor=0.1), ValueError, r"output \(H: 0, W: 0\)"),
]


@pytest.mark.parametrize("kwargs, error, message", _ERRORS)
def test_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        interpolate(nb.ones(1, 1, 4, 4), **kwargs)


def test_rank_and_dtype_errors():
    with pytest.raises(NotImplementedError, match=r"got 3D input, but bilinear mode needs 4D input"):
        interpolate(nb.ones(1, 1, 4), size=2, mode="bilinear")
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 3D\)"):
        interpolate(nb.ones(1, 1, 4), size=2, mode="bicubic")
    with pytest.raises(NotImplementedError, match=r"\(got 2D\)"):
        interpolate(nb.ones(1, 4), size=2)
    with pytest.raises(NotImplementedError, match=r"got 5D input, but bilinear mode needs 4D input"):
        interpolate(nb.ones(1, 1, 2, 2, 2), size=3, mode="bilinear")
    with pytest.raises(ValueError, match=r"input \(W: 4\) and output \(W: 0\)"):
        interpolate(nb.ones(1, 1, 4), size=0)
    with pytest.raises(TypeError, match=r"floating-point tensor, got dtype int64"):
        interpolate(nb.tensor(np.ones((1, 1, 4), np.int64)), size=2, mode="linear")
    with pytest.raises(TypeError, match=r"input must be a Tensor, got ndarray"):
        interpolate(np.ones((1, 1, 4)), size=2)


@needs_torch
@pytest.mark.parametrize("kwargs, error, message", _ERRORS[:10])
def test_argument_errors_are_torchs(kwargs, error, message):
    """PyTorch rejects the same arguments (with the same error type for these)."""
    with pytest.raises(error):
        TF.interpolate(torch.ones(1, 1, 4, 4), **kwargs)


_VOLUME_CASES = [
    (mode, align_corners, kwargs)
    for mode, align_corners in [("nearest", None), ("nearest-exact", None), ("trilinear", False), ("trilinear", True), ("area", None)]
    for kwargs in [{"scale_factor": 2}, {"size": (4, 5, 6)}, {"size": (3, 3, 3)}, {"scale_factor": (1.5, 0.5, 2.0)}]
    if not (mode == "area" and isinstance(kwargs.get("scale_factor"), tuple))  # (area needs whole output sizes)
]  # fmt: skip


@pytest.mark.parametrize(("mode", "align_corners", "kwargs"), _VOLUME_CASES)
def test_3d_volumes_match_torch(mode, align_corners, kwargs):
    x = np.random.default_rng(3).standard_normal((2, 2, 3, 4, 3)).astype(np.float32)
    out = interpolate(nb.tensor(x), mode=mode, align_corners=align_corners, **kwargs)
    if mode == "nearest" and kwargs == {"scale_factor": 2}:  # without torch: each voxel repeated twice per axis
        np.testing.assert_array_equal(out.numpy(), x.repeat(2, 2).repeat(2, 3).repeat(2, 4))
    if torch is not None:
        ref = TF.interpolate(torch.tensor(x, requires_grad=True), mode=mode, align_corners=align_corners, **kwargs)
        assert out.shape == tuple(ref.shape)
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), atol=1e-5)
        w = np.random.default_rng(4).standard_normal(out.shape).astype(np.float32)
        xn, xt = nb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (interpolate(xn, mode=mode, align_corners=align_corners, **kwargs) * nb.tensor(w)).sum().backward()
        (TF.interpolate(xt, mode=mode, align_corners=align_corners, **kwargs) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), atol=1e-4)
