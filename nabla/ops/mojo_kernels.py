"""Mojo kernel packages: building them, and nabla's own kernels in `nabla/ops/mojo/`.

A package (a source directory with `__init__.mojo`) is built with `mojo precompile` into a
cache keyed by the content of its .mojo files, so it is rebuilt only when a source changes (not
once per process, let alone per graph). Custom ops (`custom.py`) build users' packages here.

nabla's own package holds kernels for the few places where MAX's graph ops are far slower on
CPU than one pass over memory (each kernel file says what it replaces and what it measured).
An op whose lowering calls one (`call`, where `usable`) inherits `UsesKernels`: its
`custom_extensions` are `extensions()` and it sets `builtin_extensions`. The package's file
name is a digest of its sources, so compiled models that load it are still stored on disk,
under a key that names it; the kernels are CPU-only, so an accelerator's program does not load
the package. Without a Mojo toolchain (the build fails) or with NABLA_MOJO_KERNELS=0,
`package()` is None and the lowerings use MAX's graph ops.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from max.dtype import DType
from max.graph import Graph, TensorType, ops
from mojo.run import subprocess_run_mojo

from ..core.common.config import CONFIG

__all__ = ["UsesKernels", "call", "compiled_package", "extensions", "load_into_graph", "package", "usable"]

SOURCE = Path(__file__).with_name("mojo")  # nabla's kernel package
_BUILT: dict[tuple, Path] = {}  # (source dir, its files' mtimes and sizes) -> compiled .mojoc
_CACHE_DIR = Path(tempfile.gettempdir()) / f".nabla_{os.getuid()}" / "mojo_kernels"
_BUILD_LOCK = threading.Lock()


def compiled_package(path: Path, name: str) -> Path:
    """The compiled `.mojoc` of the kernel package `path` (a `.mojoc` is returned as it is),
    named by a digest of its sources; `name` is who needs it, for the error message."""
    if path.suffix == ".mojoc":
        return path
    sources = sorted(path.rglob("*.mojo"))
    stamp = (str(path), tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in sources))
    with _BUILD_LOCK:
        if stamp in _BUILT:
            return _BUILT[stamp]
        digest = hashlib.sha256()
        for f in sources:
            digest.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes() + b"\0")
        target = _CACHE_DIR / f"nabla_kernels_{digest.hexdigest()[:24]}.mojoc"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            # Build under the final file name (mojo bakes the module name from it) in a private
            # directory, then publish atomically: concurrent processes never see a partial file.
            staging = Path(tempfile.mkdtemp(dir=target.parent)) / target.name
            try:
                subprocess_run_mojo(["precompile", str(path), "-o", str(staging)], capture_output=True, check=True)
                os.replace(staging, target)
            except subprocess.CalledProcessError as err:
                output = (err.stderr or b"").decode(errors="replace").strip()
                raise RuntimeError(f"{name}: building the Mojo package {path} failed:\n{output}") from None
            finally:
                shutil.rmtree(staging.parent, ignore_errors=True)
        _BUILT[stamp] = target
        return target


@functools.cache
def package() -> Path | None:
    """nabla's compiled kernel package, or None (turned off, or no toolchain to build it)."""
    if not CONFIG.mojo_kernels:
        return None
    try:
        return compiled_package(SOURCE, "nabla's Mojo kernels")
    except (OSError, RuntimeError) as err:  # the graph-ops lowerings still work
        warnings.warn(f"{err}; using MAX graph ops instead", RuntimeWarning, stacklevel=2)
        return None


def extensions() -> tuple[Path, ...]:
    """`custom_extensions` for an op whose lowering may call nabla's kernels."""
    path = package()
    return () if path is None else (path,)


class UsesKernels:
    """Mixin for an op whose MAX lowering may call nabla's kernels: MAX loads the package for
    its programs (`custom_extensions`), and `builtin_extensions` tells the model store (the
    package is in the key by its digest name) and the executor (CPU programs only) that it is
    nabla's own."""

    builtin_extensions = True

    @property
    def custom_extensions(self) -> tuple[Path, ...]:
        return extensions()


STATS: Counter[str] = Counter()  # kernel name -> times placed in a MAX graph (tests read it)


def usable(*values: Any) -> bool:
    """Whether a lowering may hand the MAX values `values` to nabla's kernels: float32 on the
    CPU (the kernels are written and measured for that), with the package built."""
    return all(v.device.is_cpu() and v.dtype == DType.float32 for v in values) and package() is not None


def load_into_graph(paths: tuple[Path, ...]) -> None:
    """Make the MAX graph being built load the kernel packages `paths`. Graphs built by the MAX
    executor load them already; others (the eager shape-checking graph) get them here. MAX has
    no public hook for this yet."""
    graph = Graph.current
    have = {str(p) for p in graph.kernel_libraries_paths}
    missing = [p for p in paths if str(p) not in have]
    if missing:
        graph._import_kernels(missing)


def call(name: str, values: list, out_type: TensorType, **parameters: int) -> Any:
    """MAX: nabla's kernel `name` on `values` (its compile-time `parameters`), one result."""
    load_into_graph(extensions())
    STATS[name] += 1
    return ops.custom(name, values[0].device, values, [out_type], parameters=parameters)[0].tensor
