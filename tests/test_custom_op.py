"""nabla.custom_op: user ops with their own shape inference, NumPy kernel, VJP/JVP rules and
MAX lowering (a Mojo kernel package or MAX graph ops).

Most tests run on the NumPy executor. The Mojo example kernel (tests/op_registry/mojo_kernels)
is built into MAX graphs without compiling them, and compiled and run once on MAX at the end.
"""

from __future__ import annotations

import numpy as np
import pytest
from max.graph import ops
from op_registry.custom import KERNELS, int_pow, square_and_double

import nabla as nb
from nabla.core.graph.executors import MaxExecutor, custom_extensions
from nabla.core.graph.program import collect


def _cube(name: str = "test_cube", **kw):
    return nb.custom_op(
        name,
        abstract_eval=lambda x: x,
        numpy_kernel=lambda x: x**3,
        vjp=lambda primals, cots, outs: [cots[0] * 3 * primals[0] ** 2],
        jvp=lambda primals, tans, outs: [tans[0] * 3 * primals[0] ** 2],
        **kw,
    )


def _addmul():
    """Two inputs, two outputs: (x + y, x * y)."""

    def abstract_eval(x, y):
        if x != y:
            raise ValueError(f"test_addmul: x and y must have one shape and dtype, got {x} and {y}")
        return [x, x]

    return nb.custom_op(
        "test_addmul",
        abstract_eval=abstract_eval,
        numpy_kernel=lambda x, y: (x + y, x * y),
        vjp=lambda p, c, o: [c[0] + c[1] * p[1], c[0] + c[1] * p[0]],
        jvp=lambda p, t, o: [t[0] + t[1], t[0] * p[1] + p[0] * t[1]],
    )


