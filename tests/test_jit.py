"""nabla.jit: torch.jit's names as pass-throughs."""

from __future__ import annotations

from typing import Final

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb


def test_jit_pass_through():
    def f(x):
        return x * 2

    class Model:
        pass

    model = Model()
    assert nb.jit.script(f) is f and nb.jit.script(model) is model
    assert nb.jit.trace(f, (nb.tensor([1.0]),), check_trace=False) is f
    assert nb.jit.ignore(f) is f and nb.jit.ignore(drop=True)(f) is f
    assert nb.jit.unused(f) is f and nb.jit.export(f) is f
    assert nb.jit.is_scripting() is False and nb.jit.is_tracing() is False
    assert nb.jit.Final is Final
    xs = []
    assert nb.jit.annotate(list[int], xs) is xs
    fut = nb.jit.fork(f, nb.tensor([1.0, 2.0]))
    assert fut.done()
    np.testing.assert_array_equal(nb.jit.wait(fut).numpy(), [2.0, 4.0])
    with pytest.raises(TypeError, match="wait: expected the Future that nabla.jit.fork returns, got int"):
        nb.jit.wait(3)


def test_jit_decorated_method_runs():
    class Block:
        scale: Final[float] = 3.0

        @nb.jit.ignore
        def debug(self, x):
            return x + 1

        @nb.jit.export
        def forward(self, x):
            return self.debug(x) * self.scale if not nb.jit.is_scripting() else x

    np.testing.assert_array_equal(nb.jit.script(Block()).forward(nb.tensor([1.0])).numpy(), [6.0])


@needs_torch
def test_jit_names_exist_in_torch():
    for name in nb.jit.__all__:
        assert hasattr(torch.jit, name), name
    assert torch.jit.is_scripting() is nb.jit.is_scripting()
