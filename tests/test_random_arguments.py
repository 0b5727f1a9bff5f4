"""Random ops' argument handling as torch's: `normal`'s torch forms with keywords, torch's
`size=` spelling of rand/randn/randint, randint's dtype range check, the parameter checks of
the in-place random fills (`exponential_`, `geometric_`, `bernoulli_`, ...) and multinomial's
distribution checks. Each behaviour is asserted on its own; torch, when installed, agrees."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb


# -- normal: PyTorch's normal(mean, std=1.0, size=None) with keywords ------------------------------
class TestNormalTorchForms:
    def test_keyword_std_with_a_number_mean_and_size(self):
        nb.manual_seed(0)
        v = nb.normal(2.0, std=3.0, size=(20000,)).numpy()
        assert v.shape == (20000,)
        assert abs(v.std() - 3.0) < 0.1 and abs(v.mean() - 2.0) < 0.1

    def test_all_keywords(self):
        nb.manual_seed(1)
        v = nb.normal(mean=2.0, std=3.0, size=(20000,)).numpy()
        assert abs(v.std() - 3.0) < 0.1 and abs(v.mean() - 2.0) < 0.1

    def test_tensor_mean_with_keyword_std(self):
        nb.manual_seed(2)
        for v in (nb.normal(mean=nb.zeros(20000), std=2.0), nb.normal(nb.zeros(20000), std=3.0)):
            assert v.shape == (20000,)
        assert abs(nb.normal(mean=nb.zeros(20000), std=2.0).numpy().std() - 2.0) < 0.1
        assert abs(nb.normal(nb.full((20000,), 1.0), std=3.0).numpy().std() - 3.0) < 0.1

    def test_number_mean_with_a_tensor_std_keyword(self):
        nb.manual_seed(3)
        v = nb.normal(0.0, std=nb.full((20000,), 4.0)).numpy()
        assert v.shape == (20000,) and abs(v.std() - 4.0) < 0.15

    def test_positional_torch_and_numpy_forms_still_work(self):
        nb.manual_seed(4)
        assert abs(nb.normal(2.0, 3.0, (20000,)).numpy().std() - 3.0) < 0.1
        assert nb.normal(0, 1, (2, 3)).shape == (2, 3)
        assert nb.normal((2, 3), 0.0, 0.1).shape == (2, 3)
        assert nb.normal(5).shape == (5,)
        assert nb.normal().shape == ()
        v = nb.normal((20000,), std=2.0).numpy()
        assert abs(v.std() - 2.0) < 0.1 and abs(v.mean()) < 0.1
        assert nb.normal(shape=(2,), mean=1.0).shape == (2,)

    def test_an_argument_given_twice_is_an_error(self):
        with pytest.raises(TypeError, match="normal: got multiple values for argument 'std'"):
            nb.normal(nb.zeros(2), 1.0, std=2.0)
        with pytest.raises(TypeError, match="normal: got multiple values for argument 'mean'"):
            nb.normal((2,), 0.0, mean=1.0)

    def test_negative_or_nan_std(self):
        with pytest.raises(ValueError, match="normal: std must be non-negative, got nan"):
            nb.normal((2,), 0.0, float("nan"))
        with pytest.raises(ValueError, match="normal: std must be non-negative, got -1.0"):
            nb.normal(nb.zeros(2), std=-1.0)
        # a tensor std whose values the host has
        with pytest.raises(ValueError, match="normal: all elements of std must be non-negative, got -1.0"):
            nb.normal(0.0, std=nb.tensor([-1.0, 1.0]))

    @needs_torch
    def test_torch_accepts_the_same_forms_and_rejects_negative_std(self):
        assert torch.normal(2.0, std=3.0, size=(5,)).shape == (5,)
        assert torch.normal(mean=torch.zeros(3), std=2.0).shape == (3,)
        assert torch.normal(0.0, std=torch.ones(3)).shape == (3,)
        with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
            torch.normal(0.0, std=torch.tensor([-1.0, 1.0]))


# -- torch's size= spelling of the shape ----------------------------------------------------------
class TestSizeKeyword:
    def test_rand_randn_randint_take_size(self):
        assert nb.rand(size=(2, 3)).shape == (2, 3)
        assert nb.randn(size=(2, 3)).shape == (2, 3)
        assert nb.randint(0, 10, size=(5,)).shape == (5,)
        v = nb.randint(10, size=(300,)).numpy()
        assert v.shape == (300,) and v.min() >= 0 and v.max() < 10 and v.max() >= 5
        v = nb.randint(high=3, size=(300,)).numpy()
        assert v.shape == (300,) and set(v.tolist()) == {0, 1, 2}
        assert nb.randint(5, 8, size=4).shape == (4,)

    def test_old_spellings_still_work(self):
        assert nb.rand(2, 3).shape == nb.randn((2, 3)).shape == (2, 3)
        assert nb.randint(10, (3,)).shape == nb.randint(0, 10, (3,)).shape == (3,)

    def test_shape_given_twice_is_an_error(self):
        with pytest.raises(TypeError, match="rand: pass the shape once"):
            nb.rand(2, size=(2, 3))
        with pytest.raises(TypeError, match="randn: pass the shape once"):
            nb.randn((2,), size=(2, 3))
        with pytest.raises(TypeError, match="randint: pass the shape once"):
            nb.randint(0, 10, (3,), size=(3,))

    @needs_torch
    def test_torch_spells_it_so(self):
        assert torch.randint(10, size=(3,)).shape == torch.randint(high=10, size=(3,)).shape == (3,)
        assert torch.rand(size=(2, 3)).shape == (2, 3)


# -- randint / random_: the range must fit the dtype ----------------------------------------------
class TestRandintRange:
    def test_out_of_range_for_the_dtype_raises(self):
        with pytest.raises(ValueError, match=r"randint: high - 1 = 1099511627775 is out of bounds for int32"):
            nb.randint(0, 2**40, (5,), dtype=nb.int32)
        with pytest.raises(ValueError, match=r"randint: low=-1 is out of bounds for uint8"):
            nb.randint(-1, 5, (5,), dtype=nb.uint8)
        with pytest.raises(ValueError, match=r"randint: high - 1 = 128 is out of bounds for int8"):
            nb.randint(0, 129, (5,), dtype=nb.int8)
        with pytest.raises(ValueError, match=r"randint: high - 1 = 1048575 is out of bounds for float16"):
            nb.randint(0, 2**20, (5,), dtype=nb.float16)

    def test_the_full_range_of_a_dtype_is_allowed(self):
        v = nb.randint(-128, 128, (2000,), dtype=nb.int8).numpy()
        assert v.dtype == np.int8 and v.min() < -100 and v.max() > 100
        assert nb.randint(0, 2**31, (3,), dtype=nb.int32).dtype == nb.int32

    def test_random_fill_checks_the_same_range(self):
        with pytest.raises(ValueError, match=r"random_: to - 1 = 1099511627775 is out of bounds for int32"):
            nb.zeros(3, dtype=nb.int32).random_(2**40)
        with pytest.raises(ValueError, match=r"random_: to - 1 = 1048575 is out of bounds for float16"):
            nb.zeros(3, dtype=nb.float16).random_(2**20)
        with pytest.raises(ValueError, match="random_: expects from to be less than to, got from=3 >= to=3"):
            nb.zeros(3).random_(3, 3)

    def test_random_fill_without_bounds_covers_small_integer_dtypes(self):
        # torch: [0, max] of the dtype (before: [0, 2**53] wrapped into int8/uint8)
        for dt, top in ((nb.int8, 127), (nb.uint8, 255), (nb.int16, 2**15 - 1)):
            v = nb.zeros(4000, dtype=dt).random_().numpy().astype(np.int64)
            assert v.min() >= 0 and v.max() <= top and v.max() > top // 2
        v = nb.zeros(1000, dtype=nb.float16).random_().numpy()
        assert v.min() >= 0 and v.max() <= 2**11

    @needs_torch
    def test_torch_raises_too(self):
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
            torch.randint(0, 2**40, (5,), dtype=torch.int32)
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
            torch.zeros(3, dtype=torch.float16).random_(2**20)


# -- in-place random fills: torch's parameter checks ----------------------------------------------
class TestFillParameters:
    @pytest.mark.parametrize("lambd", [0, -1.0, float("nan")])
    def test_exponential_needs_a_positive_rate(self, lambd):
        with pytest.raises(ValueError, match="exponential_: lambd must be positive"):
            nb.zeros(3).exponential_(lambd)

    def test_exponential_with_infinite_rate_gives_zeros(self):
        assert nb.zeros(3).exponential_(float("inf")).tolist() == [0.0, 0.0, 0.0]

    @pytest.mark.parametrize("p", [0, 1, 1.5, -0.5])
    def test_geometric_needs_p_in_the_open_unit_interval(self, p):
        with pytest.raises(ValueError, match=r"geometric_: p must be a probability in \(0, 1\)"):
            nb.zeros(3).geometric_(p)

    def test_geometric_draws(self):
        v = nb.zeros(2000).geometric_(0.5).numpy()
        assert v.min() == 1 and abs(v.mean() - 2.0) < 0.2

    def test_bernoulli_probabilities(self):
        with pytest.raises(ValueError, match=r"bernoulli_: p must be a probability in \[0, 1\], got p=1.5"):
            nb.zeros(3).bernoulli_(1.5)
        with pytest.raises(ValueError, match=r"bernoulli_: p must hold probabilities in \[0, 1\], got 1.5"):
            nb.zeros(3).bernoulli_(nb.tensor([1.5, 0.0, 0.0]))
        with pytest.raises(ValueError, match=r"bernoulli: p must hold probabilities in \[0, 1\], got 1.5"):
            nb.bernoulli(nb.tensor([1.5, 0.0, 0.0]))
        with pytest.raises(ValueError, match=r"bernoulli: p must hold probabilities in \[0, 1\], got nan"):
            nb.bernoulli(nb.tensor([float("nan"), 0.0]))
        assert nb.bernoulli(nb.tensor([1.0, 0.0])).tolist() == [1.0, 0.0]

    def test_other_fills(self):
        with pytest.raises(ValueError, match="normal: std must be non-negative, got -1"):
            nb.zeros(3).normal_(0, -1)
        with pytest.raises(ValueError, match="log_normal_: std must be positive, got std=0"):
            nb.zeros(3).log_normal_(0, 0)
        with pytest.raises(ValueError, match="cauchy_: sigma must be positive, got sigma=-1"):
            nb.zeros(3).cauchy_(0, -1)
        with pytest.raises(ValueError, match=r"uniform_: expects a range \[a, b\) with a <= b, got a=2 > b=1"):
            nb.zeros(3).uniform_(2, 1)

    @needs_torch
    def test_torch_raises_too(self):
        for fill in (
            lambda: torch.zeros(3).exponential_(0),
            lambda: torch.zeros(3).geometric_(1),
            lambda: torch.zeros(3).bernoulli_(1.5),
            lambda: torch.bernoulli(torch.tensor([1.5, 0.0])),
            lambda: torch.zeros(3).log_normal_(0, 0),
        ):
            with pytest.raises(RuntimeError):
                fill()


# -- multinomial ----------------------------------------------------------------------------------
class TestMultinomialDistribution:
    def test_an_all_zero_row_raises(self):
        with pytest.raises(
            ValueError, match=r"multinomial: invalid multinomial distribution \(sum of probabilities <= 0\)"
        ):
            nb.multinomial(nb.tensor([0.0, 0.0, 0.0]), 1)
        with pytest.raises(
            ValueError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\) in row 1"
        ):
            nb.multinomial(nb.tensor([[1.0, 1.0], [0.0, 0.0]]), 1, True)

    @pytest.mark.parametrize("w", [[1.0, -1.0], [float("nan"), 1.0], [float("inf"), 1.0]])
    def test_negative_nan_or_inf_weights_raise(self, w):
        with pytest.raises(ValueError, match="multinomial: the weights contain inf, nan or a negative value"):
            nb.multinomial(nb.tensor(w), 1)

    @needs_torch
    def test_torch_raises_too(self):
        with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
            torch.multinomial(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), 1)
