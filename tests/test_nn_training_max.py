"""The one-model training step on MAX: a PyTorch-style loop (MLP, Adam, lr schedule) compiles
exactly one model, then only hits the cache; numerics equal the NumPy executor's.

`NABLA_TEST_DEVICE=gpu` trains the models on an accelerator (`model.to("gpu")`, CPU batches)."""

from __future__ import annotations

import os

import numpy as np

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim

USES_MAX = True
DEVICE = os.environ.get("NABLA_TEST_DEVICE", "cpu")
# MAX's float32 matmul on an H100 differs from NumPy's by up to about 1e-3 relative (reduced-
# precision multiplies); on the CPU the two agree to float32 rounding. Adam's update divides by
# the root of tiny second moments, so a parameter's difference can reach its learning rate's scale.
RTOL = 1e-4 if DEVICE == "cpu" else 2e-3
ATOL = 1e-5 if DEVICE == "cpu" else 5e-3


def _train(executor: str, compiled: bool = False, sizes: tuple = (16,) * 8) -> tuple[list, dict, object]:
    nb.set_executor(executor)
    nb.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4)).to(DEVICE)
    if compiled:
        model.compile()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
    teacher = rng.standard_normal((12, 4)).astype(np.float32)
    nb.reset_cache_info()
    losses = []
    data = [rng.standard_normal((16, 12)).astype(np.float32) for _ in range(2)]
    for i, n in enumerate(sizes):
        x = data[i % 2][:n]
        y = np.argmax(x @ teacher, 1)
        opt.zero_grad()
        loss = F.cross_entropy(model(nb.Tensor.from_numpy(x)), nb.Tensor.from_numpy(y))
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    if executor == "max":  # the parameters live where the model was put (an accelerator: never on the host)
        assert all(p._impl.data.is_host != model[0].weight.is_cuda for p in model.parameters())
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}, nb.cache_info()


def test_training_loop_compiles_once_on_max_and_matches_numpy():
    losses, params, info = _train("max")
    assert (info.compiles, info.misses, info.hits, info.graph_builds) == (1, 1, 7, 1)
    assert losses[-1] < losses[0]
    ref_losses, ref_params, _ = _train("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL)
    for k in params:
        np.testing.assert_allclose(params[k], ref_params[k], rtol=RTOL, atol=ATOL, err_msg=k)


def test_partial_batches_share_one_symbolic_model_on_max():
    """A batch of another size compiles one model with a symbolic batch dim (the recorded
    backward's `call` included); a third size runs on it with no compile."""
    sizes = (16, 16, 9, 16, 5, 9, 16, 5)
    nb.clear_cache()  # size 16's model may be in memory from another test (then it loads from disk)
    losses, params, info = _train("max", sizes=sizes)
    assert (info.compiles + info.loads, info.misses, info.hits) == (2, 3, 5)
    ref_losses, ref_params, _ = _train("numpy", sizes=sizes)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL)
    for k in params:
        np.testing.assert_allclose(params[k], ref_params[k], rtol=RTOL, atol=ATOL, err_msg=k)


def test_compiled_module_training_step_is_one_model_on_max():
    """After `model.compile()` the forward is one `call` op and its gradient another; the step is
    still one MAX model (the backward's recomputed forward is merged with the forward), compiled
    once, and its numerics equal the op-by-op loop's on NumPy."""
    losses, params, info = _train("max", compiled=True)
    assert (info.compiles, info.misses, info.hits, info.graph_builds) == (1, 1, 7, 1)
    ref_losses, ref_params, _ = _train("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL)
    for k in params:
        np.testing.assert_allclose(params[k], ref_params[k], rtol=RTOL, atol=ATOL, err_msg=k)


def _cross_entropy_cases(executor: str) -> list[np.ndarray]:
    """Every fused cross-entropy configuration, forward and gradient, evaluated as one graph."""
    nb.set_executor(executor)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    t, w = nb.tensor(np.array([0, 4, 2, -100, 1, 3])), nb.tensor(rng.uniform(0.5, 2.0, 5).astype(np.float32))
    outs = []
    for red in ("mean", "sum", "none"):
        for eps in (0.0, 0.2):
            for weight in (None, w):
                xt = nb.Tensor.from_numpy(x, requires_grad=True)
                loss = F.cross_entropy(xt, t, weight=weight, reduction=red, label_smoothing=eps)
                loss.sum().backward()
                outs += [loss, xt.grad]
    nb.evaluate(*outs)
    return [o.numpy() for o in outs]


def test_fused_cross_entropy_compiles_on_max_and_matches_numpy():
    nb.reset_cache_info()
    got = _cross_entropy_cases("max")
    assert nb.cache_info().per_executor["max"].compiles == 1
    for a, b in zip(got, _cross_entropy_cases("numpy"), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


CASES = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": False, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.01}),
    ("AdamW", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ("Adamax", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01}),
    ("Lion", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.01, "decoupled_weight_decay": True}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 0.01}),
    ("Rprop", {"lr": 0.01, "etas": (0.4, 1.5), "step_sizes": (1e-3, 0.02)}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "t0": 0, "weight_decay": 0.01}),  # averages at step 3
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.01, "maximize": True}),
    ("Muon", {"lr": 0.02, "nesterov": True, "adjust_lr_fn": "match_rms_adamw"}),  # bfloat16 Newton-Schulz
]


