"""A model saved by PyTorch (`safetensors.torch.save_file(model.state_dict())`) loads into the
equivalent nabla model and gives the same outputs, and the reverse."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

if torch is not None:
    from safetensors.torch import load_file, save_file
else:
    load_file = None
    save_file = None


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.layers = nn.Sequential(nn.Linear(4 * 4 * 4, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
        self.emb = nn.Embedding(5, 3)

    def forward(self, x, idx):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.layers(h.flatten(1)) + self.emb(idx)


def torch_net():
    class TNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.layers = torch.nn.Sequential(
                torch.nn.Linear(64, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 3)
            )
            self.emb = torch.nn.Embedding(5, 3)

        def forward(self, x, idx):
            h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.layers(h.flatten(1)) + self.emb(idx)

    return TNet()


def _inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 1, 8, 8)).astype(np.float32), np.array([1, 4])


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
def test_pytorch_checkpoint_loads_into_nabla_with_same_outputs(tmp_path):
    ref = torch_net()
    x, idx = _inputs()
    ref.train()
    ref(torch.from_numpy(x), torch.from_numpy(idx))  # move the running stats off their defaults
    ref.eval()
    save_file(ref.state_dict(), str(tmp_path / "torch.safetensors"))
    model = Net()
    assert model.load_weights(tmp_path / "torch.safetensors") == ([], [])
    model.eval()
    want = ref(torch.from_numpy(x), torch.from_numpy(idx)).detach().numpy()
    np.testing.assert_allclose(model(nb.tensor(x), nb.tensor(idx)).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
def test_nabla_checkpoint_loads_into_pytorch_with_same_outputs(tmp_path):
    model = Net()
    x, idx = _inputs()
    model(nb.tensor(x), nb.tensor(idx))  # training-mode forward updates the running stats
    model.eval()
    model.save_weights(tmp_path / "nabla.safetensors")
    ref = torch_net()
    ref.load_state_dict(load_file(str(tmp_path / "nabla.safetensors")), strict=True)
    ref.eval()
    want = ref(torch.from_numpy(x), torch.from_numpy(idx)).detach().numpy()
    np.testing.assert_allclose(model(nb.tensor(x), nb.tensor(idx)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_save_load_round_trip_restores_outputs_without_torch(tmp_path):
    model, other = Net(), Net()
    x, idx = _inputs()
    model.eval()
    other.eval()
    nn.save(model, tmp_path / "m.safetensors")
    other.load_weights(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(
        model(nb.tensor(x), nb.tensor(idx)).numpy(), other(nb.tensor(x), nb.tensor(idx)).numpy()
    )
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint at all")
    before = other.layers[0].weight.numpy().copy()
    with pytest.raises(ValueError, match="bad.safetensors"):
        other.load_weights(tmp_path / "bad.safetensors")
    np.testing.assert_array_equal(other.layers[0].weight.numpy(), before)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
def test_load_state_dict_takes_a_torch_state_dict_directly():
    tm, m = torch.nn.Linear(3, 2), nn.Linear(3, 2)
    assert m.load_state_dict(tm.state_dict()) == ([], [])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(m(nb.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    # bfloat16, which NumPy cannot hold, is read as its bits, then cast to the module's float32 (torch's copy_)
    half = {k: v.to(torch.bfloat16) for k, v in tm.state_dict().items()}
    m.load_state_dict(half)
    assert m.weight.dtype == nb.float32
    np.testing.assert_array_equal(m.weight.numpy(), half["weight"].float().numpy())
    with pytest.raises(RuntimeError, match="weight: expected a nabla Tensor or a NumPy array, got builtins.str"):
        m.load_state_dict({"weight": "w", "bias": tm.bias})
