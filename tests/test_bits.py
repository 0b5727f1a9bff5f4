"""nabla.ops.bits: integer `&`, `|`, `^`, `~`, shifts (`<<`, `>>`) and nextafter, against NumPy (C's rules, with
torch's for out-of-range shifts) and PyTorch where installed. The MAX lowerings run in the
registry's "bits" MAX group (tests/test_conformance_max.py); here the nextafter formula that
MAX runs is also evaluated on NumPy over many values of every float format."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla.ops.bits import _FORMAT, _bitwise_formula, _nextafter_formula, _NumpyBits, _NumpyInts

RNG = np.random.default_rng(0)
FLOATS = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


def _spread(n: int, dtype: type) -> np.ndarray:
    """Values of every magnitude a format has (subnormals, powers of two, the largest), both signs."""
    info = np.finfo(dtype)
    exps = RNG.integers(int(np.log2(info.smallest_subnormal)), int(np.log2(info.max)), n)
    values = RNG.uniform(1.0, 2.0, n) * np.exp2(exps.astype(np.float64))
    values[: n // 8] = np.exp2(exps[: n // 8].astype(np.float64))  # exact powers of two
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.max, info.smallest_subnormal, info.smallest_normal, 1.0]
    with np.errstate(over="ignore"):
        return np.concatenate([edges, values * RNG.choice([-1.0, 1.0], n)]).astype(dtype)


@pytest.mark.parametrize("name", FLOATS)
def test_the_max_formula_steps_to_numpys_neighbour_in_every_format(name):
    dtype = FLOATS[name]
    x = _spread(4000, dtype)
    y = np.concatenate([_spread(4000, dtype)[:-1], [np.nan]]).astype(dtype)
    y[:600] = x[:600]  # x == y: y itself
    fmt = _FORMAT[getattr(nb, name)]
    with np.errstate(all="ignore"):
        got = _nextafter_formula(_NumpyBits, x, y, fmt).astype(dtype)  # in the format's own type
        want = np.nextafter(x, y)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # signed zeros too


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_nextafter_steps_by_one_unit_in_each_dtype(name):
    dtype = getattr(nb, name)
    one = nb.tensor([1.0, 1.0, 0.0, -2.0]).to(dtype)
    toward = nb.tensor([2.0, 0.0, -1.0, -3.0]).to(dtype)
    got = nb.nextafter(one, toward).to(nb.float64).numpy()
    p, emin, _ = _FORMAT[dtype]
    eps = 2.0 ** (1 - p)  # the spacing above 1
    np.testing.assert_array_equal(got, [1 + eps, 1 - eps / 2, -(2.0**emin), -2 - 2 * eps])


def test_nextafter_errors_and_gradients():
    with pytest.raises(TypeError, match="nextafter: expected floating-point operands, got dtype int64"):
        nb.nextafter(nb.tensor([1, 2]), 3)
    x, y = nb.tensor([1.0, 2.0, 3.0]), nb.tensor([2.0, 0.0, 3.0])
    gx, gy = nb.grad(lambda a, b: nb.sum(nb.nextafter(a, b) * nb.tensor([1.0, 2.0, 3.0])), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx.numpy(), [1.0, 2.0, 3.0])  # torch: d/dx = 1, d/dy = 0
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0, 0.0])


def test_shifts_wrap_and_take_torchs_rules_outside_the_width():
    x = nb.tensor(np.array([1, -1, 3, -8, 2**30], np.int32))
    np.testing.assert_array_equal((x << 31).numpy(), [-(2**31), -(2**31), -(2**31), 0, 0])
    np.testing.assert_array_equal((x << 32).numpy(), [0] * 5)  # past the width: 0
    np.testing.assert_array_equal((x << -1).numpy(), [0] * 5)
    np.testing.assert_array_equal((x >> 31).numpy(), [0, -1, 0, -1, 0])  # the sign fill
    np.testing.assert_array_equal((x >> 40).numpy(), [0, -1, 0, -1, 0])
    np.testing.assert_array_equal((x >> 1).numpy(), [0, -1, 1, -4, 2**29])  # rounds toward -inf
    np.testing.assert_array_equal((3 << nb.tensor(np.array([0, 2, 62]))).numpy(), [3, 12, -(2**62)])
    assert (x << 1).dtype == nb.int32 and (x << nb.tensor(np.array([1]))).dtype == nb.int64
    y = nb.tensor(np.array([5, -5]))
    y <<= 2
    y >>= 1
    np.testing.assert_array_equal(y.numpy(), [10, -10])
    np.testing.assert_array_equal(y.bitwise_left_shift_(1).numpy(), [20, -20])
    with pytest.raises(TypeError, match="bitwise_left_shift: expected integer operands, got dtype float32"):
        nb.tensor([1.0]) << 1


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_nextafter_matches_torch_exactly(name):
    x = _spread(500, np.float64 if name == "float64" else np.float32)
    y = np.concatenate([_spread(500, x.dtype.type)[1:], [0.0]]).astype(x.dtype)
    tdt = getattr(torch, name)
    want = torch.nextafter(torch.from_numpy(x).to(tdt), torch.from_numpy(y).to(tdt)).double().numpy()
    got = nb.nextafter(nb.tensor(x).to(getattr(nb, name)), nb.tensor(y).to(getattr(nb, name)))
    np.testing.assert_array_equal(got.to(nb.float64).numpy(), want)


@needs_torch
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_shifts_match_torch(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, 500, dtype=dtype, endpoint=True)
    s = RNG.integers(-3, info.bits + 4, 500).astype(dtype)
    ta, ts = torch.from_numpy(a), torch.from_numpy(s)
    np.testing.assert_array_equal((nb.tensor(a) << nb.tensor(s)).numpy(), (ta << ts).numpy())
    np.testing.assert_array_equal((nb.tensor(a) >> nb.tensor(s)).numpy(), (ta >> ts).numpy())


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("kind", ["and", "or", "xor"])
def test_the_max_bitwise_formula_equals_numpys_on_every_bit(dtype, kind):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, 3000, dtype=dtype, endpoint=True)
    y = RNG.integers(info.min, info.max, 3000, dtype=dtype, endpoint=True)
    x[:4], y[:4] = [0, -1, info.min, info.max], [info.min, info.max, -1, 0]
    with np.errstate(over="ignore"):
        got = _bitwise_formula(_NumpyInts, x, y, kind, info.bits).astype(dtype)
    want = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind](x, y)
    np.testing.assert_array_equal(got, want)


def test_integer_bitwise_ops_and_their_operators():
    x, y = nb.tensor(np.array([12, -1, 5, -8])), nb.tensor(np.array([10, 7, -3, 3]))
    np.testing.assert_array_equal((x & y).numpy(), [8, 7, 5, 0])
    np.testing.assert_array_equal((x | 3).numpy(), [15, -1, 7, -5])
    np.testing.assert_array_equal((x ^ y).numpy(), [6, -8, -8, -5])
    np.testing.assert_array_equal((~x).numpy(), [-13, 0, -6, 7])
    assert (nb.tensor(np.array([1], np.int32)) & 1).dtype == nb.int32
    x &= 6
    np.testing.assert_array_equal(x.numpy(), [4, 6, 4, 0])


def test_integer_bitwise_ops_run_exactly_on_max():
    previous = nb.get_executor()
    nb.set_executor("max")
    try:
        outs, wants = [], []
        for dtype in (np.int32, np.int64):
            info = np.iinfo(dtype)
            a = RNG.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
            b = RNG.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
            a[:4], b[:4] = [0, -1, info.min, info.max], [info.min, info.max, -1, 0]
            x, y = nb.tensor(a), nb.tensor(b)
            outs += [x & y, x | y, x ^ y, ~x]
            wants += [a & b, a | b, a ^ b, ~a]
        nb.evaluate(*outs)  # one graph: one compile (about 45 s cold)
        for out, want in zip(outs, wants, strict=True):
            np.testing.assert_array_equal(out.numpy(), want)
    finally:
        nb.set_executor(previous)


@needs_torch
def test_integer_bitwise_ops_match_torch():
    a = RNG.integers(-(2**40), 2**40, 300)
    b = RNG.integers(-(2**40), 2**40, 300)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    x, y = nb.tensor(a), nb.tensor(b)
    for got, want in ((x & y, ta & tb), (x | y, ta | tb), (x ^ y, ta ^ tb), (~x, ~ta)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
