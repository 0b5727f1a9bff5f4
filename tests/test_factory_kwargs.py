"""torch's factory keywords on nabla's factories: `device=`, `requires_grad=`, and `layout=` /
`pin_memory=` / `memory_format=` (accepted and ignored), as in canonical ports
(`torch.randn(shape, device=x.device)`, `torch.ones_like(x, requires_grad=True)`).

Each factory is written once as `make(lib, x, **kw)`, so the same call runs on nabla and, where
torch is installed, on torch: the list of keywords each one takes is checked against torch's.
"""

from __future__ import annotations

import numpy as np
import pytest
from max.driver import CPU

import nabla as nb
from nabla.core.common.devices import CPU_DEVICE, as_device
from nabla.core.graph import executors

# name -> (make(lib, x, **kw) with a float result, the optional keywords torch gives it besides
# device=, random?)
GRAD = ("requires_grad",)
FACTORIES = {
    "tensor": (lambda lib, x, **kw: lib.tensor([1.0, 2.0], **kw), (*GRAD, "pin_memory"), False),
    "asarray": (lambda lib, x, **kw: lib.asarray([1.0, 2.0], **kw), GRAD, False),
    "scalar_tensor": (lambda lib, x, **kw: lib.scalar_tensor(1.5, **kw), (*GRAD, "layout", "pin_memory"), False),
    "zeros": (lambda lib, x, **kw: lib.zeros(2, 3, **kw), (*GRAD, "layout"), False),
    "ones": (lambda lib, x, **kw: lib.ones((2, 3), **kw), (*GRAD, "layout"), False),
    "empty": (lambda lib, x, **kw: lib.empty(2, 3, **kw), (*GRAD, "layout", "pin_memory"), False),
    "full": (lambda lib, x, **kw: lib.full((2, 3), 1.5, **kw), (*GRAD, "layout"), False),
    "empty_strided": (
        lambda lib, x, **kw: lib.empty_strided((2, 3), (3, 1), **kw),
        (*GRAD, "layout", "pin_memory"),
        False,
    ),
    "zeros_like": (lambda lib, x, **kw: lib.zeros_like(x, **kw), (*GRAD, "layout", "memory_format"), False),
    "ones_like": (lambda lib, x, **kw: lib.ones_like(x, **kw), (*GRAD, "layout", "memory_format"), False),
    "empty_like": (lambda lib, x, **kw: lib.empty_like(x, **kw), (*GRAD, "layout", "memory_format"), False),
    "full_like": (lambda lib, x, **kw: lib.full_like(x, 2.5, **kw), (*GRAD, "layout", "memory_format"), False),
    "arange": (lambda lib, x, **kw: lib.arange(0.0, 3.0, 0.5, **kw), (*GRAD, "layout"), False),
    "linspace": (lambda lib, x, **kw: lib.linspace(0, 1, 5, **kw), (*GRAD, "layout"), False),
    "logspace": (lambda lib, x, **kw: lib.logspace(0, 2, 3, **kw), (*GRAD, "layout"), False),
    "eye": (lambda lib, x, **kw: lib.eye(3, 4, **kw), (*GRAD, "layout"), False),
    "hann_window": (lambda lib, x, **kw: lib.hann_window(6, **kw), (*GRAD, "layout"), False),
    "hamming_window": (lambda lib, x, **kw: lib.hamming_window(6, **kw), (*GRAD, "layout", "pin_memory"), False),
    "blackman_window": (lambda lib, x, **kw: lib.blackman_window(6, **kw), (*GRAD, "layout"), False),
    "bartlett_window": (lambda lib, x, **kw: lib.bartlett_window(6, **kw), (*GRAD, "layout"), False),
    "kaiser_window": (lambda lib, x, **kw: lib.kaiser_window(6, **kw), (*GRAD, "layout"), False),
    "tril_indices": (lambda lib, x, **kw: lib.tril_indices(3, 4, **kw), ("layout",), False),
    "triu_indices": (lambda lib, x, **kw: lib.triu_indices(3, 4, 1, **kw), ("layout",), False),
    "rand": (lambda lib, x, **kw: lib.rand(2, 3, **kw), (*GRAD, "layout", "pin_memory", "generator"), True),
    "randn": (lambda lib, x, **kw: lib.randn((2, 3), **kw), (*GRAD, "layout", "pin_memory", "generator"), True),
    "randint": (
        lambda lib, x, **kw: lib.randint(0, 9, (2, 3), dtype=lib.float32, **kw),
        (*GRAD, "layout", "generator"),
        True,
    ),
    "randperm": (
        lambda lib, x, **kw: lib.randperm(6, dtype=lib.float32, **kw),
        (*GRAD, "layout", "pin_memory", "generator"),
        True,
    ),
    "normal": (
        lambda lib, x, **kw: lib.normal(2.0, 3.0, size=(2, 3), **kw),
        (*GRAD, "layout", "pin_memory", "generator"),
        True,
    ),
    "rand_like": (lambda lib, x, **kw: lib.rand_like(x, **kw), (*GRAD, "layout", "memory_format", "generator"), True),
    "randn_like": (lambda lib, x, **kw: lib.randn_like(x, **kw), (*GRAD, "layout", "memory_format", "generator"), True),
    "randint_like": (
        lambda lib, x, **kw: lib.randint_like(x, 9, **kw),
        (*GRAD, "layout", "memory_format", "generator"),
        True,
    ),
}
NAMES = sorted(FACTORIES)
GRAD_NAMES = [n for n in NAMES if "requires_grad" in FACTORIES[n][1]]
IGNORED = {"layout": None, "pin_memory": False, "memory_format": None}


