"""nabla_nn.serialization: safetensors written and parsed by our own code.

Files are checked byte by byte with a tiny independent parser here, against the installed
`safetensors` package (NumPy and, where installed, PyTorch flavours), both directions.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
from collections import OrderedDict

import numpy as np
import pytest
import safetensors.numpy as st_numpy
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_optim as optim
from nabla_nn import serialization as S
from nabla_nn.parameter import Parameter

if torch is not None:
    import safetensors.torch as st_torch
else:
    st_torch = None


# -- helpers ----------------------------------------------------------------------------------------
def _parse(path):
    """(header dict, data bytes) of a safetensors file, parsed independently of our reader."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :], n


def _write_raw(path, header, data: bytes, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def _bf16(values):
    """A bfloat16 tensor holding exactly these (bf16-representable) float32 values."""
    return nb.Tensor.from_numpy(np.asarray(values, np.float32), dtype=nb.bfloat16)


def _storage_bits(t):
    """bf16 bit patterns of a realized bf16 tensor on the NumPy executor (float32 storage)."""
    assert isinstance(t._impl.data, np.ndarray) and t._impl.data.dtype == np.float32
    return S.float32_to_bf16_bits(t._impl.data)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = Parameter(nb.tensor(np.arange(6, dtype=np.float32).reshape(3, 2)))
        self.head = nn.Module()
        self.head.weight = self.emb  # tied: one Parameter under two names
        self.head.bias = Parameter(nb.tensor(np.array([0.5, -0.5], np.float32)))
        self.register_buffer("steps", nb.tensor(np.array(7)))


# -- bfloat16 conversions ---------------------------------------------------------------------------
def test_bf16_conversions_exact_on_every_bit_pattern():
    bits = np.arange(65536, dtype=np.uint16)
    values = S.bf16_bits_to_float32(bits)
    assert values.dtype == np.float32
    assert np.array_equal(values.view(np.uint32) >> 16, bits)  # the top half, low half zero
    assert np.array_equal(values.view(np.uint32) & 0xFFFF, np.zeros(65536, np.uint32))
    assert np.array_equal(S.float32_to_bf16_bits(values), bits)  # NaN payloads included


def test_float32_to_bf16_rounds_to_nearest_even():
    one = 1.0
    ulp = 2.0**-7  # bf16 spacing in [1, 2)
    x = np.array([one + ulp / 2, one + 1.5 * ulp, one + ulp / 2 + 2.0**-20, -(one + ulp / 2), 3.4e38], np.float32)
    got = S.bf16_bits_to_float32(S.float32_to_bf16_bits(x))
    assert got.tolist()[:4] == [one, one + 2 * ulp, one + ulp, -one]  # ties to even, above-tie up
    assert np.isinf(got[4])  # rounds past the largest bf16, as PyTorch does
    nan = np.array([0x7F800001], np.uint32).view(np.float32)  # its top half alone would be inf
    assert np.isnan(S.bf16_bits_to_float32(S.float32_to_bf16_bits(nan)))
    assert S.float32_to_bf16_bits(np.float32(2.0)).shape == ()


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_float32_to_bf16_matches_torch():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(50000) * 10.0 ** rng.integers(-40, 38, 50000)).astype(np.float32)
    ref = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(S.float32_to_bf16_bits(x), ref)


# -- round trips ------------------------------------------------------------------------------------
def _all_dtypes():
    rng = np.random.default_rng(1)
    return OrderedDict(
        [
            ("f32", nb.tensor(rng.standard_normal((3, 4)).astype(np.float32))),
            ("f64", nb.tensor(rng.standard_normal(5))),
            ("f16", nb.tensor(np.array([1.5, -2.25, 65504.0, 6e-8, np.inf, -0.0], np.float16))),
            ("bf16", _bf16([1.0, -3.140625, 1e-38, 3.3895314e38, -0.0])),
            ("i64", nb.tensor(np.array([-(2**62), 0, 2**62 + 1], np.int64))),
            ("i32", nb.tensor(np.array([[-7, 2**31 - 1]], np.int32))),
            ("bool", nb.tensor(np.array([True, False, True]))),
            ("scalar", nb.tensor(2.5)),
            ("empty", nb.zeros(0, 3)),
        ]
    )


