"""nabla's `_foreach_*` functions (torch's list-at-a-time ops), against plain per-tensor math
and, where installed, torch's own."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb

RNG = np.random.default_rng(3)
ARRAYS = [RNG.normal(size=s).astype(np.float32) for s in [(3,), (2, 2)]]
OTHERS = [RNG.normal(size=s).astype(np.float32) + 2.0 for s in [(3,), (2, 2)]]


def _run(mod, to_tensor):
    xs, ys = [to_tensor(a.copy()) for a in ARRAYS], [to_tensor(a.copy()) for a in OTHERS]
    out = {
        "add": mod._foreach_add(xs, ys, alpha=2.0),
        "sub": mod._foreach_sub(xs, 1.5),
        "mul": mod._foreach_mul(xs, ys),
        "div": mod._foreach_div(xs, 4.0),
        "sqrt": mod._foreach_sqrt(ys),
        "neg": mod._foreach_neg(xs),
        "norm": mod._foreach_norm(xs),
    }
    mod._foreach_mul_(xs, 0.9)
    mod._foreach_add_(xs, ys, alpha=0.1)
    mod._foreach_lerp_(xs, ys, 0.25)
    mod._foreach_addcmul_(xs, ys, ys, value=0.5)
    mod._foreach_addcdiv_(xs, ys, ys, value=2.0)
    mod._foreach_maximum_(xs, 0.0)
    out["in place"] = xs
    zs = [to_tensor(a.copy()) for a in ARRAYS]
    mod._foreach_copy_(zs, ys)
    out["copy"] = zs
    mod._foreach_zero_(ys)
    out["zero"] = ys
    return {k: [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in vs] for k, vs in out.items()}


def test_foreach_functions_apply_the_op_to_every_tensor():
    got = _run(nb, nb.tensor)
    xs, ys = ARRAYS, OTHERS
    np.testing.assert_allclose(got["add"][1], xs[1] + 2 * ys[1], rtol=1e-6)
    np.testing.assert_allclose(got["norm"][0], np.linalg.norm(xs[0]), rtol=1e-6)
    x = xs[0] * 0.9 + 0.1 * ys[0]
    x = x + 0.25 * (ys[0] - x)
    x = np.maximum(x + 0.5 * ys[0] * ys[0] + 2.0, 0.0)
    np.testing.assert_allclose(got["in place"][0], x, rtol=1e-5)
    np.testing.assert_array_equal(got["copy"][1], ys[1])
    assert all((z == 0).all() for z in got["zero"])
    with pytest.raises(ValueError, match="other has 1 entries, self has 2 tensors"):
        nb._foreach_add_([nb.ones(1), nb.ones(1)], [nb.ones(1)])


@needs_torch
def test_foreach_functions_match_torchs():
    got = _run(nb, nb.tensor)
    want = _run(torch, lambda a: torch.tensor(a))
    for k in want:
        for g, w in zip(got[k], want[k], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=k)
