"""nabla's own Mojo kernels (nabla/ops/mojo_kernels.py): building, turning off, falling back,
how models that load them are stored, and their numerics on MAX against the NumPy executor:
convolution weight gradients of several shapes, row scatter-adds, concatenations, and a CNN
trained on batches of two sizes (one model with a symbolic batch dim). test_pooling_max.py
checks the pool gradient's kernel on ties, NaNs and odd sizes."""

from __future__ import annotations

import numpy as np
import pytest
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.common.config import CONFIG
from nabla.core.graph import artifacts
from nabla.core.graph.program import collect
from nabla.ops import mojo_kernels
from nabla.ops.custom import custom_op
from nabla.ops.indexing_primitives import _take_scatter, _take_transpose
from nabla.ops.pooling import _max_pool2d_grad


@pytest.fixture
def fresh_package(monkeypatch):
    """`package()` decided again under the test's settings, and afterwards as before."""
    mojo_kernels.package.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    mojo_kernels.package.cache_clear()


def test_the_package_is_built_once_under_a_digest_of_its_sources():
    path = mojo_kernels.package()
    assert path is not None and path.is_file() and path.suffix == ".mojoc"
    assert path.name.startswith("nabla_kernels_") and len(path.stem) == len("nabla_kernels_") + 24
    assert mojo_kernels.compiled_package(mojo_kernels.SOURCE, "again") == path
    assert _max_pool2d_grad.custom_extensions == (path,) and _max_pool2d_grad.builtin_extensions


def test_turned_off_nothing_is_built_and_lowerings_use_graph_ops(fresh_package):
    fresh_package.setattr(CONFIG, "mojo_kernels", False)
    assert mojo_kernels.package() is None and mojo_kernels.extensions() == ()
    with Graph("off", input_types=[TensorType(DType.float32, (2, 4, 4, 3), device=DeviceRef.CPU())]) as g:
        assert not mojo_kernels.usable(g.inputs[0].tensor)


def test_only_float32_on_the_cpu_is_handed_to_the_kernels():
    types = [TensorType(d, (2, 3), device=DeviceRef.CPU()) for d in (DType.float32, DType.float64, DType.bfloat16)]
    with Graph("dtypes", input_types=types) as g:
        f32, f64, bf16 = (v.tensor for v in g.inputs)
        assert mojo_kernels.usable(f32) and not mojo_kernels.usable(f64) and not mojo_kernels.usable(f32, bf16)


def test_a_package_that_does_not_build_warns_and_falls_back(fresh_package, tmp_path):
    (tmp_path / "__init__.mojo").write_text("this is not mojo\n")
    with pytest.raises(RuntimeError, match=r"who: building the Mojo package .* failed"):
        mojo_kernels.compiled_package(tmp_path, "who")
    fresh_package.setattr(mojo_kernels, "SOURCE", tmp_path)
    with pytest.warns(RuntimeWarning, match="using MAX graph ops instead"):
        assert mojo_kernels.package() is None


def test_models_loading_nablas_package_are_stored_under_its_name():
    x = nb.tensor(np.ones((1, 2, 4, 4), np.float32))
    y, pullback = nb.vjp(lambda v: F.max_pool2d(v, 2), x)
    (dx,) = pullback(nb.ones_like(y))
    graph = collect([dx._impl])
    ops = [n.op for n in graph.nodes]
    assert _max_pool2d_grad in ops
    name = artifacts.digest(graph.key, ops)
    assert name is not None
    user = custom_op("user_kernel", abstract_eval=lambda v: v, numpy_kernel=lambda v: v)
    user.kernel_path = mojo_kernels.SOURCE  # a user's package: not part of any stable key
    assert artifacts.digest(graph.key, [*ops, user]) is None
    dx.numpy()  # leave nothing pending


# (x shape, weight shape, conv2d kwargs): one input channel (every tap in one tile) with 40
# output channels (two 16-lane vectors, then single lanes); five input channels (a 4-channel
# block, then one) with 70 outputs (four vectors, then lanes), an uneven kernel and padding
# that crops; a transposed convolution's weight gradient (the kernel with its operands swapped).
WGRAD = {
    "c1-o40": ((3, 1, 9, 8), (40, 1, 3, 3), {"padding": 1}),
    "c5-o70": ((2, 5, 7, 9), (70, 5, 3, 2), {"padding": (2, 0)}),
}


def _wgrad_program() -> dict:
    rng = np.random.default_rng(0)
    out = {}
    for name, (xs, ws, kw) in WGRAD.items():
        x, w = (nb.tensor(rng.normal(size=s).astype(np.float32)) for s in (xs, ws))
        y, pullback = nb.vjp(lambda v, _x=x, _kw=kw: F.conv2d(_x, v, **_kw), w)
        out[name] = pullback(nb.tensor(rng.normal(size=y.shape).astype(np.float32)))[0]
    x, w = nb.tensor(rng.normal(size=(2, 6, 5, 5)).astype(np.float32)), nb.tensor(rng.normal(size=(6, 3, 3, 3)))
    y, pullback = nb.vjp(lambda v: F.conv_transpose2d(x, v.astype(nb.float32), padding=1), w)
    out["transpose"] = pullback(nb.tensor(rng.normal(size=y.shape).astype(np.float32)))[0]
    return out


