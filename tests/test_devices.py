"""Device placement semantics, checked without an accelerator on the NumPy executor.

The fixture makes two accelerators "available" (their driver device is the CPU, which the NumPy
executor never uses), so the rules (which device an op's output is on, where a program runs,
what the cache keys hold) are tested here; tests/test_gpu.py runs them on a real accelerator.
"""

from __future__ import annotations

import numpy as np
import pytest
from max.driver import CPU, Buffer

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.common.devices import CPU_DEVICE, as_device
from nabla.core.graph import artifacts, executors
from nabla.core.graph.program import collect, describe_key_difference
from nabla.ops import mojo_kernels

GPU0, GPU1 = as_device("gpu:0"), as_device("gpu:1")


@pytest.fixture(autouse=True)
def _two_accelerators(monkeypatch):
    for device in (GPU0, GPU1):
        monkeypatch.setitem(executors._DRIVER_DEVICES, device, CPU())


def _on(device, array) -> nb.Tensor:
    return nb.tensor(np.asarray(array, np.float32), device=device)


def test_device_names_parse_to_one_shared_object():
    assert as_device("cuda") is as_device("gpu:0") is as_device(" GPU ") is GPU0
    assert as_device("cuda:1") is GPU1 and str(GPU1) == "gpu:1" and GPU1.is_accelerator
    assert as_device("cpu") is as_device("cpu:0") is CPU_DEVICE and not CPU_DEVICE.is_accelerator
    assert as_device(nb.Device("gpu", 1)) is GPU1 and as_device(1) is GPU1  # an int: torch.device(1)
    for bad in ("tpu", "cpu:1", "gpu:x", "cuda:-1"):
        with pytest.raises(ValueError, match="device must be 'cpu', 'gpu', 'gpu:N' or 'cuda:N'"):
            as_device(bad)


def test_an_accelerator_operand_puts_the_result_there():
    x, w = _on(CPU_DEVICE, [[1.0, 2.0]]), _on(GPU0, [[3.0], [4.0]])
    y = nb.relu(x @ w) + 1.0
    assert y.device is GPU0 and (x * 2).device is CPU_DEVICE
    np.testing.assert_allclose(y.numpy(), [[12.0]])
    with pytest.raises(ValueError, match=r"add: expected all tensors on one accelerator, got .*gpu:0 and gpu:1"):
        _on(GPU0, [1.0]) + _on(GPU1, [1.0])


def test_the_program_runs_where_its_accelerator_values_are_and_is_keyed_by_it():
    x = _on(CPU_DEVICE, [1.0, 2.0])
    cpu_key = collect([nb.exp(x)._impl]).key
    on_gpu = collect([nb.exp(_on(GPU0, [1.0, 2.0]))._impl])
    assert on_gpu.device is GPU0 and on_gpu.to_program().device is GPU0
    assert on_gpu.key[:3] == cpu_key and on_gpu.key[3] is GPU0
    assert describe_key_difference(on_gpu.key, cpu_key) == "device cpu:0 -> gpu:0"
    # a CPU copy of an accelerator's value is computed there (its input lives there)
    back = _on(GPU0, [1.0, 2.0]).exp().requires_grad_(False)
    assert collect([back.cpu()._impl]).device is GPU0


def test_to_copies_realized_tensors_to_the_accelerator_at_once():
    x = nb.tensor(np.arange(3, dtype=np.float32))
    assert x.to("cpu") is x and x.cpu() is x and not x.is_cuda
    moved = x.to(_on(GPU0, [0.0]))  # `to(other)` takes the other's device (and dtype)
    assert moved.device is GPU0 and moved.is_cuda
    # uploaded now, as PyTorch copies (the fixture's accelerator is the host: a Buffer there)
    assert type(moved._impl.data) is Buffer and type(x._impl.data) is np.ndarray
    made = nb.tensor(np.arange(3, dtype=np.float32), device="gpu")  # a factory's device= copies too
    assert made.device is GPU0 and type(made._impl.data) is Buffer
    np.testing.assert_array_equal(made.numpy(), [0.0, 1.0, 2.0])
    assert moved.to(nb.float64).device is GPU0 and moved.to(nb.float64).dtype == nb.float64
    back = moved.cpu()
    assert back.device is CPU_DEVICE and back.numpy().tolist() == [0.0, 1.0, 2.0]
    # a value autodiff records is moved by a copy op, so gradients flow through it
    w = nb.tensor(np.ones(3, np.float32), requires_grad=True)
    on = w.to(GPU0)
    assert on.device is GPU0 and not on._impl.is_realized
    (on * 3.0).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0, 3.0])


