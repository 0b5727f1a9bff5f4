"""nabla.random: torch.random's names (the top-level functions) and fork_rng."""

from __future__ import annotations

import random as std_random

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb


def test_random_reexports_the_top_level_functions():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"):
        assert getattr(nb.random, name) is getattr(nb, name), name
    assert set(nb.random.__all__) == {
        "fork_rng",
        "get_rng_state",
        "initial_seed",
        "manual_seed",
        "seed",
        "set_rng_state",
    }
    assert std_random.random() < 1.0  # the stdlib module is untouched
    assert "random" not in nb.__all__  # `from nabla import *` does not shadow the stdlib module


def test_fork_rng_restores_the_generator():
    nb.random.manual_seed(5)
    with nb.random.fork_rng():
        inside = nb.rand(4).numpy()
        nb.rand(3)
    after = nb.rand(4).numpy()
    np.testing.assert_array_equal(inside, after)  # the block's draws did not advance the stream
    assert nb.random.initial_seed() == 5


def test_fork_rng_restores_on_error_and_reseeding_inside():
    nb.manual_seed(1)
    state = nb.get_rng_state().numpy()
    with pytest.raises(KeyError), nb.random.fork_rng(devices=[0]):
        nb.manual_seed(99)
        nb.rand(2)
        raise KeyError("boom")
    np.testing.assert_array_equal(nb.get_rng_state().numpy(), state)


def test_fork_rng_disabled_lets_draws_advance():
    nb.manual_seed(2)
    with nb.random.fork_rng(enabled=False):
        first = nb.rand(3).numpy()
    assert not np.array_equal(first, nb.rand(3).numpy())


@needs_torch
def test_fork_rng_same_contract_as_torch():
    for lib in (torch, nb):
        lib.manual_seed(7)
        with lib.random.fork_rng(devices=[]):
            a = lib.rand(3).numpy()
        assert np.array_equal(a, lib.rand(3).numpy())
