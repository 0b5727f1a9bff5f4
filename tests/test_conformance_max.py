"""Registry-driven conformance of the MAX executor against the NumPy executor.

The whole registry compiles into a handful of graphs (`MAX_GROUPS`): each group's forward
values and VJPs for every sample are built lazily and evaluated as one graph, once on the
NumPy executor and once on MAX, and compared. A cold compile costs tens of seconds per
group; with MAX's disk cache warm it is a cache hit.

`NABLA_TEST_DEVICE=gpu` runs the MAX side on an accelerator: every sample's tensors are made
there, so each group is one graph compiled for the GPU.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from op_registry import MAX_GROUPS, REGISTRY
from op_registry.spec import diff_indices, float_args, rng_for
from op_registry.vmapping import mappable, variants, weighted_sum

import nabla as nb
from nabla.core.common import dtypes as _dt

USES_MAX = True  # conftest: leave the MAX executor selected
DEVICE = os.environ.get("NABLA_TEST_DEVICE", "cpu")


def _program(group: str) -> dict[str, nb.Tensor]:
    """Every forward output and VJP of the group's registry samples, lazily (float32)."""
    out: dict[str, nb.Tensor] = {}
    for spec in REGISTRY:
        if spec.family not in MAX_GROUPS[group]:
            continue
        for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True):
            if not sample.max:
                continue
            args = float_args(sample.args, np.float32)
            tensors = [nb.tensor(np.array(a), device=DEVICE) if isinstance(a, np.ndarray) else a for a in args]
            idx = diff_indices(spec, sample) if spec.differentiable and sample.grad else ()

            def f(*xs, _t=tensors, _idx=idx, _spec=spec, _kw=sample.kwargs):
                full = list(_t)
                for i, x in zip(_idx, xs, strict=True):
                    full[i] = x
                return _spec.fn(*full, **_kw)

            if not idx:
                for k, o in enumerate(nb.tree_leaves(f())):
                    out[f"{sid}/out{k}"] = o
                continue
            result, pullback = nb.vjp(f, *[tensors[i] for i in idx])
            rng = rng_for("max" + sid)
            leaves, treedef = nb.tree_flatten(result)
            cots = [
                nb.tensor(rng.normal(size=o.shape).astype(np.float32), device=DEVICE)
                if _dt.is_float(o.dtype)
                else nb.zeros_like(o)
                for o in leaves
            ]
            for k, o in enumerate(leaves):
                out[f"{sid}/out{k}"] = o
            for k, g in enumerate(pullback(nb.tree_unflatten(treedef, cots))):
                out[f"{sid}/grad{k}"] = g
    return out


def _run(group: str, executor: str) -> dict[str, np.ndarray]:
    nb.set_executor(executor)
    nb.manual_seed(0)
    out = _program(group)
    nb.evaluate(*out.values())
    return {k: v.numpy() for k, v in out.items()}


@pytest.mark.parametrize("group", sorted(MAX_GROUPS))
def test_max_matches_numpy_executor(group: str):
    want = _run(group, "numpy")
    if not want:
        pytest.fail(f"MAX group {group!r} has no registry samples")
    nb.reset_cache_info()
    got = _run(group, "max")
    info = nb.cache_info().per_executor["max"]
    assert info.compiles + info.hits <= 1, f"group {group} needed {info.compiles} compiles"
    specs = {s.name: s for s in REGISTRY}
    for key, w in want.items():
        spec = specs[key.split("[")[0]]
        g = got[key]
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{key}: MAX gave {g.shape} {g.dtype}, NumPy {w.shape} {w.dtype}"
        )
        if spec.max_compare:
            np.testing.assert_allclose(g, w, rtol=spec.rtol * 10 + 1e-5, atol=spec.atol * 10 + 1e-5, err_msg=key)


# Families whose batching rules have kernels of their own (batched indices, conv with batched
# weights folded into groups, per-element custom kernels, batched while/cond): their vmapped
# forward values and per-example gradients, the first sample of each op, as one MAX graph.
VMAP_FAMILIES = ("indexing", "conv", "custom", "control_flow")
VMAP_EXTRA = ("repeat_interleave", "take_along_axis", "index_select")


def _vmap_program() -> dict[str, nb.Tensor]:
    out: dict[str, nb.Tensor] = {}
    for spec in REGISTRY:
        if spec.family not in VMAP_FAMILIES and spec.name not in VMAP_EXTRA:
            continue
        for sample, sid in list(zip(spec.samples, spec.sample_ids(), strict=True))[:1]:
            mapped = mappable(sample)
            if not sample.max or not mapped:
                continue
            args = float_args(sample.args, np.float32)
            batched = tuple(nb.tensor(np.stack(variants(a))) if i in mapped else a for i, a in enumerate(args))
            in_axes = tuple(0 if i in mapped else None for i in range(len(args)))
            res = nb.vmap(lambda *xs, _s=spec, _kw=sample.kwargs: _s.fn(*xs, **_kw), in_axes=in_axes)(*batched)
            for k, o in enumerate(nb.tree_leaves(res)):
                out[f"{sid}/vmap{k}"] = o
            diff = [i for i in diff_indices(spec, sample) if i in mapped]
            if spec.differentiable and spec.check is None and sample.grad and diff:
                plain = tuple(nb.tensor(np.array(a)) if isinstance(a, np.ndarray) else a for a in args)
                f = weighted_sum(spec, sample.kwargs, tuple(diff), plain)
                grads = nb.vmap(nb.grad(f, tuple(range(len(diff)))))(*[batched[i] for i in diff])
                for k, g in enumerate(grads):
                    out[f"{sid}/vgrad{k}"] = g
    return out


def test_vmapped_ops_on_max_match_numpy_executor():
    nb.set_executor("numpy")
    nb.manual_seed(0)
    reference = _vmap_program()
    nb.evaluate(*reference.values())
    want = {k: v.numpy() for k, v in reference.items()}
    nb.set_executor("max")
    nb.manual_seed(0)
    nb.reset_cache_info()
    program = _vmap_program()
    nb.evaluate(*program.values())
    info = nb.cache_info().per_executor["max"]
    assert info.compiles + info.hits <= 1, f"vmapped ops needed {info.compiles} compiles"
    specs = {s.name: s for s in REGISTRY}
    assert len(want) > 30
    for key, w in want.items():
        spec = specs[key.split("[")[0]]
        g = program[key].numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, f"{key}: MAX gave {g.shape} {g.dtype}, NumPy {w.shape}"
        if spec.max_compare:
            np.testing.assert_allclose(g, w, rtol=spec.rtol * 10 + 1e-5, atol=spec.atol * 10 + 1e-5, err_msg=key)