def _all_rules(executor: str, steps: int = 3) -> list[list[np.ndarray]]:
    """Every optimizer's fused update recorded lazily, then evaluated as ONE graph per step."""
    nb.set_executor(executor)
    rng = np.random.default_rng(1)
    params = [nn.Parameter(nb.tensor(rng.standard_normal((3, 4)).astype(np.float32))) for _ in CASES]
    opts = [getattr(optim, name)([p], **kw) for p, (name, kw) in zip(params, CASES, strict=True)]
    for _ in range(steps):
        for p in params:
            p.grad = nb.tensor(rng.standard_normal((3, 4)).astype(np.float32))
        with nb.no_grad():
            changed = [t for opt in opts for t in opt._record_updates()]
        nb.evaluate(*changed)
    # each parameter and its state (ASGD's average, say, never enters the parameter)
    return [[p.numpy(), *(v.numpy() for v in opt.state[p].values())] for p, opt in zip(params, opts, strict=True)]


def test_every_optimizer_rule_compiles_on_max_and_matches_numpy():
    nb.reset_cache_info()
    got = _all_rules("max")
    assert nb.cache_info().per_executor["max"].compiles == 1
    want = _all_rules("numpy")
    for (name, kw), values, ref in zip(CASES, got, want, strict=True):
        for a, b in zip(values, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} {kw}")


def _lbfgs(executor: str) -> tuple[list, list, dict, object]:
    nb.set_executor(executor)
    rng = np.random.default_rng(1)
    x = nb.Tensor.from_numpy(rng.standard_normal((32, 5)).astype(np.float32))
    y = nb.Tensor.from_numpy((x.numpy() @ rng.standard_normal((5, 2)) + 0.5).astype(np.float32))
    model = nn.Linear(5, 2).to(DEVICE)
    for p, value in zip(model.parameters(), (rng.standard_normal((2, 5)), np.zeros(2)), strict=True):
        p.data = nb.Tensor.from_numpy(value.astype(np.float32)).to(DEVICE)
    opt = optim.LBFGS(model.parameters(), history_size=3, max_iter=6, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.mse_loss(model(x.to(DEVICE)), y.to(DEVICE))
        loss.backward()
        return loss

    nb.reset_cache_info()
    losses = [opt.step(closure).item() for _ in range(3)]
    state = opt.state[model.weight]
    return losses, [p.numpy() for p in model.parameters()], state, nb.cache_info()


def test_lbfgs_compiles_its_closure_once_on_max_and_matches_numpy():
    # The direction and the moves are host arrays: every closure evaluation (line search steps,
    # growing history) reads realized parameters, so the whole run is one model.
    losses, params, state, info = _lbfgs("max")
    assert info.compiles == 1 and info.executions == state["func_evals"] > 6
    assert losses[-1] < 1e-3 * losses[0]
    ref_losses, ref_params, ref_state, _ = _lbfgs("numpy")
    assert (state["n_iter"], state["func_evals"]) == (ref_state["n_iter"], ref_state["func_evals"])
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, atol=1e-6)
    for a, b in zip(params, ref_params, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
