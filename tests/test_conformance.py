"""Registry-driven conformance on the NumPy executor.

For every registry entry and sample: forward values against the NumPy reference (and
PyTorch when installed), extra dtypes, VJP against central finite differences in float64,
JVP against VJP through the identity <J v, u> = <v, J^T u>, and MAX's own shape inference
(eager graph building with verification, no compile). `test_conformance_max.py` compiles
the registry on MAX.
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch
from op_registry import NOT_OPS, REGISTRY, SHARDING_OPS, TRANSFORM_OPS, OpSpec, Sample
from op_registry.spec import diff_indices, float_args, rng_for

import nabla as nb
from nabla.core.common import dtypes as _dt

CASES = [
    pytest.param(spec, sample, id=sid)
    for spec in REGISTRY
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
]
GRAD_CASES = [
    pytest.param(spec, sample, id=sid)
    for spec in REGISTRY
    if spec.differentiable
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
    if sample.grad and diff_indices(spec, sample)
]


def to_nabla(args: tuple) -> tuple:
    return tuple(nb.asarray(np.array(a)) if isinstance(a, np.ndarray) else a for a in args)


def leaves(out) -> list:
    return nb.tree_leaves(out)


def as_arrays(out) -> list[np.ndarray]:
    if isinstance(out, tuple | list):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


def _assert_matches(spec: OpSpec, got: list, want: list[np.ndarray], rtol: float, atol: float, what: str) -> None:
    assert len(got) == len(want), f"{spec.name}: {len(got)} outputs, reference has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert isinstance(g, nb.Tensor), f"{spec.name}: output {k} is {type(g).__name__}"
        assert g.shape == w.shape, f"{spec.name} {what}: output {k} shape {g.shape}, expected {w.shape}"
        if spec.check_dtype:
            assert g.numpy().dtype == w.dtype, f"{spec.name} {what}: output {k} dtype {g.numpy().dtype} != {w.dtype}"
        np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol, err_msg=f"{spec.name} {what} output {k}")


@pytest.mark.parametrize("spec, sample", CASES)
def test_forward_matches_numpy(spec: OpSpec, sample: Sample):
    args = float_args(sample.args, np.float32)
    out = spec.fn(*to_nabla(args), **sample.kwargs)
    if spec.check is not None:
        spec.check([o.numpy() for o in leaves(out)], args, sample.kwargs)
        return
    _assert_matches(spec, leaves(out), as_arrays(spec.ref(*args, **sample.kwargs)), spec.rtol, spec.atol, "forward")


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
@pytest.mark.parametrize("spec, sample", [c for c in CASES if c.values[0].torch_ref is not None])
def test_forward_matches_torch(spec: OpSpec, sample: Sample):
    args = float_args(sample.args, np.float32)
    out = spec.fn(*to_nabla(args), **sample.kwargs)
    t_args = tuple(torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a for a in args)
    want = spec.torch_ref(torch, *t_args, **sample.kwargs)
    want = [w.numpy() for w in (want if isinstance(want, tuple | list) else (want,))]
    got = leaves(out)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=spec.rtol * 10, atol=spec.atol * 10, err_msg=spec.name)


DTYPE_CASES = [
    pytest.param(spec, sample, dt, id=f"{sid}-{dt}")
    for spec in REGISTRY
    for dt in spec.dtypes
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
    if any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in sample.args)  # a float input to cast
]
_DTYPE_TOL = {"float64": 1e-9, "float16": 2e-3, "bfloat16": 2e-2}


@pytest.mark.parametrize("spec, sample, dtype", DTYPE_CASES)
def test_forward_in_other_float_dtypes(spec: OpSpec, sample: Sample, dtype: str):
    storage = np.float64 if dtype == "float64" else np.float32
    args = float_args(sample.args, storage)
    tensors = tuple(
        nb.asarray(np.array(a)).astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else t
        for a, t in zip(args, to_nabla(args), strict=True)
    )
    out = leaves(spec.fn(*tensors, **sample.kwargs))
    # The reference sees the values the op saw (rounded to `dtype`), computed in float64.
    rounded = tuple(
        t.astype(nb.float64).numpy() if isinstance(t, nb.Tensor) and _dt.is_float(t.dtype) else a
        for t, a in zip(tensors, args, strict=True)
    )
    want = as_arrays(spec.ref(*rounded, **sample.kwargs))
    tol = _DTYPE_TOL[dtype]
    for g, w in zip(out, want, strict=True):
        if _dt.is_float(g.dtype):
            assert g.dtype == _dt.as_dtype(dtype), f"{spec.name}: {dtype} input gave {g.dtype.name}"
        np.testing.assert_allclose(
            g.astype(nb.float64).numpy() if _dt.is_float(g.dtype) else g.numpy(),
            w,
            rtol=tol,
            atol=tol,
            err_msg=spec.name,
        )


# -- derivatives (float64) -------------------------------------------------------------------
def _split(spec: OpSpec, sample: Sample):
    args = float_args(sample.args, np.float64)
    idx = diff_indices(spec, sample)

    def f(*xs):
        full = list(to_nabla(args))
        for i, x in zip(idx, xs, strict=True):
            full[i] = x
        return spec.fn(*full, **sample.kwargs)

    primals = [np.asarray(args[i], np.float64) for i in idx]
    return f, primals


def _float_outputs(out) -> list:
    return [o for o in leaves(out) if _dt.is_float(o.dtype)]


def _directions(name: str, primals: list, outputs: list):
    rng = rng_for("directions" + name)
    v = [rng.normal(size=p.shape) for p in primals]
    u = [rng.normal(size=o.shape) for o in outputs]
    return v, u


def _inner(a: list, b: list) -> float:
    return float(sum(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)) for x, y in zip(a, b, strict=True)))


def _select_float(out, values: list) -> tuple:
    """Cotangent pytree for `out`: `values` for float outputs, zeros for the others."""
    it = iter(values)
    cots = [nb.tensor(next(it)) if _dt.is_float(o.dtype) else nb.zeros_like(o) for o in leaves(out)]
    _, treedef = nb.tree_flatten(out)
    return nb.tree_unflatten(treedef, cots)


@pytest.mark.parametrize("spec, sample", GRAD_CASES)
def test_vjp_matches_finite_differences(spec: OpSpec, sample: Sample):
    f, primals = _split(spec, sample)
    out, pullback = nb.vjp(f, *[nb.tensor(p) for p in primals])
    outs = _float_outputs(out)
    assert outs, f"{spec.name}: differentiable but has no float output"
    v, u = _directions(spec.name + sample.label, primals, outs)
    grads = pullback(_select_float(out, u))
    for g, p in zip(grads, primals, strict=True):
        assert g.shape == p.shape, f"{spec.name}: gradient shape {g.shape}, primal {p.shape}"
    analytic = _inner([g.numpy() for g in grads], v)
    eps = 1e-6
    plus = _float_outputs(f(*[nb.tensor(p + eps * d) for p, d in zip(primals, v, strict=True)]))
    minus = _float_outputs(f(*[nb.tensor(p - eps * d) for p, d in zip(primals, v, strict=True)]))
    numeric = _inner([(a.numpy() - b.numpy()) / (2 * eps) for a, b in zip(plus, minus, strict=True)], u)
    assert abs(analytic - numeric) <= 1e-5 * (abs(analytic) + abs(numeric)) + 1e-6, (
        f"{spec.name}: <J^T u, v> = {analytic}, finite differences give {numeric}"
    )


@pytest.mark.parametrize("spec, sample", GRAD_CASES)
def test_jvp_matches_vjp(spec: OpSpec, sample: Sample):
    f, primals = _split(spec, sample)
    xs = [nb.tensor(p) for p in primals]
    out, pullback = nb.vjp(f, *xs)
    outs = _float_outputs(out)
    v, u = _directions(spec.name + sample.label, primals, outs)
    grads = pullback(_select_float(out, u))
    out2, tangents = nb.jvp(f, tuple(xs), tuple(nb.tensor(d) for d in v))
    t_float = [t for o, t in zip(leaves(out2), leaves(tangents), strict=True) if _dt.is_float(o.dtype)]
    for t, o in zip(t_float, outs, strict=True):
        assert t.shape == o.shape, f"{spec.name}: tangent shape {t.shape}, output {o.shape}"
    lhs = _inner([t.numpy() for t in t_float], u)
    rhs = _inner([g.numpy() for g in grads], v)
    assert abs(lhs - rhs) <= 1e-9 * (abs(lhs) + abs(rhs)) + 1e-10, f"{spec.name}: <Jv, u> = {lhs}, <v, J^T u> = {rhs}"


@pytest.mark.parametrize("spec, sample", [c for c in CASES if c.values[1].max])
def test_max_shape_inference_agrees(spec: OpSpec, sample: Sample):
    """Build each op's MAX nodes as it is called and check MAX's shapes/dtypes against ours."""
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        args = float_args(sample.args, np.float32)
        if spec.differentiable and sample.grad and diff_indices(spec, sample):
            f, primals = _split(spec, Sample(args, sample.kwargs, sample.label))
            out, pullback = nb.vjp(f, *[nb.tensor(p.astype(np.float32)) for p in primals])
            pullback(_select_float(out, [np.ones(o.shape, np.float32) for o in _float_outputs(out)]))
        else:
            spec.fn(*to_nabla(args), **sample.kwargs)
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)


# -- the registry covers the library ---------------------------------------------------------
def _operation_classes() -> set[type]:
    seen, stack = set(), [nb.Operation]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return {c for c in seen if c.__module__.startswith("nabla.") and c.name != "?"}


def test_every_op_has_a_registry_entry():
    covered_ops = {name for spec in REGISTRY for name in spec.covers}
    missing_ops = sorted({c.name for c in _operation_classes()} - covered_ops - TRANSFORM_OPS - SHARDING_OPS)
    assert not missing_ops, f"Operations without a registry entry (add one to tests/op_registry): {missing_ops}"
    public = {name for spec in REGISTRY for name in (spec.name, *spec.aliases)}
    missing_public = sorted(set(nb.ops.__all__) - public - NOT_OPS - SHARDING_OPS)
    assert not missing_public, f"public ops without a registry entry: {missing_public}"


def test_registry_names_are_real_ops():
    for spec in REGISTRY:
        for name in (spec.name, *spec.aliases):
            assert name in nb.ops.__all__, f"registry entry {name!r} is not exported by nabla.ops"
    names = [spec.name for spec in REGISTRY]
    assert len(names) == len(set(names)), "duplicate registry entries"