# -- the NumPy path --------------------------------------------------------------------------------
class TestNumpyPath:
    def test_forward_vjp_jvp_against_finite_differences(self):
        cube = _cube()
        x = np.array([0.5, -1.2, 2.0])
        v = np.array([1.0, 0.3, -0.7])
        out, pullback = nb.vjp(cube, nb.tensor(x))
        np.testing.assert_allclose(out.numpy(), x**3)
        (g,) = pullback(nb.tensor(v))
        np.testing.assert_allclose(g.numpy(), 3 * x**2 * v)
        eps = 1e-6
        fd = ((x + eps * v) ** 3 - (x - eps * v) ** 3) / (2 * eps)
        _, t = nb.jvp(cube, (nb.tensor(x),), (nb.tensor(v),))
        np.testing.assert_allclose(t.numpy(), fd, rtol=1e-6)
        np.testing.assert_allclose(np.sum(g.numpy()), np.sum(fd), rtol=1e-6)

    def test_rules_are_differentiable(self):
        cube = _cube()
        d2 = nb.grad(lambda x: nb.grad(lambda y: cube(y).sum())(x).sum())
        np.testing.assert_allclose(d2(nb.tensor([1.0, 2.0])).numpy(), [6.0, 12.0])

    def test_several_inputs_and_outputs(self):
        addmul = _addmul()
        x, y = nb.tensor([1.0, 2.0]), nb.tensor([3.0, -1.0])
        s, p = addmul(x, y)
        assert s.tolist() == [4.0, 1.0] and p.tolist() == [3.0, -2.0]
        assert s._impl.output_refs is p._impl.output_refs  # one node, two outputs
        gx, gy = nb.grad(lambda a, b: (addmul(a, b)[0] * addmul(a, b)[1]).sum(), argnums=(0, 1))(x, y)
        # d/dx (x + y) x y = 2xy + y^2, d/dy = x^2 + 2xy
        np.testing.assert_allclose(gx.numpy(), [2 * 3 + 9, 2 * -2 + 1])
        np.testing.assert_allclose(gy.numpy(), [1 + 6, 4 - 4])
        with pytest.raises(ValueError, match=r"test_addmul: x and y must have one shape and dtype"):
            addmul(x, nb.ones(3))

    def test_static_kwargs_reach_every_piece_and_the_cache_key(self):
        x = nb.tensor([2.0, 3.0])
        assert int_pow(x, power=2).tolist() == [4.0, 9.0]
        assert int_pow(x, power=3).tolist() == [8.0, 27.0]
        g = nb.grad(lambda v: int_pow(v, power=3).sum())(x)
        assert g.tolist() == [12.0, 27.0]
        with pytest.raises(ValueError, match="nabla_int_pow: power must be an int >= 1, got 0"):
            int_pow(x, power=0)

    def test_ops_with_one_name_do_not_share_cached_programs(self):
        a = nb.custom_op("same_name", abstract_eval=lambda x: x, numpy_kernel=lambda x: x + 1)
        b = nb.custom_op("same_name", abstract_eval=lambda x: x, numpy_kernel=lambda x: x * 10)
        x = nb.tensor([1.0, 2.0])
        assert a(x).tolist() == [2.0, 3.0]
        assert b(x).tolist() == [10.0, 20.0]
        assert a(x).tolist() == [2.0, 3.0]

    def test_missing_rules_raise_naming_the_op(self):
        plain = nb.custom_op("no_rules", abstract_eval=lambda x: x, numpy_kernel=lambda x: x * 2)
        x = nb.tensor([1.0])
        with pytest.raises(NotImplementedError, match="custom op 'no_rules' has no vjp rule: pass vjp="):
            nb.grad(lambda v: plain(v).sum())(x)
        with pytest.raises(NotImplementedError, match="custom op 'no_rules' has no jvp rule: pass jvp="):
            nb.jvp(plain, (x,), (x,))

    def test_not_differentiable(self):
        floor = nb.custom_op("test_floor", abstract_eval=lambda x: x, numpy_kernel=np.floor, differentiable=False)
        x = nb.tensor([1.5, -0.5], requires_grad=True)
        y = floor(x)
        assert y.tolist() == [1.0, -1.0] and not y.requires_grad

    def test_integer_output_dtype(self):
        count = nb.custom_op(
            "test_count_positive",
            abstract_eval=lambda x: ((), nb.int64),
            numpy_kernel=lambda x: np.sum(x > 0),
            differentiable=False,
        )
        c = count(nb.tensor([1.0, -2.0, 3.0]))
        assert c.dtype == nb.int64 and c.item() == 2

    def test_bad_rule_results(self):
        bad = nb.custom_op(
            "bad_vjp",
            abstract_eval=lambda x, y: x,
            numpy_kernel=lambda x, y: x + y,
            vjp=lambda p, c, o: [c[0]],
            jvp=lambda p, t, o: ["nope"],
        )
        x = nb.tensor([1.0])
        with pytest.raises(ValueError, match="custom op 'bad_vjp': vjp returned 1 input cotangents, expected 2"):
            nb.grad(lambda v: bad(v, v).sum())(x)
        with pytest.raises(TypeError, match="custom op 'bad_vjp': jvp must return Tensors or None, got str"):
            nb.jvp(lambda v: bad(v, v), (x,), (x,))

    @pytest.mark.parametrize(
        "abstract_eval, text",
        [
            (lambda x: x[0], r"custom op 'bad_aval': abstract_eval must return \(shape, dtype\)"),
            (lambda x: ((-1,), x[1]), "custom op 'bad_aval': abstract_eval returned a negative dimension"),
            (lambda x: (x[0], "complex"), "abstract_eval dtype: unsupported dtype 'complex'"),
            (lambda x: [], "custom op 'bad_aval': abstract_eval returned no outputs"),
        ],
    )
    def test_bad_abstract_eval(self, abstract_eval, text):
        op = nb.custom_op("bad_aval", abstract_eval=abstract_eval, numpy_kernel=lambda x: x)
        with pytest.raises((TypeError, ValueError), match=text):
            op(nb.tensor([1.0]))

    def test_call_errors(self):
        cube = _cube()
        with pytest.raises(TypeError, match="custom op 'test_cube': argument 0 must be a Tensor, got list"):
            cube([1.0])
        with pytest.raises(TypeError, match="_custom_op is a reserved keyword"):
            cube(nb.tensor([1.0]), _custom_op=1)

    def test_definition_errors(self, tmp_path):
        ok = {"abstract_eval": lambda x: x, "numpy_kernel": lambda x: x}
        with pytest.raises(ValueError, match=r"custom_op 'k': kernel_path='.*nowhere' is not a Mojo package"):
            nb.custom_op("k", kernel_path=tmp_path / "nowhere", **ok)
        with pytest.raises(ValueError, match="custom_op 'k': mojo_kernel='kk' needs kernel_path"):
            nb.custom_op("k", mojo_kernel="kk", **ok)
        with pytest.raises(ValueError, match="custom_op 'k': give either max_kernel or a Mojo kernel"):
            nb.custom_op("k", max_kernel=lambda x: x, kernel_path=KERNELS, **ok)
        with pytest.raises(TypeError, match="custom_op 'k': numpy_kernel must be callable, got int"):
            nb.custom_op("k", abstract_eval=lambda x: x, numpy_kernel=3)
        with pytest.raises(TypeError, match="custom_op: name must be a non-empty string"):
            nb.custom_op("", **ok)

    def test_no_max_lowering_still_runs_on_numpy(self):
        op = nb.custom_op("numpy_only", abstract_eval=lambda x: x, numpy_kernel=lambda x: -x)
        assert op(nb.tensor([1.0])).tolist() == [-1.0]
        nb.set_eager_max_graph(True, verify_shapes=True)
        try:
            with pytest.raises(NotImplementedError, match="custom op 'numpy_only' has no MAX lowering"):
                op(nb.tensor([1.0]))
        finally:
            nb.set_eager_max_graph(False, verify_shapes=False)


