"""Scaled dot-product attention as one primitive: `dot_product_attention`.

`softmax(q k^T * scale + mask) v` written as ops is ~8 op calls (scale, transpose, matmul,
mask, softmax, matmul, plus broadcasts), and its backward ~20. As one primitive it is one
call. The VJP and JVP need the attention weights, which the second primitive,
`attention_weights`, recomputes from q, k and the mask, as layer_norm's derivatives
recompute its rstd (a forward and its backward in one MAX graph give the compiler both
copies of the same expressions to merge).

Rows that mask every key give zeros (torch's SDPA and `_safe_softmax`), so neither the
output nor a derivative sees a NaN. Sharded, the one op keeps the key length and the head dim
whole (softmax needs a whole row; a partial q k^T cannot pass a softmax); batch dims, query
length and the value dim may be split. Keys split along the sequence (context parallelism)
instead run as ring attention (`_ring_attention`): blocks passed round the devices and folded
into a running softmax, so the keys are never gathered.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule, ShardingSpec
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import creation as _creation
from . import reduction as _red
from . import reduction_softmax as _sm
from . import unary as _un
from . import view as _view
from .base import AVal, Operation, public, shape_of
from .cast import cast
from .communication import MANUAL, _conform_tensor, _relabel, axis_index, ppermute
from .control_flow import where as _where
from .gather_scatter import index_select
from .linalg import raw_matmul as matmul
from .random_state import seed_tensor
from .spmd import evened, window
from .view import broadcast_shapes, reshape, sum_to_shape, transpose

__all__ = ["dot_product_attention"]

_NEG_INF = -math.inf


# -- the scores and weights, on each backend ------------------------------------------------------
def _np_weights(
    q: np.ndarray, k: np.ndarray, mask: np.ndarray | None, scale: float, causal: bool, row_offset: int = 0
) -> np.ndarray:
    s = np.matmul(q * q.dtype.type(scale), np.swapaxes(k, -1, -2))
    if mask is not None:
        s = np.where(mask, s, s.dtype.type(_NEG_INF)) if mask.dtype == np.bool_ else s + mask
    if causal:
        s = np.where(np.tri(*s.shape[-2:], k=row_offset, dtype=bool), s, s.dtype.type(_NEG_INF))
    return _sm._safe_softmax.numpy_kernel(s, axis=s.ndim - 1)


def _mx_weights(q: Any, k: Any, mask: Any, scale: float, causal: bool, row_offset: int = 0) -> Any:
    """`row_offset`: the global index of q's first row (queries split over devices)."""
    rank = q.rank
    s = ops.matmul(q * ops.constant(scale, q.dtype, q.device), ops.transpose(k, rank - 2, rank - 1))
    neg = ops.constant(_NEG_INF, s.dtype, s.device)
    if mask is not None:
        s = ops.where(mask, s, neg) if mask.dtype == DType.bool else s + mask
    if causal:  # keep j <= i (top-left aligned, as `tri`); band_part takes symbolic dims
        ones = ops.broadcast_to(ops.constant(1.0, s.dtype, s.device), shape_of(s)[-2:])
        keep = ops.band_part(ones, num_lower=None, num_upper=row_offset)
        s = ops.where(ops.greater(keep, ops.constant(0.0, s.dtype, s.device)), s, neg)
    return _sm._safe_softmax.kernel(s, axis=rank - 1)


def _check_avals(q: AVal, k: AVal, v: AVal | None, mask: AVal | None, name: str) -> None:
    """Internal: the public function has checked (and shaped) the operands."""
    (qs, qd), (ks, kd) = q, k
    ok = len(qs) >= 2 and len(ks) == len(qs) and qs[:-2] == ks[:-2] and qs[-1] == ks[-1] and qd == kd
    ok = ok and _dt.is_float(qd)
    if v is not None:
        ok = ok and len(v[0]) == len(qs) and v[0][:-1] == ks[:-1] and v[1] == qd
    if mask is not None:
        scores = (*qs[:-1], ks[-2])
        ok = ok and len(mask[0]) == len(qs) and all(m in (1, n) for m, n in zip(mask[0], scores, strict=True))
        ok = ok and (mask[1] == qd or mask[1] == _dt.bool_)
    if not ok:
        raise TypeError(f"internal error: {name} got q {q}, k {k}, v {v}, mask {mask}")


