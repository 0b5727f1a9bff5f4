"""Registry entries for nabla.ops.control_flow: where, cond, while_loop, fori_loop, scan.

cond, fori_loop and scan add no Operation of their own (they unroll or select with `where`),
so their entries name the ops they exercise in `covers`. `while_loop` reads its predicate on
the host, which evaluates pending tensors mid-trace: its samples stay out of the one-compile
MAX graphs (`max=False`), and it is not differentiable in reverse mode by design (its JVP is
tested in tests/test_control_flow.py).
"""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "control_flow"


# -- cond -----------------------------------------------------------------------------------------
def _branches(x, y):
    def true_fn(a, b):
        return {"prod": a * b, "sum": (a + b).sum()}

    def false_fn(a, b):
        return {"prod": nb.tanh(a) - b, "sum": (a - b).sum()}

    return true_fn, false_fn


def _cond_lazy(x, y):
    """The predicate is pending (computed from the inputs): both branches run, `where` selects."""
    return nb.cond((x * y).sum() > 0, *_branches(x, y), x, y)


def _cond_lazy_ref(x, y):
    if (x * y).sum() > 0:
        return (x * y, (x + y).sum())
    return (np.tanh(x) - y, (x - y).sum())


def _cond_static(flag):
    def fn(x, y):
        return nb.cond(flag, *_branches(x, y), x, y)

    return fn


def _cond_static_ref(flag):
    def ref(x, y):
        return (x * y, (x + y).sum()) if flag else (np.tanh(x) - y, (x - y).sum())

    return ref


def _cond(x, y, case):
    return {"lazy": _cond_lazy, "true": _cond_static(True), "false": _cond_static(False)}[case](x, y)


def _cond_ref(x, y, case):
    return {"lazy": _cond_lazy_ref, "true": _cond_static_ref(True), "false": _cond_static_ref(False)}[case](x, y)


# -- scan -----------------------------------------------------------------------------------------
def _cumprod(xs, reverse=False):
    """Cumulative product along axis 0 via scan: (total product, running products)."""
    return nb.scan(lambda c, x: (c * x, c * x), nb.ones(xs.shape[1:], dtype=xs.dtype), xs, reverse=reverse)


def _cumprod_ref(xs, reverse=False):
    if reverse:
        return np.prod(xs, 0), np.cumprod(xs[::-1], 0)[::-1]
    return np.prod(xs, 0), np.cumprod(xs, 0)


def _rnn(h0, xs, w):
    """A pytree carry and pytree ys: h <- tanh(w * h + x), also counting steps."""

    def step(carry, x):
        h, n = carry
        h = nb.tanh(w * h + x)
        return (h, n + 1), {"h": h, "sq": h * h}

    (h, n), ys = nb.scan(step, (h0, 0), xs)
    return h, n, ys["h"], ys["sq"]


def _rnn_ref(h0, xs, w):
    h, hs = h0, []
    for x in xs:
        h = np.tanh(w * h + x)
        hs.append(h)
    hs = np.stack(hs)
    return h, np.array(len(xs), np.int64), hs, hs * hs


def _scan_no_xs(x0):
    """xs=None with length: iterate x <- 0.5 * x + 1, collecting each value."""
    return nb.scan(lambda c, _: (c * 0.5 + 1.0, c), x0, None, length=4)


def _scan_no_xs_ref(x0):
    vals, c = [], x0
    for _ in range(4):
        vals.append(c)
        c = c * 0.5 + 1.0
    return c, np.stack(vals)


# -- fori_loop ------------------------------------------------------------------------------------
def _power_iteration(a, v0):
    """Five steps of v <- A v / |A v| for a symmetric A (matvec written as a broadcast sum)."""
    sym = a + a.T

    def body(i, v):
        av = (sym * v).sum(1)
        return av / nb.sqrt((av * av).sum())

    return nb.fori_loop(0, 5, body, v0)


def _power_iteration_ref(a, v0):
    sym, v = a + a.T, v0
    for _ in range(5):
        av = sym @ v
        v = av / np.sqrt((av * av).sum())
    return v


def _fori_index(x):
    """The loop index is a Python int: x <- x * 0.5 + i over i = 2, 3, 4."""
    return nb.fori_loop(2, 5, lambda i, v: v * 0.5 + i, x)


def _fori_index_ref(x):
    for i in range(2, 5):
        x = x * 0.5 + i
    return x


# -- while_loop -----------------------------------------------------------------------------------
def _while_doubling(x):
    """Double x until its sum exceeds 50, counting the steps (data-dependent trip count)."""
    return nb.while_loop(lambda c: c[1].sum() <= 50, lambda c: (c[0] + 1, c[1] * 2), (0, x))


def _while_doubling_ref(x):
    n = 0
    while x.sum() <= 50:
        n, x = n + 1, x * 2
    return np.array(n, np.int64), x