# -- MAX graphs ----------------------------------------------------------------------------------
class TestMaxGraphs:
    def test_mojo_package_is_built_once_and_cached(self):
        (package,) = int_pow.custom_extensions
        assert package.suffix == ".mojoc" and package.is_file()
        assert int_pow.custom_extensions == (package,)
        assert square_and_double.custom_extensions == ()

    def test_eager_graph_building_with_shape_checks(self):
        nb.set_eager_max_graph(True, verify_shapes=True)
        try:
            x = nb.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
            y = int_pow(x, power=3)
            a, b = square_and_double(x)
            _, pullback = nb.vjp(lambda v: int_pow(v, power=2), x)
            pullback(nb.ones_like(x))
            assert y.shape == a.shape == b.shape == (2, 3)
            with pytest.raises(TypeError, match="keyword scale=\\(1, 2\\) cannot be a Mojo kernel parameter"):
                nb.custom_op(
                    "nabla_int_pow",
                    abstract_eval=lambda x, scale: x,
                    numpy_kernel=lambda x, scale: x,
                    kernel_path=KERNELS,
                )(x, scale=(1, 2))
        finally:
            nb.set_eager_max_graph(False, verify_shapes=False)

    def test_executor_loads_the_kernel_package(self):
        x = nb.tensor(np.ones((2, 2), np.float32))
        y = square_and_double(int_pow(x, power=2))[1] + int_pow(x, power=3)
        program = collect([y._impl]).to_program()
        assert custom_extensions(program) == list(int_pow.custom_extensions)
        module = MaxExecutor().build_module(program)  # builds and verifies, does not compile
        text = module._to_mlir_str()
        assert 'mo.custom [symbol = "nabla_int_pow", parameters = {power = 2 : index}]' in text
        assert str(int_pow.custom_extensions[0]) in text  # the graph's kernel library
        assert text.count("nabla_int_pow") >= 2 and "mojo_kernels" not in text or "nabla_kernels_" in text
        y.numpy()  # leave nothing pending

    def test_max_kernel_lowering(self):
        relu6 = nb.custom_op(
            "test_relu6",
            abstract_eval=lambda x: x,
            numpy_kernel=lambda x: np.clip(x, 0, 6),
            max_kernel=lambda x: ops.min(ops.max(x, ops.constant(0.0, x.dtype, x.device)), 6.0),
        )
        nb.set_eager_max_graph(True, verify_shapes=True)
        try:
            relu6(nb.tensor([[-1.0, 7.0]]))
        finally:
            nb.set_eager_max_graph(False, verify_shapes=False)

    def test_compiles_and_runs_on_max(self):
        """One real MAX compile of the Mojo kernel, forward and VJP, against the NumPy executor."""
        x = np.linspace(-2.0, 2.0, 12, dtype=np.float32).reshape(3, 4)
        cot = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)

        def run():
            out, pullback = nb.vjp(lambda v: int_pow(v, power=3), nb.tensor(x))
            (g,) = pullback(nb.tensor(cot))
            nb.evaluate(out, g)
            return out.numpy(), g.numpy()

        want = run()
        nb.set_executor("max")
        nb.reset_cache_info()
        got = run()
        assert nb.cache_info().per_executor["max"].compiles == 1
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], 3 * x**2 * cot, rtol=1e-5, atol=1e-5)