def _x(lib=nb):
    return lib.ones(2, 3)


def _make(name: str, **kw) -> nb.Tensor:
    make, _, random = FACTORIES[name]
    if random:
        nb.manual_seed(7)
    return make(nb, _x(), **kw)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", ["cpu", "device", "x.device"])
def test_device_cpu_gives_the_same_tensor(name, device):
    plain = _make(name)
    spec = {"cpu": "cpu", "device": nb.device("cpu"), "x.device": _x().device}[device]
    placed = _make(name, device=spec)
    assert placed.device is CPU_DEVICE
    assert placed.shape == plain.shape and placed.dtype == plain.dtype
    np.testing.assert_array_equal(placed.numpy(), plain.numpy())
    assert not placed.requires_grad


@pytest.mark.parametrize("name", [n for n in NAMES if set(FACTORIES[n][1]) & IGNORED.keys()])
def test_ignored_keywords_change_nothing(name):
    extra = {k: v for k, v in IGNORED.items() if k in FACTORIES[name][1]}
    np.testing.assert_array_equal(_make(name, **extra).numpy(), _make(name).numpy())


@pytest.mark.parametrize("name", GRAD_NAMES)
def test_requires_grad_gives_a_leaf_that_requires_grad(name):
    out = _make(name, requires_grad=True, device="cpu")
    assert out.requires_grad and out.is_leaf and out.grad is None
    np.testing.assert_array_equal(out.detach().numpy(), _make(name).numpy())
    (out * 2.0).sum().backward()
    np.testing.assert_array_equal(out.grad.numpy(), np.full(out.shape, 2.0, np.float32))


INTEGER_RESULTS = {  # (nabla call, the same call on torch)
    "randint": lambda lib: lib.randint(0, 5, (3,), requires_grad=True),
    "randperm": lambda lib: lib.randperm(4, requires_grad=True),
    "arange": lambda lib: lib.arange(3, requires_grad=True),
    "zeros": lambda lib: lib.zeros(2, dtype=lib.int32, requires_grad=True),
    "full_like": lambda lib: lib.full_like(lib.ones(2, dtype=lib.int64), 3, requires_grad=True),
    "eye": lambda lib: lib.eye(2, dtype=lib.bool, requires_grad=True),
    "randint_like": lambda lib: lib.randint_like(lib.ones(2, dtype=lib.int64), 5, requires_grad=True),
}


