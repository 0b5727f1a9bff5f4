"""Checkpoints in the safetensors format, written and parsed here: no pickle, nothing executed.

A safetensors file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON
(`{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}`, padded with spaces
to a multiple of 8), then the tensors' raw little-endian bytes, contiguous and in no
particular order. Files written here are read by `safetensors.torch.load_file` /
`safetensors.numpy.load_file`, and files PyTorch writes with `safetensors.torch.save_file`
load here.

Tied weights (one tensor under several names) are written once, under the first name in
sorted order (as `safetensors.torch.save_model` does); the dropped names are recorded in the
metadata under `"nabla.aliases"` so `load` gives them back.

Example:
    >>> import nabla_nn as nn
    >>> model = nn.Linear(4, 2)
    >>> nn.save(model, "linear.safetensors", metadata={"epoch": "3"})
    >>> state = nn.load("linear.safetensors")
    >>> list(state)
    ['weight', 'bias']
    >>> model.load_state_dict(state)
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
import sys
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

import numpy as np
from max.driver import CPU, Buffer
from max.dtype import DType

import nabla as nb
from nabla import Tensor
from nabla.core.tensor.impl import TensorImpl

__all__ = [
    "ALIASES_KEY",
    "TREE_KEY",
    "bf16_bits_to_float32",
    "float32_to_bf16_bits",
    "load",
    "load_into",
    "load_metadata",
    "save",
]

ALIASES_KEY = "nabla.aliases"  # metadata key: JSON {dropped alias: name written in the file}
TREE_KEY = "nabla.tree"  # metadata key: JSON of a nested checkpoint's structure (see `_encode_tree`)
_MAX_HEADER_BYTES = 100 * 1024 * 1024  # safetensors' own limit; guards against a bogus length

# safetensors dtype -> little-endian NumPy dtype of the stored bytes (BF16 is read as bits).
_FILE_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NABLA_TO_FILE = {
    nb.float64: "F64",
    nb.float32: "F32",
    nb.float16: "F16",
    nb.bfloat16: "BF16",
    nb.int64: "I64",
    nb.int32: "I32",
    nb.int16: "I16",
    nb.int8: "I8",
    nb.uint8: "U8",
    nb.bool_: "BOOL",
}
_NUMPY_TO_FILE = {np.dtype(v.str.lstrip("<")): k for k, v in _FILE_DTYPES.items() if k != "BF16"}


# -- bfloat16 bits <-> float32 (NumPy has no bfloat16) --------------------------------------------
def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Exact: a bfloat16 is the upper 16 bits of the float32 with the same value.

    Example:
        >>> bf16_bits_to_float32(np.array([0x3F80, 0xC040], np.uint16))
        array([ 1., -3.], dtype=float32)
    """
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(bits.shape)  # (0-d stays an array)


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 (ties to even) and return the bit patterns.

    Values that are bfloat16 already (the float32 storage of a bfloat16 tensor on the NumPy
    executor) come back bit-exactly, NaN payloads included; any other NaN stays a NaN.

    Example:
        >>> float32_to_bf16_bits(np.array([1.0, 1.00390625], np.float32))  # 1 + 2**-8 is a tie
        array([16256, 16256], dtype=uint16)
    """
    values = np.asarray(values, dtype=np.float32, order="C")
    if values.ndim == 0:  # (a 0-d array's arithmetic gives NumPy scalars)
        return float32_to_bf16_bits(values.reshape(1)).reshape(())
    u = values.view(np.uint32)
    rounded = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    nan = np.isnan(u.view(np.float32))
    if nan.any():
        # Truncate NaNs (rounding could carry into the exponent); keep them NaN if the kept
        # mantissa bits are all zero.
        top = (u[nan] >> 16).astype(np.uint16)
        rounded[nan] = np.where(top & 0x7F == 0, top | 0x40, top)
    return rounded


def _bf16_buffer_bits(buffer: Buffer, shape: tuple[int, ...]) -> np.ndarray:
    """The bit patterns of a MAX bfloat16 Buffer (the storage on the MAX executor)."""
    if not buffer.is_host:
        buffer = buffer.to(CPU())
    return np.array(buffer.view(DType.uint16, shape).to_numpy(), dtype=np.uint16, copy=True)


def _bf16_bits_to_buffer(bits: np.ndarray, shape: tuple[int, ...]) -> Buffer:
    """A MAX bfloat16 Buffer holding these bit patterns (no compile: a reinterpreting view)."""
    flat = np.array(bits, dtype=np.uint16, copy=True).reshape(-1)
    return Buffer.from_numpy(flat).view(DType.bfloat16, shape)


def _bf16_tensor(bits: np.ndarray, shape: tuple[int, ...]) -> Tensor:
    """A realized bfloat16 tensor in the storage the current executor uses for bfloat16."""
    if nb.get_executor() == "numpy":
        storage: Any = bf16_bits_to_float32(bits).reshape(shape)
    else:
        storage = _bf16_bits_to_buffer(bits, shape)
    return Tensor(TensorImpl(shape, nb.bfloat16, data=storage))


# -- save -------------------------------------------------------------------------------------------
def save(obj: Any, f: str | os.PathLike | BinaryIO, metadata: Mapping[str, str] | None = None) -> None:
    """Write a module's state_dict (or a mapping of name -> Tensor / NumPy array) as safetensors.

    Pending tensors are computed together first (one evaluation). Tied tensors (the same
    tensor, or the same realized storage, under several names) are stored once. A write to a
    path is atomic: the bytes go to a temporary file next to it, which is flushed, synced and
    then renamed over it, so a crash mid-save leaves any previous checkpoint intact. A file
    object (`io.BytesIO`, a file opened "wb") is written at its position, as torch.save does.

    Args:
        obj: a `Module` (anything with `.state_dict()`), a mapping of str -> Tensor/ndarray,
            or a nested checkpoint as `torch.save` takes one (a dict, list or tuple): dicts (str or int keys), lists
            and tuples of tensors, arrays and Python numbers, strings, bools and None
            (`{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}`). Its
            tensors are stored under their dotted paths ("optimizer.state.0.exp_avg"), its
            structure and other values as JSON in the metadata (`"nabla.tree"`): `load`
            gives the same nesting back. Nothing in it is ever executed on loading.
        f: the path to write (replaced if it exists; its directory must exist), or a binary
            file object with a `write` method (left open, flushed).
        metadata: extra str -> str entries for the header's `__metadata__`; `{"format": "pt"}`
            is added unless given, and the keys `"nabla.aliases"` and `"nabla.tree"` are reserved.

    Example:
        >>> nabla_nn.save({"w": nb.ones(2, 3), "step": np.array(10)}, "ckpt.safetensors",
        ...               metadata={"epoch": "3"})
    """
    state = _state_of(obj)
    tree = None
    if not isinstance(state, Mapping) or not _flat(state):  # {"model": sd, "optimizer": ..., "epoch": 3}
        named: dict[str, Any] = {}
        tree = json.dumps(_encode_tree(state, "", named), separators=(",", ":"), allow_nan=True)
        state = named
    entries = _named_values(state)
    pending = [v for _, v in entries if isinstance(v, Tensor) and not v.is_realized]
    if pending:
        nb.evaluate(*pending)
    written, aliases = _dedupe(entries)
    meta = _metadata(metadata, aliases)
    if tree is not None:
        meta[TREE_KEY] = tree
    header = _header(written, meta)
    chunks = [header, *(_as_bytes(array) for _, _, array in _data_order(written))]
    if _is_file(f, "write"):
        _write_stream(f, chunks)
    else:
        _atomic_write(f, chunks)


def _is_file(f: Any, method: str) -> bool:
    """Whether `f` is a file object (torch.save / torch.load take one) rather than a path."""
    return not isinstance(f, str | bytes | os.PathLike) and callable(getattr(f, method, None))


def _write_stream(file: Any, chunks: Iterable[bytes | memoryview]) -> None:
    if isinstance(file, io.TextIOBase):
        raise TypeError("save: f must be a path or a binary file object (opened 'wb'), got a text file")
    for chunk in chunks:
        _write_bytes(file, chunk)
    if callable(getattr(file, "flush", None)):
        file.flush()


def _state_of(obj: Any) -> Mapping:
    """The mapping to save: a module's state_dict with its own tensor objects (so a tied
    parameter is recognisably the same object under both names), or the mapping itself."""
    if isinstance(obj, Mapping | list | tuple):  # (a list or tuple: a nested checkpoint, as torch.save takes)
        return obj
    state_dict = getattr(obj, "state_dict", None)
    if not callable(state_dict):
        raise TypeError(f"save: obj must be a Module or a mapping of name -> tensor, got {type(obj).__name__}")
    try:
        return state_dict(keep_vars=True)
    except TypeError:  # a state_dict() without PyTorch's keep_vars
        return state_dict()


def _is_array(value: Any) -> bool:
    return isinstance(value, Tensor | np.ndarray | np.generic) or (
        not isinstance(value, Mapping | list | tuple | str | bytes) and hasattr(value, "__array__")
    )


def _flat(state: Mapping) -> bool:
    """A plain state_dict (str -> array), saved as it is; anything else is a nested checkpoint."""
    return all(isinstance(k, str) and _is_array(v) for k, v in state.items())


def _encode_tree(value: Any, path: str, named: dict[str, Any]) -> Any:
    """JSON for a nested checkpoint: tensors become {"tensor": name} (stored under `name`, the
    dotted path), dicts {"dict": [[key, value], ...]} (int keys and order kept), tuples
    {"tuple": [...]}, lists JSON lists, numbers, strings, bools and None themselves."""
    if isinstance(value, np.generic) and value.ndim == 0 and not isinstance(value, np.void):
        value = value.item()  # a NumPy scalar: stored as the Python number it holds
    elif _is_array(value):
        name = path
        while name in named:  # (`{"a.b": x, "a": {"b": y}}`: the tree says which tensor is which)
            name += "'"
        named[name] = value
        return {"tensor": name}
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            if isinstance(k, bool) or not isinstance(k, str | int):
                raise TypeError(f"save: dict keys must be str or int, got {k!r} at {path or 'the top level'}")
            items.append([k, _encode_tree(v, f"{path}.{k}" if path else str(k), named)])
        return {"dict": items}
    if isinstance(value, list | tuple):
        encoded = [_encode_tree(v, f"{path}.{i}" if path else str(i), named) for i, v in enumerate(value)]
        return encoded if isinstance(value, list) else {"tuple": encoded}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    raise TypeError(
        f"save: {path or 'the checkpoint'!r} is a {kind}; a checkpoint holds tensors, arrays, dicts, lists, "
        "tuples, numbers, strings, bools and None (nothing that loading would have to execute)"
    )


def _decode_tree(node: Any, tensors: Mapping[str, Tensor], path: str) -> Any:
    if isinstance(node, list):
        return [_decode_tree(v, tensors, path) for v in node]
    if not isinstance(node, dict):
        return node
    if "tensor" in node and isinstance(node["tensor"], str) and node["tensor"] in tensors:
        return tensors[node["tensor"]]
    if isinstance(node.get("tuple"), list):
        return tuple(_decode_tree(v, tensors, path) for v in node["tuple"])
    items = node.get("dict")
    if isinstance(items, list) and all(
        isinstance(i, list) and len(i) == 2 and isinstance(i[0], str | int) and not isinstance(i[0], bool)
        for i in items
    ):
        return {k: _decode_tree(v, tensors, path) for k, v in items}
    raise ValueError(f"{path}: corrupt metadata: {TREE_KEY} holds {node!r}, which names no stored tensor")


def foreign_array(value: Any) -> Any:
    """Another library's array (a torch tensor, a Parameter that requires grad, one on a GPU)
    as NumPy, a bfloat16 one as a nabla bfloat16 Tensor (NumPy has none: read as its bits),
    or `value` itself when it will not convert: the caller then names its type."""
    for method in ("detach", "cpu"):  # (torch's, found by name: torch is not imported here)
        if callable(getattr(value, method, None)):
            value = getattr(value, method)()
    if str(getattr(value, "dtype", "")) == "torch.bfloat16" and callable(getattr(value, "view", None)):
        torch = sys.modules["torch"]  # (the value is its tensor: it is imported)
        bits = np.asarray(value.view(torch.int16)).view(np.uint16)
        return Tensor.from_numpy(bf16_bits_to_float32(bits), dtype=nb.bfloat16)
    try:
        return np.asarray(value)
    except (TypeError, RuntimeError, ValueError):
        return value


def _named_values(state: Mapping) -> list[tuple[str, Any]]:
    entries = []
    for name, value in state.items():
        if not isinstance(name, str):
            raise TypeError(f"save: keys must be str, got {name!r} of type {type(name).__name__}")
        if name == "__metadata__":
            raise ValueError("save: '__metadata__' is reserved by the safetensors format and cannot name a tensor")
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, Tensor | np.ndarray) and hasattr(value, "__array__"):
            value = foreign_array(value)  # another library's tensor (a torch state_dict)
        if not isinstance(value, Tensor | np.ndarray):
            kind = f"{type(value).__module__}.{type(value).__qualname__}"
            raise TypeError(f"save: value for key {name!r} must be a nabla Tensor or a NumPy array, got {kind}")
        _file_dtype(name, value)  # fail before anything is written
        entries.append((name, value))
    return entries


def _file_dtype(name: str, value: Tensor | np.ndarray) -> str:
    table: Mapping = _NABLA_TO_FILE if isinstance(value, Tensor) else _NUMPY_TO_FILE
    key = value.dtype if isinstance(value, Tensor) else value.dtype.newbyteorder("=")
    if key not in table:
        what = value.dtype.name if isinstance(value, Tensor) else str(value.dtype)
        raise TypeError(f"save: tensor {name!r} has dtype {what}, which safetensors files here cannot hold")
    return table[key]


def _storage_key(value: Tensor | np.ndarray, dtype: str) -> tuple:
    """Equal keys mean the same stored values: the same realized storage object (or the same
    memory, for NumPy), read with the same dtype and shape."""
    data = value._impl.data if isinstance(value, Tensor) else value
    if isinstance(value, Tensor) and value._impl.batch_dims:
        raise ValueError("save: cannot save a batched tensor from inside vmap")
    if isinstance(data, np.ndarray) and data.size:
        return (dtype, tuple(value.shape), data.__array_interface__["data"][0], data.strides)
    return (dtype, tuple(value.shape), id(data))


def _dedupe(entries: list[tuple[str, Any]]) -> tuple[list[tuple[str, str, np.ndarray]], dict[str, str]]:
    """(name, dtype, bytes-ready array) for the names written, in the input order, and the
    dropped aliases {alias: kept}; the kept name of a group is its first in sorted order."""
    groups: dict[tuple, list[str]] = {}
    values = dict(entries)
    dtypes = {name: _file_dtype(name, value) for name, value in entries}
    for name, value in entries:
        groups.setdefault(_storage_key(value, dtypes[name]), []).append(name)
    kept_of = {}
    for names in groups.values():
        kept = min(names)
        kept_of.update({n: kept for n in names})
    written = [(n, dtypes[n], _to_array(values[n])) for n, _ in entries if kept_of[n] == n]
    aliases = {n: kept_of[n] for n, _ in entries if kept_of[n] != n}
    return written, aliases


def _to_array(value: Tensor | np.ndarray) -> np.ndarray:
    """The values to store, as a C-contiguous little-endian array (bfloat16 as uint16 bits)."""
    if isinstance(value, Tensor) and value.dtype == nb.bfloat16:
        if value.sharding is not None:  # its pieces, gathered into one value
            value = nb.unshard(value).realize()
        data = value._impl.data
        if isinstance(data, Buffer):
            array = _bf16_buffer_bits(data, tuple(value.shape))
        else:
            array = float32_to_bf16_bits(np.asarray(data, dtype=np.float32)).reshape(value.shape)
    else:
        array = value.numpy() if isinstance(value, Tensor) else value
    array = np.asarray(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return array.astype(array.dtype.newbyteorder("<"), copy=False)


def _metadata(metadata: Mapping[str, str] | None, aliases: dict[str, str]) -> dict[str, str]:
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"save: metadata must be a mapping of str -> str, got {type(metadata).__name__}")
    out = {"format": "pt"}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"save: metadata must map str -> str, got {key!r}: {value!r}")
        if key in (ALIASES_KEY, TREE_KEY):
            raise ValueError(f"save: the metadata key {key!r} is reserved (tied-weight aliases, nested checkpoints)")
        out[key] = value
    if aliases:
        out[ALIASES_KEY] = json.dumps(aliases, separators=(",", ":"))
    return out


def _data_order(written: list[tuple[str, str, np.ndarray]]) -> list[tuple[str, str, np.ndarray]]:
    """Widest element first (as safetensors lays files out), so every tensor stays aligned."""
    return sorted(written, key=lambda e: -e[2].dtype.itemsize)


def _header(written: list[tuple[str, str, np.ndarray]], metadata: dict[str, str]) -> bytes:
    """The length prefix and JSON header; tensors are listed in the input order."""
    offsets, begin = {}, 0
    for name, _, array in _data_order(written):
        offsets[name] = [begin, begin + array.nbytes]
        begin += array.nbytes
    header: dict[str, Any] = {"__metadata__": metadata}
    for name, dtype, array in written:
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": offsets[name]}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def _as_bytes(array: np.ndarray) -> memoryview:
    return memoryview(array.reshape(-1).view(np.uint8))


def _write_bytes(file: Any, data: bytes | memoryview) -> None:
    """One write (a seam for tests that simulate a crash mid-save)."""
    file.write(data)


def _atomic_write(path: str | os.PathLike, chunks: Iterable[bytes | memoryview]) -> None:
    target = os.fspath(path)
    if os.path.islink(target):
        target = os.path.realpath(target)  # replace the checkpoint, not the link to it
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: cannot write {target}: directory {directory} does not exist")
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{uuid.uuid4().hex[:12]}.tmp")
    # O_EXCL: never clobber another file; mode 0o666 so the umask applies as for open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            for chunk in chunks:
                _write_bytes(file, chunk)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(OSError):  # a re-saved checkpoint keeps its permissions (a private one stays so)
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX; not possible on Windows, where it is skipped)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- load -------------------------------------------------------------------------------------------
def load(f: str | os.PathLike | BinaryIO, map_location: Any = None, weights_only: Any = None, mmap: Any = None) -> Any:
    """Read a safetensors file into realized tensors, in the file's key order (a nested
    checkpoint `save` wrote comes back with its nesting: dicts, lists, numbers and all).

    The whole file is validated before any tensor is made: a missing file raises
    FileNotFoundError; anything that is not a well-formed safetensors file (bad length prefix,
    bad JSON, unknown dtype, shape/byte-size mismatch, offsets out of range, overlapping or
    leaving gaps, truncated data) raises ValueError naming the path and the problem. Aliases
    of tied tensors recorded by `save` come back (after the stored names) as the same tensor.

    Args:
        f: the path to read, or a binary file object with a `read` method (read from its
            position to the end, as torch.load reads one; errors then name the file object).
        map_location, weights_only, mmap: torch.load's, accepted: tensors load on the host, and
            a safetensors file holds nothing but data (torch's `weights_only=True` always holds).

    Example:
        >>> state = nabla_nn.load("model.safetensors")
        >>> state["fc.weight"].shape
        (10, 784)
    """
    path, (header, metadata, data) = _read(f)
    out: OrderedDict[str, Tensor] = OrderedDict()
    for name, (dtype, shape, (begin, _)) in header.items():
        raw = np.frombuffer(data, dtype=_FILE_DTYPES[dtype], count=math.prod(shape), offset=begin)
        out[name] = _to_tensor(raw.reshape(shape), dtype, shape, path, name)
    for alias, kept in _aliases(metadata, out, path).items():
        out[alias] = out[kept]
    tree = metadata.get(TREE_KEY)
    if tree is not None:  # a nested checkpoint: its structure back, around these tensors
        try:
            return _decode_tree(json.loads(tree), out, path)
        except (ValueError, RecursionError) as err:  # (json's own errors are ValueErrors)
            if isinstance(err, ValueError) and str(err).startswith(path):
                raise
            raise ValueError(f"{path}: corrupt metadata: {TREE_KEY} is not a nested checkpoint ({err})") from None
    return out


def load_metadata(path: str | os.PathLike | BinaryIO) -> dict[str, str]:
    """The `__metadata__` of a safetensors file, a path or a binary file object (of a path,
    reads and checks the header only).

    Example:
        >>> nabla_nn.serialization.load_metadata("ckpt.safetensors")["epoch"]
        '3'
    """
    if _is_file(path, "read"):
        return _read(path)[1][1]
    path = os.fspath(path)
    with _open(path) as file:
        size = os.fstat(file.fileno()).st_size
        _, metadata = _read_header(file, size, path)
    return metadata


def load_into(module: Any, path: str | os.PathLike | BinaryIO, strict: bool = True) -> Any:
    """Load a safetensors file into `module` (what `Module.load_weights` calls).

    The file is read and validated in full before `module.load_state_dict` is called, so a bad
    file leaves the module unchanged. Names the module ties to a stored tensor (the same
    parameter under several names) are filled from it, so a file written without the
    aliases (e.g. by `safetensors.torch.save_model`) does not report them missing.

    Args:
        module: a `Module` (anything with `state_dict` and `load_state_dict`).
        path: the safetensors file.
        strict: require the file's keys to match the module's exactly.

    Returns:
        What `module.load_state_dict` returns: `(missing_keys, unexpected_keys)`.

    Example:
        >>> missing, unexpected = nabla_nn.serialization.load_into(model, "model.safetensors")
    """
    state = load(path)
    for names in _tied_names(module):
        present = [n for n in names if n in state]
        if present:
            for name in names:
                state.setdefault(name, state[present[0]])
    try:
        return module.load_state_dict(state, strict=strict)
    except RuntimeError as err:  # name the file: the module's message only names keys
        raise RuntimeError(f"loading {_where(path)}: {err}") from err


def _tied_names(module: Any) -> list[list[str]]:
    """Groups of state_dict names that hold the same tensor object in the module."""
    try:
        state = module.state_dict(keep_vars=True)
    except TypeError:
        state = module.state_dict()
    groups: dict[int, list[str]] = {}
    for name, value in state.items():
        groups.setdefault(id(value), []).append(name)
    return [sorted(names) for names in groups.values() if len(names) > 1]


def _open(path: str) -> Any:
    try:
        return open(path, "rb")  # noqa: SIM115  (closed by the caller's with)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such safetensors file: {path}") from None


def _read(f: Any) -> tuple[str, tuple[dict[str, tuple], dict[str, str], bytearray]]:
    """The name errors use for `f`, and its validated header {name: (dtype, shape, offsets)},
    metadata and data bytes."""
    if _is_file(f, "read"):
        where = _where(f)
        blob = f.read()
        if not isinstance(blob, bytes | bytearray | memoryview):
            raise TypeError(
                f"load: f must be a path or a binary file object (opened 'rb'), got {type(f).__name__} "
                f"whose read() returns {type(blob).__name__}"
            )
        return where, _parse(io.BytesIO(blob), len(blob), where)
    path = os.fspath(f)
    with _open(path) as file:
        return path, _parse(file, os.fstat(file.fileno()).st_size, path)


def _where(f: Any) -> str:
    """How messages name `f`: its path, or the file object (its name, if it has one)."""
    if _is_file(f, "read"):
        return f"<file object {getattr(f, 'name', type(f).__name__)}>"
    return os.fspath(f)


def _parse(file: Any, size: int, path: str) -> tuple[dict[str, tuple], dict[str, str], bytearray]:
    header, metadata = _read_header(file, size, path)
    data = bytearray(size - file.tell())
    if file.readinto(data) != len(data):
        raise ValueError(f"{path}: the file changed size while being read")
    _check_layout(header, len(data), path)
    return header, metadata, data


def _read_header(file: Any, size: int, path: str) -> tuple[dict[str, tuple], dict[str, str]]:
    if size < 8:
        raise ValueError(f"{path}: not a safetensors file (only {size} bytes, less than the 8-byte header length)")
    head = file.read(9)
    file.seek(8)
    if _is_torch_pickle(head):
        raise ValueError(
            f"{path}: this is a PyTorch pickle checkpoint (torch.save), not a safetensors file. nabla loads only "
            "safetensors and never unpickles (a pickle can run code). Convert it where you trust it: "
            "safetensors.torch.save_file(torch.load(path, weights_only=True), 'model.safetensors')"
        )
    (length,) = struct.unpack("<Q", head[:8])
    if length > min(size - 8, _MAX_HEADER_BYTES):
        raise ValueError(
            f"{path}: not a safetensors file or truncated: the header length says {length} bytes, "
            f"the file has {size - 8} after the length prefix"
        )
    text = file.read(length)
    try:
        raw = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{path}: not a safetensors file: the header is not valid UTF-8 JSON ({err})") from None
    if not isinstance(raw, dict) or not text.startswith(b"{"):
        raise ValueError(f"{path}: not a safetensors file: the header is not a JSON object")
    metadata = raw.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError(f"{path}: corrupt header: __metadata__ must map str -> str, got {metadata!r}")
    return {name: _parse_entry(name, info, path) for name, info in raw.items()}, metadata


def _is_torch_pickle(head: bytes) -> bool:
    """Whether a file's first 9 bytes are torch.save's: a zip archive (PyTorch >= 1.6) or a bare
    pickle (protocol 2-5). A safetensors header starts with "{" at byte 8, so a length prefix
    that happens to look like either is never taken for one."""
    if head[8:9] == b"{":
        return False
    return head.startswith(b"PK\x03\x04") or (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"))


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {duplicate!r}")
    return out


def _parse_entry(name: str, info: Any, path: str) -> tuple[str, tuple[int, ...], tuple[int, int]]:
    """(dtype, shape, (begin, end)) of one header entry, checked for consistency."""
    where = f"{path}: corrupt header entry for tensor {name!r}"
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise ValueError(f"{where}: expected an object with dtype, shape and data_offsets, got {info!r}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in _FILE_DTYPES:
        raise ValueError(f"{where}: unsupported dtype {dtype!r}; supported: {', '.join(_FILE_DTYPES)}")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise ValueError(f"{where}: shape must be a list of non-negative integers, got {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)):
        raise ValueError(f"{where}: data_offsets must be [begin, end] (non-negative integers), got {offsets!r}")
    begin, end = offsets
    nbytes = math.prod(shape) * _FILE_DTYPES[dtype].itemsize
    if end - begin != nbytes:
        raise ValueError(
            f"{where}: shape {shape} of dtype {dtype} needs {nbytes} bytes, data_offsets {offsets} span {end - begin}"
        )
    return dtype, tuple(shape), (begin, end)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_layout(header: dict[str, tuple], data_len: int, path: str) -> None:
    """The tensors must tile the data buffer exactly: in range, no overlap, no gap."""
    position, previous = 0, None
    for name, (_, _, (begin, end)) in sorted(header.items(), key=lambda item: item[1][2]):
        if end > data_len:
            raise ValueError(
                f"{path}: truncated or corrupt: tensor {name!r} ends at byte {end} of the data, "
                f"which holds only {data_len} bytes"
            )
        if begin < position:
            raise ValueError(f"{path}: corrupt header: tensors {previous!r} and {name!r} overlap")
        if begin > position:
            raise ValueError(f"{path}: corrupt header: bytes {position}..{begin} of the data belong to no tensor")
        position, previous = end, name
    if position != data_len:
        raise ValueError(f"{path}: corrupt file: {data_len - position} bytes after the last tensor's data")


def _to_tensor(raw: np.ndarray, dtype: str, shape: tuple[int, ...], path: str, name: str) -> Tensor:
    if dtype == "BF16":
        return _bf16_tensor(raw, shape)
    array = raw.astype(raw.dtype.newbyteorder("="), copy=False)
    if not array.flags.aligned:
        array = array.copy()
    if dtype == "BOOL" and array.size and array.view(np.uint8).max() > 1:
        raise ValueError(f"{path}: corrupt data: BOOL tensor {name!r} holds bytes other than 0 and 1")
    return Tensor.from_numpy(array)


def _aliases(metadata: dict[str, str], stored: Mapping[str, Tensor], path: str) -> dict[str, str]:
    text = metadata.get(ALIASES_KEY)
    if text is None:
        return {}
    try:
        aliases = json.loads(text)
    except ValueError:
        aliases = None
    if not isinstance(aliases, dict) or not all(
        isinstance(a, str) and a not in stored and kept in stored for a, kept in aliases.items()
    ):
        raise ValueError(
            f"{path}: corrupt metadata: {ALIASES_KEY} must be a JSON object mapping names not in the file "
            f"to stored tensor names, got {text!r}"
        )
    return aliases
