"""nabla.set_printoptions: Tensor's repr under torch's options (and nabla's own default before)."""

from __future__ import annotations

import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla.core.tensor import printing


@pytest.fixture(autouse=True)
def _restore():
    yield
    printing._reset()
    if torch is not None:
        torch.set_printoptions(profile="default")


def test_default_formatting_is_unchanged_until_set():
    assert repr(nb.tensor([1.5, -2.0])) == "Tensor([ 1.5, -2. ], dtype=float32)"
    nb.set_printoptions(precision=2)
    assert repr(nb.tensor([1.23456, -2.0])) == "Tensor([ 1.23, -2.00], dtype=float32)"
    printing._reset()
    assert repr(nb.tensor([1.5, -2.0])) == "Tensor([ 1.5, -2. ], dtype=float32)"


def test_profiles_and_options():
    nb.set_printoptions(profile="default")
    assert printing.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                                           "sci_mode": None}  # fmt: skip
    assert repr(nb.tensor([1.5, -2.0])) == "Tensor([ 1.5000, -2.0000], dtype=float32)"
    nb.set_printoptions(profile="short")
    assert repr(nb.tensor([1.23456, 2.5])) == "Tensor([1.23, 2.50], dtype=float32)"
    nb.set_printoptions(profile="default", threshold=5, edgeitems=2)
    assert repr(nb.arange(10)) == "Tensor([0, 1, ..., 8, 9], dtype=int64)"
    nb.set_printoptions(profile="full")
    assert "..." not in repr(nb.arange(2000))
    nb.set_printoptions(profile="default", sci_mode=True)
    assert repr(nb.tensor([1.5, 20.0])) == "Tensor([1.5000e+00, 2.0000e+01], dtype=float32)"
    nb.set_printoptions(sci_mode=False)
    assert repr(nb.tensor([1e-8, 1e5])) == "Tensor([     0.0000, 100000.0000], dtype=float32)"
    nb.set_printoptions(linewidth=30)
    assert len(repr(nb.arange(20)).splitlines()) > 2


def test_bad_options_name_the_argument():
    with pytest.raises(ValueError, match="profile must be one of \\['default', 'full', 'short'\\], got 'long'"):
        nb.set_printoptions(profile="long")
    with pytest.raises(ValueError, match="precision must be an int >= 0, got -1"):
        nb.set_printoptions(precision=-1)
    with pytest.raises(ValueError, match="sci_mode must be True, False or None, got 'yes'"):
        nb.set_printoptions(sci_mode="yes")


@needs_torch
@pytest.mark.parametrize(
    "options",
    [
        {"profile": "default"},
        {"precision": 2},
        {"profile": "short"},
        {"sci_mode": True},
        {"precision": 3, "sci_mode": False},
    ],
)
def test_values_print_as_torch_prints_them(options):
    nb.set_printoptions(**options)
    torch.set_printoptions(**options)
    for values in ([1.23456, -2.0, 3.5], [1.0, 2.0], [1e-8, 1e5], [[0.5, 10.25], [-3.0, 7.125]], [1, 2]):
        mine = repr(nb.tensor(values))
        theirs = repr(torch.tensor(values))
        body = theirs[len("tensor(") : -1]
        assert mine.startswith("Tensor(" + body)
