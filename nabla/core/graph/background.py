"""Background compilation: MAX compile jobs served one at a time by a dispatcher thread.

    submit(job) -> Future        the caller keeps running (tier 0) and polls `future.done()`
    dispatcher thread            builds the MAX module, compiles it, initializes the model
    wait(timeout)                blocks until every submitted job is done (benchmarks, tests)

Where the compiler runs (`NABLA_COMPILE_WORKER`). Measured on a 2-core machine with tier 0
training W1 flat out meanwhile: the cold W1-step compile (93 s alone) took 171 s in a thread
and 163 s in the worker process, with tier-0 steps at 26.5 and 27.7 ms (14 ms alone): the
cores are shared either way, and MAX releases the GIL while compiling. Loading the worker's
2.2 MB `.mef` takes 11 ms. The process is the default for what else it gives:
  - `process` (default): a worker process (`_compile_worker.py`, imports MAX only) receives the
    module as bytecode and writes a `.mef` file into the model store, which this process
    loads. A compiler crash cannot take the user's process down, and a compile running at
    exit still ends up stored.
  - `thread`: `session.compile` on the dispatcher thread (MAX releases the GIL while compiling).

MAX compiles one model at a time per process, so jobs are served in order; there is one
dispatcher and one worker. A compile still running when the program exits finishes in the
worker process, which stores the model and exits, so the next run loads it instead of
compiling; jobs still queued are dropped.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from max import engine
from max._mlir_context import ensure_default_mlir_context

from ..common.devices import CPU_DEVICE
from .artifacts import STORE

WORKER_SCRIPT = Path(__file__).with_name("_compile_worker.py")
MODES = ("process", "thread")


class CompileFailed(RuntimeError):
    """MAX could not compile a model in the background (the evaluation stays on tier 0)."""


class WorkerUnavailable(RuntimeError):
    """The worker process cannot run here; compiles move to the dispatcher thread."""


class _Closing(Exception):
    """The program is exiting: the dispatcher stops before its next C++ stretch."""


@dataclass
class CompileJob:
    """One model to compile.

    Attributes:
        build: makes the `max.graph.Module` (called on the dispatcher thread).
        finish: turns the compiled artifact into the runnable model (initializes it).
        name: the model store's name for it, or None when it must not be stored.
        extensions: custom kernel packages the module needs.
        device: where the model runs (a nabla Device).
    """

    build: Callable[[], Any]
    finish: Callable[[Any], Any]
    name: str | None = None
    extensions: list = field(default_factory=list)
    device: Any = CPU_DEVICE
    future: Future = field(default_factory=Future)


class CompileService:
    def __init__(self, compile_in_thread: Callable[[Any, list, Any], Any]) -> None:
        # `compile_in_thread(module, extensions, device)` compiles in this process (the MAX executor's
        # session and lock); the process mode needs only bytecode.
        self.mode = os.environ.get("NABLA_COMPILE_WORKER", "process").strip().lower() or "process"
        if self.mode not in MODES:
            raise ValueError(f"NABLA_COMPILE_WORKER must be one of {MODES}, got {self.mode!r}")
        self._compile_in_thread = compile_in_thread
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._worker: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._native_lock = threading.Lock()
        self._closing = False
        self.completed = 0  # jobs that produced a model
        self.failed = 0
        self.seconds: list[float] = []  # wall time of each finished compile

    # -- public ------------------------------------------------------------------------------
    def submit(self, job: CompileJob) -> Future:
        with self._lock:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                if self._thread is None:
                    atexit.register(self.close)
                self._thread = threading.Thread(target=self._serve, name="nabla-compile", daemon=True)
                self._thread.start()
        self._queue.put(job)
        return job.future

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every submitted job has finished; False if `timeout` ran out first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def shutdown(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait()

    # -- dispatcher thread -------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            try:
                model = self._run(job)
            except _Closing:
                return
            except BaseException as err:  # a failed compile leaves the evaluation on tier 0
                self.failed += 1
                job.future.set_exception(err if isinstance(err, CompileFailed) else CompileFailed(str(err)))
            else:
                self.completed += 1
                job.future.set_result(model)
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def _run(self, job: CompileJob) -> Any:
        start = time.perf_counter()
        stored = job.name is not None and STORE.enabled
        if self.mode == "process":
            with self._native():
                bytecode = self._build(job).mlir_module.bytecode
            try:
                out = self._compile_in_worker(bytecode, job, stored)
            except WorkerUnavailable:  # no Python executable to start (an embedded interpreter)
                self.mode = "thread"
                return self._run(job)
            with self._native():
                model = job.finish(engine.read(out))
            if stored:
                STORE.trim()
            else:
                out.unlink(missing_ok=True)
        else:
            with self._native():
                compiled = self._compile_in_thread(self._build(job), job.extensions, job.device)
                STORE.save(compiled, job.name)
                model = job.finish(compiled)
        self.seconds.append(time.perf_counter() - start)
        return model

    @staticmethod
    def _build(job: CompileJob) -> Any:
        with ensure_default_mlir_context():  # MLIR's current context is per thread
            return job.build()

    @contextlib.contextmanager
    def _native(self) -> Any:
        """A stretch of MAX's C++ work on the dispatcher thread. Python exiting while a daemon
        thread is inside one aborts the process ("exception not rethrown"), so `close()`, run
        at exit, waits for the stretch to end and none starts after it."""
        with self._native_lock:
            if self._closing:
                raise _Closing
            yield

    def close(self) -> None:
        """At exit: let the dispatcher's current C++ stretch finish and start no other. A compile
        running in the worker process goes on there, and its model is stored."""
        self._closing = True
        # A thread-mode compile can take minutes; anything else is short.
        self._native_lock.acquire(timeout=-1 if self.mode == "thread" else 120)

    def _compile_in_worker(self, bytecode: bytes, job: CompileJob, stored: bool) -> Path:
        """Send the module to the worker process; returns the path of the `.mef` it wrote."""
        if stored:  # the worker renames its file into place itself, even if this process is gone by then
            STORE.directory.mkdir(parents=True, exist_ok=True)
            out = STORE.path(job.name)
        else:
            fd, name = tempfile.mkstemp(suffix=".mef", prefix="nabla-")
            os.close(fd)
            out = Path(name)
        worker = self._ensure_worker()
        request = {
            "id": id(job),
            "out": str(out),
            "extensions": [str(p) for p in job.extensions],
            "device": [job.device.kind, job.device.index],
        }
        try:
            worker.stdin.write((json.dumps(request) + "\n").encode() + struct.pack("<Q", len(bytecode)) + bytecode)
            worker.stdin.flush()
            line = worker.stdout.readline()
        except (BrokenPipeError, OSError):
            line = b""
        if not line:
            self.shutdown()
            raise CompileFailed("the compile worker process exited (crashed or was killed)")
        reply = json.loads(line)
        if not reply["ok"]:
            raise CompileFailed(f"MAX could not compile the model:\n{reply['error']}")
        return out

    def _ensure_worker(self) -> subprocess.Popen:
        worker = self._worker
        if worker is not None and worker.poll() is None:
            return worker
        try:
            worker = subprocess.Popen(
                [sys.executable, "-P", str(WORKER_SCRIPT)],  # -P: nothing of the script's folder shadows a module
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        except OSError as err:
            raise WorkerUnavailable(str(err)) from err
        if not worker.stdout.readline().startswith(b'{"ready"'):
            worker.kill()
            raise WorkerUnavailable("the compile worker process did not start")
        self._worker = worker
        return worker
