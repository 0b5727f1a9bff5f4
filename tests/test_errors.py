"""Errors are raised at the op call, before any evaluation, and name the op and the shapes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nabla as nb


@pytest.fixture
def no_evaluation():
    """Assert that the test body runs no evaluation (errors come from shape inference)."""
    a = nb.tensor(np.ones((2, 3), np.float32))
    b = nb.tensor(np.ones((4,), np.float32))
    before = nb.cache_info()
    yield a, b
    after = nb.cache_info()
    assert after.executions == before.executions
    assert after.misses == before.misses
    assert after.compiles == before.compiles


def _message(excinfo: pytest.ExceptionInfo) -> str:
    return str(excinfo.value)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("add", lambda x, y: x + y),
        ("sub", lambda x, y: x - y),
        ("mul", lambda x, y: x * y),
        ("div", lambda x, y: x / y),
        ("pow", lambda x, y: x**y),
        ("maximum", nb.maximum),
        ("minimum", nb.minimum),
        ("equal", nb.ops.equal),  # (nb.equal is torch.equal: a bool)
        ("greater", lambda x, y: x > y),
        ("less_equal", lambda x, y: x <= y),
    ],
)
def test_binary_shape_mismatch_names_op_and_shapes(no_evaluation, name, fn):
    a, b = no_evaluation
    with pytest.raises(ValueError) as info:
        fn(a, b)
    msg = _message(info)
    assert name in msg
    assert "(2, 3)" in msg
    assert "(4,)" in msg


def test_add_of_promises_fails_at_call_not_at_evaluation(no_evaluation):
    a, b = no_evaluation
    x = a.exp() * 2.0  # a pending promise
    y = b + 1.0
    with pytest.raises(ValueError, match=r"add.*\(2, 3\).*\(4,\)"):
        nb.add(x, y)
    assert not x.is_realized and not y.is_realized


def test_matmul_contracting_mismatch(no_evaluation):
    with pytest.raises(ValueError) as info:
        nb.ones(2, 3) @ nb.ones(4, 5)
    msg = _message(info)
    assert "matmul" in msg
    assert "(2, 3)" in msg and "(4, 5)" in msg


def test_linear_in_features_mismatch_names_both_shapes(no_evaluation):
    with pytest.raises(ValueError) as info:
        nb.linear(nb.ones(2, 3), nb.ones(5, 4))
    msg = _message(info)
    assert msg.startswith("linear:") and "(2, 3)" in msg and "(5, 4)" in msg
    with pytest.raises(ValueError, match=r"linear: .*weight \(2, 3, 3\)"):
        nb.linear(nb.ones(2, 3), nb.ones(2, 3, 3))


def test_matmul_vector_mismatch(no_evaluation):
    with pytest.raises(ValueError, match="matmul"):
        nb.matmul(nb.ones(3), nb.ones(4))


def test_matmul_batch_mismatch_names_both_operand_shapes(no_evaluation):
    with pytest.raises(ValueError) as info:
        nb.matmul(nb.ones(2, 3, 4), nb.ones(3, 4, 5))
    msg = _message(info)
    assert "matmul" in msg
    assert "(2, 3, 4)" in msg and "(3, 4, 5)" in msg


def test_matmul_of_0d_raises(no_evaluation):
    with pytest.raises(ValueError, match="matmul"):
        nb.matmul(nb.tensor(1.0), nb.ones(2))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "argmax", "argmin"])
def test_bad_axis_names_op(no_evaluation, name):
    a, _ = no_evaluation
    with pytest.raises(ValueError) as info:
        getattr(nb, name)(a, 5)
    msg = _message(info)
    assert msg.startswith(f"{name}:")
    assert "5" in msg
    with pytest.raises(ValueError, match=f"^{name}:"):
        getattr(nb, name)(a, -3)


def test_bad_axis_via_methods(no_evaluation):
    a, _ = no_evaluation
    with pytest.raises(ValueError, match="^sum:"):
        a.sum(axis=5)
    with pytest.raises(ValueError, match="^sum:"):
        a.sum(dim=(0, 2))
    with pytest.raises(ValueError, match="^max:"):
        a.max(axis=2)
    with pytest.raises(ValueError, match="^mean:"):
        a.mean(dim=-3)


def test_duplicate_axis(no_evaluation):
    a, _ = no_evaluation
    with pytest.raises(ValueError, match="sum"):
        a.sum(axis=(1, -1))


def test_dim_and_axis_together(no_evaluation):
    a, _ = no_evaluation
    with pytest.raises(TypeError):
        a.sum(dim=1, axis=1)


def test_reduce_empty_dimension(no_evaluation):
    with pytest.raises(ValueError, match="max"):
        nb.zeros(0, 3).max(axis=0)


@pytest.mark.parametrize("shape", [(4, 2), (5,), (7, -1), (-1, 4), (-1, -1)])
def test_reshape_incompatible(no_evaluation, shape):
    a, _ = no_evaluation
    with pytest.raises(ValueError) as info:
        a.reshape(shape)
    msg = _message(info)
    assert "reshape" in msg
    assert re.search(r"\(2, 3\)|-1", msg)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: nb.broadcast_to(a, (2, 4)),
        lambda a: nb.broadcast_to(a, (3,)),
        lambda a: nb.permute(a, (0, 0)),
        lambda a: nb.permute(a, (0,)),
        lambda a: nb.transpose(a, 0, 2),
        lambda a: nb.unsqueeze(a, 4),
        lambda a: nb.squeeze(a, 2),
        lambda a: nb.where(a > 0, a, nb.ones(4)),
    ],
)
def test_shape_op_errors(no_evaluation, fn):
    a, _ = no_evaluation
    with pytest.raises(ValueError):
        fn(a)


@pytest.mark.parametrize("bad", ["complex64", "float8", "uint16", np.complex64, np.uint32, "float8_e4m3"])
def test_unsupported_dtype_lists_supported(no_evaluation, bad):
    a, _ = no_evaluation
    for call in (lambda: nb.cast(a, bad), lambda: a.astype(bad), lambda: nb.zeros(2, dtype=bad)):
        with pytest.raises(TypeError) as info:
            call()
        msg = _message(info)
        assert "unsupported dtype" in msg
        for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
            assert name in msg


def test_unsupported_operands(no_evaluation):
    a, _ = no_evaluation
    with pytest.raises(TypeError, match="add"):
        a + "x"
    with pytest.raises(TypeError, match="add"):
        nb.add(a, None)
    with pytest.raises(TypeError, match="mul"):
        a * 1j
    with pytest.raises(TypeError, match="exp"):
        nb.exp([1.0])


def test_float_only_unary_on_int(no_evaluation):
    with pytest.raises(TypeError, match="gelu.*int64"):  # (math functions promote: nb.exp(int) is float32)
        nb.gelu(nb.tensor([1, 2]))
    with pytest.raises(TypeError, match="silu"):
        nb.silu(nb.tensor([1, 2]))


def test_creation_errors(no_evaluation):
    with pytest.raises(ValueError, match="zeros"):
        nb.zeros(-1)
    with pytest.raises(ValueError, match="arange"):
        nb.arange(0, 5, 0)
    with pytest.raises(TypeError, match="arange"):
        nb.arange(True)
    with pytest.raises(TypeError, match="rand"):
        nb.rand(3, dtype=nb.int32)
    with pytest.raises(ValueError, match="normal"):
        nb.normal((2,), 0.0, -1.0)
    with pytest.raises(ValueError, match=r"ones: device gpu:63 is not available: MAX finds \d+ accelerator"):
        nb.ones(2, device="cuda:63")
    with pytest.raises(ValueError, match="full: device must be 'cpu', 'gpu', 'gpu:N' or 'cuda:N', got 'tpu'"):
        nb.full((2,), 1.0, device="tpu")
    with pytest.raises(TypeError, match="full: fill_value must be a Python scalar, got a Tensor"):
        nb.full((2,), nb.tensor([1.0, 2.0]))


def test_ragged_data_error_names_tensor():
    with pytest.raises((TypeError, ValueError)) as info:
        nb.tensor([[1], [1, 2]])
    assert "tensor" in _message(info)


def test_requires_grad_on_integer_tensor_raises():
    # PyTorch: "Only Tensors of floating point and complex dtype can require gradients"
    with pytest.raises(RuntimeError):
        nb.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError):
        nb.tensor([1, 2]).requires_grad_()


def test_errors_leave_no_pending_work():
    a = nb.tensor(np.ones((2, 3), np.float32))
    before = nb.cache_info().executions
    for bad in (lambda: a + nb.ones(4), lambda: a @ nb.ones(4, 5), lambda: a.sum(axis=5), lambda: a.reshape(4, 2)):
        with pytest.raises(ValueError):
            bad()
    assert nb.cache_info().executions == before
    # evaluation afterwards still works and is a single execution
    np.testing.assert_array_equal((a * 2).numpy(), np.full((2, 3), 2.0, np.float32))
    assert nb.cache_info().executions == before + 1


def test_layer_norm_affine_shapes(no_evaluation):
    """A weight or bias must be normalized_shape exactly, as in torch (a broadcastable
    (1,) or (2, 4) is not silently broadcast)."""
    x = nb.ones(2, 4)
    for kwargs in ({"weight": nb.ones(1)}, {"bias": nb.ones(2, 4)}, {"weight": nb.ones(3)}):
        name = next(iter(kwargs))
        with pytest.raises(ValueError, match=rf"layer_norm: {name} must have shape normalized_shape \(4,\), got"):
            nb.layer_norm(x, 4, **kwargs)
    with pytest.raises(TypeError, match="layer_norm: weight must be a Tensor or None, got ndarray"):
        nb.layer_norm(x, 4, np.ones(4, np.float32))
    assert nb.layer_norm(x, 4, nb.ones(4), nb.zeros(4)).shape == (2, 4)


def test_a_failing_pending_tensor_does_not_break_other_evaluations():
    """Evaluation computes every pending tensor; one whose kernel raises (an index out of range)
    must not make every later read fail until it is garbage-collected."""
    bad = nb.tensor([1.0, 2.0, 3.0])[nb.tensor([1, 2]) + 5]
    assert (nb.tensor([4.0, 5.0]) * 2).tolist() == [8.0, 10.0]
    with pytest.raises(IndexError):
        bad.numpy()
    assert (nb.tensor([1.0, 5.0]) + 1).tolist() == [2.0, 6.0]
