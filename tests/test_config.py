"""Process-wide settings nabla derives from the environment at import (`nabla/core/common/config.py`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nabla.core.common import config
from nabla.core.common.workers import is_max_worker

_SPIN = config._BUSY_WAIT_VARS
# Starting a MAX session reads the spin settings; MAX aborts the process when they disagree.
_PROBE = (
    "import os, nabla\n"
    "from max import driver, engine\n"
    "engine.InferenceSession(devices=[driver.CPU()])\n"
    f"print(*(os.environ[k] for k in {_SPIN!r}))\n"
)


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in _SPIN}
    proc = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_max_workers_spin_briefly_by_default():
    assert _probe() == f"{config.BUSY_WAIT_US} {config.BUSY_WAIT_US}"


@pytest.mark.parametrize("name", _SPIN)
def test_a_spin_set_for_either_max_setting_is_used_for_both(name):
    # MAX alone aborts ("requesting different options") when only one of the two is set.
    assert _probe(**{name: "7"}) == "7 7"


# nabla's MAX executor lowers MAX's CPU workers below the Python thread (common/workers.py):
# when its session starts and, until it has found them all, at its first executions.
_NICE_PROBE = (
    "import os\n"
    "import numpy as np\n"
    "import nabla as nb\n"
    "from nabla.core.common import workers\n"
    "nb.set_executor('max')\n"
    "x = nb.Tensor.from_numpy(np.ones(3, np.float32))\n"
    "for _ in range(4): (x * 2).numpy()\n"
    "ids = workers.max_worker_ids()\n"
    "print(len(ids), *sorted({os.getpriority(os.PRIO_PROCESS, t) for t in ids}), os.getpriority(os.PRIO_PROCESS, 0))\n"
)


def _nice_probe(**env: str) -> list[int]:
    clean = {k: v for k, v in os.environ.items() if k != "NABLA_WORKER_NICE"}
    proc = subprocess.run([sys.executable, "-c", _NICE_PROBE], env={**clean, **env}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [int(v) for v in proc.stdout.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads are found in /proc (Linux)")
def test_max_workers_run_ten_nice_levels_below_python_by_default():
    workers, nice, main = _nice_probe()
    assert workers >= 1 and nice == min(19, main + 10)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads are found in /proc (Linux)")
def test_nabla_worker_nice_sets_or_disables_the_gap():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert _nice_probe(NABLA_WORKER_NICE="3")[1:] == [min(19, base + 3), base]
    assert _nice_probe(NABLA_WORKER_NICE="0")[1:] == [base, base]


def test_worker_names_are_matched_exactly():
    assert is_max_worker("\U0001f525 Thread0") and is_max_worker("\U0001f525 Thread15")
    assert not any(map(is_max_worker, ["python", "Thread-1", "\U0001f525 Thread", "MyThread2"]))


@pytest.mark.parametrize("text", ["-1", "20", "ten", ""])
def test_a_bad_worker_nice_is_rejected_naming_the_variable(text):
    with pytest.raises(ValueError, match="NABLA_WORKER_NICE must be an integer from 0 to 19"):
        config._worker_nice(text)