def _on_numpy_and_max(program, kernel: str) -> tuple[dict, dict, int]:
    """`program()`'s values on the NumPy executor and on MAX (one evaluation), and how many times
    the MAX graph placed nabla's `kernel`."""
    nb.set_executor("numpy")
    want = {k: v.numpy() for k, v in program().items()}
    nb.set_executor("max")
    calls = mojo_kernels.STATS[kernel]
    got = program()
    nb.evaluate(*got.values())
    return want, {k: v.numpy() for k, v in got.items()}, mojo_kernels.STATS[kernel] - calls


def test_conv_weight_gradients_match_numpy_on_max():
    want, got, placed = _on_numpy_and_max(_wgrad_program, "nabla_conv2d_weight_grad_nhwc")
    assert placed == 3  # built here, and every gradient took the kernel
    for key, w in want.items():
        np.testing.assert_allclose(got[key], w, rtol=1e-4, atol=1e-4, err_msg=key)


def _train_cnn(executor: str) -> tuple[list, dict]:
    """A small CNN (one input channel, 16 and 20 channels, two 2x2 max pools) trained with SGD
    on batches of 8, then 5 (a second size: one model with a symbolic batch dim), then 8."""
    nb.set_executor(executor)
    nb.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 20, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(20 * 3 * 3, 4),
    )  # fmt: skip
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for n in (8, 8, 5, 8, 5):
        x = rng.standard_normal((n, 1, 12, 12)).astype(np.float32)
        y = rng.integers(0, 4, n)
        opt.zero_grad()
        loss = F.cross_entropy(model(nb.Tensor.from_numpy(x)), nb.Tensor.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}


def test_a_cnn_trains_on_the_kernels_with_a_symbolic_batch_as_on_numpy():
    before = dict(mojo_kernels.STATS)
    nb.clear_cache()
    losses, params = _train_cnn("max")
    placed = {k: v - before.get(k, 0) for k, v in mojo_kernels.STATS.items() if v != before.get(k, 0)}
    # two models (batch 8, then one for every size), each with both pools' and convs' gradients
    assert placed == {"nabla_max_pool_tiles_grad_nhwc": 4, "nabla_conv2d_weight_grad_nhwc": 4}
    ref_losses, ref_params = _train_cnn("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for key, value in params.items():
        np.testing.assert_allclose(value, ref_params[key], rtol=1e-4, atol=1e-5, err_msg=key)


def _scatter_program() -> dict:
    """Row scatter-adds with repeated indices: an embedding gradient, `index_add` along a middle
    axis, one under vmap (its batch merged into the rows), rows of several dims, and a float64
    one (MAX's scatter_nd_add: the kernel is float32 only)."""
    rng = np.random.default_rng(3)

    def t(shape, dtype=np.float32):
        return nb.Tensor.from_numpy(rng.standard_normal(shape).astype(dtype))

    def idx(*shape, n):
        return nb.Tensor.from_numpy(rng.integers(0, n, shape))

    x3, i3 = t((4, 6, 5)), idx(3, 7, n=4)
    return {
        "embedding": _take_transpose(t((5, 9, 33)), idx(5, 9, n=11), 0, (11, 33)),
        "middle_axis": _take_scatter(t((3, 8, 4)), t((3, 12, 4)), idx(12, n=8), 1, "add"),
        "vmapped": nb.vmap(lambda u, i: _take_transpose(u, i, 0, (6, 10)))(t((2, 9, 10)), idx(2, 9, n=6)),
        "row_blocks": _take_scatter(x3, t((3, 7, 6, 5)), i3, 0, "add"),
        "float64": _take_transpose(t((9, 4), np.float64), idx(9, n=3), 0, (3, 4)),
    }


def test_row_scatter_adds_match_numpy_on_max():
    want, got, placed = _on_numpy_and_max(_scatter_program, "nabla_scatter_add_rows")
    assert placed == 4  # every float32 one took the kernel
    for key, w in want.items():
        assert got[key].shape == w.shape, key
        np.testing.assert_allclose(got[key], w, rtol=1e-5, atol=1e-5, err_msg=key)


def _concat_program() -> dict:
    """Concatenations the row-copy kernel takes: along the first axis (one long row, split among
    tasks by columns), a middle and the last axis (rows split among tasks), parts of unequal
    sizes, a split's gradient; and a float64 one (MAX's concat: the kernel is float32 only)."""
    rng = np.random.default_rng(5)

    def t(*shape, dtype=np.float32):
        return nb.Tensor.from_numpy(rng.standard_normal(shape).astype(dtype))

    a = t(16, 4, 8, 32)
    pieces = nb.split(a, [1, 3], axis=1)
    return {
        "first_axis": nb.cat([t(300, 100), t(7, 100), t(200, 100)], 0),
        "middle_axis": nb.cat([t(64, 3, 150), t(64, 1, 150), t(64, 2, 150)], 1),
        "last_axis": nb.cat([t(64, 5, 3), t(64, 5, 250)], 2),
        "split_grad": nb.grad(
            lambda x: (nb.split(x, [1, 3], axis=1)[0] * 2).sum() + nb.split(x, [1, 3], axis=1)[1].sum()
        )(a),
        "unused": pieces[1],
        "float64": nb.cat([t(3, 4, dtype=np.float64), t(2, 4, dtype=np.float64)], 0),
    }


def test_concatenations_match_numpy_on_max():
    want, got, placed = _on_numpy_and_max(_concat_program, "nabla_concat_rows")
    assert placed == 5  # every float32 one took the kernel (the gradient holds two: one per split)
    for key, w in want.items():
        assert got[key].shape == w.shape, key
        np.testing.assert_array_equal(got[key], w, err_msg=key)
