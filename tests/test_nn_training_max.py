"""The one-model training step on MAX: a PyTorch-style loop (MLP, Adam, lr schedule) compiles
exactly one model, then only hits the cache; numerics equal the NumPy executor's."""

from __future__ import annotations

import numpy as np

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim

USES_MAX = True


def _train(executor: str) -> tuple[list, dict, object]:
    nb.set_executor(executor)
    nb.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
    teacher = rng.standard_normal((12, 4)).astype(np.float32)
    nb.reset_cache_info()
    losses = []
    data = [rng.standard_normal((16, 12)).astype(np.float32) for _ in range(2)]
    for i in range(8):
        x = data[i % 2]
        y = np.argmax(x @ teacher, 1)
        opt.zero_grad()
        loss = F.cross_entropy(model(nb.Tensor.from_numpy(x)), nb.Tensor.from_numpy(y))
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, {k: v.numpy() for k, v in model.state_dict().items()}, nb.cache_info()


def test_training_loop_compiles_once_on_max_and_matches_numpy():
    losses, params, info = _train("max")
    assert (info.compiles, info.misses, info.hits, info.graph_builds) == (1, 1, 7, 1)
    assert losses[-1] < losses[0]
    ref_losses, ref_params, _ = _train("numpy")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for k in params:
        np.testing.assert_allclose(params[k], ref_params[k], rtol=1e-4, atol=1e-5, err_msg=k)
