"""The `auto` executor: answer at once on NumPy (tier 0), switch to MAX once it has compiled.

    first evaluation of a key   stored model on disk? load it (ms) : run on NumPy
    evaluation number N         (N = NABLA_COMPILE_AFTER, default 2) start compiling in the
                                background, keep running on NumPy meanwhile
    model ready                 every later evaluation runs the compiled model

A graph evaluated once (`print(x + 1)`) never costs a compile; a training step compiles once,
while it keeps training. While a compile runs, tier 0 runs NumPy's BLAS on one thread: on 2
cores the cold W1 compile then took 139 s instead of 163 s, and tier-0 steps 22 ms instead of
28 ms (both tiers gain from not oversubscribing the cores). `nabla.compile`d functions and
compiled modules are marked hot: they start compiling at their first call. Both tiers compute
the same values within float tolerance (the NumPy kernels are the semantics reference the MAX
lowerings are tested against), except random draws: the two turn a seed into different numbers.

Why NumPy for tier 0 (measured on a 2-core CPU machine, MAX 26.7): a W1 training step (MLP
784-512-512-10 + Adam) runs in 29 ms the first time and 14 ms after that on NumPy (W2's CNN
step 275/168 ms, W3's transformer 109/89 ms). MAX's interpreter (`max._interpreter`) runs a
built MAX graph op by op with precompiled per-family kernels: on a cold machine it compiled
its first family for 22 s, and after 5 minutes of compiling families it failed on the W1 step
graph ("byte sizes don't match in view creation" in its broadcasting binary handler). Its
families are compiled for the CPU and every accelerator, so it would serve GPUs too; nabla's
MAX executor runs on the CPU, where NumPy answers at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from typing import Any

from max.dtype import DType
from threadpoolctl import ThreadpoolController

from .background import CompileFailed, CompileJob, CompileService
from .executors import (
    Executor,
    MaxExecutor,
    NumpyExecutor,
    bfloat16_inputs,
    custom_extensions,
    get_executor_impl,
    register_executor,
)
from .program import Program


class TieredModel:
    """One program's two tiers: the NumPy program, and the MAX model once compiled.

    Attributes:
        program: the Program (tier 0 runs it on NumPy).
        name: the model store's name, or None.
        runs: evaluations so far.
        switched_at: the evaluation that first ran the compiled model (None: not yet).
        state: "tier0", "compiling", "compiled" or "failed".
    """

    __slots__ = ("program", "name", "resolve", "runs", "future", "model", "switched_at", "failed", "has_bfloat16")

    def __init__(self, program: Program, name: str | None, resolve: Any) -> None:
        self.program, self.name, self.resolve = program, name, resolve
        self.has_bfloat16 = any(dtype == DType.bfloat16 for dtype, _ in program.input_types)
        self.runs = 0
        self.future = None
        self.model = None
        self.switched_at: int | None = None
        self.failed = False

    @property
    def state(self) -> str:
        if self.model is not None:
            return "compiled"
        if self.failed:
            return "failed"
        return "compiling" if self.future is not None else "tier0"


class TieredExecutor(Executor):
    name = "auto"
    tiered = True

    def __init__(self, tier0: NumpyExecutor, compiled: MaxExecutor) -> None:
        super().__init__()
        self.tier0, self.compiled = tier0, compiled
        self.service = CompileService(compiled.compile_module)
        self.compile_after = max(1, int(os.environ.get("NABLA_COMPILE_AFTER", "2")))
        self._warned = False

    def prepare(self, program: Program, resolve: Any = None, name: str | None = None, hot: bool = False) -> TieredModel:
        tm = TieredModel(program, name, resolve)
        tm.model = self.compiled.load_stored(program, name)
        if tm.model is not None:
            self.stats.loads += 1
            tm.switched_at = 1
        elif hot or self.compile_after <= 1:
            self._submit(tm)
        return tm

    def run(self, tm: TieredModel, inputs: list) -> list:
        model = self.model_for(tm)
        if model is not None:
            return self.run_compiled(tm, model, inputs)
        return self.run_tier0(tm.program, inputs)

    def run_tier0(self, program: Program, inputs: list) -> list:
        """Run on NumPy; while a compile runs, with NumPy's BLAS on one thread (the compiler
        gets the other core)."""
        self.stats.tier0_executions += 1
        busy = self.service.pending()
        with self._blas.limit(limits=1, user_api="blas") if busy else contextlib.nullcontext():
            return self.tier0.run(program, inputs)

    @functools.cached_property
    def _blas(self) -> ThreadpoolController:
        return ThreadpoolController()

    def run_compiled(self, tm: TieredModel, model: Any, inputs: list) -> list:
        if tm.has_bfloat16:  # tier 0 stored bfloat16 values as float32 arrays
            inputs = bfloat16_inputs(tm.program, inputs)
        return self.compiled.run(model, inputs)

    def model_for(self, tm: TieredModel) -> Any:
        """Count one evaluation; the compiled model if it is ready (None: run tier 0).
        Starts the compile at the `compile_after`-th evaluation."""
        tm.runs += 1
        if tm.model is not None:
            return tm.model
        future = tm.future
        if future is None:
            if not tm.failed and tm.runs >= self.compile_after:
                self._submit(tm)
            return None
        if not future.done():
            return None
        tm.future = None
        try:
            tm.model = future.result()
        except CompileFailed as err:
            tm.failed = True
            self._warn(err)
            return None
        tm.switched_at = tm.runs
        return tm.model

    def _submit(self, tm: TieredModel) -> None:
        program, resolve, mx = tm.program, tm.resolve, self.compiled
        job = CompileJob(
            build=lambda: mx.build_module(program, resolve),
            finish=lambda compiled: mx.load(compiled, program),
            name=tm.name,
            extensions=custom_extensions(program),
            device=program.device,
        )
        tm.future = self.service.submit(job)
        self.stats.compiles += 1

    def _warn(self, err: Exception) -> None:
        if not self._warned:
            self._warned = True
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            msg = " ".join(lines[:1] + lines[-1:] if len(lines) > 1 else lines)  # what failed, and why
            warnings.warn(f"nabla: background compile failed, staying on NumPy: {msg}", RuntimeWarning, stacklevel=2)


AUTO = TieredExecutor(get_executor_impl("numpy"), get_executor_impl("max"))
register_executor(AUTO)
