"""The conformance registry's vmap level: every op, every sample, vmapped against a Python loop.

Each array argument gets a batch of 3 variants, so that a batch element mixed up with another
shows: floats scaled by 1, 0.75, 0.5; integer arrays rolled (the same valid indices, in other
places); bool arrays repeated. Three mappings:
  all     every array argument mapped along axis 0
  first   only the first array argument mapped, along its last axis; the others broadcast
  nested  all mapped, inside a second vmap over a batch of 2 (the same values twice)
vmap(fn) must equal stacking fn's results over the batch, in values, shapes and dtypes.
`test_vmap_of_grad_matches_loop` does the same for the gradient of a weighted sum of the
outputs (the VJP rules run on batched primals: per-example gradients).
"""

from __future__ import annotations

import numpy as np
import pytest
from op_registry import REGISTRY, OpSpec, Sample
from op_registry.spec import diff_indices, float_args
from op_registry.vmapping import B, mappable, variants, weighted_sum

import nabla as nb

CASES = [
    pytest.param(spec, sample, mode, id=f"{sid}-{mode}")
    for spec in REGISTRY
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
    if mappable(sample)
    for mode in ("all", "first", "nested")
]


def _loop(spec: OpSpec, per_elem: list[tuple], kwargs: dict) -> list[np.ndarray]:
    outs = [
        nb.tree_leaves(spec.fn(*[nb.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs))
        for args in per_elem
    ]
    return [np.stack([o[k].numpy() for o in outs]) for k in range(len(outs[0]))]


@pytest.mark.parametrize("spec, sample, mode", CASES)
def test_vmap_matches_loop(spec: OpSpec, sample: Sample, mode: str):
    args = float_args(sample.args, np.float32)
    arrays = mappable(sample)
    mapped = arrays if mode in ("all", "nested") else arrays[:1]
    per_arg = {i: variants(args[i]) for i in mapped}
    per_elem = [tuple(per_arg[i][b] if i in per_arg else a for i, a in enumerate(args)) for b in range(B)]
    want = _loop(spec, per_elem, sample.kwargs)

    in_axes, batched = [], []
    for i, a in enumerate(args):
        if i not in per_arg:
            in_axes.append(None)
            batched.append(nb.asarray(a) if isinstance(a, np.ndarray) else a)
        elif mode == "first":  # mapped along the last axis
            in_axes.append(a.ndim)
            batched.append(nb.asarray(np.stack(per_arg[i], axis=-1)))
        else:
            in_axes.append(0)
            batched.append(nb.asarray(np.stack(per_arg[i])))
    fn = nb.vmap(lambda *xs: spec.fn(*xs, **sample.kwargs), in_axes=tuple(in_axes))
    if mode == "nested":
        outer_axes = tuple(0 if ax is not None else None for ax in in_axes)
        outer = tuple(nb.stack([x, x]) if ax is not None else x for x, ax in zip(batched, in_axes, strict=True))
        got = [o.numpy() for o in nb.tree_leaves(nb.vmap(fn, in_axes=outer_axes)(*outer))]
        want = [np.stack([w, w]) for w in want]
    else:
        got = [o.numpy() for o in nb.tree_leaves(fn(*batched))]
    assert len(got) == len(want), f"{spec.name}: {len(got)} outputs under vmap, {len(want)} in the loop"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"{spec.name} output {k}: vmap shape {g.shape}, loop shape {w.shape}"
        assert g.dtype == w.dtype, f"{spec.name} output {k}: vmap dtype {g.dtype}, loop dtype {w.dtype}"
        if spec.check is None:  # random draws: shapes and dtypes only
            np.testing.assert_allclose(g, w, rtol=spec.rtol * 10, atol=spec.atol * 10, err_msg=f"{spec.name} {k}")


GRAD_CASES = [
    pytest.param(spec, sample, id=sid)
    for spec in REGISTRY
    if spec.differentiable and spec.check is None
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
    if sample.grad and diff_indices(spec, sample)
]


@pytest.mark.parametrize("spec, sample", GRAD_CASES)
def test_vmap_of_grad_matches_loop(spec: OpSpec, sample: Sample):
    args = float_args(sample.args, np.float32)
    diff = tuple(diff_indices(spec, sample))
    per_arg = {i: variants(args[i]) for i in diff}
    as_nb = tuple(nb.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    f = weighted_sum(spec, sample.kwargs, diff, as_nb)
    argnums = tuple(range(len(diff)))
    want = [nb.grad(f, argnums)(*[nb.asarray(per_arg[i][b]) for i in diff]) for b in range(B)]
    want = [np.stack([w[k].numpy() for w in want]) for k in range(len(diff))]
    got = nb.vmap(nb.grad(f, argnums))(*[nb.asarray(np.stack(per_arg[i])) for i in diff])
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"{spec.name} grad {k}: vmap shape {g.shape}, loop shape {w.shape}"
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4, err_msg=f"{spec.name} grad {k}")


MAX_CASES = [
    pytest.param(spec, sample, id=sid)
    for spec in REGISTRY
    for sample, sid in zip(spec.samples, spec.sample_ids(), strict=True)
    if sample.max and mappable(sample)
]


@pytest.mark.parametrize("spec, sample", MAX_CASES)
def test_vmap_max_shape_inference_agrees(spec: OpSpec, sample: Sample):
    """Batched ops (and the gradient of their weighted outputs) build valid MAX nodes whose
    shapes and dtypes agree with ours: eager graph building, no compile."""
    args = float_args(sample.args, np.float32)
    arrays = mappable(sample)
    batched = tuple(nb.asarray(np.stack(variants(a))) if i in arrays else a for i, a in enumerate(args))
    in_axes = tuple(0 if i in arrays else None for i in range(len(args)))
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        nb.vmap(lambda *xs: spec.fn(*xs, **sample.kwargs), in_axes=in_axes)(*batched)
        diff = tuple(diff_indices(spec, sample))
        if spec.differentiable and spec.check is None and sample.grad and diff:
            unbatched = tuple(nb.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
            f = weighted_sum(spec, sample.kwargs, diff, unbatched)
            nb.vmap(nb.grad(f, tuple(range(len(diff)))))(*[batched[i] for i in diff])
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)


def test_shapes_that_depend_on_batched_values_get_clear_errors():
    idx = nb.tensor(np.array([[1, 0], [3, 3]]))
    with pytest.raises(ValueError, match="num_classes"):
        nb.vmap(lambda i: nb.one_hot(i, -1))(idx)
    x = nb.ones((2, 3))
    reps = nb.tensor(np.array([[1, 2, 1], [2, 1, 1]]))
    with pytest.raises(ValueError, match="repeats"):
        nb.vmap(lambda a, r: nb.repeat_interleave(a, r, 0))(x, reps)
    mask = nb.tensor(np.array([[True, False, True], [False, False, True]]))
    with pytest.raises(IndexError, match="mask"):
        nb.vmap(lambda a, m: a[m])(x, mask)