def test_factories_and_like_functions_place_their_result():
    for make in (lambda: nb.zeros(2), lambda: nb.arange(3), lambda: nb.tensor([1.0])):
        assert make().device is CPU_DEVICE
    x = _on(GPU0, [1.0, 2.0])
    for like in (nb.zeros_like(x), nb.ones_like(x), nb.full_like(x, 2.0), nb.empty_like(x)):
        assert like.device is GPU0
    with pytest.raises(ValueError, match="arange: device gpu:63 is not available"):
        nb.arange(3, device="cuda:63")
    with pytest.raises(ValueError, match="to\\(\\): device gpu:63 is not available"):
        x.to("gpu:63")


def test_module_to_moves_parameters_in_place():
    net = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(net.parameters())
    assert net.to("cuda") is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(t.device is GPU0 for _, t in net._all_tensors())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    out = net(nb.tensor(np.ones((4, 3), np.float32)))  # a CPU batch joins the model's device
    assert out.device is GPU0
    net.cpu()
    assert all(t.device is CPU_DEVICE for _, t in net._all_tensors())
    with pytest.raises(ValueError, match="device gpu:63 is not available"):
        net.to("cuda:63")


def test_a_compiled_function_retraces_when_a_captured_parameter_moves():
    lin = nn.Linear(3, 2)
    forward = nb.compile(lambda x: lin(x))
    x = nb.tensor(np.ones((4, 3), np.float32))
    assert forward(x).device is CPU_DEVICE
    lin.to("gpu")
    out = forward(x)
    assert out.device is GPU0 and forward.stats.recompile_reasons[-1].endswith("changed device")
    np.testing.assert_allclose(out.numpy(), lin(x).numpy(), rtol=1e-6)


def test_loading_a_state_dict_keeps_the_model_on_its_device():
    net = nn.Linear(3, 2).to("gpu")
    state = {k: v.cpu() for k, v in nn.Linear(3, 2).state_dict().items()}
    net.load_state_dict(state)
    assert net.weight.device is GPU0 and net.bias.device is GPU0
    np.testing.assert_array_equal(net.weight.numpy(), state["weight"].numpy())