def test_round_trip_every_dtype_bit_exact(tmp_path):
    state = _all_dtypes()
    path = tmp_path / "all.safetensors"
    nn.save(state, path)
    out = nn.load(path)
    assert list(out) == list(state)  # our files keep the state_dict's order
    for name, t in state.items():
        got = out[name]
        assert isinstance(got, nb.Tensor) and got.is_realized and not got.requires_grad
        assert got.dtype == t.dtype and got.shape == t.shape, name
        if t.dtype == nb.bfloat16:
            assert np.array_equal(_storage_bits(got), _storage_bits(t))
        else:
            assert got.numpy().tobytes() == t.numpy().tobytes(), name


def test_f16_and_bf16_stored_bits(tmp_path):
    """The bytes in the file are the tensors' own 16-bit patterns (no float32 detour)."""
    f16 = np.array([0x0001, 0x3C00, 0x7BFF, 0xFC00, 0x7E01], np.uint16)  # subnormal .. NaN payload
    bf16_bits = np.arange(0, 65536, 7, dtype=np.uint16)
    path = tmp_path / "half.safetensors"
    bf = S._bf16_tensor(bf16_bits, bf16_bits.shape)
    nn.save({"h": nb.Tensor.from_numpy(f16.view(np.float16)), "b": bf}, path)
    header, data, _ = _parse(path)
    assert header["h"]["dtype"] == "F16" and header["b"]["dtype"] == "BF16"
    b0, b1 = header["b"]["data_offsets"]
    h0, h1 = header["h"]["data_offsets"]
    assert np.array_equal(np.frombuffer(data[b0:b1], "<u2"), bf16_bits)
    assert np.array_equal(np.frombuffer(data[h0:h1], "<u2"), f16)
    out = nn.load(path)
    assert np.array_equal(out["h"].numpy().view(np.uint16), f16)
    assert np.array_equal(_storage_bits(out["b"]), bf16_bits)


