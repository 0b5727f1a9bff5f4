"""Shape and view ops (nabla/ops/view.py, nabla/ops/shape.py, nabla/ops/rearrange.py): PyTorch
semantics at the edges, gradients of the accumulating rules, multi-output sharing, Tensor
methods, and errors that name the op, the argument and the values. Values and gradients of the
registry samples are checked by tests/test_conformance.py."""

from __future__ import annotations

import numpy as np
import pytest

import nabla as nb
from nabla.ops import rearrange as R
from nabla.ops import shape as S
from nabla.ops import triangular as T

NEW_OPS = [
    "cat",
    "chunk",
    "concat",
    "concatenate",
    "diagonal",
    "flip",
    "moveaxis",
    "movedim",
    "pad",
    "repeat_interleave",
    "roll",
    "split",
    "stack",
    "tile",
    "tril",
    "triu",
    "unbind",
    "unflatten",
]


def t(values, dtype=np.float32) -> nb.Tensor:
    return nb.tensor(np.asarray(values, dtype))


def arange(*shape: int) -> nb.Tensor:
    return nb.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))


def grad_of(fn, x: nb.Tensor) -> np.ndarray:
    return nb.grad(fn)(x).numpy()


def test_new_ops_are_exported_from_nabla():
    for name in NEW_OPS:
        module = next(m for m in (T, R, S) if name in m.__all__)  # tril/triu, diagonal: triangular.py
        assert getattr(nb, name) is getattr(module, name), name
        assert name in nb.ops.__all__, name


# -- multi-output ops ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, count",
    [
        (lambda x: S.split(x, 2), 3),
        (lambda x: S.split(x, [1, 4], 0), 2),
        (lambda x: S.chunk(x, 2), 2),
        (lambda x: S.unbind(x, 1), 2),
    ],
)
def test_split_family_outputs_share_one_opnode(call, count):
    x = arange(5, 2)
    outs = call(x)
    assert isinstance(outs, tuple) and len(outs) == count
    node = outs[0]._impl.output_refs
    assert node is not None and node.op.name == "split"
    assert all(o._impl.output_refs is node for o in outs)


def test_split_of_one_piece_is_still_a_tuple():
    outs = S.split(arange(4), 4)
    assert isinstance(outs, tuple) and len(outs) == 1
    np.testing.assert_array_equal(outs[0].numpy(), np.arange(4))


def test_split_gradient_with_unused_outputs_is_zero_there():
    g = grad_of(lambda x: nb.sum(S.split(x, [1, 2, 2], 0)[1] * 3.0), arange(5, 2))
    want = np.zeros((5, 2), np.float32)
    want[1:3] = 3.0
    np.testing.assert_array_equal(g, want)


def test_unbind_gradient_restores_axis():
    g = grad_of(lambda x: nb.sum(S.unbind(x, 1)[2]), arange(2, 3))
    np.testing.assert_array_equal(g, [[0, 0, 1], [0, 0, 1]])


def test_split_jvp_gives_one_tangent_per_output():
    x = arange(4, 2)
    v = nb.tensor(np.ones((4, 2), np.float32))
    outs, tangents = nb.jvp(lambda a: S.split(a, 3), (x,), (v,))
    assert [o.shape for o in outs] == [(3, 2), (1, 2)]
    assert [tg.shape for tg in tangents] == [(3, 2), (1, 2)]
    np.testing.assert_array_equal(tangents[1].numpy(), np.ones((1, 2)))


def test_split_outputs_require_grad():
    x = arange(4).requires_grad_()
    assert all(o.requires_grad for o in S.split(x, 2))


# -- torch semantics at the edges ------------------------------------------------------------
def test_split_int_gives_smaller_last_chunk():
    assert [p.shape for p in S.split(arange(7, 2), 3)] == [(3, 2), (3, 2), (1, 2)]


def test_chunk_may_return_fewer_chunks_as_torch():
    assert [p.shape for p in S.chunk(arange(6), 4)] == [(2,), (2,), (2,)]
    assert [p.shape for p in S.chunk(arange(5), 4)] == [(2,), (2,), (1,)]


def test_split_and_chunk_of_an_empty_dim():
    assert [p.shape for p in S.split(nb.zeros(0, 3), 2)] == [(0, 3)]
    assert [p.shape for p in S.chunk(nb.zeros(0, 3), 3)] == [(0, 3)] * 3


