"""The conformance registry's sharded level: every op, run on sharded inputs, against the unsharded run.

Each array argument of a sample is laid out on a mesh by a fixed rule (`_spec_for`), the op runs
on the sharded tensors (NumPy executor: every device simulated on the host), and the global
values must equal the same call on ordinary tensors. For differentiable entries the gradient of
a weighted sum of the outputs with respect to the sharded float inputs must equal the unsharded
gradient too. Random ops (`check` set or `max_compare` False) only have to run and give the
unsharded shapes and dtypes.

Meshes and layouts (deterministic, per array argument of rank r >= 1; 0-d arrays are replicated
on "2x2" and stay ordinary tensors on the others, so ops also mix sharded and unsharded operands):
  "2"    (2,)   axis "x":        the largest dim (the first of equals) on "x"
  "4"    (4,)   axis "x":        the last dim on "x" (size 4: uneven splits, empty shards)
  "2x2"  (2, 2) axes "a", "b":   r >= 2: dim 0 on "a", the last dim on "b"; r == 1: dim 0 on ("a", "b")

Every sample with an array argument runs on every mesh. Samples without one have nothing to
shard; entries with none at all are listed in `NO_TENSOR_INPUTS` (and checked to be so).

`test_every_dim_of_every_argument_may_be_the_sharded_one`: each argument split along each of its
dims in turn (3 devices), values and gradients against the unsharded run.
`test_every_op_has_a_sharding_rule`: every Operation of the library has a sharding rule, places
its outputs itself (`own_layouts`: collectives, `call`), or is listed in `REPLICATED_BY_DESIGN`
with the reason.
`test_rule_keeps_layout`: the rules keep the layouts they should (no silent gathering).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from op_registry import REGISTRY, OpSpec, Sample
from op_registry.spec import diff_indices, float_args
from op_registry.vmapping import weighted_sum

import nabla as nb
from nabla import DeviceMesh, P
from nabla.ops.base import Operation

MESHES = {
    "2": DeviceMesh("reg2", (2,), ("x",)),
    "4": DeviceMesh("reg4", (4,), ("x",)),
    "2x2": DeviceMesh("reg2x2", (2, 2), ("a", "b")),
}

# Entries whose samples take no tensor at all: there is nothing to shard. Their outputs are
# ordinary tensors; ops mixing them with sharded tensors are covered by the other entries.
NO_TENSOR_INPUTS = {
    "full": "creation from a shape and a value",
    "zeros": "creation from a shape",
    "ones": "creation from a shape",
    "empty": "creation from a shape",
    "arange": "creation from numbers",
    "linspace": "creation from numbers",
    "logspace": "creation from numbers",
    "eye": "creation from sizes",
    "tri": "creation from sizes",
    "rand": "random draw from a shape",
    "randn": "random draw from a shape",
    "uniform": "random draw from a shape",
    "normal": "random draw from a shape",
    "randint": "random draw from a shape",
    "randperm": "random permutation of range(n)",
}

# Operations that keep the default rule (sharded inputs are gathered, the op runs replicated).
REPLICATED_BY_DESIGN = {
    "full": "no tensor inputs",
    "arange": "no tensor inputs",
    "linspace": "no tensor inputs",
    "eye": "no tensor inputs",
    "tri": "no tensor inputs",
    "random": "its only input is the internal seed, never sharded",
    "custom": "the user's kernels see whole values",
    "eigh": "LAPACK on the host: a sharded input is gathered first",
    "svd": "LAPACK on the host: a sharded input is gathered first",
}


def _has_arrays(sample: Sample) -> bool:
    return any(isinstance(a, np.ndarray) for a in sample.args)


def _grad_sample(spec: OpSpec, sample: Sample) -> bool:
    return spec.differentiable and spec.check is None and sample.grad and bool(diff_indices(spec, sample))


CASES = [
    pytest.param(spec, k, mesh, id=f"{sid}-{mesh}")
    for spec in REGISTRY
    if spec.name not in NO_TENSOR_INPUTS
    for mesh in MESHES
    for k, (sample, sid) in enumerate(zip(spec.samples, spec.sample_ids(), strict=True))
    if _has_arrays(sample)
]


def _spec_for(a: np.ndarray, mesh: str) -> P:
    if a.ndim == 0:
        return P()
    if mesh == "2":
        return P(*[None] * int(np.argmax(a.shape)), "x")
    if mesh == "4":
        return P(*[None] * (a.ndim - 1), "x")
    if a.ndim == 1:
        return P(("a", "b"))
    return P("a", *[None] * (a.ndim - 2), "b")


def _sharded(args: tuple, mesh: str) -> tuple:
    m = MESHES[mesh]
    return tuple(
        (nb.shard(nb.asarray(a), m, _spec_for(a, mesh)) if a.ndim or mesh == "2x2" else nb.asarray(a))
        if isinstance(a, np.ndarray)
        else a
        for a in args
    )


def _plain(args: tuple) -> tuple:
    return tuple(nb.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def _gradients(spec: OpSpec, sample: Sample, tensors: tuple) -> list[np.ndarray] | None:
    if not _grad_sample(spec, sample):
        return None
    diff = tuple(diff_indices(spec, sample))
    f = weighted_sum(spec, sample.kwargs, diff, tensors)
    grads = nb.grad(f, tuple(range(len(diff))))(*[tensors[i] for i in diff])
    return [g.numpy() for g in grads]


@functools.cache
def _unsharded(spec_index: int, k: int) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """The reference (computed once for the three meshes): outputs, and gradients for gradient samples."""
    spec = REGISTRY[spec_index]
    sample = spec.samples[k]
    args = float_args(sample.args, np.float32)
    outs = [o.numpy() for o in nb.tree_leaves(spec.fn(*_plain(args), **sample.kwargs))]
    return outs, _gradients(spec, sample, _plain(args))


@pytest.mark.parametrize("spec, k, mesh", CASES)
def test_sharded_matches_unsharded(spec: OpSpec, k: int, mesh: str):
    sample = spec.samples[k]
    want, want_grads = _unsharded(REGISTRY.index(spec), k)
    args = float_args(sample.args, np.float32)
    got = nb.tree_leaves(spec.fn(*_sharded(args, mesh), **sample.kwargs))
    assert len(got) == len(want), f"{spec.name}: {len(got)} outputs sharded, {len(want)} unsharded"
    exact = spec.check is None and spec.max_compare  # random draws: shapes and dtypes only
    rtol, atol = max(spec.rtol * 10, 1e-5), max(spec.atol * 10, 1e-5)
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        assert isinstance(g, nb.Tensor), f"{spec.name}: output {j} is {type(g).__name__}"
        value = g.numpy()
        assert value.shape == w.shape, f"{spec.name} output {j}: sharded shape {value.shape}, unsharded {w.shape}"
        assert value.dtype == w.dtype, f"{spec.name} output {j}: sharded dtype {value.dtype}, unsharded {w.dtype}"
        if exact:
            np.testing.assert_allclose(value, w, rtol=rtol, atol=atol, err_msg=f"{spec.name} output {j}")
    if want_grads is None:
        return
    grads = _gradients(spec, sample, _sharded(args, mesh))
    assert len(grads) == len(want_grads)
    for j, (g, w) in enumerate(zip(grads, want_grads, strict=True)):
        assert g.shape == w.shape, f"{spec.name} gradient {j}: sharded shape {g.shape}, unsharded {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"{spec.name} gradient {j}")


SWEEP = DeviceMesh("sweep3", (3,), ("x",))  # uneven splits of every size >= 2


@pytest.mark.parametrize("spec", [s for s in REGISTRY if s.check is None and s.max_compare], ids=lambda s: s.name)
def test_every_dim_of_every_argument_may_be_the_sharded_one(spec: OpSpec):
    """The fixed layouts above shard dims 0 and -1; a kernel that reads positions along another
    dim (causal attention along the sequence) needs that dim split. Each array argument in
    turn is split along each of its dims over 3 devices, the others stay ordinary tensors:
    values, and gradients of the differentiable samples, equal the unsharded ones."""
    for k, sample in enumerate(spec.samples):
        args = float_args(sample.args, np.float32)
        plain = _plain(args)
        want, want_grads = _unsharded(REGISTRY.index(spec), k)
        for i, a in enumerate(args):
            for d in range(a.ndim if isinstance(a, np.ndarray) else 0):
                if a.shape[d] < 2:
                    continue
                where = f"{spec.name} sample {k}: argument {i} split along dim {d} of {a.shape}"
                split = (*plain[:i], nb.shard(plain[i], SWEEP, P(*[None] * d, "x")), *plain[i + 1 :])
                got = nb.tree_leaves(spec.fn(*split, **sample.kwargs))
                for g, w in zip(got, want, strict=True):
                    np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4, err_msg=where)
                if want_grads is not None and i in diff_indices(spec, sample):
                    for g, w in zip(_gradients(spec, sample, split), want_grads, strict=True):
                        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=f"{where}: gradient")


def test_every_entry_runs_on_every_mesh():
    covered = {(spec.name, mesh) for spec, _, mesh in (c.values for c in CASES)}
    for spec in REGISTRY:
        if spec.name not in NO_TENSOR_INPUTS:
            for mesh in MESHES:
                assert (spec.name, mesh) in covered, f"{spec.name}: no sharded sample on mesh {mesh}"


def test_no_tensor_inputs_lists_only_such_entries():
    by_name = {spec.name: spec for spec in REGISTRY}
    for name in NO_TENSOR_INPUTS:
        assert name in by_name, f"NO_TENSOR_INPUTS names {name!r}, which is not a registry entry"
        assert not any(_has_arrays(s) for s in by_name[name].samples), f"{name} has samples with tensor inputs"


# -- every op has a rule ---------------------------------------------------------------------------
def _operation_classes() -> set[type]:
    seen, stack = set(), [Operation]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return {c for c in seen if c.__module__.startswith("nabla.") and c.name != "?"}


def _has_rule(cls: type) -> bool:
    return cls.sharding_rule is not None or cls.sharding_rule_for is not Operation.sharding_rule_for


def test_every_op_has_a_sharding_rule():
    # Ops with `own_layouts` (collectives, `call`) place their outputs themselves: no rule is asked for.
    ops = {c for c in _operation_classes() if c.own_layouts is Operation.own_layouts}
    missing = sorted(c.name for c in ops if not _has_rule(c) and c.name not in REPLICATED_BY_DESIGN)
    assert not missing, f"ops without a sharding rule (add one, or list them in REPLICATED_BY_DESIGN): {missing}"
    names = {c.name: c for c in ops}
    for name in REPLICATED_BY_DESIGN:
        assert name in names, f"REPLICATED_BY_DESIGN names {name!r}, which is no Operation"
        assert not _has_rule(names[name]), f"{name} has a sharding rule: remove it from REPLICATED_BY_DESIGN"


# -- the rules keep layouts ------------------------------------------------------------------------
_RNG = np.random.default_rng(7)
_M2 = MESHES["2"]
_M22 = MESHES["2x2"]


def _on(shape: tuple, mesh: DeviceMesh, *spec, dtype=np.float32) -> nb.Tensor:
    data = _RNG.random(shape) if dtype == np.float32 else _RNG.integers(0, shape[0], shape)
    return nb.shard(nb.asarray(data.astype(dtype)), mesh, P(*spec))


def _w(shape: tuple) -> nb.Tensor:
    return nb.asarray(_RNG.random(shape).astype(np.float32))


def _psum(shape: tuple) -> nb.Tensor:
    """A (rows, cols) partial sum over "x": a matmul whose contracted dim is sharded."""
    return _on((shape[0], 4), _M2, None, "x") @ _on((4, shape[1]), _M2, "x")


LAYOUTS = {  # name: (computation, expected dim axes of the (first) output, expected partial axes)
    "slice-kept-dim": (lambda: _on((6, 8), _M2, "x")[:, 2:5], (("x",), ()), ()),
    "slice-scatter": (lambda: _on((6, 8), _M2, "x").at[:, 1:3].set(1.0), (("x",), ()), ()),
    "slice-of-partial": (lambda: _psum((4, 5))[1:3], ((), ()), ("x",)),
    "pad-partial-zero": (lambda: nb.pad(_psum((4, 5)), (1, 1)), ((), ()), ("x",)),
    "pad-partial-nonzero-fill": (lambda: nb.pad(_psum((4, 5)), (1, 1), value=1.0), ((), ()), ()),
    "take-scatter": (
        lambda: _on((6, 8), _M2, None, "x").at[nb.asarray(np.array([0, 2, 2]))].add(1.0),
        ((), ("x",)),
        (),
    ),
    "take-index-dims": (
        lambda: nb.index_select(_on((6, 8), _M2), 0, _on((4,), _M2, "x", dtype=np.int64)),
        (("x",), ()),
        (),
    ),
    "concatenate": (
        lambda: nb.concatenate([_on((2, 6), _M2, None, "x"), _on((3, 6), _M2, None, "x")]),
        ((), ("x",)),
        (),
    ),
    "split": (lambda: nb.split(_on((4, 6), _M2, "x"), 3, 1)[1], (("x",), ()), ()),
    "unbind": (lambda: nb.unbind(_on((4, 6), _M2, None, "x"), 0)[0], (("x",),), ()),
    "pad": (lambda: nb.pad(_on((4, 6), _M2, "x"), (1, 2)), (("x",), ()), ()),
    "flip": (lambda: nb.flip(_on((4, 6), _M2, "x"), 1), (("x",), ()), ()),
    "tril": (lambda: nb.tril(_on((4, 3, 3), _M2, "x")), (("x",), (), ()), ()),
    "diagonal": (lambda: nb.diagonal(_on((4, 3, 3), _M2, "x"), 0, 1, 2), (("x",), ()), ()),
    "repeat_interleave": (lambda: nb.repeat_interleave(_on((4, 3), _M2, "x"), [1, 2, 0], 1), (("x",), ()), ()),
    "sort": (lambda: nb.sort(_on((4, 6), _M2, "x"), axis=1).values, (("x",), ()), ()),
    "topk-indices": (lambda: nb.topk(_on((4, 6), _M2, "x"), 2).indices, (("x",), ()), ()),
    "clamp": (lambda: nb.clamp(_on((4, 6), _M2, None, "x"), 0.2, 0.8), ((), ("x",)), ()),
    "conv2d-batch": (lambda: nb.conv2d(_on((4, 3, 5, 5), _M2, "x"), _w((2, 3, 3, 3))), (("x",), (), (), ()), ()),
    "conv2d-dp-tp": (
        lambda: nb.conv2d(_on((4, 3, 5, 5), _M22, "a"), _on((4, 3, 3, 3), _M22, "b")),
        (("a",), ("b",), (), ()),
        (),
    ),
    "conv2d-in-channels": (
        lambda: nb.conv2d(_on((2, 4, 5, 5), _M2, None, "x"), _on((3, 4, 3, 3), _M2, None, "x")),
        ((), (), (), ()),
        ("x",),
    ),
    "conv2d-groups": (
        lambda: nb.conv2d(_on((2, 4, 5, 5), _M2, None, "x"), _w((6, 2, 3, 3)), groups=2),
        ((), ("x",), (), ()),
        (),
    ),
    "conv_transpose2d-batch": (
        lambda: nb.conv_transpose2d(_on((4, 3, 5, 5), _M2, "x"), _w((3, 2, 3, 3))),
        (("x",), (), (), ()),
        (),
    ),
    "max_pool2d": (lambda: nb.max_pool2d(_on((2, 4, 6, 6), _M22, "a", "b"), 2), (("a",), ("b",), (), ()), ()),
    "avg_pool2d": (lambda: nb.avg_pool2d(_on((2, 4, 6, 6), _M2, None, "x"), 2), ((), ("x",), (), ()), ()),
    # max/min have no identity for an empty shard: a reduced dim of 3 on 4 devices is gathered
    "max-small-axis": (lambda: nb.max(_on((2, 3), MESHES["4"], None, "x"), axis=1), ((),), ()),
    "max-partial": (lambda: nb.max(_on((2, 8), MESHES["4"], None, "x"), axis=1), ((),), ("x",)),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_rule_keeps_layout(name: str):
    fn, dims, partial = LAYOUTS[name]
    y = fn()
    assert y.sharding is not None, f"{name}: the result is not on the mesh"
    assert y.sharding.dim_axes == dims, f"{name}: {y.sharding}"
    assert tuple(sorted(y.sharding.partial)) == partial, f"{name}: {y.sharding}"
