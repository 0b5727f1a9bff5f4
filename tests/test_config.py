"""Process-wide settings nabla derives from the environment at import (`nabla/core/common/config.py`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nabla.core.common import config

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