def test_file_layout(tmp_path):
    path = tmp_path / "layout.safetensors"
    nn.save({"w": nb.ones(2, 3), "h": nb.ones(3, dtype=nb.float16), "n": np.arange(2)}, path, metadata={"epoch": "3"})
    header, data, n = _parse(path)
    raw = open(path, "rb").read()
    assert n % 8 == 0 and raw[8 : 8 + n].rstrip(b" ").endswith(b"}")
    assert header["__metadata__"] == {"format": "pt", "epoch": "3"}
    spans = sorted(tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__")
    assert spans[0][0] == 0 and spans[-1][1] == len(data)  # contiguous, nothing after
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    for v in header.values():  # every tensor is aligned to its element size
        if "dtype" in v:
            assert v["data_offsets"][0] % {"F32": 4, "F16": 2, "I64": 8}[v["dtype"]] == 0
    assert header["n"] == {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}
    assert S.load_metadata(path) == {"format": "pt", "epoch": "3"}


def test_numpy_inputs_and_narrow_ints(tmp_path):
    path = tmp_path / "np.safetensors"
    arrays = {
        "a": np.arange(6, dtype=">f4").reshape(2, 3),  # big-endian input is stored little-endian
        "t": np.arange(12, dtype=np.float64).reshape(3, 4).T,  # non-contiguous
        "u8": np.array([0, 255], np.uint8),
        "i8": np.array([-128, 127], np.int8),
        "i16": np.array([-300, 300], np.int16),
        "s": np.float32(1.25),
    }
    nn.save(arrays, path)
    ref = st_numpy.load_file(str(path))
    for k, v in arrays.items():
        assert np.array_equal(ref[k], v) and ref[k].shape == np.shape(v), k
    assert ref["u8"].dtype == np.uint8 and ref["i16"].dtype == np.int16
    out = nn.load(path)
    assert out["a"].dtype == nb.float32 and np.array_equal(out["a"].numpy(), arrays["a"])
    assert out["t"].numpy().tolist() == arrays["t"].tolist()
    assert out["u8"].dtype == nb.uint8 and out["u8"].numpy().tolist() == [0, 255]
    assert out["i8"].dtype == nb.int8 and out["i16"].dtype == nb.int16
    assert out["i8"].numpy().tolist() == [-128, 127] and out["i16"].numpy().tolist() == [-300, 300]
    assert out["s"].shape == () and out["s"].item() == 1.25


def test_reads_files_written_by_safetensors_numpy(tmp_path):
    path = tmp_path / "ref.safetensors"
    ref = {"x": np.linspace(0, 1, 7, dtype=np.float32), "k": np.array([[1, 2]], np.int32), "m": np.array([True])}
    st_numpy.save_file(ref, str(path), metadata={"who": "numpy"})
    out = nn.load(path)
    assert set(out) == set(ref)
    for k, v in ref.items():
        assert out[k].numpy().tobytes() == v.tobytes() and out[k].shape == v.shape
    assert S.load_metadata(path) == {"who": "numpy"}


def test_pending_tensors_are_evaluated_once(tmp_path):
    x = nb.tensor(np.arange(4, dtype=np.float32))
    a, b = x + 1, x * 2
    assert not a.is_realized and not b.is_realized
    before = nb.cache_info().executions
    nn.save({"a": a, "b": b}, tmp_path / "p.safetensors")
    assert nb.cache_info().executions == before + 1
    out = nn.load(tmp_path / "p.safetensors")
    assert out["a"].numpy().tolist() == [1, 2, 3, 4] and out["b"].numpy().tolist() == [0, 2, 4, 6]


# -- tied weights -----------------------------------------------------------------------------------
def test_tied_tensor_written_once_and_restored(tmp_path):
    w = nb.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    path = tmp_path / "tied.safetensors"
    nn.save(OrderedDict([("z.weight", w), ("a.weight", w), ("other", w.data), ("b", nb.ones(1))]), path)
    header, _, _ = _parse(path)
    names = [k for k in header if k != "__metadata__"]
    assert names == ["a.weight", "b"]  # the first name in sorted order is kept
    aliases = json.loads(header["__metadata__"][S.ALIASES_KEY])
    assert aliases == {"z.weight": "a.weight", "other": "a.weight"}  # `.data` shares the storage
    assert set(st_numpy.load_file(str(path))) == {"a.weight", "b"}
    out = nn.load(path)
    assert list(out) == ["a.weight", "b", "z.weight", "other"]
    assert out["z.weight"] is out["a.weight"] and out["other"] is out["a.weight"]


def test_equal_values_in_separate_storage_are_not_tied(tmp_path):
    path = tmp_path / "untied.safetensors"
    a = np.ones(3, np.float32)
    nn.save({"a": a, "b": a.copy(), "c": a[:2], "e1": np.zeros(0), "e2": np.zeros(0)}, path)
    header, _, _ = _parse(path)
    assert S.ALIASES_KEY not in header["__metadata__"]
    assert {"a", "b", "c", "e1", "e2"} <= set(header)


def test_module_save_and_load_into_with_tied_weights(tmp_path):
    src, dst = Tied(), Tied()
    with nb.no_grad():
        src.emb.mul_(3.0)  # pending until save evaluates it
        dst.head.bias.fill_(0.0)
    path = tmp_path / "model.safetensors"
    nn.save(src, path)
    header, _, _ = _parse(path)
    assert set(header) - {"__metadata__"} == {"emb", "head.bias", "steps"}
    assert json.loads(header["__metadata__"][S.ALIASES_KEY]) == {"head.weight": "emb"}
    result = S.load_into(dst, path)
    assert tuple(result) == ([], [])
    assert np.array_equal(dst.emb.numpy(), 3 * np.arange(6, dtype=np.float32).reshape(3, 2))
    assert dst.head.weight is dst.emb and dst.emb.requires_grad
    assert dst.head.bias.numpy().tolist() == [0.5, -0.5] and dst.steps.item() == 7


def test_load_into_fills_tied_names_missing_from_the_file(tmp_path):
    """A file written without aliases (e.g. by safetensors.torch.save_model) still loads strictly."""
    src = Tied()
    path = tmp_path / "noalias.safetensors"
    st_numpy.save_file({k: v.numpy() for k, v in src.state_dict().items() if k != "head.weight"}, str(path))
    dst = Tied()
    with nb.no_grad():
        dst.emb.zero_()
    assert tuple(dst.load_weights(path)) == ([], [])
    assert np.array_equal(dst.head.weight.numpy(), src.emb.numpy())
    untied = nn.Module()
    untied.emb = Parameter(nb.zeros(3, 2))
    untied.head = nn.Module()
    untied.head.weight = Parameter(nb.zeros(3, 2))  # not tied: it is really missing
    with pytest.raises(RuntimeError, match="head.weight"):
        S.load_into(untied, path)


# -- atomic writes ----------------------------------------------------------------------------------
def test_crash_mid_save_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"w": nb.ones(4)}, path)
    old = path.read_bytes()
    calls = []

    def failing_write(file, data):
        calls.append(len(data))
        if len(calls) == 2:
            file.write(bytes(data)[:3])  # part of a tensor reaches the temporary file
            raise OSError("disk full")
        file.write(data)

    monkeypatch.setattr(S, "_write_bytes", failing_write)
    with pytest.raises(OSError, match="disk full"):
        nn.save({"w": nb.zeros(1000), "v": nb.zeros(10)}, path)
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors"]  # no temporary file left behind
    monkeypatch.undo()
    nn.save({"w": nb.zeros(2)}, path)
    assert nn.load(path)["w"].numpy().tolist() == [0, 0]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors"]