_SCANS = {
    "cumprod": (_cumprod, _cumprod_ref),
    "reverse": (lambda xs: _cumprod(xs, True), lambda xs: _cumprod_ref(xs, True)),
    "rnn": (_rnn, _rnn_ref),
    "no-xs": (_scan_no_xs, _scan_no_xs_ref),
}
_FORIS = {"power": (_power_iteration, _power_iteration_ref), "index": (_fori_index, _fori_index_ref)}


SPECS: list[OpSpec] = [
    OpSpec(
        name="where",
        fn=nb.where,
        ref=np.where,
        samples=[
            Sample((uniform((3, 4), seed="c") > 0, uniform((3, 4), seed="x"), uniform((3, 4), seed="y")), label="same"),
            Sample(
                (uniform((3, 1), seed="c") > 0, uniform((1, 4), seed="x"), uniform((3, 4), seed="y")), label="bcast"
            ),
            Sample((np.array(True), uniform((2, 3), seed="x"), uniform((), seed="y")), label="0-d"),
            Sample((uniform((5,), seed="c") > 0, uniform((5,), seed="x"), 0.5), label="scalar-y"),
            Sample((np.array([True, False, True]), np.array([1, 2, 3]), np.array([4, 5, 6])), label="int"),
            Sample((np.zeros((0, 2), bool), uniform((0, 2), seed="x"), uniform((0, 2), seed="y")), label="empty"),
        ],
        family=FAMILY,
        torch_ref=lambda torch, c, x, y: torch.where(c, x, y),
    ),
    OpSpec(
        name="cond",
        fn=_cond,
        ref=_cond_ref,
        samples=[
            Sample((uniform((2, 3), seed="c1"), uniform((2, 3), 0.5, 1.0, seed="c2")), {"case": "lazy"}, label="lazy"),
            Sample(
                (uniform((4,), 0.5, 1.0, seed="c3"), -uniform((4,), 0.5, 1.0, seed="c3")),
                {"case": "lazy"},
                label="lazy-false",
            ),
            Sample((uniform((3,), seed="c4"), uniform((3,), seed="c5")), {"case": "true"}, label="python-true"),
            Sample((uniform((3,), seed="c4"), uniform((3,), seed="c5")), {"case": "false"}, label="python-false"),
            Sample((uniform((), seed="c6"), uniform((), seed="c7")), {"case": "lazy"}, label="0-d"),
        ],
        family=FAMILY,
        covers=("where", "greater", "mul", "add", "sub", "tanh", "sum"),
    ),
    OpSpec(
        name="scan",
        fn=lambda *args, case: _SCANS[case][0](*args),
        ref=lambda *args, case: _SCANS[case][1](*args),
        samples=[
            Sample((uniform((5,), 0.5, 1.5, seed="s1"),), {"case": "cumprod"}, label="cumprod"),
            Sample((uniform((4, 2, 3), 0.5, 1.5, seed="s2"),), {"case": "cumprod"}, label="cumprod-3d"),
            Sample((uniform((1,), 0.5, 1.5, seed="s3"),), {"case": "cumprod"}, label="length-1"),
            Sample((uniform((4, 3), 0.5, 1.5, seed="s4"),), {"case": "reverse"}, label="reverse"),
            Sample(
                (uniform((3,), seed="r1"), uniform((5, 3), seed="r2"), uniform((3,), seed="r3")),
                {"case": "rnn"},
                label="rnn-pytree",
            ),
            Sample(
                (uniform((), seed="r4"), uniform((2,), seed="r5"), uniform((), seed="r6")),
                {"case": "rnn"},
                label="rnn-0d",
            ),
            Sample((uniform((2, 2), seed="n1"),), {"case": "no-xs"}, label="xs=None"),
        ],
        family=FAMILY,
        covers=("mul", "add", "tanh", "full", "where"),
    ),
    OpSpec(
        name="fori_loop",
        fn=lambda *args, case: _FORIS[case][0](*args),
        ref=lambda *args, case: _FORIS[case][1](*args),
        samples=[
            Sample((uniform((4, 4), seed="p1"), uniform((4,), 0.5, 1.0, seed="p2")), {"case": "power"}, label="power"),
            Sample(
                (uniform((2, 2), seed="p3"), uniform((2,), 0.5, 1.0, seed="p4")), {"case": "power"}, label="power-2x2"
            ),
            Sample((uniform((3,), seed="f1"),), {"case": "index"}, label="index"),
            Sample((uniform((), seed="f2"),), {"case": "index"}, label="index-0d"),
        ],
        family=FAMILY,
        rtol=1e-4,
        covers=("mul", "sum", "div", "sqrt", "permute", "add"),
    ),
    OpSpec(
        name="while_loop",
        fn=_while_doubling,
        ref=_while_doubling_ref,
        samples=[
            Sample((uniform((3,), 0.5, 1.0, seed="w1"),), label="doubling", max=False),
            Sample((np.array([60.0, 1.0]),), label="zero-trips", max=False),
        ],
        family=FAMILY,
        differentiable=False,
        covers=("while_loop", "less_equal", "sum", "mul", "add"),
    ),
]
