"""Top-level names a PyTorch program uses where nabla's own spelling differs: torch's
`normal(mean, std, size)` beside nabla's `normal(shape, mean, std)`, `trace(matrix)` beside the
tracing transform, `max(a, b)` / `min(a, b)`, and torch's dtype and device names."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
import nabla_nn.functional as F


def test_normal_in_torchs_spelling():
    nb.manual_seed(0)
    assert nb.normal(nb.zeros(3), 0.1).shape == (3,)  # (was a (0, 0, 0) tensor: the mean read as a shape)
    assert nb.normal(nb.zeros((2, 1)), nb.ones(4)).shape == (2, 4)
    assert nb.normal(0.0, 1.0, size=(3,)).shape == (3,)
    assert nb.normal(2.0, 0.5, (4, 2)).shape == (4, 2)
    samples = nb.normal(nb.full((20000,), 5.0), nb.full((20000,), 0.1)).numpy()
    assert abs(samples.mean() - 5.0) < 0.01 and abs(samples.std() - 0.1) < 0.01
    assert nb.normal((2, 3), 0.0, 2.0).shape == (2, 3) and nb.normal(3).shape == (3,)  # nabla's spelling
    with pytest.raises(TypeError, match="pass size="):
        nb.normal(0.0, 1.0)
    with pytest.raises(ValueError, match="std must be non-negative, got -1"):
        nb.normal(nb.zeros(2), -1.0)


def test_trace_of_a_matrix_and_of_a_function():
    assert nb.trace(nb.eye(3)).item() == 3.0
    assert callable(nb.trace(lambda x: x * 2))
    with pytest.raises(TypeError, match="a function to trace or a matrix"):
        nb.trace(3)


def test_max_and_min_of_two_tensors_are_elementwise():
    a, b = nb.tensor([1.0, 5.0]), nb.tensor([3.0, 2.0])
    np.testing.assert_array_equal(nb.max(a, b).numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(nb.min(a, b).numpy(), [1.0, 2.0])
    assert nb.max(a).item() == 5.0 and nb.amax(a, 0).item() == 5.0


def test_torch_dtype_and_device_names():
    assert (nb.long, nb.int, nb.float, nb.double, nb.half, nb.bool) == (
        nb.int64, nb.int32, nb.float32, nb.float64, nb.float16, nb.bool_,
    )  # fmt: skip
    assert nb.arange(3, dtype=nb.long).dtype == nb.int64
    assert nb.device("cpu") is nb.tensor([1.0]).device and nb.device("cpu").type == "cpu"
    assert str(nb.device("cuda", 1)) == "gpu:1" and nb.device("cuda:1").type == "cuda"
    assert nb.cuda.is_available() == (nb.cuda.device_count() > 0)
    if torch is not None:
        assert torch.device("cpu").type == nb.device("cpu").type


def test_argument_checks_torch_makes():
    with pytest.raises(
        ValueError, match=r"all elements of target should be between 0 and 1, got values in \[0.0, 2.0\]"
    ):
        F.binary_cross_entropy(nb.tensor([0.5, 0.5]), nb.tensor([2.0, 0.0]))
    with pytest.raises(ValueError, match="multinomial: the weights contain inf, nan or a negative value"):
        nb.multinomial(nb.tensor([0.5, -0.1]), 1)
    with pytest.raises(TypeError, match=r"view\(DType.int32\): reading a tensor's bits as another dtype"):
        nb.ones(2).view(nb.int32)


def test_torch_keyword_spellings_constants_and_positional_generator():
    x, y = nb.ones(2), nb.full((2,), 3.0)
    np.testing.assert_array_equal(nb.add(x, other=y).numpy(), [4.0, 4.0])
    np.testing.assert_array_equal(nb.where(x > 0, x, other=y).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(nb.maximum(input=x, other=y).numpy(), [3.0, 3.0])

    assert nb.zeros(size=(2, 3)).shape == (2, 3) and nb.empty(size=(1,)).shape == (1,)
    np.testing.assert_array_equal(nb.full(size=(2,), fill_value=2.0).numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="pass the shape once"):
        nb.zeros(2, size=(2,))
    assert nb.inf == float("inf") and nb.pi == np.pi and nb.e == np.e and np.isnan(nb.nan)
    from nabla_nn.data import TensorDataset, random_split  # noqa: PLC0415

    first = [s.indices for s in random_split(TensorDataset(np.arange(10)), [0.8, 0.2], 3)]
    assert first == [s.indices for s in random_split(TensorDataset(np.arange(10)), [0.8, 0.2], seed=3)]
    gen = np.random.default_rng(0)
    assert [len(s) for s in random_split(TensorDataset(np.arange(10)), [0.8, 0.2], gen)] == [8, 2]