def test_optimizer_state_and_hyperparameters_live_on_the_parameters_accelerator():
    """Nothing of the optimizer goes back and forth between the host and the device each step:
    its state (made, stepped or loaded) and the scheduled hyperparameters (graph inputs) stay
    with the parameters."""
    net = nn.Linear(4, 3).to("gpu")
    opt = optim.Adam(net.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = nb.tensor(np.ones((2, 4), np.float32), device="gpu"), nb.tensor(np.array([0, 2]))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        assert all(v.device is GPU0 for p in net.parameters() for v in opt.state[p].values())
        scalars = opt.param_groups[0]._scalars
        assert sorted(scalars) == ["beta1", "beta2", "lr"] and all(t.device is GPU0 for _, t in scalars.values())
    assert scalars["lr"][1].item() == opt.param_groups[0]["lr"] == 1e-2 * 0.25  # set by the scheduler
    other = optim.Adam(nn.Linear(4, 3).to("gpu").parameters(), lr=1e-2)
    other.load_state_dict(opt.state_dict())  # loaded state goes where the parameters are
    assert all(v.device is GPU0 for state in other.state.values() for v in state.values())
    net.cpu()  # the model moved back: the scalars follow at the next step
    opt.zero_grad()
    F.cross_entropy(net(x.cpu()), y).backward()
    opt.step()
    assert all(t.device is CPU_DEVICE for _, t in opt.param_groups[0]._scalars.values())


def test_a_model_for_an_accelerator_is_stored_under_its_own_name():
    x = _on(CPU_DEVICE, [1.0, 2.0])
    cpu, gpu = collect([nb.exp(x)._impl]), collect([nb.exp(x.to("gpu"))._impl])
    ops = [n.op for n in cpu.nodes]
    names = artifacts.digest(cpu.key, ops), artifacts.digest(gpu.key, ops)
    assert None not in names and names[0] != names[1]
    assert artifacts.stable_text(gpu.key).endswith("Dgpu:0,)")


def test_an_accelerators_program_does_not_load_nablas_cpu_kernels():
    def program(device: str):
        x = nb.tensor(np.ones((1, 2, 4, 4), np.float32)).to(device)
        y, pullback = nb.vjp(lambda v: F.max_pool2d(v, 2), x)
        (dx,) = pullback(nb.ones_like(y))
        return dx, collect([dx._impl]).to_program()

    (on_cpu, cpu), (on_gpu, gpu) = program("cpu"), program("gpu:0")
    assert executors.custom_extensions(cpu) == [mojo_kernels.package()]
    assert executors.custom_extensions(gpu) == []
    nb.evaluate(on_cpu, on_gpu)  # leave nothing pending (the NumPy executor runs both)


def test_layers_made_with_a_device_keep_every_tensor_there():
    layers = [
        nn.Linear(3, 4, device="cuda:1"),
        nn.Bilinear(2, 3, 4, device=GPU1),
        nn.Conv2d(1, 2, 3, device="gpu:1"),
        nn.ConvTranspose2d(2, 1, 3, device="gpu:1"),
        nn.BatchNorm1d(4, device="gpu:1"),
        nn.LayerNorm(4, device="gpu:1"),
        nn.RMSNorm(4, device="gpu:1"),
        nn.GroupNorm(2, 4, device="gpu:1"),
        nn.Embedding(5, 4, padding_idx=0, device="gpu:1"),
        nn.PReLU(device="gpu:1"),
        nn.MultiheadAttention(4, 2, batch_first=True, device="gpu:1"),
        nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, device="gpu:1"),
        nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, device="gpu:1"),
        nn.LSTM(3, 4, device="gpu:1"),
        nn.GRUCell(3, 4, device="gpu:1"),
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [4], device="gpu:1"),
    ]
    for layer in layers:
        tensors = [*layer.parameters(), *layer.buffers()]
        assert tensors and all(t.device is GPU1 for t in tensors), type(layer).__name__
    # init writes in place on the device; the forward runs there
    linear = layers[0]
    nn.init.ones_(linear.weight)
    assert linear.weight.device is GPU1 and linear(nb.ones(2, 3)).device is GPU1
    np.testing.assert_allclose(linear(nb.ones(2, 3)).numpy(), np.tile(3.0 + linear.bias.numpy(), (2, 1)), rtol=1e-6)
    norm = layers[4]
    norm.reset_running_stats()
    assert all(t.device is GPU1 for t in norm.buffers())


def test_lazy_layers_materialize_on_their_device_and_a_missing_device_is_named():
    lazy = nn.LazyLinear(3, device="gpu:1")
    assert lazy(nb.ones(2, 5)).device is GPU1 and lazy.weight.device is GPU1 and lazy.weight.shape == (3, 5)
    norm = nn.LazyBatchNorm1d(device="gpu:1")
    norm(nb.ones(4, 3))
    assert all(t.device is GPU1 for t in [*norm.parameters(), *norm.buffers()])
    with pytest.raises(ValueError, match=r"device argument: device gpu:5 is not available"):
        nn.Linear(2, 2, device="gpu:5")


def test_index_checks_read_only_values_the_host_has():
    """Eager bounds checks of class targets and embedding indices read values the host holds; a
    tensor on an accelerator would be copied back, waiting for the device every step, so there
    the check is left to the device as in PyTorch's CUDA kernels. A CPU tensor is still checked
    at the call."""
    logits = _on(GPU0, np.zeros((2, 3)))
    with pytest.raises(IndexError, match="cross_entropy: target 3 is out of bounds for 3 classes"):
        F.cross_entropy(logits, nb.tensor(np.array([0, 3])))
    F.cross_entropy(logits, nb.tensor(np.array([0, 3]), device=GPU0))  # recorded, not read back
    loss = F.cross_entropy(logits, nb.tensor(np.array([0, 2]), device=GPU0))
    assert loss.device is GPU0 and np.isclose(loss.item(), np.log(3.0))
    table = _on(GPU0, np.arange(8.0).reshape(4, 2))
    with pytest.raises(IndexError, match="embedding: index 4 is out of range for a table of 4 rows"):
        F.embedding(nb.tensor(np.array([4])), table)
    F.embedding(nb.tensor(np.array([4]), device=GPU0), table)
    np.testing.assert_allclose(F.embedding(nb.tensor(np.array([3]), device=GPU0), table).numpy(), [[6.0, 7.0]])
