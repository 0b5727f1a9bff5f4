"""nabla_nn.save / load with file objects (io.BytesIO, open files), as torch.save / torch.load
take them; paths keep the atomic write. Loading never unpickles."""

from __future__ import annotations

import io
import os
import pickle

import numpy as np
import pytest
import safetensors.numpy as st_numpy
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
from nabla_nn import serialization as S

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_bytesio_round_trip_of_a_module_and_a_nested_checkpoint():
    model = nn.Linear(3, 2)
    buf = io.BytesIO()
    nn.save(model, buf)
    buf.seek(0)
    state = nn.load(buf)
    assert list(state) == ["weight", "bias"]
    np.testing.assert_array_equal(state["weight"].numpy(), model.weight.numpy())
    buf = io.BytesIO()
    nn.save({"model": {"w": nb.tensor(W)}, "epoch": 3}, buf, metadata={"who": "me"})
    assert S.load_metadata(io.BytesIO(buf.getvalue()))["who"] == "me"
    back = nn.load(io.BytesIO(buf.getvalue()))
    assert back["epoch"] == 3
    np.testing.assert_array_equal(back["model"]["w"].numpy(), W)


def test_file_objects_are_read_and_written_at_their_position(tmp_path):
    path = tmp_path / "two.bin"
    with open(path, "wb") as f:
        f.write(b"HEAD")
        nn.save({"w": nb.tensor(W)}, f)
        assert not f.closed  # left open, as torch.save leaves it
    with open(path, "rb") as f:
        assert f.read(4) == b"HEAD"
        np.testing.assert_array_equal(nn.load(f)["w"].numpy(), W)
    assert st_numpy.load(path.read_bytes()[4:])["w"].tolist() == W.tolist()  # the safetensors package agrees


def test_paths_are_still_written_atomically(tmp_path):
    path = tmp_path / "m.safetensors"
    nn.save({"w": nb.tensor(W)}, path)
    nn.save({"w": nb.tensor(W + 1)}, str(path))
    assert os.listdir(tmp_path) == ["m.safetensors"]  # no temporary file left behind
    np.testing.assert_array_equal(nn.load(path)["w"].numpy(), W + 1)


def test_modules_load_weights_from_a_file_object():
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
    buf = io.BytesIO()
    nn.save(src, buf)
    buf.seek(0)
    S.load_into(dst, buf)
    np.testing.assert_array_equal(dst.weight.numpy(), src.weight.numpy())
    with pytest.raises(RuntimeError, match="loading <file object BytesIO>"):
        S.load_into(nn.Linear(4, 2), io.BytesIO(buf.getvalue()))


def test_bad_file_objects_are_named():
    with pytest.raises(ValueError, match="<file object BytesIO>: not a safetensors file"):
        nn.load(io.BytesIO(b"abc"))
    with pytest.raises(TypeError, match="binary file object"):
        nn.load(io.StringIO("{}"))
    with pytest.raises(TypeError, match="binary file object"):
        nn.save({"w": nb.tensor(W)}, io.StringIO())


def test_a_pickle_in_a_file_object_is_refused_without_unpickling(monkeypatch):
    def no_unpickling(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    blob = pickle.dumps({"w": W}, protocol=4)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)
    with pytest.raises(ValueError, match="PyTorch pickle checkpoint"):
        nn.load(io.BytesIO(blob))


@needs_torch
def test_torch_reads_what_nabla_wrote_to_a_buffer_and_back():
    import safetensors.torch as st_torch  # noqa: PLC0415 (needs torch)

    buf = io.BytesIO()
    nn.save({"w": nb.tensor(W)}, buf)
    assert torch.equal(st_torch.load(buf.getvalue())["w"], torch.tensor(W))
    data = st_torch.save({"v": torch.ones(2, 2, dtype=torch.float64)})
    assert nn.load(io.BytesIO(data))["v"].dtype == nb.float64
