"""Creation ops beyond the registry: PyTorch semantics at the edges, random-number behaviour
under the model cache and `manual_seed`, dropout's shared mask, and error messages."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
from nabla.ops.creation import EyeOp, LinspaceOp, TriOp


# -- ranges and masks ----------------------------------------------------------------------------
class TestLinspaceLogspace:
    def test_endpoints_are_exact(self):
        v = nb.linspace(-1.3, 2.7, 11).numpy()
        assert v[0] == np.float32(-1.3) and v[-1] == np.float32(2.7)
        np.testing.assert_allclose(v, np.linspace(-1.3, 2.7, 11), rtol=1e-6)

    def test_single_step_is_start_and_zero_steps_is_empty(self):
        # PyTorch: steps=1 gives [start] (not end); steps=0 an empty tensor.
        assert nb.linspace(2.0, 5.0, 1).tolist() == [2.0]
        assert nb.logspace(2.0, 5.0, 1).tolist() == [100.0]
        z = nb.linspace(0, 1, 0)
        assert z.shape == (0,) and z.dtype == nb.float32

    def test_integer_dtype_truncates_like_torch(self):
        # torch.linspace(0, 10, 5, dtype=torch.int64) == [0, 2, 5, 7, 10]
        t = nb.linspace(0, 10, 5, dtype=nb.int64)
        assert t.dtype == nb.int64 and t.tolist() == [0, 2, 5, 7, 10]
        # torch.linspace(-5, 5, 4, dtype=torch.int64) == [-5, -1, 1, 5] (truncation towards zero)
        assert nb.linspace(-5, 5, 4, dtype=nb.int64).tolist() == [-5, -1, 1, 5]

    def test_default_dtype_is_float32_even_for_int_arguments(self):
        assert nb.linspace(0, 4, 5).dtype == nb.float32
        assert nb.logspace(0, 2, 3, base=2).tolist() == [1.0, 2.0, 4.0]

    def test_symmetric_formula(self):
        # the second half counts down from `end`, so a symmetric range is exactly symmetric
        v = nb.linspace(-1.0, 1.0, 8, dtype=nb.float64).numpy()
        np.testing.assert_array_equal(v, -v[::-1])

    @pytest.mark.parametrize(
        "call, err, text",
        [
            (lambda: nb.linspace(0, 1, -1), ValueError, "linspace: steps must be non-negative, got -1"),
            (lambda: nb.linspace(0, 1, 2.5), TypeError, "linspace: steps must be an int, got 2.5"),
            (lambda: nb.linspace("a", 1, 3), TypeError, "linspace: start must be a Python number, got 'a'"),
            (lambda: nb.logspace(0, 1, 3, base="e"), TypeError, "logspace: base must be a Python number"),
        ],
    )
    def test_errors(self, call, err, text):
        with pytest.raises(err, match=text.replace("(", r"\(").replace(")", r"\)")):
            call()


class TestEyeTri:
    def test_eye_matches_numpy(self):
        for n, m in [(3, None), (2, 5), (5, 2), (0, 3), (1, None)]:
            np.testing.assert_array_equal(nb.eye(n, m).numpy(), np.eye(n, m, dtype=np.float32))
        assert nb.eye(2, dtype=nb.bool_).tolist() == [[True, False], [False, True]]

    def test_tri_matches_numpy(self):
        for args in [(3,), (3, 5), (4, 2, 1), (4, 4, -2), (3, 3, 10), (2, 3, -5)]:
            np.testing.assert_array_equal(nb.tri(*args).numpy(), np.tri(*args, dtype=np.float32))
        assert nb.tri(2, dtype=nb.int32).dtype == nb.int32

    def test_masks_are_constants(self):
        # no gradients, no trace inputs: evaluated on the host when nothing else is pending
        assert not nb.eye(3).requires_grad
        assert EyeOp.host_constant and TriOp.host_constant and LinspaceOp.host_constant

    @pytest.mark.parametrize(
        "call, err, text",
        [
            (lambda: nb.eye(-1), ValueError, "eye: n must be non-negative, got -1"),
            (lambda: nb.eye(2, -3), ValueError, "eye: m must be non-negative, got -3"),
            (lambda: nb.eye(2.0), TypeError, "eye: n must be an int, got 2.0"),
            (lambda: nb.tri(2, k=0.5), TypeError, "tri: k must be an int, got 0.5"),
            (lambda: nb.tri(True), TypeError, "tri: n must be an int, got True"),
        ],
    )
    def test_errors(self, call, err, text):
        with pytest.raises(err, match=text):
            call()


class TestFills:
    def test_empty_is_zeros(self):
        assert nb.empty(2, 3).tolist() == [[0.0] * 3] * 2
        x = nb.tensor([[1, 2]], dtype=nb.int32)
        e = nb.empty_like(x)
        assert e.dtype == nb.int32 and e.tolist() == [[0, 0]]

    def test_like_functions_accept_torch_keyword(self):
        x = nb.ones(2, 2)
        assert nb.zeros_like(input=x).shape == (2, 2)
        assert nb.full_like(x, 3, dtype=nb.int64).tolist() == [[3, 3], [3, 3]]

    def test_like_functions_reject_non_tensors(self):
        with pytest.raises(TypeError, match="zeros_like: x must be a Tensor, got list"):
            nb.zeros_like([1, 2])

    def test_host_constants_do_not_compile_on_max(self):
        nb.set_executor("max")
        nb.reset_cache_info()
        np.testing.assert_array_equal(nb.eye(3, 2).numpy(), np.eye(3, 2, dtype=np.float32))
        assert nb.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
        assert nb.rand(4).shape == (4,) and nb.randperm(5).numpy().shape == (5,)
        assert "max" not in nb.cache_info().per_executor


# -- random numbers ------------------------------------------------------------------------------
RANDOM_CALLS = {
    "rand": lambda: nb.rand(6),
    "randn": lambda: nb.randn(2, 3),
    "uniform": lambda: nb.uniform((6,), -1.0, 1.0),
    "normal": lambda: nb.normal((6,), 2.0, 0.5),
    "rand_like": lambda: nb.rand_like(nb.ones(6)),
    "bernoulli": lambda: nb.bernoulli(0.5, (64,)),
    "bernoulli_tensor": lambda: nb.bernoulli(nb.full((64,), 0.5)),
    "randint": lambda: nb.randint(0, 1000, (8,)),
    "randperm": lambda: nb.randperm(50),
    "dropout": lambda: nb.dropout(nb.ones(64), 0.5),
}


@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_cached_program_draws_fresh_numbers_each_call(name):
    make = RANDOM_CALLS[name]

    def run():
        return (make() * 1).numpy()  # a graph with a non-constant op, so it goes through the cache

    first = run()
    nb.reset_cache_info()
    second, third = run(), run()
    info = nb.cache_info()
    assert info.hits == 2 and info.misses == 0, f"{name}: {info}"
    assert not np.array_equal(first, second) and not np.array_equal(second, third), name


@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_manual_seed_repeats_the_sequence(name):
    make = RANDOM_CALLS[name]
    nb.manual_seed(123)
    a = [make().numpy() for _ in range(3)]
    nb.manual_seed(123)
    b = [make().numpy() for _ in range(3)]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    nb.manual_seed(124)
    assert not np.array_equal(make().numpy(), a[0])


def test_each_random_op_reads_its_own_seed_input():
    x, y = nb.rand(16), nb.rand(16)
    for t in (x, y):
        seed = t._impl.output_refs.args[0]
        assert seed.is_realized and seed.dtype == nb.core.common.dtypes.uint64 and seed.physical_shape == (1,)
    assert x._impl.output_refs.struct_key == y._impl.output_refs.struct_key  # one cached model serves both
    nb.evaluate(x, y)  # in one program: still different numbers
    assert not np.array_equal(x.numpy(), y.numpy())


def test_manual_seed_rejects_non_ints():
    with pytest.raises(TypeError, match="manual_seed: seed must be an int, got 1.5"):
        nb.manual_seed(1.5)


GENERATOR_CALLS = {
    "rand": lambda g: nb.rand(6, generator=g),
    "randn": lambda g: nb.randn(2, 3, generator=g),
    "uniform": lambda g: nb.uniform((6,), -1.0, 1.0, generator=g),
    "normal": lambda g: nb.normal((6,), 2.0, 0.5, generator=g),
    "normal_torch": lambda g: nb.normal(nb.zeros(6), 1.0, generator=g),
    "randn_like": lambda g: nb.randn_like(nb.ones(6), generator=g),
    "bernoulli": lambda g: nb.bernoulli(0.5, (64,), generator=g),
    "bernoulli_tensor": lambda g: nb.bernoulli(nb.full((64,), 0.5), generator=g),
    "randint": lambda g: nb.randint(0, 1000, (8,), generator=g),
    "randint_like": lambda g: nb.randint_like(nb.ones(8), 1000, generator=g),
    "randperm": lambda g: nb.randperm(50, generator=g),
    "multinomial": lambda g: nb.multinomial(nb.ones(20), 5, generator=g),
    "uniform_": lambda g: nb.zeros(6).uniform_(generator=g),
    "normal_": lambda g: nb.zeros(6).normal_(generator=g),
    "bernoulli_": lambda g: nb.zeros(64).bernoulli_(0.5, generator=g),
    "exponential_": lambda g: nb.zeros(6).exponential_(generator=g),
    "random_": lambda g: nb.zeros(6).random_(0, 100, generator=g),
}


@pytest.mark.parametrize("name", sorted(GENERATOR_CALLS))
def test_a_generator_gives_its_own_repeatable_stream(name):
    make = GENERATOR_CALLS[name]
    g = nb.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    first = [make(g).numpy() for _ in range(2)]
    assert not np.array_equal(*first)  # the stream advances
    g.manual_seed(5)
    nb.manual_seed(0)
    make(None).numpy()  # draws from the global generator leave g's stream alone
    np.testing.assert_array_equal(make(g).numpy(), first[0])
    state = g.get_state()
    after = make(g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(make(g).numpy(), after)
    np.testing.assert_array_equal(make(nb.Generator().manual_seed(5)).numpy(), first[0])  # same seed, same draw


def test_generator_api_and_errors():
    g = nb.Generator()
    assert g.initial_seed() == 67280421310721  # torch.Generator's default seed
    assert nb.manual_seed(3) is nb.default_generator and nb.initial_seed() == 3
    assert nb.Generator().manual_seed(-1).initial_seed() == 2**64 - 1  # torch's seeds are modulo 2**64
    assert isinstance(g.seed(), int) and g.initial_seed() == g.get_state().tolist()[0]
    with pytest.raises(TypeError, match="randn: generator must be a nabla.Generator, got int"):
        nb.randn(2, generator=3)
    with pytest.raises(TypeError, match="manual_seed: seed must be an int, got '1'"):
        g.manual_seed("1")
    with pytest.raises(ValueError, match="set_state: expected the \\(2,\\) int64 tensor"):
        g.set_state(nb.zeros(3))
    if torch is not None:
        assert torch.Generator().initial_seed() == nb.Generator().initial_seed()


class TestBernoulli:
    def test_tensor_probabilities_keep_shape_and_dtype(self):
        p = nb.tensor(np.array([[0.0, 1.0], [1.0, 0.0]]), dtype=nb.float64)
        out = nb.bernoulli(p)
        assert out.shape == (2, 2) and out.dtype == nb.float64
        assert out.tolist() == [[0.0, 1.0], [1.0, 0.0]]

    def test_gradient_with_respect_to_p_is_zero(self):
        p = nb.full((5,), 0.5)
        g = nb.grad(lambda q: (nb.bernoulli(q) * 1.0).sum() + (q * 0).sum())(p)
        assert g.tolist() == [0.0] * 5

    @pytest.mark.parametrize(
        "call, err, text",
        [
            (lambda: nb.bernoulli(1.5, (2,)), ValueError, r"bernoulli: p must be a probability in \[0, 1\], got 1.5"),
            (lambda: nb.bernoulli(0.5), TypeError, "bernoulli: shape is required when p is a Python float"),
            (lambda: nb.bernoulli(nb.tensor([1, 0])), TypeError, "bernoulli: p must be a floating tensor"),
            (lambda: nb.bernoulli(nb.ones(2), (2,)), TypeError, "bernoulli: shape must be omitted when p is a Tensor"),
        ],
    )
    def test_errors(self, call, err, text):
        with pytest.raises(err, match=text):
            call()


class TestRandintRandperm:
    def test_randint_forms_and_dtypes(self):
        a = nb.randint(3, (100,))  # randint(high, shape), as torch.randint(high, size)
        assert a.dtype == nb.int64 and set(a.tolist()) <= {0, 1, 2}
        b = nb.randint(-2, 2, (3, 4), dtype=nb.int32)
        assert b.shape == (3, 4) and b.dtype == nb.int32
        c = nb.randint(0, 10, 5, dtype=nb.float32)
        assert c.dtype == nb.float32 and all(float(v).is_integer() for v in c.tolist())

    def test_randperm_is_a_permutation(self):
        for n in (0, 1, 7, 100):
            np.testing.assert_array_equal(np.sort(nb.randperm(n).numpy()), np.arange(n))
        assert nb.permutation(4).dtype == nb.int64
        assert nb.randperm(3, dtype=nb.int32).dtype == nb.int32

    @pytest.mark.parametrize(
        "call, err, text",
        [
            (lambda: nb.randint(5, 5, (2,)), ValueError, "randint: high=5 must be greater than low=5"),
            (lambda: nb.randint(0, 2.5, (2,)), TypeError, "randint: high must be an int, got 2.5"),
            (lambda: nb.randint(0, 2), TypeError, "randint: shape is required"),
            (lambda: nb.randint(0, 2, (2,), dtype=nb.bool_), TypeError, "randint: dtype must be an integer"),
            (lambda: nb.randperm(-1), ValueError, "randperm: n must be non-negative, got -1"),
            (lambda: nb.permutation(nb.ones(3)), TypeError, "permutation: n must be an int"),
            (lambda: nb.rand(2, dtype=nb.int64), TypeError, "rand: dtype must be a floating dtype, got int64"),
            (lambda: nb.rand_like(nb.tensor([1, 2])), TypeError, "rand: dtype must be a floating dtype, got int64"),
            (lambda: nb.normal((2,), 0.0, -1.0), ValueError, "normal: std must be non-negative, got -1.0"),
        ],
    )
    def test_errors(self, call, err, text):
        with pytest.raises(err, match=text):
            call()


class TestDropout:
    def test_gradient_uses_the_forward_mask(self):
        x = nb.tensor(np.linspace(1.0, 2.0, 200).astype(np.float32))
        y, pullback = nb.vjp(lambda v: nb.dropout(v, 0.4), x)
        (g,) = pullback(nb.ones_like(y))
        y, g = y.numpy(), g.numpy()
        kept = y != 0
        assert 0 < kept.sum() < 200
        np.testing.assert_allclose(g, np.where(kept, 1 / 0.6, 0.0), rtol=1e-6)
        np.testing.assert_allclose(y, x.numpy() * g, rtol=1e-6)

    def test_forward_mode_uses_the_same_mask(self):
        x = nb.tensor(np.linspace(1.0, 2.0, 100).astype(np.float32))
        y, t = nb.jvp(lambda v: nb.dropout(v, 0.5), (x,), (nb.ones_like(x),))
        np.testing.assert_allclose(t.numpy(), np.where(y.numpy() != 0, 2.0, 0.0), rtol=1e-6)

    def test_identity_cases_and_p_one(self):
        x = nb.tensor([1.0, -2.0, 3.0])
        assert nb.dropout(x, 0.5, training=False) is x
        assert nb.dropout(x, 0.0) is x
        assert nb.dropout(x, 1.0).tolist() == [0.0, 0.0, 0.0]
        assert nb.dropout(x, p=0.5, training=True).shape == (3,)

    def test_keeps_dtype(self):
        out = nb.dropout(nb.ones(10, dtype=nb.float64), 0.5)
        assert out.dtype == nb.float64 and set(out.tolist()) <= {0.0, 2.0}

    @pytest.mark.parametrize(
        "call, err, text",
        [
            (lambda: nb.dropout(nb.ones(2), 1.5), ValueError, r"dropout: p must be a probability in \[0, 1\], got 1.5"),
            (lambda: nb.dropout(nb.ones(2), -0.1), ValueError, r"dropout: p must be a probability in \[0, 1\]"),
            (lambda: nb.dropout(nb.tensor([1, 2]), 0.5), TypeError, "dropout: x must be a floating tensor, got dtype"),
            (lambda: nb.dropout([1.0], 0.5), TypeError, "dropout: x must be a Tensor, got list"),
        ],
    )
    def test_errors(self, call, err, text):
        with pytest.raises(err, match=text):
            call()


@pytest.mark.parametrize("dtype", [nb.float16, nb.bfloat16])
def test_half_precision_uniform_draws_stay_below_high(dtype):
    # float64 draws rounded to float16/bfloat16 reached 1.0 (0.02% / 0.2% of them), and
    # exponential_ of those was inf; torch's never reach high.
    nb.manual_seed(0)
    r = nb.rand(200_000, dtype=dtype).numpy().astype(np.float32)
    assert r.max() < 1.0 and r.max() >= 0.99
    u = nb.empty(200_000, dtype=dtype).uniform_(-1.0, 1.0).numpy().astype(np.float32)
    assert u.max() < 1.0 and u.min() >= -1.0
    assert np.isfinite(nb.empty(200_000, dtype=dtype).exponential_().numpy().astype(np.float32)).all()
