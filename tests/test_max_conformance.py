"""The MAX path, checked against the NumPy reference in as few compiles as possible.

One function exercises every op of the library (forward and gradients). It is evaluated once
on the NumPy executor and then 20 times on MAX with fresh data: exactly one MAX compile, then
cache hits that build no graph at all.
"""

import numpy as np

import nabla as nb
from nabla.core.graph import executors

USES_MAX = True  # conftest: leave the MAX executor selected


def _inputs(rng: np.random.Generator) -> dict:
    f = np.float32
    return {
        "a": rng.uniform(0.5, 2.0, (3, 4)).astype(f),
        "b": rng.normal(size=(4,)).astype(f),
        "c": rng.normal(size=(2, 3, 4)).astype(f),
        "m": rng.normal(size=(4, 5)).astype(f),
        "i": rng.integers(-5, 5, (3, 4)).astype(np.int32),
    }


def _program(data: dict) -> dict:
    """Every op of the library, plus gradients through all of them, as one evaluation."""
    a = nb.tensor(data["a"], requires_grad=True)
    b = nb.tensor(data["b"], requires_grad=True)
    c = nb.tensor(data["c"])
    m = nb.tensor(data["m"], requires_grad=True)
    i = nb.tensor(data["i"])
    out = {
        "add": a + b,
        "sub": 2.0 - a,
        "mul": a * b,
        "div": a / (b * b + 1.0),
        "pow": a**1.5,
        "powt": nb.pow(a, b * 0.1),
        "neg": -a,
        "exp": nb.exp(b),
        "log": nb.log(a),
        "sqrt": nb.sqrt(a),
        "tanh": nb.tanh(c),
        "relu": nb.relu(c),
        "sigmoid": nb.sigmoid(c),
        "maximum": nb.maximum(a, b),
        "minimum": nb.minimum(a, 1.0),
        "cmp": (a > b).astype(nb.float32) + (a <= 1.0).astype(nb.float32) + (i == 2).astype(nb.float32),
        "ne": nb.not_equal(i, 0),
        "matmul": a @ m,
        "matvec": a @ b,
        "bmm": c @ m,
        "sum": c.sum(dim=(0, 2)),
        "mean": c.mean(axis=-1, keepdims=True),
        "max": c.max(axis=1),
        "min": nb.min(c, axis=None),
        "argmax": c.argmax(dim=2),
        "argmin": nb.argmin(a),
        "reshape": c.reshape(4, -1),
        "transpose": c.transpose(0, 2),
        "permute": c.permute(2, 0, 1),
        "bcast": nb.broadcast_to(b, (2, 3, 4)),
        "squeeze": nb.unsqueeze(a, 1).squeeze(),
        "where": nb.where(a > 1.0, a, b),
        "cast": i.astype(nb.float32) * 0.5,
        "isum": i.sum(axis=0),
        "full": nb.full((2, 2), 3.5) + nb.ones(2, 2) - nb.zeros_like(a).sum(),
        "arange": nb.arange(0.0, 1.0, 0.25) * 2,
    }
    loss = (
        (a @ m).relu().sum()
        + (nb.tanh(a * b) / (a + 1.0)).sum()
        + nb.sigmoid(nb.log(a) * nb.sqrt(a)).mean()
        + (a**2.0).max()
        + nb.maximum(a, b).sum()
        + nb.where(a > 1.0, nb.exp(-a), a * b).sum()
    )
    loss.backward()
    out["loss"] = loss
    out["grad_a"] = a.grad
    out["grad_b"] = b.grad
    out["grad_m"] = m.grad
    out["vjp_grad"] = nb.grad(lambda x: (nb.exp(x) * x).sum())(b)
    return out


def _numbers(out: dict) -> dict:
    nb.evaluate(*out.values())
    return {k: v.numpy() for k, v in out.items()}


def test_eager_graph_shapes_match_max_for_every_op():
    """NABLA_EAGER_MAX_GRAPH with shape verification: MAX agrees with every inferred shape."""
    prev = nb.get_executor()
    nb.set_executor("numpy")
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        out = _program(_inputs(np.random.default_rng(0)))
        assert all(v._impl.graph_values or v._impl.is_realized for v in out.values())
        _numbers(out)
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)
        nb.set_executor(prev)


def test_max_matches_numpy_and_compiles_once(monkeypatch):
    rng = np.random.default_rng(0)
    batches = [_inputs(rng) for _ in range(20)]

    nb.set_executor("numpy")
    expected = [_numbers(_program(batches[k])) for k in (0, 19)]
    nb.set_executor("max")

    nb.reset_cache_info()
    first = _numbers(_program(batches[0]))
    info = nb.cache_info().per_executor["max"]
    assert (info.compiles, info.hits, info.graph_builds) == (1, 0, 1)

    # A cache hit must not touch any compiler object.
    def forbidden(*args, **kwargs):
        raise AssertionError("a cache hit built a MAX graph")

    monkeypatch.setattr(executors, "Graph", forbidden)
    monkeypatch.setattr(executors, "Module", forbidden)
    with nb.no_recompile():
        results = [_numbers(_program(batch)) for batch in batches[1:]]
    info = nb.cache_info().per_executor["max"]
    assert (info.compiles, info.hits, info.graph_builds, info.executions) == (1, 19, 1, 20)

    for got, want in ((first, expected[0]), (results[-1], expected[1])):
        assert got.keys() == want.keys()
        for name in want:
            assert got[name].dtype == want[name].dtype, name
            np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-5, err_msg=name)