def test_save_replaces_through_a_symlink(tmp_path):
    real = tmp_path / "real.safetensors"
    link = tmp_path / "latest.safetensors"
    nn.save({"w": nb.ones(1)}, real)
    link.symlink_to(real)
    nn.save({"w": nb.zeros(1)}, link)
    assert link.is_symlink() and nn.load(real)["w"].item() == 0.0


def test_save_errors(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        nn.save({"w": nb.ones(1)}, tmp_path / "nope" / "x.safetensors")
    with pytest.raises(TypeError, match="dict keys must be str or int, got 1.5"):
        nn.save({1.5: nb.ones(1)}, path)  # (int keys and lists make a nested checkpoint)
    with pytest.raises(TypeError, match="'w.0' is a builtins.complex"):
        nn.save({"w": [1j]}, path)
    with pytest.raises(TypeError, match="'c'.*complex"):
        nn.save({"c": np.zeros(2, np.complex64)}, path)
    with pytest.raises(TypeError, match="Module or a mapping"):
        nn.save(42, path)
    with pytest.raises(ValueError, match="reserved"):
        nn.save({"w": nb.ones(1)}, path, metadata={S.ALIASES_KEY: "{}"})
    with pytest.raises(ValueError, match="__metadata__"):
        nn.save({"__metadata__": nb.ones(1)}, path)
    with pytest.raises(TypeError, match="str -> str"):
        nn.save({"w": nb.ones(1)}, path, metadata={"epoch": 3})
    assert not path.exists() and os.listdir(tmp_path) == []


# -- bad files --------------------------------------------------------------------------------------
GOOD = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize(
    ("header", "data", "problem"),
    [
        ({"w": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}, bytes(8), "unsupported dtype 'F33'"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8), "needs 12 bytes"),
        ({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8), "shape must be"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8]}}, bytes(8), "data_offsets must be"),
        ({"w": {"dtype": "F32", "shape": [2]}}, bytes(8), "expected an object with"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, bytes(8), "ends at byte 16"),
        (
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": GOOD["w"] | {"data_offsets": [4, 12]}},
            bytes(12),
            "overlap",
        ),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12), "belong to no tensor"),
        (GOOD, bytes(12), "4 bytes after"),
        (GOOD | {"__metadata__": {"epoch": 3}}, bytes(8), "__metadata__ must map str"),
        (GOOD | {"__metadata__": {S.ALIASES_KEY: '{"v": "missing"}'}}, bytes(8), "nabla.aliases"),
        ({"b": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x07", "bytes other than 0 and 1"),
        ([1, 2], b"", "not a JSON object"),
    ],
)
def test_corrupt_headers_raise_value_error(tmp_path, header, data, problem):
    path = tmp_path / "bad.safetensors"
    _write_raw(path, header, data)
    with pytest.raises(ValueError, match=problem) as info:
        nn.load(path)
    assert str(path) in str(info.value)