def test_unbind_of_an_empty_dim_is_an_empty_tuple():
    assert S.unbind(nb.zeros(0, 3)) == ()


def test_flip_of_0d_accepts_dim_0_and_minus_1():
    x = t(2.5)
    assert S.flip(x, 0).item() == 2.5
    assert S.flip(x, -1).item() == 2.5


def test_flip_values_and_dims_keyword():
    np.testing.assert_array_equal(S.flip(arange(2, 3), dims=(0, 1)).numpy(), [[5, 4, 3], [2, 1, 0]])


def test_roll_flattens_when_dims_is_none():
    x = arange(3, 4)
    np.testing.assert_array_equal(R.roll(x, 5).numpy(), np.roll(np.arange(12).reshape(3, 4), 5))
    np.testing.assert_array_equal(R.roll(x, -1, dims=1).numpy(), np.roll(np.arange(12).reshape(3, 4), -1, 1))


def test_roll_gradient_is_rolled_back():
    w = t([1.0, 2.0, 3.0, 4.0])
    g = grad_of(lambda x: nb.sum(R.roll(x, 1) * w), arange(4))
    np.testing.assert_array_equal(g, [2.0, 3.0, 4.0, 1.0])


def test_tile_prepends_dims_and_tensor_repeat():
    x = t([1.0, 2.0])
    assert R.tile(x, (2, 2)).shape == (2, 4)
    assert x.repeat(3).tolist() == [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    assert x.repeat(2, 1).shape == (2, 2)
    assert R.tile(x, dims=(2,)).shape == (4,)


def test_tile_gradient_counts_copies():
    np.testing.assert_array_equal(grad_of(lambda x: nb.sum(R.tile(x, (3, 2))), arange(2)), [6.0, 6.0])


def test_repeat_interleave_per_element_and_gradient():
    x = t([1.0, 2.0, 3.0])
    out = R.repeat_interleave(x, [2, 0, 3])
    assert out._impl.output_refs.op.name == "repeat_interleave"
    assert out.tolist() == [1.0, 1.0, 3.0, 3.0, 3.0]
    w = t([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(grad_of(lambda a: nb.sum(R.repeat_interleave(a, [2, 0, 3]) * w), x), [3, 0, 12])


def test_repeat_interleave_tensor_repeats_and_single_repeat_broadcasts():
    x = arange(2, 2)
    out = R.repeat_interleave(x, nb.tensor(np.array([1, 2])), 0)
    np.testing.assert_array_equal(out.numpy(), [[0, 1], [2, 3], [2, 3]])
    assert R.repeat_interleave(x, [2], 1).shape == (2, 4)
    assert x.repeat_interleave(2).shape == (8,)


def test_concatenate_promotes_dtypes():
    f = nb.tensor(np.ones(2, np.float32))
    i = nb.tensor(np.ones(2, np.int64))
    b = nb.tensor(np.ones(2, bool))
    assert S.concatenate([i, f]).dtype == nb.float32
    assert S.concatenate([b, nb.tensor(np.ones(2, np.int32))]).dtype == nb.int32
    assert S.cat([f.astype(nb.float16), f.astype(nb.bfloat16)]).dtype == nb.float32
    assert S.stack([i, f], dim=1).dtype == nb.float32


def test_concatenate_dim_keyword_and_aliases():
    a, b = arange(2, 2), arange(2, 1)
    assert S.cat([a, b], dim=1).shape == (2, 3)
    assert S.concat((a, b), axis=-1).shape == (2, 3)


def test_concatenate_gradient_splits():
    a, b = arange(2), arange(3)
    w = t([1.0, 2.0, 3.0, 4.0, 5.0])
    ga, gb = nb.grad(lambda p, q: nb.sum(S.concatenate([p, q]) * w), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga.numpy(), [1, 2])
    np.testing.assert_array_equal(gb.numpy(), [3, 4, 5])


def test_pad_negative_crops_and_order_starts_from_last_dim():
    x = arange(3, 4)
    out = S.pad(x, (1, -2, -1, 0))  # last dim: 1 before, crop 2 after; first dim: crop 1 before
    want = np.pad(np.arange(12.0).reshape(3, 4)[1:, :2], ((0, 0), (1, 0)))
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize(
    "mode, pad, want",
    [
        ("reflect", (2, 1), [2, 1, 0, 1, 2, 3, 2]),
        ("replicate", (2, 1), [0, 0, 0, 1, 2, 3, 3]),
        ("edge", (1, 0), [0, 0, 1, 2, 3]),
        ("circular", (2, 1), [2, 3, 0, 1, 2, 3, 0]),
        ("circular", (-1, 2), [1, 2, 3, 1, 2]),
        ("reflect", (-1, 2), [1, 2, 3, 2, 1]),
        ("constant", (1, 1), [9, 0, 1, 2, 3, 9]),
    ],
)
def test_pad_modes_match_torch_values(mode, pad, want):
    out = S.pad(arange(4), pad, mode, value=9.0 if mode == "constant" else 0.0)
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize(
    "mode, want",
    [
        ("reflect", [1.0, 3.0, 3.0, 1.0]),  # out = [c, b, a, b, c, d, c, b]
        ("replicate", [3.0, 1.0, 1.0, 3.0]),  # out = [a, a, a, b, c, d, d, d]
        ("circular", [2.0, 2.0, 2.0, 2.0]),  # out = [c, d, a, b, c, d, a, b]
        ("constant", [1.0, 1.0, 1.0, 1.0]),
    ],
)
def test_pad_gradients_accumulate(mode, want):
    np.testing.assert_array_equal(grad_of(lambda x: nb.sum(S.pad(x, (2, 2), mode)), arange(4)), want)


def test_pad_2d_reflect_gradient_matches_finite_sum():
    # each input cell's gradient = how many output cells copy it
    x = arange(3, 3)
    out_idx = np.pad(np.arange(9).reshape(3, 3), ((1, 2), (2, 1)), mode="reflect")
    want = np.bincount(out_idx.ravel(), minlength=9).reshape(3, 3)
    np.testing.assert_array_equal(grad_of(lambda a: nb.sum(S.pad(a, (2, 1, 1, 2), "reflect")), x), want)


def test_pad_int_tensor_keeps_dtype():
    out = S.pad(nb.tensor(np.array([1, 2], np.int64)), (1, 0), value=5)
    assert out.dtype == nb.int64 and out.tolist() == [5, 1, 2]


def test_tril_triu_batched_and_gradient():
    x = arange(2, 3, 3)
    np.testing.assert_array_equal(T.tril(x).numpy(), np.tril(np.arange(18.0).reshape(2, 3, 3)))
    np.testing.assert_array_equal(x.triu(1).numpy(), np.triu(np.arange(18.0).reshape(2, 3, 3), 1))
    np.testing.assert_array_equal(grad_of(lambda a: nb.sum(T.tril(a, -1)), arange(3, 3)), np.tril(np.ones((3, 3)), -1))


def test_diagonal_goes_last_and_gradient_embeds():
    x = arange(2, 3, 4)
    d = T.diagonal(x, 1, 0, 2)
    np.testing.assert_array_equal(d.numpy(), np.diagonal(np.arange(24.0).reshape(2, 3, 4), 1, 0, 2))
    assert d.shape == (3, 2)
    assert x.diagonal(0, 1, 2).shape == (2, 3)
    assert T.diagonal(x, dim1=2, dim2=1).shape == (2, 3)
    g = grad_of(lambda a: nb.sum(T.diagonal(a, -1)), arange(3, 4))
    np.testing.assert_array_equal(g, np.eye(3, 4, -1))


def test_moveaxis_and_movedim_method():
    x = arange(2, 3, 4)
    assert R.moveaxis(x, (0, 1), (-1, -2)).shape == (4, 3, 2)
    assert x.movedim(2, 0).shape == (4, 2, 3)
    assert R.movedim(x, 0, 0) is x


def test_unflatten_and_method():
    x = arange(2, 12)
    assert R.unflatten(x, 1, (3, -1, 2)).shape == (2, 3, 2, 2)
    assert x.unflatten(-1, (4, 3)).shape == (2, 4, 3)


def test_stack_of_0d_and_negative_axis():
    assert S.stack([t(1.0), t(2.0)]).tolist() == [1.0, 2.0]
    assert S.stack([arange(2, 3)] * 4, -1).shape == (2, 3, 4)


def test_detach_cuts_gradients():
    x = arange(3).requires_grad_()
    y = x * 2.0
    d = nb.detach(y)
    assert not d.requires_grad
    np.testing.assert_array_equal(d.numpy(), [0.0, 2.0, 4.0])
    g = grad_of(lambda a: nb.sum(a * nb.detach(a)), t([1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])


def test_tensor_methods_reach_the_ops():
    x = arange(4, 2)
    assert x.flip(0).shape == (4, 2) and x.flip(0, 1).tolist()[0] == [7.0, 6.0]
    assert x.roll(1, 0).tolist()[0] == [6.0, 7.0]
    assert [p.shape for p in x.split(3)] == [(3, 2), (1, 2)]
    assert len(x.chunk(2)) == 2 and len(x.unbind(1)) == 2
    assert x.tile(2).shape == (4, 4)
    assert x.swapaxes(0, 1).shape == (2, 4)


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: S.flip(arange(2, 3), 3), ValueError, r"flip: dim=3 is out of range for a tensor of rank 2"),
        (lambda: S.flip(arange(2, 3), (0, 0)), ValueError, r"flip: dim \(0, 0\) names a dimension twice"),
        (lambda: S.flip(t(1.0), 1), ValueError, r"flip: dim=1 is out of range for a tensor of rank 0"),
        (lambda: R.roll(arange(3), (1, 2), 0), ValueError, r"roll: shifts \(1, 2\) and dims 0"),
        (lambda: R.roll(arange(3), (1, 2)), ValueError, r"roll: with dim=None, shifts must be a single int"),
        (lambda: R.roll(arange(3), 1, 2), ValueError, r"roll: dim=2 is out of range for a tensor of rank 1"),
        (lambda: R.tile(arange(3), (-1,)), ValueError, r"tile: reps must be non-negative, got \(-1,\)"),
        (lambda: R.repeat_interleave(arange(3), [1, 2]), ValueError, r"repeat_interleave: repeats has 2 entries.*3"),
        (lambda: R.repeat_interleave(arange(3), -1), ValueError, r"repeat_interleave: repeats must be non-negative"),
        (lambda: R.repeat_interleave(arange(3), 1.5), TypeError, r"repeat_interleave: repeats must be"),
        (lambda: S.concatenate([]), ValueError, r"concatenate: expected a non-empty list"),
        (lambda: S.concatenate(arange(3)), TypeError, r"concatenate: tensors must be a list or tuple"),
        (lambda: S.concatenate([arange(3), np.ones(3)]), TypeError, r"concatenate: input 1 must be a Tensor"),
        (
            lambda: S.concatenate([arange(2, 3), arange(2, 3), arange(3)]),
            ValueError,
            r"concatenate: input 2 has rank 1 \(shape \(3,\)\), input 0 has rank 2 \(shape \(2, 3\)\)",
        ),
        (
            lambda: S.concatenate([arange(2, 3), arange(2, 4)], 0),
            ValueError,
            r"concatenate: input 1 has shape \(2, 4\), input 0 has shape \(2, 3\); they must match except in dim 0",
        ),
        (lambda: S.concatenate([t(1.0), t(2.0)]), ValueError, r"concatenate: input 0 is 0-d"),
        (lambda: S.concatenate([arange(3)], 1), ValueError, r"concatenate: dim=1 is out of range"),
        (
            lambda: S.stack([arange(2, 3), arange(3, 2)]),
            ValueError,
            r"stack: input 1 has shape \(3, 2\), input 0 has shape \(2, 3\)",
        ),
        (lambda: S.stack([arange(3)], 2), ValueError, r"stack: dim=2 is out of range for a tensor of rank 2"),
        (
            lambda: S.split(arange(5, 2), [2, 2]),
            ValueError,
            r"split: sizes \(2, 2\) sum to 4, but dim 0 has size 5 \(shape \(5, 2\)\)",
        ),
        (lambda: S.split(arange(5), [6, -1]), ValueError, r"split: sizes must be non-negative, got \(6, -1\)"),
        (lambda: S.split(arange(5), 0), ValueError, r"split: split_size must be positive, got 0"),
        (lambda: S.split(t(1.0), 1), ValueError, r"split: expected a tensor of rank >= 1"),
        (lambda: S.split(arange(5), 2, 1), ValueError, r"split: dim=1 is out of range for a tensor of rank 1"),
        (lambda: S.chunk(arange(5), 0), ValueError, r"chunk: chunks must be positive, got 0"),
        (lambda: S.unbind(arange(2, 3), 2), ValueError, r"unbind: dim=2 is out of range for a tensor of rank 2"),
        (lambda: S.pad(arange(2, 3), (1, 2, 3)), ValueError, r"pad: pad must have an even length.*length 3"),
        (
            lambda: S.pad(arange(2, 3), (1, 1, 1, 1, 1, 1)),
            ValueError,
            r"pad: pad of length 6 pads 3 dimensions, but the tensor has rank 2",
        ),
        (
            lambda: S.pad(arange(2, 3), (3, 0), "reflect"),
            ValueError,
            r"pad: reflect padding \(3, 0\) of dim 1 must be less than its size 3",
        ),
        (lambda: S.pad(arange(2, 3), (4, 0), "circular"), ValueError, r"pad: circular padding \(4, 0\) of dim 1 wraps"),
        (lambda: S.pad(nb.zeros(2, 0), (1, 0), "replicate"), ValueError, r"pad: mode 'replicate' cannot pad dim 1"),
        (lambda: S.pad(arange(2, 3), (1, 1), "wrap"), ValueError, r"pad: mode must be one of"),
        (lambda: S.pad(arange(2, 3), (1, 1), "reflect", 2.0), ValueError, r"pad: mode 'reflect' takes no fill value"),
        (lambda: S.pad(arange(2, 3), (-2, -2)), ValueError, r"pad: padding \(-2, -2\) of dim 1 \(size 3\) gives a neg"),
        (lambda: S.pad(arange(2, 3), (1.5, 1)), TypeError, r"pad: pad must be a sequence of ints"),
        (lambda: T.tril(arange(3)), ValueError, r"tril: expected a tensor of rank >= 2, got shape \(3,\)"),
        (lambda: T.triu(arange(2, 2), 0.5), TypeError, r"triu: diagonal must be an int, got 0.5"),
        (lambda: T.diagonal(arange(2, 3), 0, 1, -1), ValueError, r"diagonal: dim1 and dim2 must differ, both are 1"),
        (lambda: T.diagonal(arange(3)), ValueError, r"diagonal: expected a tensor of rank >= 2"),
        (lambda: T.diagonal(arange(2, 3), 0, 0, 2), ValueError, r"diagonal: dim2=2 is out of range"),
        (lambda: R.moveaxis(arange(2, 3), (0, 1), 0), ValueError, r"moveaxis: source \(0, 1\) and destination 0"),
        (lambda: R.moveaxis(arange(2, 3), (0, 1), (1, 1)), ValueError, r"moveaxis: destination \(1, 1\) names"),
        (lambda: R.moveaxis(arange(2, 3), 2, 0), ValueError, r"moveaxis: source=2 is out of range"),
        (
            lambda: R.unflatten(arange(2, 6), 1, (4, -1)),
            ValueError,
            r"unflatten: sizes \(4, -1\) cannot unflatten dim 1",
        ),
        (
            lambda: R.unflatten(arange(2, 6), 1, (2, 2)),
            ValueError,
            r"unflatten: sizes \(2, 2\) multiply to 4, but dim 1",
        ),
        (lambda: R.unflatten(arange(6), 0, (-1, -1)), ValueError, r"unflatten: sizes \(-1, -1\) may hold at most one"),
        (lambda: R.unflatten(arange(6), 0, ()), ValueError, r"unflatten: sizes must be non-empty"),
        (lambda: S.flip(np.ones(3), 0), TypeError, r"flip: x must be a Tensor, got ndarray"),
    ],
)
def test_errors_name_op_argument_and_values(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_errors_raise_before_any_evaluation():
    x = arange(2, 3)
    before = nb.cache_info()
    with pytest.raises(ValueError):
        S.concatenate([x * 2.0, arange(3, 3) * 2.0], 1)
    with pytest.raises(ValueError):
        S.pad(x * 2.0, (5, 0), "reflect")
    after = nb.cache_info()
    assert after.executions == before.executions