def _causal_rows(kwargs: dict, offsets: list | None) -> dict:
    """A device holding queries from row r0 on (the queries split over devices) keeps keys
    j <= i + r0 under the causal mask; the keys are whole on every device (factor "s")."""
    if not kwargs["causal"] or offsets is None or offsets[0] is None or not offsets[0][-2]:
        return kwargs
    return {**kwargs, "row_offset": offsets[0][-2]}


def _sharding_rule(in_shapes: list, out_shapes: list, with_v: bool) -> OpShardingRule:
    """Factors: l (queries), s (keys), e (head dim), v (value dim); leading dims shared. A size-1
    mask dim facing l or s gets a factor of its own (x, y)."""
    terms = ["... l e", "... s e"] + (["... s v"] if with_v else [])
    if len(in_shapes) > len(terms):
        mask, queries, keys = in_shapes[-1], in_shapes[0][-2], in_shapes[1][-2]
        terms.append(f"... {'l' if mask[-2] == queries else 'x'} {'s' if mask[-1] == keys else 'y'}")
    out = "... l v" if with_v else "... l s"
    return OpShardingRule.parse(
        ", ".join(terms) + " -> " + out, in_shapes, out_shapes, whole=("e", "s"), reduction=None
    )


# -- derivatives shared by both ops -----------------------------------------------------------------
def _softmax_vjp(p: Tensor, dp: Tensor) -> Tensor:
    """dS = P (dP - rowsum(dP P)), softmax's own rule (its JVP is the same map); zero on
    masked entries and dead rows, where P = 0."""
    return _sm._softmax.vjp_rule([], [dp], [p], axis=p.ndim - 1)[0]


def _scores_vjp(primals: list, p: Tensor, dp: Tensor, scale: float) -> list:
    """Cotangents of q, k (and a float mask) from the weights' cotangent `dp`."""
    q, k, *mask = primals
    ds = _softmax_vjp(p, dp)
    grads = [
        _bin.mul(matmul(ds, k), scale) if q._impl.requires_grad else None,
        _bin.mul(matmul(transpose(ds, -1, -2), q), scale) if k._impl.requires_grad else None,
    ]
    if mask:
        m = mask[0]
        grads.append(sum_to_shape(ds, m.shape) if m._impl.requires_grad and _dt.is_float(m.dtype) else None)
    return grads


def _weights_jvp(primals: list, tangents: list, p: Tensor, scale: float) -> Tensor:
    """dP = P (dS - rowsum(P dS)) with dS = (dq k^T + q dk^T) scale (+ d mask)."""
    q, k, *mask = primals
    tq, tk, *tmask = tangents
    ds = _bin.mul(_bin.add(matmul(tq, transpose(k, -1, -2)), matmul(q, transpose(tk, -1, -2))), scale)
    if mask and _dt.is_float(mask[0].dtype):
        ds = _bin.add(ds, tmask[0])
    return _softmax_vjp(p, ds)


class _ScoresOp(Operation):
    """Both attention ops: position-dependent, so that queries split along the sequence mask
    by their global rows (`_causal_rows`)."""

    position_dependent = True

    def local_kwargs(
        self, kwargs: dict, in_avals: list, out_shapes: list, offsets: list | None = None, sizes: list | None = None
    ) -> dict:
        return _causal_rows(kwargs, offsets)