def test_not_safetensors_and_truncated_files(tmp_path):
    path = tmp_path / "f.safetensors"
    with pytest.raises(FileNotFoundError, match="no such safetensors file.*f.safetensors"):
        nn.load(path)
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="only 3 bytes"):
        nn.load(path)
    path.write_bytes(b"PK\x03\x04" + bytes(100))  # a zip archive, as torch.save writes
    with pytest.raises(ValueError, match="PyTorch pickle checkpoint"):
        nn.load(path)
    path.write_bytes(b"\x01\x02" + bytes(100))
    with pytest.raises(ValueError, match="header length"):
        nn.load(path)
    path.write_bytes(struct.pack("<Q", 4) + b"{no}")
    with pytest.raises(ValueError, match="not valid UTF-8 JSON"):
        nn.load(path)
    path.write_bytes(struct.pack("<Q", 2) + b"\xff\xfe")
    with pytest.raises(ValueError, match="not valid UTF-8 JSON"):
        nn.load(path)
    path.write_bytes(struct.pack("<Q", 22) + b'{"a": {}, "a": {}}    ')
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        nn.load(path)
    nn.save({"w": nb.ones(100), "v": nb.ones(3)}, path)
    full = path.read_bytes()
    for cut in (len(full) - 1, len(full) - 300, 20):
        path.write_bytes(full[:cut])
        with pytest.raises(ValueError, match=r"truncated|header length") as info:
            nn.load(path)
        assert str(path) in str(info.value)


def test_bad_file_leaves_module_unchanged(tmp_path):
    model = Tied()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    path = tmp_path / "bad.safetensors"
    nn.save({"emb": nb.zeros(3, 2), "head.bias": nb.zeros(2), "steps": nb.tensor(np.array(1))}, path)
    path.write_bytes(path.read_bytes()[:-4])  # truncated
    with pytest.raises(ValueError, match="truncated"):
        model.load_weights(path)
    nn.save({"emb": nb.zeros(3, 2), "head.bias": nb.zeros(5), "steps": nb.tensor(np.array(1))}, path)
    with pytest.raises(RuntimeError, match="head.bias"):  # wrong shape: rejected before any change
        model.load_weights(path)
    after = model.state_dict()
    assert all(np.array_equal(after[k].numpy(), v) for k, v in before.items())


def test_load_into_non_strict_reports_keys(tmp_path):
    path = tmp_path / "partial.safetensors"
    nn.save({"emb": nb.ones(3, 2), "extra": nb.ones(1)}, path)
    model = Tied()
    with pytest.raises(RuntimeError, match="extra"):
        S.load_into(model, path)
    missing, unexpected = S.load_into(model, path, strict=False)
    assert sorted(missing) == ["head.bias", "steps"] and unexpected == ["extra"]
    assert model.head.weight.numpy().tolist() == [[1, 1]] * 3


# -- the MAX executor's bfloat16 storage (Buffer views only: nothing is compiled) --------------------
def test_bf16_max_buffer_storage_round_trip(tmp_path):
    bits = np.array([[0x3F80, 0xC040, 0x7FC1], [0x0001, 0x8000, 0xFF80]], np.uint16)
    path = tmp_path / "bf.safetensors"
    _write_raw(path, {"x": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}, bits.tobytes())
    compiles = nb.cache_info().compiles
    nb.set_executor("max")
    try:
        x = nn.load(path)["x"]
        assert x.dtype == nb.bfloat16 and x.shape == (2, 3)
        storage = x._impl.data
        assert not isinstance(storage, np.ndarray) and storage.dtype == nb.bfloat16
        assert np.array_equal(S._bf16_buffer_bits(storage, (2, 3)), bits)
        nn.save({"x": x}, tmp_path / "again.safetensors")
    finally:
        nb.set_executor("numpy")
    assert (tmp_path / "again.safetensors").read_bytes()[-12:] == bits.tobytes()
    assert nb.cache_info().compiles == compiles


