"""Process-wide settings read from the environment once, with setters for tests and users.

| variable                   | meaning                                                      |
|----------------------------|--------------------------------------------------------------|
| NABLA_EXECUTOR             | `auto` (default), `max` or `numpy`: which executor evaluates graphs (see below) |
| NABLA_EAGER_MAX_GRAPH      | `1`: build MAX graph nodes at op time (a debugging aid)      |
| NABLA_VERIFY_EAGER_SHAPES  | `1`: with eager graphs, check inferred shapes against MAX's  |
| NABLA_CACHE_DIR            | root of the on-disk caches: nabla's compiled models (`<dir>/models`) and MAX's kernels (passed on as MODULAR_CACHE_DIR) |
| NABLA_LOG_RECOMPILES       | `1`: `nabla.compile` prints why each recompile happened, and evaluations why a new size got a model of its own |
| NABLA_AUTO_DYNAMIC         | `0`: compile every new input size separately (default: a second size of the same program compiles one model for all sizes) |
| NABLA_MODEL_CACHE_SIZE     | in-memory compiled models kept (least recently used dropped; default 1024) |
| NABLA_COMPILE_AFTER        | auto: the evaluation of a structure that starts its background compile (default 2) |
| NABLA_COMPILE_WORKER       | auto: `process` (default) or `thread`, where background compiles run |
| NABLA_ARTIFACTS            | `0`: do not read or write compiled models on disk            |
| NABLA_MOJO_KERNELS         | `0`: lower every op with MAX's graph ops, never with nabla's own Mojo kernels (`nabla/ops/mojo_kernels.py`) |
| NABLA_DEVICE_GRAPHS        | `1`: replay an accelerator's repeated models as device graphs (`nabla/core/graph/device_graphs.py`; not yet run on a GPU) |
| MODULAR_THREAD_BUSY_WAIT_US | how long (us) MAX's CPU workers spin after a task before they sleep: nabla's default 100 (see `BUSY_WAIT_US`) |
| NABLA_WORKER_NICE          | how many nice levels (0-19) MAX's CPU worker threads run below the Python thread: default 10, `0` leaves them as MAX starts them (see `nabla/core/common/workers.py`) |

Executors: `numpy` runs each op's NumPy kernel (the semantics reference); `max` compiles every
new graph structure before running it; `auto` answers at once on NumPy and switches to the MAX
model once it has compiled in the background (`nabla/core/graph/tiered.py`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

EXECUTORS = ("auto", "max", "numpy")


def _flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class Config:
    executor: str
    eager_max_graph: bool
    verify_eager_shapes: bool
    cache_dir: str | None
    log_recompiles: bool = False
    model_cache_size: int = 1024
    auto_dynamic: bool = True
    worker_nice: int = 10
    mojo_kernels: bool = True
    device_graphs: bool = False


def _worker_nice(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if not 0 <= value <= 19:
        raise ValueError(f"NABLA_WORKER_NICE must be an integer from 0 to 19, got {text!r}")
    return value


def _from_env() -> Config:
    executor = os.environ.get("NABLA_EXECUTOR", "auto").strip().lower() or "auto"
    if executor not in EXECUTORS:
        raise ValueError(f"NABLA_EXECUTOR must be one of {EXECUTORS}, got {executor!r}")
    return Config(
        executor=executor,
        eager_max_graph=_flag("NABLA_EAGER_MAX_GRAPH"),
        verify_eager_shapes=_flag("NABLA_VERIFY_EAGER_SHAPES"),
        cache_dir=os.environ.get("NABLA_CACHE_DIR") or None,
        log_recompiles=_flag("NABLA_LOG_RECOMPILES"),
        model_cache_size=int(os.environ.get("NABLA_MODEL_CACHE_SIZE", "1024")),
        auto_dynamic=os.environ.get("NABLA_AUTO_DYNAMIC", "1").strip().lower() not in ("0", "false", "no", "off"),
        worker_nice=_worker_nice(os.environ.get("NABLA_WORKER_NICE", "10")),
        mojo_kernels=os.environ.get("NABLA_MOJO_KERNELS", "1").strip().lower() not in ("0", "false", "no", "off"),
        device_graphs=_flag("NABLA_DEVICE_GRAPHS"),
    )


# MAX's CPU workers spin after each task before they sleep. With MAX's default spin, the Python
# of a training loop's next step shares the cores with two spinning workers and takes about
# twice its CPU time (W3: 6-9 ms of Python wall time a step, 3.0-3.5 ms with a 30-1000 us
# spin, whose executions were not measurably slower). MAX aborts unless the runtime option and its
# config key agree, so a value set for either is used for both.
BUSY_WAIT_US = "100"
_BUSY_WAIT_VARS = ("MODULAR_THREAD_BUSY_WAIT_US", "MODULAR_RUNTIME_THREAD_BUSY_WAIT_TIME_US")


def _set_max_runtime_env() -> None:
    """Environment MAX reads when its runtime starts (before the first session or device)."""
    if CONFIG.cache_dir:  # MAX reads its cache location when it first compiles
        os.environ["MODULAR_CACHE_DIR"] = CONFIG.cache_dir
    chosen = next((os.environ[k] for k in _BUSY_WAIT_VARS if os.environ.get(k)), BUSY_WAIT_US)
    for name in _BUSY_WAIT_VARS:
        if not os.environ.get(name):
            os.environ[name] = chosen


CONFIG = _from_env()
_set_max_runtime_env()


def set_executor(name: str) -> None:
    """Select the executor for subsequent evaluations: `"auto"`, `"max"` or `"numpy"`."""
    if name not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {name!r}")
    CONFIG.executor = name


def get_executor() -> str:
    return CONFIG.executor


def set_eager_max_graph(enabled: bool, *, verify_shapes: bool | None = None) -> None:
    CONFIG.eager_max_graph = bool(enabled)
    if verify_shapes is not None:
        CONFIG.verify_eager_shapes = bool(verify_shapes)


def set_auto_dynamic(enabled: bool) -> None:
    """Whether an evaluation that runs the same ops as an earlier one on inputs of another size
    compiles one symbolic model for every size (the default) or a model for this size only
    (NABLA_AUTO_DYNAMIC=0)."""
    CONFIG.auto_dynamic = bool(enabled)


def set_log_recompiles(enabled: bool) -> None:
    """Print the reason for every recompile of a `nabla.compile`d function (NABLA_LOG_RECOMPILES=1)."""
    CONFIG.log_recompiles = bool(enabled)