class AttentionOp(_ScoresOp):
    """softmax(q k^T * scale + mask) v over q (..., L, E), k (..., S, E), v (..., S, Ev) with
    equal leading dims, and an optional mask of q's rank whose dims are 1 or the scores'
    (..., L, S): bool (True: attend) or float of q's dtype (added). kwargs: `scale` and
    `causal` (also keep only keys j <= i)."""

    name = "dot_product_attention"

    def abstract_eval(self, q: AVal, k: AVal, v: AVal, *mask: AVal, scale: float, causal: bool, **_: Any) -> AVal:
        _check_avals(q, k, v, mask[0] if mask else None, self.name)
        return (*q[0][:-1], v[0][-1]), q[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _sharding_rule(in_shapes, out_shapes, with_v=True)

    def kernel(
        self, q: Any, k: Any, v: Any, mask: Any = None, *, scale: float, causal: bool, row_offset: int = 0
    ) -> Any:
        return ops.matmul(_mx_weights(q, k, mask, scale, causal, row_offset), v)

    def numpy_kernel(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any = None, **kw: Any) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return np.matmul(_np_weights(q, k, mask, **kw), v)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        # O = P v: dv = P^T dO, dP = dO v^T, then through the weights
        q, k, v, *mask = primals
        g = cotangents[0]
        p = _weights(q, k, *mask, scale=scale, causal=causal)
        grads = _scores_vjp([q, k, *mask], p, matmul(g, transpose(v, -1, -2)), scale)
        dv = matmul(transpose(p, -1, -2), g) if v._impl.requires_grad else None
        return [*grads[:2], dv, *grads[2:]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        q, k, v, *mask = primals
        p = _weights(q, k, *mask, scale=scale, causal=causal)
        tp = _weights_jvp([q, k, *mask], [tangents[0], tangents[1], *tangents[3:]], p, scale)
        return [_bin.add(matmul(tp, v), matmul(p, tangents[2]))]


class AttentionWeightsOp(_ScoresOp):
    """softmax(q k^T * scale + mask) over the keys, (..., L, S): attention's derivatives."""

    name = "attention_weights"

    def abstract_eval(self, q: AVal, k: AVal, *mask: AVal, scale: float, causal: bool, **_: Any) -> AVal:
        _check_avals(q, k, None, mask[0] if mask else None, self.name)
        return (*q[0][:-1], k[0][-2]), q[1]

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _sharding_rule(in_shapes, out_shapes, with_v=False)

    def kernel(self, q: Any, k: Any, mask: Any = None, *, scale: float, causal: bool, row_offset: int = 0) -> Any:
        return _mx_weights(q, k, mask, scale, causal, row_offset)

    def numpy_kernel(self, q: np.ndarray, k: np.ndarray, mask: Any = None, **kw: Any) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return _np_weights(q, k, mask, **kw)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        return _scores_vjp(primals, outputs[0], cotangents[0], scale)

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, scale: float, causal: bool) -> list:
        return [_weights_jvp(primals, tangents, outputs[0], scale)]


_attention, _weights = AttentionOp(), AttentionWeightsOp()


@public()
def dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v as one op (`F.scaled_dot_product_attention`'s core).

    Args:
        q: (..., L, E), floating point.
        k: (..., S, E), with q's leading dims and dtype.
        v: (..., S, Ev), with q's leading dims and dtype.
        mask: broadcastable to the scores (..., L, S) without growing them: bool (True: the
            key takes part) or floating point (added to the scores).
        scale: the score scale; 1 / sqrt(E) when None.
        is_causal: also keep only keys j <= i (the top-left aligned lower triangle).
        dropout_p: inverted dropout on the attention weights (always applied when > 0): the
            weights, then a dropout, then the product with v; with keys split along the
            sequence, each ring block draws its own mask.

    Rows that keep no key give zeros.

    Example:
        >>> q = nabla.ones(2, 4, 3)
        >>> nabla.dot_product_attention(q, q, q, is_causal=True).shape
        (2, 4, 3)
    """
    op = "dot_product_attention"
    for x, arg in ((q, "q"), (k, "k"), (v, "v")):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
        if x.ndim < 2:
            raise ValueError(f"{op}: {arg} must have at least 2 dimensions, got shape {x.shape}")
        if x.dtype != q.dtype or not _dt.is_float(x.dtype):
            raise TypeError(f"{op}: q, k and v must share one floating dtype, got {q.dtype.name} and {x.dtype.name}")
    if k.shape[:-2] != q.shape[:-2] or v.shape[:-2] != q.shape[:-2] or k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"{op}: expected q (..., L, E), k (..., S, E), v (..., S, Ev); got {q.shape}, {k.shape}, {v.shape}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"{op}: k and v must have the same length S (dim -2), got {k.shape} and {v.shape}")
    scores = (*q.shape[:-1], k.shape[-2])
    masks = ()
    if mask is not None:
        if not isinstance(mask, Tensor) or not (mask.dtype == _dt.bool_ or _dt.is_float(mask.dtype)):
            raise TypeError(f"{op}: mask must be a bool or floating-point Tensor, got {mask!r}")
        try:
            fits = broadcast_shapes(mask.shape, scores) == scores
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{op}: mask of shape {mask.shape} does not broadcast to the scores' shape {scores}")
        if mask.ndim < q.ndim:
            mask = reshape(mask, (1,) * (q.ndim - mask.ndim) + mask.shape)
        masks = (mask if mask.dtype in (_dt.bool_, q.dtype) else cast(mask, q.dtype),)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    dropout_p = _creation._probability(dropout_p, op)
    ring = _ring_layout(q, k, v, *masks)
    if ring is not None:
        return _ring_attention(q, k, v, *masks, layouts=ring, scale=scale, causal=bool(is_causal), dropout_p=dropout_p)
    if dropout_p > 0.0:
        weights = _weights(q, k, *masks, scale=scale, causal=bool(is_causal))
        return matmul(_creation.dropout(weights, dropout_p), v)
    return _attention(q, k, v, *masks, scale=scale, causal=bool(is_causal))


# -- keys split along the sequence: ring attention -------------------------------------------------
def _ring_layout(q: Tensor, k: Tensor, v: Tensor, *mask: Tensor) -> list | None:
    """The layouts of q, k, v (and the mask) for ring attention, or None for the one-op path.
    The ring applies when k and v are split alike along the key sequence over some mesh axes
    (and nowhere along the head dims); q may be split along its sequence over the same axes
    (sequence parallelism) or not at all. A mask is laid out to match: its key dim like k's
    (its blocks travel with k's), its query dim like q's. The one op would gather the keys.
    An uneven split is padded to an even one in the ring (`_ring_attention`)."""
    ks, vs = k._impl.sharding, v._impl.sharding
    if ks is None or vs is None or ks.manual or ks.partial or vs.partial or MANUAL.meshes:
        return None
    if any(t._impl.batch_dims for t in (q, k, v, *mask)):  # inside vmap: the one op
        return None
    axes = ks.dim_axes[-2]
    if not axes or vs.dim_axes[:-1] != ks.dim_axes[:-1] or ks.dim_axes[-1] or vs.dim_axes[-1]:
        return None
    mesh, n = ks.mesh, ks.mesh.axes_size(axes)
    qs = q._impl.sharding
    q_split = qs is not None and qs.mesh == mesh and qs.dim_axes[-2] == axes
    if k.shape[-2] < n or (q_split and q.shape[-2] < n):  # a device without keys: the one op
        return None
    lead = [list(a) for a in ks.dim_axes[:-2]]
    layouts = [ShardingSpec(mesh, [*lead, list(axes) if q_split else [], []]), ks, vs]
    if mask:
        # The mask's query rows are laid out like q's; its key dim is split like k's (so its
        # blocks travel with them), unless the rows already use those axes: then each device
        # holds its rows for every key and takes the block it needs at each step.
        m = mask[0].shape
        dims = [a if m[i] == q.shape[i] else [] for i, a in enumerate(lead)]
        rows_split = q_split and m[-2] > 1
        dims += [list(axes) if rows_split else [], list(axes) if m[-1] > 1 and not rows_split else []]
        layouts.append(ShardingSpec(mesh, dims))
    return layouts


def _ring_attention(
    q: Tensor, k: Tensor, v: Tensor, *mask: Tensor, layouts: list, scale: float, causal: bool, dropout_p: float
) -> Tensor:
    """Attention with the keys split along the sequence over n devices, without gathering
    them: each device keeps its queries and passes its key/value block (and mask block) round
    the ring (n - 1 ppermutes each), folding each block into a running softmax (max, sum,
    weighted values), as Ring Attention (Liu et al. 2023) and flash attention do. Rows that
    keep no key give zeros, as the one op does. The result has q's layout. Attention dropout
    scales each block's weights in the weighted values (not in the row sums, which normalize
    the undropped weights) by a mask drawn on the device for that block.

    A sequence that does not split evenly is zero-extended to one that does (a window: each
    device moves a few rows); the appended keys are masked out, the appended query rows
    dropped from the result."""
    q_spec, k_spec = layouts[0], layouts[1]
    mesh, axes = k_spec.mesh, k_spec.dim_axes[-2]
    length, keys = q.shape[-2], k.shape[-2]
    local = ShardingSpec.replicated_on(mesh, q.ndim, manual=True)
    tensors = [_conform_tensor(x, spec) for x, spec in zip((q, k, v, *mask), layouts, strict=True)]
    for i, dim in _padded_dims(tensors, layouts, axes):
        tensors[i] = evened(tensors[i], dim)
    pieces = [_relabel(x, out=local, src=x._impl.sharding) for x in tensors]
    drop = None
    if dropout_p > 0.0:
        # A block's mask depends on which data it covers, not on the device holding it: devices
        # along an axis that replicates the data (or that holds the whole of q) draw alike, so
        # their copies stay equal. The other axes that lay out the data tell blocks apart.
        used = {a for spec in layouts[:2] for dim in spec.dim_axes for a in dim if a not in axes}
        drop = (dropout_p, seed_tensor(), tuple(a for a in mesh.axis_names if a in used))
    MANUAL.meshes.append(mesh)
    try:
        out = _ring_body(
            *pieces,
            axes=axes,
            n=mesh.axes_size(axes),
            q_split=bool(q_spec.dim_axes[-2]),
            scale=scale,
            causal=causal,
            drop=drop,
            keys=keys,
        )
    finally:
        MANUAL.meshes.pop()
    out = _relabel(out, out=tensors[0]._impl.sharding, src=out._impl.sharding)
    return out if out.shape[-2] == length else window(out, out.ndim - 2, 0, length)


def _padded_dims(tensors: list, layouts: list, axes: tuple) -> list[tuple[int, int]]:
    """(tensor, dim) of every sequence dim split over the ring's axes unevenly: q's rows, the
    keys of k and v, the mask's rows and key columns where they are split."""
    n = layouts[1].mesh.axes_size(axes)
    return [
        (i, dim)
        for i, (x, spec) in enumerate(zip(tensors, layouts, strict=True))
        for dim in (x.ndim - 2, x.ndim - 1)
        if spec.dim_axes[dim] == axes and x.shape[dim] % n
    ]


def _ring_body(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *mask: Tensor,
    axes: tuple,
    n: int,
    q_split: bool,
    scale: float,
    causal: bool,
    drop: tuple | None = None,
    keys: int | None = None,
) -> Tensor:
    """One device's part (inside manual mode): its queries against each key block in turn.
    `drop`: (dropout probability, the step's seed, the mesh axes besides the ring's that lay out
    the data). `keys`: the sequence's real length, when k and v were padded past it."""
    lq, sk = q.shape[-2], k.shape[-2]
    me = axis_index(axes)
    perm = [(i, (i + 1) % n) for i in range(n)]  # after t passes a device holds block (me - t) mod n
    rows = reshape(_creation.arange(lq), (lq, 1))
    if q_split:
        rows = _bin.add(rows, _bin.mul(me, lq))
    qs = _bin.mul(q, scale)
    neg = _creation.full((), _NEG_INF, q.dtype)
    m_block = mask[0] if mask else None
    # Running row max, row sum and weighted values. The max only keeps exp() in range: the
    # result does not depend on it, so it carries no gradient.
    m = _creation.full((*q.shape[:-1], 1), _NEG_INF, q.dtype)
    total = _creation.zeros(*q.shape[:-1], 1, dtype=q.dtype)
    acc = _creation.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    rotate = m_block is not None and m_block.shape[-1] == sk  # else all keys (or 1): take a block
    if drop is not None:  # the first block id of this device's data: ((outer * n) + q block) * n
        outer = axis_index(drop[2]) if drop[2] else 0
        first = (outer * n + (me if q_split else 0)) * n  # Python ints where no axis applies
    for t in range(n):
        s = matmul(qs, transpose(k, -1, -2))
        block = _bin.remainder(_bin.add(me, n - t), n)  # where the keys held now come from
        cols = _bin.add(_creation.arange(sk), _bin.mul(block, sk))
        if m_block is not None:
            taken = cols if keys is None or keys == n * sk else _bin.minimum(cols, m_block.shape[-1] - 1)
            mb = m_block if rotate or m_block.shape[-1] == 1 else index_select(m_block, -1, taken)
            s = _where(mb, s, neg) if mb.dtype == _dt.bool_ else _bin.add(s, mb)
        if keys is not None and keys < n * sk:  # the padding's keys take no part
            s = _where(_bin.less(reshape(cols, (1, sk)), keys), s, neg)
        if causal:
            s = _where(_bin.greater_equal(rows, reshape(cols, (1, sk))), s, neg)
        m_new = _bin.maximum(m, _red.max(_view.detach(s), axis=-1, keepdims=True))
        m_safe = _where(_bin.equal(m_new, neg), 0.0, m_new)  # a row with no key yet: exp(-inf - 0) = 0
        p = _un.exp(_bin.sub(s, m_safe))
        rescale = _un.exp(_bin.sub(m, m_safe))
        total = _bin.add(_bin.mul(total, rescale), _red.sum(p, axis=-1, keepdims=True))
        if drop is not None:
            p = _bin.mul(p, _block_keep(drop[1], _bin.add(first, block), p.shape, p.dtype, drop[0]))
        acc = _bin.add(_bin.mul(acc, rescale), matmul(p, v))
        m = m_new
        if t < n - 1:
            k, v = ppermute(k, axes, perm), ppermute(v, axes, perm)
            if rotate:  # the mask's key block travels with k's
                m_block = ppermute(m_block, axes, perm)
    alive = _bin.greater(total, 0.0)
    return _where(alive, _bin.div(acc, _where(alive, total, 1.0)), 0.0)


def _block_keep(seed: Tensor, block: Tensor, shape: tuple, dtype: Any, p: float) -> Tensor:
    """Inverted-dropout factors (0 or 1 / (1 - p)) for the scores block numbered `block` (by the
    data it covers: its query block, key block and place along the other axes). Each block
    draws from its own seed, the step's seed + block + 1:
    the random op hashes its seed (NumPy's SeedSequence, MAX's Philox key), so nearby seeds
    give independent streams, and a step's random 64-bit base seed keeps steps apart."""
    offset = cast(_bin.add(block, 1), _dt.uint64)
    block_seed = _bin.add(seed, reshape(offset, (1,)))
    keep = _creation._random(block_seed, distribution="bernoulli", shape=tuple(shape), dtype=dtype, a=1.0 - p, b=0.0)
    return _bin.mul(keep, 1.0 / (1.0 - p) if p < 1.0 else 0.0)  # p == 1: every weight dropped