# -- PyTorch interop --------------------------------------------------------------------------------
def _torch_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    model.train()
    model(torch.randn(8, 4))  # moves the BatchNorm running stats and num_batches_tracked
    return model


@needs_torch
def test_torch_save_file_loads_here(tmp_path):
    state = dict(_torch_model().state_dict())
    state["half"] = torch.randn(3, 5).half()
    state["brain"] = torch.randn(4, 2).bfloat16()
    state["mask"] = torch.tensor([True, False])
    path = tmp_path / "torch.safetensors"
    st_torch.save_file(state, str(path))
    out = nn.load(path)
    assert set(out) == set(state)
    dtypes = {torch.float32: nb.float32, torch.float16: nb.float16, torch.bfloat16: nb.bfloat16}
    dtypes |= {torch.int64: nb.int64, torch.bool: nb.bool_}
    for k, v in state.items():
        assert out[k].dtype == dtypes[v.dtype] and out[k].shape == tuple(v.shape), k
        if v.dtype == torch.bfloat16:
            assert np.array_equal(_storage_bits(out[k]), v.view(torch.int16).numpy().view(np.uint16))
        else:
            assert np.array_equal(out[k].numpy(), v.numpy()), k
    assert out["1.num_batches_tracked"].item() == 1


@needs_torch
def test_our_files_load_in_torch_and_numpy(tmp_path):
    state = _all_dtypes()
    path = tmp_path / "ours.safetensors"
    nn.save(state, path)
    ref = st_torch.load_file(str(path))
    assert set(ref) == set(state)
    for k, t in state.items():
        if t.dtype == nb.bfloat16:
            assert ref[k].dtype == torch.bfloat16
            assert np.array_equal(ref[k].view(torch.int16).numpy().view(np.uint16), _storage_bits(t))
        else:
            assert np.array_equal(ref[k].numpy(), t.numpy()) and ref[k].shape == t.shape, k
    state.pop("bf16")  # NumPy has no bfloat16
    nn.save(state, path)
    ref_np = st_numpy.load_file(str(path))
    assert all(ref_np[k].tobytes() == t.numpy().tobytes() for k, t in state.items())


@needs_torch
def test_torch_loads_our_tied_module_into_a_tied_torch_model(tmp_path):
    path = tmp_path / "tied.safetensors"
    src = Tied()
    nn.save(src, path)
    ref = torch.nn.Module()
    ref.emb = torch.nn.Parameter(torch.zeros(3, 2))
    ref.head = torch.nn.Module()
    ref.head.weight = ref.emb
    ref.head.bias = torch.nn.Parameter(torch.zeros(2))
    ref.register_buffer("steps", torch.tensor(0))
    missing, unexpected = st_torch.load_model(ref, str(path))
    assert not missing and not unexpected
    assert np.array_equal(ref.head.weight.detach().numpy(), src.emb.numpy()) and int(ref.steps) == 7


def test_tensors_pickle_by_value_dtype_and_requires_grad():
    m = nn.Linear(3, 2)
    sd = m.state_dict()  # views of the parameters: pickled as plain tensors, not their bases
    back = pickle.loads(pickle.dumps(sd))
    for k, v in back.items():
        assert type(v) is nb.Tensor and v.dtype == sd[k].dtype
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    t = nb.tensor(np.array([1.5, -2.25], np.float32)).to(nb.bfloat16)
    assert pickle.loads(pickle.dumps(t)).dtype == nb.bfloat16
    leaf = nb.tensor([1.0, 2.0], requires_grad=True)
    assert pickle.loads(pickle.dumps(leaf)).requires_grad
    pending = nb.tensor([1.0, 2.0]) * 3  # computed first
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pending)).numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="non-leaf tensor that requires grad"):
        pickle.dumps(leaf * 2)
    with pytest.raises(TypeError, match="Parameters are not pickled"):
        pickle.dumps(m.weight)


