"""nabla_optim.swa_utils: AveragedModel (SWA running mean, EMA through avg_fn / multi_avg_fn,
use_buffers), SWALR and update_bn, step for step against torch.optim.swa_utils where PyTorch is
installed, and against written-down values everywhere; an EMA training loop's graph count."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim
from nabla_optim.swa_utils import SWALR, AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn, update_bn

RNG = np.random.default_rng(11)


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).to(nb.float64)


def _train(model, averaged, steps: int, data) -> None:
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in data[:steps]:
        opt.zero_grad()
        ((model(nb.tensor(x)) - nb.tensor(y)) ** 2).mean().backward()
        opt.step()
        averaged.update_parameters(model)


DATA = [(RNG.normal(size=(8, 3)), RNG.normal(size=(8, 2))) for _ in range(6)]


def test_swa_is_the_running_mean_of_the_parameters():
    model = _model()
    swa = AveragedModel(model)
    seen = []
    opt = optim.SGD(model.parameters(), lr=0.1)
    for x, y in DATA[:4]:
        opt.zero_grad()
        ((model(nb.tensor(x)) - nb.tensor(y)) ** 2).mean().backward()
        opt.step()
        swa.update_parameters(model)
        seen.append(model[0].weight.numpy().copy())
    np.testing.assert_allclose(swa.module[0].weight.numpy(), np.mean(seen, axis=0), rtol=1e-14)
    assert swa.n_averaged.item() == 4
    keys = list(swa.state_dict())  # torch's layout: the buffer, then the copy's keys under "module."
    assert keys == ["n_averaged", *("module." + k for k in model.state_dict())]
    # the buffers follow the model (use_buffers=False)
    np.testing.assert_array_equal(swa.module[1].running_mean.numpy(), model[1].running_mean.numpy())


def test_ema_with_multi_avg_fn_and_avg_fn_agree_and_match_the_formula():
    decay = 0.8
    model = _model()
    a = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))
    b = AveragedModel(model, avg_fn=get_ema_avg_fn(decay))
    want = None
    opt = optim.SGD(model.parameters(), lr=0.1)
    for x, y in DATA[:4]:
        opt.zero_grad()
        ((model(nb.tensor(x)) - nb.tensor(y)) ** 2).mean().backward()
        opt.step()
        a.update_parameters(model)
        b.update_parameters(model)
        w = model[2].weight.numpy().copy()
        want = w if want is None else decay * want + (1 - decay) * w
    np.testing.assert_allclose(a.module[2].weight.numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(b.module[2].weight.numpy(), want, rtol=1e-14)


def test_averaged_model_saves_and_resumes():
    model = _model()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.5))
    _train(model, ema, 2, DATA)
    restored = AveragedModel(_model(), multi_avg_fn=get_ema_multi_avg_fn(0.5))
    restored.load_state_dict(ema.state_dict())
    _train(model, ema, 1, DATA[2:])
    restored.update_parameters(model)  # continues from n_averaged = 2: an average, not a copy
    for k, v in ema.state_dict().items():
        np.testing.assert_allclose(restored.state_dict()[k].numpy(), v.numpy(), rtol=1e-14, err_msg=k)


def test_swalr_anneals_to_swa_lr():
    p = nn.Parameter(nb.zeros(2))
    opt = optim.SGD([p], lr=0.5)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy="cos")
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [0.3875, 0.1625, 0.05, 0.05, 0.05], rtol=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got step"):
        SWALR(opt, 0.05, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        SWALR(opt, 0.05, anneal_epochs=-1)


def test_update_bn_recomputes_running_stats_as_a_cumulative_average():
    model = _model()
    batches = [RNG.normal(size=(8, 3)) for _ in range(3)]
    model.eval()
    update_bn([(nb.tensor(b), 0) for b in batches], model)
    assert not model.training and model[1].momentum == 0.1
    h = [b @ model[0].weight.numpy().T + model[0].bias.numpy() for b in batches]
    np.testing.assert_allclose(model[1].running_mean.numpy(), np.mean([x.mean(0) for x in h], axis=0), rtol=1e-12)
    np.testing.assert_allclose(model[1].running_var.numpy(), np.mean([x.var(0, ddof=1) for x in h], axis=0), rtol=1e-12)


def test_an_ema_training_loop_builds_two_graphs():
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    nb.reset_cache_info()
    for x, y in DATA:
        opt.zero_grad()
        ((model(nb.tensor(x.astype(np.float32))) - nb.tensor(y.astype(np.float32))) ** 2).mean().backward()
        opt.step()
        ema.update_parameters(model)
    info = nb.cache_info()
    # the first step alone, then every step with the previous step's average (a copy, then lerps)
    assert (info.graph_builds, info.misses, info.hits) == (2, 2, len(DATA) - 2)


def test_errors():
    with pytest.raises(ValueError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        AveragedModel(_model(), avg_fn=get_ema_avg_fn(), multi_avg_fn=get_ema_multi_avg_fn())
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\] range."):
        get_ema_multi_avg_fn(1.5)
    swa = AveragedModel(_model())
    with pytest.raises(ValueError, match="model has 2 tensors to average, the averaged copy 6"):
        swa.update_parameters(nn.Linear(3, 4))


@needs_torch
@pytest.mark.parametrize("kind", ["swa", "ema", "ema_fn", "buffers"])
def test_matches_torch_step_for_step(kind: str):
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2)).double()
    nm = _model()
    nm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    tsu = torch.optim.swa_utils
    ta, na = {
        "swa": lambda: (tsu.AveragedModel(tm), AveragedModel(nm)),
        "ema": lambda: (
            tsu.AveragedModel(tm, multi_avg_fn=tsu.get_ema_multi_avg_fn(0.9)),
            AveragedModel(nm, multi_avg_fn=get_ema_multi_avg_fn(0.9)),
        ),
        "ema_fn": lambda: (
            tsu.AveragedModel(tm, avg_fn=tsu.get_ema_avg_fn(0.8)),
            AveragedModel(nm, avg_fn=get_ema_avg_fn(0.8)),
        ),
        "buffers": lambda: (tsu.AveragedModel(tm, use_buffers=True), AveragedModel(nm, use_buffers=True)),
    }[kind]()
    to, no = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9), optim.SGD(nm.parameters(), lr=0.1, momentum=0.9)
    for x, y in DATA[:5]:
        to.zero_grad()
        ((tm(torch.tensor(x)) - torch.tensor(y)) ** 2).mean().backward()
        to.step()
        ta.update_parameters(tm)
        no.zero_grad()
        ((nm(nb.tensor(x)) - nb.tensor(y)) ** 2).mean().backward()
        no.step()
        na.update_parameters(nm)
    tsd, nsd = ta.state_dict(), na.state_dict()
    assert list(tsd) == list(nsd)
    for k in tsd:
        np.testing.assert_allclose(nsd[k].numpy(), tsd[k].numpy(), rtol=1e-12, atol=1e-14, err_msg=k)
    x = RNG.normal(size=(4, 3))
    ta.eval()
    na.eval()
    np.testing.assert_allclose(na(nb.tensor(x)).numpy(), ta(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_loading_into_a_live_averaged_model_resets_its_count():
    m = nn.Linear(1, 1, bias=False)
    avg = AveragedModel(m)

    def fold(value: float) -> None:
        m.weight.data = nb.full((1, 1), value)
        avg.update_parameters(m)

    fold(0.0), fold(1.0)
    ckpt = avg.state_dict()  # mean 0.5 over 2
    for v in (2.0, 3.0, 4.0, 5.0):
        fold(v)
    avg.load_state_dict(ckpt)
    fold(10.0)  # (0 + 1 + 10) / 3, as torch's
    assert avg.module.weight.item() == pytest.approx(11.0 / 3.0) and avg.n_averaged.item() == 3


@pytest.mark.parametrize("multi", [False, True])
def test_ema_of_integer_buffers_truncates_like_torch(multi: bool):
    bn = nn.BatchNorm1d(2)
    fn = {"multi_avg_fn": get_ema_multi_avg_fn(0.5)} if multi else {"avg_fn": get_ema_avg_fn(0.5)}
    ema = AveragedModel(bn, use_buffers=True, **fn)
    for _ in range(6):
        bn(nb.tensor([[1.0, 2.0], [3.0, 4.0]]))
        ema.update_parameters(bn)
    assert ema.module.num_batches_tracked.item() == 5  # torch's value (the float EMA, truncated)
    if torch is not None:
        tswa = torch.optim.swa_utils
        tbn = torch.nn.BatchNorm1d(2)
        tfn = {"multi_avg_fn": tswa.get_ema_multi_avg_fn(0.5)} if multi else {"avg_fn": tswa.get_ema_avg_fn(0.5)}
        tema = tswa.AveragedModel(tbn, use_buffers=True, **tfn)
        for _ in range(6):
            tbn(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
            tema.update_parameters(tbn)
        assert tema.module.num_batches_tracked.item() == 5
        np.testing.assert_allclose(ema.module.running_mean.numpy(), tema.module.running_mean.numpy(), rtol=1e-6)


def test_a_custom_avg_fn_gets_n_averaged_as_a_tensor():
    m = nn.Linear(1, 1)
    seen = []

    def avg_fn(avg, current, n):
        seen.append(n.item())  # torch passes a tensor
        return avg + (current - avg) / (n.item() + 1)

    a = AveragedModel(m, avg_fn=avg_fn)
    for _ in range(3):
        a.update_parameters(m)
    assert seen == [1, 1, 2, 2]  # (weight and bias each time)


@pytest.mark.parametrize("kind", ["swa", "ema", "swa_fn"])
def test_an_averaged_model_inside_a_compiled_step_matches_the_eager_loop(kind: str):
    """The running mean's weight 1 / (n + 1) comes from `n_averaged` in the graph, and the
    count is updated in place, so a compiled step averages as the eager loop does: one trace for
    the first update (a copy) and one for every later one."""
    fns = {
        "swa": {},
        "ema": {"multi_avg_fn": get_ema_multi_avg_fn(0.9)},
        "swa_fn": {"avg_fn": optim.swa_utils.get_swa_avg_fn()},
    }[kind]
    results = []
    for compiled in (False, True):
        nb.manual_seed(0)
        model = _model()
        avg = AveragedModel(model, **fns)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, model=model, avg=avg, opt=opt):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            avg.update_parameters(model)

        run = nb.compile(step) if compiled else step
        for x, y in DATA:
            run(nb.tensor(x), nb.tensor(y))
        results.append(avg.state_dict())
        if compiled:
            assert (run.stats.traces, run.stats.hits) == (2, len(DATA) - 2)
            assert run.stats.recompile_reasons == ["AveragedModel's first update changed"]
    eager, compiled = results
    assert eager["n_averaged"].item() == compiled["n_averaged"].item() == len(DATA)
    for k in eager:
        np.testing.assert_allclose(compiled[k].numpy(), eager[k].numpy(), rtol=1e-12, err_msg=k)
