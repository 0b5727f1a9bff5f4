"""nabla.compile on MAX: a training step with a dynamic batch dim is one compiled model for 50
steps of changing batch size and learning rate, and agrees with the NumPy executor; without
dynamic_dims, a third input size compiles nothing.

A few small MAX compiles (about a minute with a cold cache); the other compile semantics are
tested on the NumPy executor in test_compile.py.
"""

from __future__ import annotations

import numpy as np

import nabla as nb
from nabla.core.graph import executors

USES_MAX = True


def _loss(w, b, x, y):
    h = x @ w + b  # reductions over the dynamic dim (mean, log_softmax) must lower symbolically
    return ((nb.relu(h) - y) ** 2).mean() - 0.01 * nb.log_softmax(h, axis=-1).mean()


def _step(params, x, y, lr):
    gw, gb = nb.grad(_loss, argnums=(0, 1))(params["w"], params["b"], x, y)
    return {"w": params["w"] - lr * gw, "b": params["b"] - lr * gb}, _loss(params["w"], params["b"], x, y)


def test_train_step_is_one_max_model_for_every_batch_size(monkeypatch):
    rng = np.random.default_rng(1)
    true_w = rng.standard_normal((6, 3)).astype(np.float32)
    params = {"w": nb.tensor(rng.standard_normal((6, 3)).astype(np.float32) * 0.1), "b": nb.zeros(3)}
    ref = {k: v.numpy().copy() for k, v in params.items()}
    step = nb.compile(_step, dynamic_dims={1: 0, 2: 0})
    compiles_before = nb.cache_info().compiles
    losses = []
    for i in range(50):
        n = 32 if i % 3 else 17
        x = rng.standard_normal((n, 6)).astype(np.float32)
        y = np.maximum(x @ true_w, 0).astype(np.float32)
        lr = 0.2 / (1 + 0.05 * i)
        if i == 5:  # from here on, a hit must not build a MAX graph
            monkeypatch.setattr(executors, "Graph", None)
        params, loss = step(params, nb.tensor(x), nb.tensor(y), lr)
        losses.append(loss.item())
        nb.set_executor("numpy")
        ref_new, ref_loss = _step({k: nb.tensor(v) for k, v in ref.items()}, nb.tensor(x), nb.tensor(y), lr)
        ref = {k: v.numpy() for k, v in ref_new.items()}
        nb.set_executor("max")
        np.testing.assert_allclose(losses[-1], ref_loss.item(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(params["w"].numpy(), ref["w"], rtol=1e-4, atol=1e-5)
    assert (step.stats.misses, step.stats.hits, step.stats.compiles) == (1, 49, 1)
    assert nb.cache_info().compiles - compiles_before <= 1
    assert step.stats.recompile_reasons == []
    assert losses[-1] < 0.25 * losses[0]


def test_causal_attention_is_one_max_model_for_every_sequence_length():
    # the causal mask's lowering takes symbolic dims (no int conversion of L or S)
    def attend(q):
        return nb.dot_product_attention(q, q, q, is_causal=True)

    fn = nb.compile(attend, dynamic_dims={0: 1})
    info = nb.cache_info()
    models_before = info.compiles + info.loads  # built now, or read from the disk store
    rng = np.random.default_rng(2)
    for length in (5, 7, 5):
        q = rng.standard_normal((2, length, 4)).astype(np.float32)
        got = fn(nb.tensor(q)).numpy()
        nb.set_executor("numpy")
        want = attend(nb.tensor(q)).numpy()
        nb.set_executor("max")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    info = nb.cache_info()
    assert info.compiles + info.loads - models_before == 1


def test_a_third_input_size_compiles_nothing(capsys):
    # Without dynamic_dims, the second size merges the two traces into one symbolic model
    # (as lazy evaluation does); every later size is a trace and a cache hit in the engine.
    def f(x):
        return (nb.tanh(x * 3.0 - 1.0) * x).sum(axis=1)

    fn = nb.compile(f)
    rng = np.random.default_rng(3)

    def check(n: int) -> None:
        x = rng.standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(fn(nb.tensor(x)).numpy(), (np.tanh(x * 3 - 1) * x).sum(1), rtol=1e-5, atol=1e-6)

    check(5)
    check(7)
    info = nb.cache_info()
    models_before = info.compiles + info.loads
    nb.set_log_recompiles(True)
    try:
        for n in (9, 12, 5, 30):
            check(n)
    finally:
        nb.set_log_recompiles(False)
    assert (
        "nabla.compile(test_a_third_input_size_compiles_nothing.<locals>.f): retracing (a compiled model serves it): x shape"
        in capsys.readouterr().err
    )
    info = nb.cache_info()
    assert info.compiles + info.loads == models_before
    assert (fn.stats.misses, fn.stats.hits) == (5, 1)
    assert fn.stats.recompile_reasons[-1].endswith("-> (30, 3)")