@needs_torch
def test_torch_pickle_checkpoints_are_named_and_never_unpickled(tmp_path, monkeypatch):
    def no_unpickling(*args, **kwargs):
        raise AssertionError("a checkpoint was unpickled")

    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)
    state = torch.nn.Linear(3, 3).state_dict()
    for zipped in (True, False):  # today's zip format and the legacy bare pickle
        path = tmp_path / f"ckpt{zipped}.pt"
        torch.save(state, path, _use_new_zipfile_serialization=zipped)
        for read in (nn.load, S.load_metadata, nn.Linear(3, 3).load_weights):
            with pytest.raises(ValueError, match=r"PyTorch pickle checkpoint \(torch.save\), not a safetensors file"):
                read(path)


def test_a_safetensors_header_length_that_looks_like_a_pickle_still_loads(tmp_path):
    # 640 = 0x280: the file starts with bytes 0x80 0x02, like a pickle; the "{" at byte 8 tells them apart
    text = json.dumps({"__metadata__": {"k": "v"}}).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", 640) + text + b" " * (640 - len(text)))
    assert path.read_bytes()[:2] == b"\x80\x02"
    assert nn.load(path) == OrderedDict() and S.load_metadata(path) == {"k": "v"}


@needs_torch
def test_a_torch_state_dict_of_parameters_or_bfloat16_loads_directly():
    ref = torch.nn.Linear(3, 2)
    model = nn.Linear(3, 2)
    model.load_state_dict(ref.state_dict(keep_vars=True))  # Parameters that require grad
    np.testing.assert_array_equal(model.weight.numpy(), ref.weight.detach().numpy())
    ref_bf16 = torch.nn.Linear(3, 2).to(torch.bfloat16)
    model_bf16 = nn.Linear(3, 2).to(nb.bfloat16)
    model_bf16.load_state_dict(ref_bf16.state_dict())  # NumPy has no bfloat16: read as bits, exactly
    np.testing.assert_array_equal(model_bf16.weight.float().numpy(), ref_bf16.weight.float().detach().numpy())


def test_zero_d_bfloat16_tensors_round_trip(tmp_path):
    path = str(tmp_path / "scalars.safetensors")
    nn.save({"temp": nb.tensor(1.5).to(nb.bfloat16), "nan": nb.tensor(float("nan")).to(nb.bfloat16)}, path)
    loaded = nn.load(path)
    assert loaded["temp"].shape == () and loaded["temp"].dtype == nb.bfloat16
    assert loaded["temp"].item() == 1.5 and np.isnan(loaded["nan"].item())
    assert (loaded["temp"] * 2).item() == 3.0  # usable, not only loadable


def test_resaving_keeps_the_files_permissions_and_nested_headers_are_clear_errors(tmp_path):
    path = str(tmp_path / "m.safetensors")
    nn.save({"w": nb.ones(2)}, path)
    os.chmod(path, 0o600)
    nn.save({"w": nb.zeros(2)}, path)
    assert os.stat(path).st_mode & 0o777 == 0o600 and nn.load(path)["w"].tolist() == [0.0, 0.0]
    header = b'{"__metadata__":' + b"[" * 50000 + b"]" * 50000 + b"}"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
    with pytest.raises(ValueError, match="not a safetensors file: the header is not valid UTF-8 JSON"):
        nn.load(path)
    with pytest.raises(TypeError, match="save: 'a' is a builtins.object; a checkpoint holds tensors"):
        nn.save({"a": object()}, path)


@needs_torch
def test_torch_tensors_save_and_a_torch_bf16_optimizer_state_loads(tmp_path):
    path = str(tmp_path / "t.safetensors")
    nn.save({"a": torch.ones(2), "b": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)}, path)
    loaded = nn.load(path)
    assert (
        loaded["a"].tolist() == [1.0, 1.0] and loaded["b"].dtype == nb.bfloat16 and loaded["b"].tolist() == [1.5, -2.0]
    )
    tm = torch.nn.Linear(3, 2).to(torch.bfloat16)
    topt = torch.optim.Adam(tm.parameters())
    tm(torch.ones(1, 3, dtype=torch.bfloat16)).sum().backward()
    topt.step()
    m = nn.Linear(3, 2).to(nb.bfloat16)
    opt = optim.Adam(m.parameters())
    opt.load_state_dict(topt.state_dict())
    exp_avg = opt.state[m.weight]["exp_avg"]
    assert exp_avg.dtype == nb.bfloat16
    np.testing.assert_array_equal(exp_avg.numpy(), topt.state[tm.weight]["exp_avg"].float().numpy())


