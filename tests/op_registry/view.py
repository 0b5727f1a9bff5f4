"""Registry entries for nabla.ops.view, nabla.ops.shape, nabla.ops.rearrange and nabla.ops.triangular (shape and
view ops; family "view")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import nabla as nb
import nabla.ops.rearrange as _rearrange
import nabla.ops.shape as _shape
import nabla.ops.triangular as _triangular
from nabla.ops.view import grad_hook

from .spec import OpSpec, Sample, uniform

FAMILY = "view"
FLOATS = ("float64", "float16", "bfloat16")


def _u(shape: tuple, seed: str) -> np.ndarray:
    return uniform(shape, seed=seed)


def _spec(name: str, fn, ref, samples: list[Sample], **kw) -> OpSpec:
    return OpSpec(name=name, fn=fn, ref=ref, samples=samples, family=FAMILY, **kw)


# -- NumPy references for the torch-style ops ---------------------------------------------------
def _split_sizes(n: int, s) -> list[int]:
    if isinstance(s, int):
        return [0] if n == 0 else [s] * (n // s) + ([n % s] if n % s else [])
    return list(s)


def _np_split(x, s, axis=0):
    return np.split(x, np.cumsum(_split_sizes(x.shape[axis], s))[:-1].tolist(), axis=axis)


def _np_chunk(x, chunks, axis=0):
    n = x.shape[axis]
    return _np_split(x, [0] * chunks if n == 0 else -(-n // chunks), axis)


def _np_pad(x, pad, mode="constant", value=0.0):
    k = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, widths, strict=True))]
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if mode == "constant":
        return np.pad(x, pos, mode="constant", constant_values=value)
    return np.pad(x, pos, mode={"reflect": "reflect", "replicate": "edge", "edge": "edge", "circular": "wrap"}[mode])


def _torch_pad(torch, x, pad, mode="constant", value=0.0):
    mode = "replicate" if mode == "edge" else mode
    return torch.nn.functional.pad(x, pad, mode=mode, value=value if mode == "constant" else None)


def _np_tensor_split(x, spec, axis=0):
    return np.array_split(x, spec, axis=axis)  # its indices are Python slice bounds, as torch's


def _torch_tensor_split(torch, x, spec, axis=0):
    return torch.tensor_split(x, spec, dim=axis)


def _np_unflatten(x, axis, sizes):
    a = axis % x.ndim
    return x.reshape(x.shape[:a] + tuple(sizes) + x.shape[a + 1 :])


def _np_repeat_interleave(x, repeats, axis=None):
    return np.repeat(x, repeats, axis=axis)


def _torch_repeat_interleave(torch, x, repeats, axis=None):
    if isinstance(repeats, list | tuple):
        repeats = torch.tensor(repeats)
    return torch.repeat_interleave(x, repeats, dim=axis)


def _torch_flip(torch, x, axis=None):
    dims = tuple(range(x.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    return torch.flip(x, dims)


SPECS: list[OpSpec] = [
    # -- view.py -------------------------------------------------------------------------------
    _spec(
        "reshape",
        nb.reshape,
        lambda x, shape: np.reshape(x, shape),
        [
            Sample((_u((3, 4), "reshape"), (2, 6)), label="(3,4)->(2,6)"),
            Sample((_u((2, 3, 4), "reshape"), (-1, 4)), label="-1"),
            Sample((_u((), "reshape"), (1, 1)), label="0-d"),
            Sample((_u((1,), "reshape"), ()), label="to-0-d"),
            Sample((_u((0, 3), "reshape"), (3, 0)), label="empty"),
        ],
        aliases=("view",),
        torch_ref=lambda torch, x, shape: torch.reshape(x, shape),
        dtypes=FLOATS,
    ),
    _spec(
        "flatten",
        nb.flatten,
        lambda x, start_dim=0, end_dim=-1: (
            x.reshape(1) if x.ndim == 0 else x.reshape(x.shape[:start_dim] + (-1,) + x.shape[end_dim % x.ndim + 1 :])
        ),
        [
            Sample((_u((2, 3, 4), "flatten"),), label="all"),
            Sample((_u((2, 3, 4), "flatten"), 1), label="start1"),
            Sample((_u((2, 3, 4, 2), "flatten"), 1, 2), label="middle"),
            Sample((_u((), "flatten"),), label="0-d"),
        ],
        covers=("reshape",),
        torch_ref=lambda torch, x, start_dim=0, end_dim=-1: torch.flatten(x, start_dim, end_dim),
    ),
    _spec(
        "permute",
        nb.permute,
        lambda x, dims: np.transpose(x, dims),
        [
            Sample((_u((2, 3, 4), "permute"), (2, 0, 1)), label="3-d"),
            Sample((_u((3, 4), "permute"), (1, 0)), label="2-d"),
            Sample((_u((2, 0, 3), "permute"), (-1, 0, 1)), label="empty-negative"),
        ],
        torch_ref=lambda torch, x, dims: torch.permute(x, dims),
        dtypes=FLOATS,
    ),
    _spec(
        "transpose",
        nb.transpose,
        lambda x, dim0=-2, dim1=-1: np.swapaxes(x, dim0, dim1),
        [
            Sample((_u((3, 4), "transpose"),), label="default"),
            Sample((_u((2, 3, 4), "transpose"), 0, 2), label="0,2"),
            Sample((_u((2, 3, 4), "transpose"), -1, 1), label="-1,1"),
        ],
        covers=("permute",),
        aliases=("swapaxes",),
        torch_ref=lambda torch, x, dim0=-2, dim1=-1: torch.transpose(x, dim0, dim1),
    ),
    _spec(
        "broadcast_to",
        nb.broadcast_to,
        lambda x, shape: np.broadcast_to(x, shape),
        [
            Sample((_u((3, 1), "broadcast_to"), (2, 3, 4)), label="(3,1)->(2,3,4)"),
            Sample((_u((), "broadcast_to"), (2, 2)), label="0-d"),
            Sample((_u((4,), "broadcast_to"), (3, 4)), label="prepend"),
            Sample((_u((1, 3), "broadcast_to"), (0, 3)), label="to-empty"),
        ],
        covers=("broadcast_to", "sum", "reshape"),
        torch_ref=lambda torch, x, shape: torch.broadcast_to(x, shape),
    ),
    _spec(
        "squeeze",
        nb.squeeze,
        lambda x, dim=None: (
            np.squeeze(x, tuple(d for d in ((dim,) if isinstance(dim, int) else dim) if x.shape[d] == 1))
            if dim is not None
            else np.squeeze(x)
        ),
        [
            Sample((_u((1, 3, 1), "squeeze"),), label="all"),
            Sample((_u((1, 3, 1), "squeeze"), 0), label="dim0"),
            Sample((_u((1, 3, 1), "squeeze"), (0, 2)), label="dims"),
            Sample((_u((2, 1, 3), "squeeze"), (0, -2)), label="dims-not-1"),
        ],
        covers=("reshape",),
        torch_ref=lambda torch, x, dim=None: torch.squeeze(x) if dim is None else torch.squeeze(x, dim),
    ),
    _spec(
        "unsqueeze",
        nb.unsqueeze,
        lambda x, dim: np.expand_dims(x, dim),
        [
            Sample((_u((3, 4), "unsqueeze"), 0), label="front"),
            Sample((_u((3, 4), "unsqueeze"), -1), label="back"),
            Sample((_u((), "unsqueeze"), 0), label="0-d"),
        ],
        covers=("reshape",),
        aliases=("expand_dims",),
        torch_ref=lambda torch, x, dim: torch.unsqueeze(x, dim),
    ),
    _spec(
        "identity",
        nb.identity,
        lambda x: x,
        [Sample((_u((3, 4), "identity"),), label="(3,4)"), Sample((_u((), "identity"),), label="0-d")],
        torch_ref=lambda torch, x: x.clone(),
    ),
    _spec(
        "grad_hook",  # module backward hooks: the identity on several tensors (a None hook leaves the gradients)
        lambda x, y: grad_hook([x, y], lambda cotangents: None),
        lambda x, y: (x, y),
        [Sample((_u((3, 4), "grad_hook"), _u((2,), "grad_hook")), label="two")],
    ),
    _spec(
        "detach",
        lambda x, pending=False: nb.detach(nb.identity(x) if pending else x),
        lambda x, pending=False: x,
        [
            Sample((_u((3, 4), "detach"),), label="realized"),
            Sample((_u((2, 3), "detach"),), {"pending": True}, label="pending"),
        ],
        covers=("detach", "identity"),
        differentiable=False,
        aliases=("stop_gradient",),
    ),
    # -- shape.py, rearrange.py ----------------------------------------------------------------
    _spec(
        "flip",
        _shape.flip,
        lambda x, axis=None: x if x.ndim == 0 else np.flip(x, axis),
        [
            Sample((_u((3, 4), "flip"), 0), label="dim0"),
            Sample((_u((2, 3, 4), "flip"), (0, -1)), label="dims"),
            Sample((_u((5,), "flip"),), label="all"),
            Sample((_u((), "flip"), 0), label="0-d"),
            Sample((_u((0, 3), "flip"), 1), label="empty"),
            Sample((np.arange(6, dtype=np.int64).reshape(2, 3), 1), label="int64"),
        ],
        torch_ref=_torch_flip,
        dtypes=FLOATS,
    ),
    _spec(
        "roll",
        _rearrange.roll,
        lambda x, shifts, axis=None: np.roll(x, shifts, axis),
        [
            Sample((_u((5,), "roll"), 2), label="1-d"),
            Sample((_u((3, 4), "roll"), (1, -1), (0, 1)), label="two-dims"),
            Sample((_u((3, 4), "roll"), 5), label="flattened"),
            Sample((_u((2, 3), "roll"), -7, 1), label="negative-wrap"),
            Sample((_u((3, 4), "roll"), (1, 2), (1, 1)), label="same-dim-twice"),
            Sample((_u((), "roll"), 1), label="0-d"),
        ],
        covers=("concatenate", "pad", "reshape"),
        torch_ref=lambda torch, x, shifts, axis=None: torch.roll(x, shifts, axis),
    ),
    _spec(
        "tile",
        _rearrange.tile,
        lambda x, reps: np.tile(x, reps),
        [
            Sample((_u((2, 3), "tile"), (2, 1)), label="(2,1)"),
            Sample((_u((3,), "tile"), (2, 2)), label="prepend"),
            Sample((_u((2, 3), "tile"), (2,)), label="short-reps"),
            Sample((_u((), "tile"), (3,)), label="0-d"),
            Sample((_u((2, 3), "tile"), (0, 2)), label="zero-rep"),
        ],
        covers=("reshape", "broadcast_to"),
        torch_ref=lambda torch, x, reps: torch.tile(x, reps),
    ),
    _spec(
        "repeat_interleave",
        _rearrange.repeat_interleave,
        _np_repeat_interleave,
        [
            Sample((_u((3,), "ri"), 2), label="int-flat"),
            Sample((_u((2, 3), "ri"), [1, 0, 2], 1), label="per-element"),
            Sample((_u((2, 3), "ri"), 2, 0), label="int-dim0"),
            Sample((_u((3, 2), "ri"), np.array([2, 1, 3]), 0), label="array-repeats", vmap_ints=False),
            Sample((_u((2, 2), "ri"), [3, 1, 0, 2]), label="per-element-flat"),
            Sample((_u((), "ri"), 3), label="0-d"),
        ],
        torch_ref=_torch_repeat_interleave,
        covers=("repeat_interleave", "reshape", "broadcast_to"),
    ),
    _spec(
        "concatenate",
        lambda *xs, axis=0: _shape.concatenate(list(xs), axis),
        lambda *xs, axis=0: np.concatenate(xs, axis),
        [
            Sample((_u((2, 3), "cat0"), _u((4, 3), "cat1")), label="dim0"),
            Sample((_u((2, 3), "cat0"), _u((2, 1), "cat1"), _u((2, 2), "cat2")), {"axis": -1}, label="three"),
            Sample((_u((0, 3), "cat0"), _u((2, 3), "cat1")), label="empty-input"),
            Sample((_u((3,), "cat0"), _u((2,), "cat1")), label="1-d"),
            Sample((np.array([1, 2], np.int64), np.array([3], np.int64)), label="int64"),
        ],
        aliases=("cat", "concat"),
        torch_ref=lambda torch, *xs, axis=0: torch.cat(list(xs), dim=axis),
        dtypes=FLOATS,
    ),
    _spec(
        "stack",
        lambda *xs, axis=0: _shape.stack(list(xs), axis),
        lambda *xs, axis=0: np.stack(xs, axis),
        [
            Sample((_u((2, 3), "stack0"), _u((2, 3), "stack1")), label="dim0"),
            Sample((_u((2, 3), "stack0"), _u((2, 3), "stack1"), _u((2, 3), "stack2")), {"axis": -1}, label="last"),
            Sample((_u((), "stack0"), _u((), "stack1")), label="0-d"),
            Sample((_u((0, 2), "stack0"), _u((0, 2), "stack1")), {"axis": 1}, label="empty"),
        ],
        covers=("concatenate", "reshape"),
        torch_ref=lambda torch, *xs, axis=0: torch.stack(list(xs), dim=axis),
    ),
    _spec(
        "split",
        _shape.split,
        _np_split,
        [
            Sample((_u((5, 2), "split"), 2), label="int-remainder"),
            Sample((_u((3, 6), "split"), [1, 2, 3], 1), label="sections"),
            Sample((_u((4,), "split"), 4), label="one-piece"),
            Sample((_u((3, 4), "split"), [0, 3, 1], -1), label="zero-piece"),
            Sample((_u((0, 3), "split"), 2), label="empty"),
            Sample((np.arange(6, dtype=np.int32), 4), label="int32"),
        ],
        torch_ref=lambda torch, x, s, axis=0: torch.split(x, s, dim=axis),
        dtypes=FLOATS,
    ),
    _spec(
        "chunk",
        _shape.chunk,
        _np_chunk,
        [
            Sample((_u((6,), "chunk"), 4), label="fewer-chunks"),
            Sample((_u((5, 3), "chunk"), 2), label="uneven"),
            Sample((_u((2, 7), "chunk"), 3, -1), label="last-dim"),
            Sample((_u((0, 2), "chunk"), 3), label="empty"),
        ],
        covers=("split",),
        torch_ref=lambda torch, x, chunks, axis=0: torch.chunk(x, chunks, dim=axis),
    ),
    _spec(
        "unbind",
        _shape.unbind,
        lambda x, axis=0: [np.take(x, i, axis) for i in range(x.shape[axis])],
        [
            Sample((_u((3, 4), "unbind"),), label="dim0"),
            Sample((_u((2, 3, 4), "unbind"), 1), label="dim1"),
            Sample((_u((1,), "unbind"),), label="single"),
            Sample((_u((2, 0), "unbind"), 0), label="empty-slices"),
        ],
        covers=("split",),
        torch_ref=lambda torch, x, axis=0: torch.unbind(x, dim=axis),
    ),
    _spec(
        "pad",
        _shape.pad,
        _np_pad,
        [
            Sample((_u((3, 4), "pad"), (1, 2)), label="constant-last"),
            Sample((_u((2, 3, 4), "pad"), (1, 1, 2, 0)), {"value": 1.5}, label="constant-value"),
            Sample((_u((3, 4), "pad"), (-1, 2, 1, -1)), label="constant-crop"),
            Sample((_u((3, 4), "pad"), (-2, -2)), label="crop-to-empty"),
            Sample((_u((0, 3), "pad"), (1, 1)), label="empty-input"),
            Sample((_u((0, 3), "pad"), (0, 0, 1, 1)), label="empty-dim-padded"),
            Sample((_u((2, 5), "pad"), (2, 3), "reflect"), label="reflect"),
            Sample((_u((2, 3, 4), "pad"), (1, 2, 2, 1), "reflect"), label="reflect-2d"),
            Sample((_u((1, 5), "pad"), (-1, 2), "reflect"), label="reflect-crop"),
            Sample((_u((2, 4), "pad"), (3, 1), "replicate"), label="replicate"),
            Sample((_u((1, 3, 3), "pad"), (1, 1, 2, 2), "edge"), label="edge-2d"),
            Sample((_u((2, 4), "pad"), (2, 3), "circular"), label="circular"),
            Sample((_u((2, 3, 4), "pad"), (1, -1, 2, 1), "circular"), label="circular-crop"),
            Sample((np.arange(6, dtype=np.int64).reshape(2, 3), (1, 1)), {"value": 7}, label="int64"),
        ],
        covers=("pad", "concatenate"),
        torch_ref=_torch_pad,
        dtypes=FLOATS,
    ),
    _spec(
        "tril",
        _triangular.tril,
        lambda x, diagonal=0: np.tril(x, diagonal),
        [
            Sample((_u((4, 4), "tril"),), label="square"),
            Sample((_u((3, 5), "tril"), 1), label="wide+1"),
            Sample((_u((2, 3, 4), "tril"), -1), label="batched-1"),
            Sample((_u((3, 3), "tril"), -5), label="all-zero"),
            Sample((_u((0, 3), "tril"),), label="empty"),
            Sample((np.ones((3, 3), bool),), label="bool"),
        ],
        torch_ref=lambda torch, x, diagonal=0: torch.tril(x, diagonal),
        dtypes=FLOATS,
    ),
    _spec(
        "triu",
        _triangular.triu,
        lambda x, diagonal=0: np.triu(x, diagonal),
        [
            Sample((_u((4, 4), "triu"),), label="square"),
            Sample((_u((5, 3), "triu"), -1), label="tall-1"),
            Sample((_u((2, 3, 4), "triu"), 2), label="batched+2"),
            Sample((np.arange(9, dtype=np.int64).reshape(3, 3), 1), label="int64"),
        ],
        torch_ref=lambda torch, x, diagonal=0: torch.triu(x, diagonal),
    ),
    _spec(
        "diagonal",
        _triangular.diagonal,
        lambda x, offset=0, axis1=0, axis2=1: np.diagonal(x, offset, axis1, axis2),
        [
            Sample((_u((3, 3), "diagonal"),), label="square"),
            Sample((_u((3, 4), "diagonal"), 1), label="offset+1"),
            Sample((_u((4, 3), "diagonal"), -2), label="offset-2"),
            Sample((_u((2, 3, 4), "diagonal"), 0, 1, 2), label="batched"),
            Sample((_u((2, 3, 4), "diagonal"), 1, 2, 0), label="reversed-dims"),
            Sample((_u((2, 3), "diagonal"), 5), label="empty-offset"),
            Sample((_u((2, 3, 4), "diagonal"), -1, -1, 0), label="negative-dims"),
        ],
        torch_ref=lambda torch, x, offset=0, axis1=0, axis2=1: torch.diagonal(x, offset, axis1, axis2),
        dtypes=FLOATS,
    ),
    _spec(
        "moveaxis",
        _rearrange.moveaxis,
        lambda x, source, destination: np.moveaxis(x, source, destination),
        [
            Sample((_u((2, 3, 4), "moveaxis"), 0, -1), label="front-to-back"),
            Sample((_u((2, 3, 4), "moveaxis"), (0, 1), (2, 0)), label="tuples"),
        ],
        covers=("permute",),
        aliases=("movedim",),
        torch_ref=lambda torch, x, source, destination: torch.movedim(x, source, destination),
    ),
    _spec(
        "unflatten",
        _rearrange.unflatten,
        _np_unflatten,
        [
            Sample((_u((2, 6), "unflatten"), 1, (2, 3)), label="dim1"),
            Sample((_u((12,), "unflatten"), 0, (2, -1, 3)), label="minus-one"),
            Sample((_u((3, 4), "unflatten"), -1, (4, 1)), label="negative-dim"),
        ],
        covers=("reshape",),
        torch_ref=lambda torch, x, axis, sizes: torch.unflatten(x, axis, sizes),
    ),
    _spec(
        "tensor_split",
        _shape.tensor_split,
        _np_tensor_split,
        [
            Sample((_u((7, 2), "tsplit"), 3), label="sections-uneven"),
            Sample((_u((2, 3), "tsplit"), 5, 1), label="more-sections-than-size"),
            Sample((_u((7,), "tsplit"), [1, 5]), label="indices"),
            Sample((_u((2, 7), "tsplit"), [5, 2], -1), label="indices-out-of-order"),
            Sample((_u((7,), "tsplit"), [-2, 9]), label="indices-negative-and-past-end"),
            Sample((_u((4,), "tsplit"), []), label="no-indices"),
            Sample((_u((0, 2), "tsplit"), 3), label="empty"),
            Sample((np.arange(6, dtype=np.int64), [2]), label="int64"),
        ],
        covers=("split", "pad"),
        torch_ref=_torch_tensor_split,
        dtypes=FLOATS,
    ),
    _spec(
        "meshgrid",
        lambda *xs, indexing="ij": _rearrange.meshgrid(*xs, indexing=indexing),
        lambda *xs, indexing="ij": np.meshgrid(*xs, indexing=indexing),
        [
            Sample((_u((3,), "mesh0"), _u((2,), "mesh1")), label="ij"),
            Sample((_u((3,), "mesh0"), _u((2,), "mesh1"), _u((4,), "mesh2")), {"indexing": "xy"}, label="xy-3"),
            Sample((_u((), "mesh0"), _u((3,), "mesh1")), {"indexing": "xy"}, label="0-d"),
            Sample((_u((3,), "mesh0"),), {"indexing": "xy"}, label="single"),
            Sample((_u((2,), "mesh0"), _u((0,), "mesh1")), label="empty"),
            Sample((np.arange(2, dtype=np.int64), np.arange(3, dtype=np.int64)), {"indexing": "xy"}, label="int64"),
        ],
        covers=("reshape", "broadcast_to"),
        torch_ref=lambda torch, *xs, indexing="ij": torch.meshgrid(*xs, indexing=indexing),
        dtypes=FLOATS,
    ),
]


# -- composites: ravel, rotations, directional flips and splits, unfold, diagonal_scatter ---------
def _c(*args, label: str = "", grad: bool = True, **kwargs) -> Sample:
    return Sample(args, kwargs, label=label, grad=grad, max=False)


def _np_unfold(x, dimension, size, step):
    if x.ndim == 0:
        return x.reshape((1,))[:size]
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dimension)
    index = [slice(None)] * x.ndim
    index[dimension] = slice(None, None, step)
    return windows[tuple(index)].copy()


def _np_diagonal_scatter(x, src, offset=0, axis1=0, axis2=1):
    out = x.copy()
    moved = np.moveaxis(out, (axis1, axis2), (-2, -1))
    n1, n2 = moved.shape[-2:]
    rows = np.arange(max(0, -offset), max(0, -offset) + src.shape[-1])
    moved[..., rows, rows + offset] = src
    return out


_CUBE = _u((2, 3, 4), "rot")
SPECS += [
    _spec(
        "ravel",
        nb.ravel,
        np.ravel,
        [_c(_CUBE, label="3d"), _c(_u((), "ravel0"), label="0d"), _c(np.zeros((0, 2)), label="empty")],
        covers=("reshape",),
        torch_ref=lambda torch, x: torch.ravel(x),
    ),
    _spec(
        "rot90",
        nb.rot90,
        lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims).copy(),
        [_c(_CUBE, label="k1"), _c(_CUBE, 2, label="k2"), _c(_CUBE, -1, (2, 1), label="k-1-dims21")]
        + [_c(_CUBE, 3, (0, 2), label="k3"), _c(_CUBE, 4, label="k4"), _c(_u((3, 5), "rot2"), 5, label="2d-k5")],
        covers=("flip", "permute"),
        torch_ref=lambda torch, x, k=1, dims=(0, 1): torch.rot90(x, k, dims),
    ),
    _spec("fliplr", nb.fliplr, np.fliplr, [_c(_CUBE, label="3d"), _c(_u((3, 5), "lr"), label="2d")], covers=("flip",)),
    _spec("flipud", nb.flipud, np.flipud, [_c(_CUBE, label="3d"), _c(_u((5,), "ud"), label="1d")], covers=("flip",)),
    _spec(
        "hsplit",
        nb.hsplit,
        np.hsplit,
        [
            _c(_u((2, 6), "hs"), 3, label="sections"),
            _c(_CUBE, [1, 2], label="indices"),
            _c(_u((6,), "hs1"), 2, label="1d"),
        ],
        covers=("split",),
    ),
    _spec(
        "vsplit",
        nb.vsplit,
        np.vsplit,
        [_c(_u((4, 3), "vs"), 2, label="sections"), _c(_CUBE, [1], label="indices")],
        covers=("split",),
    ),
    _spec(
        "dsplit",
        nb.dsplit,
        np.dsplit,
        [_c(_CUBE, 2, label="sections"), _c(_CUBE, [3, 1], label="unordered-indices")],
        covers=("split", "slice"),
    ),
    _spec(
        "unfold",
        nb.unfold,
        _np_unfold,
        [
            _c(_CUBE, 2, 2, 1, label="last-dim"),
            _c(_CUBE, 1, 2, 2, label="step2"),
            _c(_CUBE, -1, 4, 3, label="whole"),
            _c(_CUBE, 0, 1, 1, label="size1"),
            _c(_u((7,), "unf"), 0, 3, 2, label="1d"),
            _c(_CUBE, 2, 0, 1, label="size0"),
            _c(_u((), "unf0"), 0, 1, 1, label="0d"),
        ],
        covers=("take", "take_transpose", "permute"),
        torch_ref=lambda torch, x, d, size, step: x.unfold(d, size, step),
    ),
    _spec(
        "diagonal_scatter",
        nb.diagonal_scatter,
        _np_diagonal_scatter,
        [
            _c(_u((3, 3), "ds"), _u((3,), "ds1"), label="square"),
            _c(_u((3, 4), "ds"), _u((3,), "ds2"), 1, label="offset1"),
            _c(_u((4, 3), "ds"), _u((2,), "ds3"), -2, label="offset-2"),
            _c(_CUBE, _u((2, 3), "ds4"), 0, 2, 1, label="dims21"),
            _c(_CUBE, _u((4, 2), "ds5"), 1, 0, 1, label="dims01-offset1"),
        ],
        covers=("where", "pad", "reshape", "permute"),
        torch_ref=lambda torch, x, src, *a: torch.diagonal_scatter(x, src, *a),
    ),
]


# torch's diagonal matrices: composites of `_diag_embed`'s pads and reshapes (off the MAX groups)
def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    m = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (m, m), x.dtype)
    i = np.arange(x.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = x
    nd = x.ndim + 1
    return np.moveaxis(out, (-2, -1), (dim1 % nd, dim2 % nd))


def _off_max(samples: list[Sample]) -> list[Sample]:
    return [replace(s, max=False) for s in samples]


SPECS += [
    _spec(
        "diag_embed",
        nb.diag_embed,
        _np_diag_embed,
        _off_max(
            [
                Sample((_u((2, 3), "de"),), label="(2,3)"),
                Sample((_u((2, 3), "de1"), 1), label="offset+1"),
                Sample((_u((3,), "de2"), -2, 0, 1), label="offset-2"),
                Sample((_u((2, 3), "de3"), 0, 0, 2), label="dims(0,2)"),
                Sample((_u((2, 3), "de4"), 1, 2, 0), label="dims(2,0)"),
            ]
        ),
        covers=("pad", "reshape", "permute"),
        torch_ref=lambda torch, x, *a: torch.diag_embed(x, *a),
    ),
    _spec(
        "diag",
        nb.diag,
        lambda x, d=0: np.diag(x, d),
        _off_max(
            [
                Sample((_u((3,), "dg"),), label="vector"),
                Sample((_u((3,), "dg1"), -1), label="vector-offset"),
                Sample((_u((3, 4), "dg2"), 1), label="matrix-offset"),
            ]
        ),
        covers=("pad", "reshape", "permute", "diagonal"),
        torch_ref=lambda torch, x, *a: torch.diag(x, *a),
    ),
    _spec(
        "diagflat",
        nb.diagflat,
        lambda x, offset=0: np.diagflat(x, offset),
        _off_max([Sample((_u((2, 2), "df"),), label="(2,2)"), Sample((_u((3,), "df1"), 2), label="offset+2")]),
        covers=("pad", "reshape"),
        torch_ref=lambda torch, x, *a: torch.diagflat(x, *a),
    ),
]