@pytest.mark.parametrize("name", sorted(INTEGER_RESULTS))
def test_requires_grad_of_an_integer_result_raises_as_torch(name):
    with pytest.raises(RuntimeError, match="floating point"):
        INTEGER_RESULTS[name](nb)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="floating point"):
        INTEGER_RESULTS[name](torch)


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_device_is_a_clear_error(name):
    with pytest.raises(ValueError, match=r"device must be 'cpu', 'gpu'.*'tpu:0'"):
        _make(name, device="tpu:0")


def test_a_bad_device_fails_before_drawing():
    nb.manual_seed(3)
    with pytest.raises(ValueError):
        nb.randn(4, device="tpu")
    after_error = nb.randn(4).numpy()
    nb.manual_seed(3)
    np.testing.assert_array_equal(after_error, nb.randn(4).numpy())


def test_generator_keyword_draws_from_that_generator():
    for name in ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like"):
        make = FACTORIES[name][0]
        a = make(nb, _x(), generator=nb.Generator().manual_seed(5), device="cpu")
        b = make(nb, _x(), generator=nb.Generator().manual_seed(5))
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_normal_with_tensor_mean_refuses_device_and_requires_grad_as_torch():
    for kw in ({"device": "cpu"}, {"requires_grad": True}):
        with pytest.raises(TypeError, match="size="):
            nb.normal(nb.zeros(3), 1.0, **kw)


def test_empty_strided_refuses_strides_it_cannot_lay_out():
    assert nb.empty_strided((2, 1, 3), (3, 99, 1)).shape == (2, 1, 3)  # (a size-1 dim's stride is free)
    with pytest.raises(NotImplementedError, match="row-major"):
        nb.empty_strided((2, 3), (1, 2))


# -- placement on an accelerator (made "available" as in test_devices.py: the NumPy executor
#    computes the values on the host) ----------------------------------------------------------
GPU0 = as_device("gpu:0")


@pytest.fixture
def accelerator(monkeypatch):
    monkeypatch.setitem(executors._DRIVER_DEVICES, GPU0, CPU())
    return GPU0


@pytest.mark.parametrize("name", NAMES)
def test_device_places_the_result(name, accelerator):
    out = _make(name, device="cuda")
    assert out.device is accelerator
    np.testing.assert_array_equal(out.numpy(), _make(name).numpy())


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_like")])
def test_like_factories_default_to_the_input_device(name, accelerator):
    make, _, random = FACTORIES[name]
    x = nb.ones(2, 3, device=accelerator)
    if random:
        nb.manual_seed(7)
    assert make(nb, x).device is accelerator
    if random:
        nb.manual_seed(7)
    assert make(nb, x, device="cpu").device is CPU_DEVICE


# -- the keyword lists stay torch's ---------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_torch_takes_the_same_keywords(name):
    torch = pytest.importorskip("torch")
    make, keywords, _ = FACTORIES[name]
    x = _x(torch)
    kw = {"device": "cpu"}
    for k in keywords:
        kw[k] = {"requires_grad": True, "generator": torch.Generator().manual_seed(5), **IGNORED}[k]
    out = make(torch, x, **kw)
    assert out.device.type == "cpu" and out.requires_grad == ("requires_grad" in keywords)
    nb_kw = {**kw, "generator": nb.Generator().manual_seed(5)} if "generator" in kw else kw
    mine = make(nb, _x(), **nb_kw)
    assert tuple(mine.shape) == tuple(out.shape) and str(out.dtype).endswith(mine.dtype.name.lower())
    if name not in ("empty", "empty_like", "empty_strided") and not FACTORIES[name][2]:
        np.testing.assert_allclose(mine.detach().numpy(), out.detach().numpy(), rtol=1e-6, atol=1e-7)