def test_a_nested_checkpoint_round_trips_like_torch_save(tmp_path):
    """`{"model": sd, "optimizer": opt.state_dict(), "epoch": 3}` as torch.save users write it:
    tensors under their dotted paths, the structure and other values as JSON metadata."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    for _ in range(2):
        opt.zero_grad()
        model(nb.ones(5, 3)).sum().backward()
        opt.step()
    ckpt = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "best": float("nan"),
        "args": {"name": "run", "dims": (3, 4), "flags": [True, None]},
        "ema": [nb.zeros(2), np.arange(3)],
    }
    path = tmp_path / "ckpt.safetensors"
    nn.save(ckpt, path)
    assert sorted(st_numpy.load_file(str(path)))[:2] == ["ema.0", "ema.1"]  # plain safetensors
    back = nn.load(path)
    assert back["epoch"] == 3 and np.isnan(back["best"])
    assert back["args"] == {"name": "run", "dims": (3, 4), "flags": [True, None]}
    np.testing.assert_array_equal(back["ema"][1].numpy(), np.arange(3))
    assert list(back["optimizer"]["state"]) == [0, 1, 2, 3]  # int keys kept
    twin = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    result = twin.load_state_dict(back["model"])
    assert not result.missing_keys and not result.unexpected_keys
    opt2 = optim.AdamW(twin.parameters(), lr=1e-3)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.param_groups[0]["betas"] == (0.9, 0.95)
    for k, v in opt.state_dict()["state"][0].items():
        np.testing.assert_array_equal(np.asarray(opt2.state_dict()["state"][0][k]), np.asarray(v))


def test_a_nested_checkpoint_rejects_what_loading_would_execute(tmp_path):
    with pytest.raises(TypeError, match=r"save: 'fn' is a builtins.function; a checkpoint holds tensors"):
        nn.save({"w": nb.ones(2), "fn": lambda: 0}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_a_nested_checkpoint_may_be_a_list_and_have_colliding_dotted_paths(tmp_path):
    """torch.save takes any nesting: a top-level list, and keys whose dotted paths coincide
    ("a.b" beside {"a": {"b": ...}}) each come back as they were saved."""
    path = tmp_path / "x.safetensors"
    nn.save({"a.b": nb.ones(1), "a": {"b": nb.zeros(1)}, "a.b'": nb.full((1,), 2.0)}, path)
    back = nn.load(path)
    assert (back["a.b"].item(), back["a"]["b"].item(), back["a.b'"].item()) == (1.0, 0.0, 2.0)
    nn.save([nb.ones(2), {"epoch": 3}, (nb.zeros(1), "tag")], path)
    back = nn.load(path)
    assert isinstance(back, list) and back[1] == {"epoch": 3} and back[2][1] == "tag"
    np.testing.assert_array_equal(back[0].numpy(), [1.0, 1.0])


def test_a_corrupt_nested_checkpoint_is_a_clear_error_and_numpy_scalars_stay_numbers(tmp_path):
    path = tmp_path / "c.safetensors"
    nn.save({"w": nb.ones(1), "step": np.int64(3), "lr": np.float64(0.5)}, path)  # a flat state: arrays
    nn.save({"w": nb.ones(1), "meta": {"step": np.int64(3), "lr": np.float64(0.5)}}, path)
    back = nn.load(path)
    assert back["meta"] == {"step": 3, "lr": 0.5} and isinstance(back["meta"]["step"], int)
    for tree in ('{"dict":[[[1],2]]}', "[" * 100000 + "]" * 100000):
        nn.save({"w": nb.ones(1)}, path, metadata={"other": "x"})
        header_path = tmp_path / "bad.safetensors"
        raw = path.read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8 : 8 + n])
        header["__metadata__"][S.TREE_KEY] = tree
        body = json.dumps(header).encode()
        header_path.write_bytes(struct.pack("<Q", len(body)) + body + raw[8 + n :])
        with pytest.raises(ValueError, match="corrupt metadata"):
            nn.load(header_path)
