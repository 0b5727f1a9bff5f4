"""Compiled models on disk, keyed by structure, so a second run of a program compiles nothing.

A model is stored as a MAX `.mef` file named by a digest of:
  - the evaluation's structural key (ops, static arguments, input types, layouts),
  - the MAX version, the host CPU, and the source of every module whose code lowers the
    program's ops, with the modules of ours they import from (so editing a lowering or a
    helper it calls, or upgrading MAX, can never load a stale model).

Keys holding anything without a stable text form (a process-local token, a user's custom kernel
package) are not stored; nabla's own kernel package is in the key by its name, a digest of its
sources. Files are written to a temporary name and renamed, so a reader never
sees half a model; loading reads a model and never executes Python code.

| variable               | meaning                                                          |
|------------------------|------------------------------------------------------------------|
| NABLA_CACHE_DIR        | root of nabla's caches (models go in `<root>/models`); default `~/.cache/nabla` |
| NABLA_ARTIFACTS        | `0` turns the on-disk model store off                            |
| NABLA_ARTIFACTS_MB     | size limit of the store; the least recently used models go first (default 4096) |
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from max import _core as max_core
from max.dtype import DType

from ..common.config import CONFIG
from ..common.devices import Device

_FORMAT = 2  # bump when the digest recipe or the file layout changes
# Where kernels and their helpers live (the graph layer, which lowers every program, is in
# `_environment`; the rest of the core builds traces, not MAX graphs).
_KERNEL_PACKAGES = ("nabla.ops.", "nabla_nn.", "nabla_optim.")


class NotPersistable(Exception):
    """A key part with no stable text form: the model lives in memory only."""


def _encode(value: Any, out: list[str]) -> None:
    if value is None or isinstance(value, bool | int | str):
        out.append(repr(value))
    elif isinstance(value, float):
        out.append(f"f{value!r}")
    elif isinstance(value, DType):
        out.append(f"d{value.name}")
    elif isinstance(value, Device):  # a program on an accelerator: a model compiled for it
        out.append(f"D{value}")
    elif isinstance(value, tuple | list):
        out.append("(")
        for v in value:
            _encode(v, out)
            out.append(",")
        out.append(")")
    else:
        raise NotPersistable(type(value).__name__)


def stable_text(value: Any) -> str:
    """A deterministic text form of a structural key (raises `NotPersistable`)."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


@functools.cache
def source_hash(module_name: str) -> str:
    """A digest of a module's source file (of its name, for a module without one): code a
    stored model depends on that no op's module holds (an optimizer's rule) goes into its key."""
    path = getattr(sys.modules.get(module_name), "__file__", None)
    data = Path(path).read_bytes() if path else module_name.encode()
    return hashlib.sha256(data).hexdigest()[:16]


@functools.cache
def _lowering_modules(module_name: str) -> frozenset[str]:
    """`module_name` and every kernel module it reaches through the names it imports (`from
    .windows import _np_pad`, `from . import conv as _conv`): the code an op's kernels may run."""
    found, todo = set(), [module_name]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        module = sys.modules.get(name)
        for value in vars(module).values() if module is not None else ():
            dep = value.__name__ if type(value) is type(sys) else getattr(value, "__module__", None)
            if isinstance(dep, str) and dep.startswith(_KERNEL_PACKAGES) and dep not in found:
                todo.append(dep)
    return frozenset(found)


def _host() -> str:
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    flags += line
                if line.strip() == "":
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{platform.processor()}|{hashlib.sha256(flags.encode()).hexdigest()[:16]}"


@functools.cache
def _environment() -> str:
    """MAX version, host CPU, and the graph layer's own source (it lowers every program)."""
    graph_modules = sorted(m for m in sys.modules if m.startswith(__package__ + "."))
    parts = [str(_FORMAT), max_core.__version__, _host(), *(source_hash(m) for m in graph_modules)]
    return "|".join(parts)


def digest(key: tuple, ops: list) -> str | None:
    """The file name for a model, or None when the key cannot be stored."""
    try:
        text = stable_text(key)
    except NotPersistable:
        return None
    packages = set()
    for op in ops:
        paths = getattr(op, "custom_extensions", ())
        if paths and not getattr(op, "builtin_extensions", False):
            return None  # a user's kernel package is outside the key
        packages.update(p.name for p in paths)  # nabla's own: named by a digest of its sources
    modules = sorted(set().union(*[_lowering_modules(type(op).__module__) for op in ops]))
    code = "|".join([f"{m}:{source_hash(m)}" for m in modules] + sorted(packages))
    return hashlib.sha256(f"{_environment()}\n{code}\n{text}".encode()).hexdigest()[:40]


@dataclass
class StoreInfo:
    """What the on-disk model store holds.

    Attributes:
        directory: where the models are.
        models: number of stored models.
        bytes: their total size.
        enabled: whether evaluations read and write the store.
    """

    directory: Path
    models: int
    bytes: int
    enabled: bool


class ArtifactStore:
    """Compiled models as `.mef` files in one directory, least recently used removed first."""

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.enabled = os.environ.get("NABLA_ARTIFACTS", "1").strip().lower() not in ("0", "false", "no", "off")
        self.limit_bytes = int(float(os.environ.get("NABLA_ARTIFACTS_MB", "4096")) * 2**20)
        self.set_directory(directory)

    def set_directory(self, directory: str | os.PathLike | None) -> None:
        root = Path(directory or CONFIG.cache_dir or Path.home() / ".cache" / "nabla").expanduser()
        self.directory = root / "models"

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.mef"

    def find(self, name: str | None) -> Path | None:
        """The stored model's path, touched so it counts as recently used; None if absent."""
        if not self.enabled or name is None:
            return None
        path = self.path(name)
        if not path.is_file():
            return None
        try:
            os.utime(path)
        except OSError:  # a read-only store still serves its models
            pass
        return path

    def reserve(self, name: str) -> Path:
        """A temporary path in the store's directory; `publish` renames it into place."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / f".{name}.{os.getpid()}.tmp"

    def publish(self, tmp: Path, name: str) -> None:
        os.replace(tmp, self.path(name))  # atomic: readers see the old file or the whole new one
        self.trim()

    def save(self, compiled: Any, name: str | None) -> None:
        """Store a compiled artifact under `name` (nothing when the store is off or `name` is None)."""
        if name is None or not self.enabled:
            return
        tmp = self.reserve(name)
        compiled.export_mef(tmp)
        self.publish(tmp, name)

    def trim(self) -> None:
        files = self._files()
        total = sum(size for _, size, _ in files)
        for path, size, _ in sorted(files, key=lambda f: f[2]):
            if total <= self.limit_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size

    def clear(self) -> int:
        """Delete every stored model (and leftovers of interrupted writes); returns how many
        models were removed."""
        files = self._files()
        for path, _, _ in files:
            path.unlink(missing_ok=True)
        for tmp in self.directory.glob("*.tmp") if self.directory.is_dir() else ():
            tmp.unlink(missing_ok=True)
        return len(files)

    def info(self) -> StoreInfo:
        files = self._files()
        return StoreInfo(self.directory, len(files), sum(size for _, size, _ in files), self.enabled)

    def _files(self) -> list[tuple[Path, int, float]]:
        if not self.directory.is_dir():
            return []
        out = []
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".mef"):
                st = entry.stat()
                out.append((Path(entry.path), st.st_size, st.st_mtime))
        return out


STORE = ArtifactStore()
