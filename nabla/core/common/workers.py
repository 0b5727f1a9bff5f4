"""MAX's CPU worker threads run below the Python thread's scheduling priority.

After each execution MAX's workers ("🔥 Thread0", "🔥 Thread1", ... : one per core) keep
spinning for a while, waiting for the next task. On a machine with few cores the Python
thread that records the next training step then shares the cores with them: W3 (a small
transformer LM, 2 cores) spent 7-8 ms of wall time a step in Python for 3.3 ms of CPU. With
the workers some nice levels lower the scheduler hands the core to Python whenever it wants
one, so the spin costs nothing (3.1-3.7 ms a step), and while a model executes the Python
thread sleeps, so the workers still get every core.

Linux only (threads are found in /proc/self/task); elsewhere, or where the system refuses, the
threads keep their priority. A lower priority can not be raised back without privileges, so
this runs once, when the MAX session starts, and `NABLA_WORKER_NICE=0` turns it off.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .config import CONFIG

_TASKS = Path("/proc/self/task")
_WORKER_NAME = re.compile("\U0001f525 Thread[0-9]+")  # how MAX names them


def is_max_worker(name: str) -> bool:
    """Whether a thread name is one of MAX's CPU workers ("🔥 Thread0", ...)."""
    return _WORKER_NAME.fullmatch(name) is not None


def max_worker_ids() -> list[int]:
    """Thread ids of MAX's CPU workers in this process (empty where /proc is unavailable)."""
    try:
        tasks = list(_TASKS.iterdir())
    except OSError:
        return []
    ids = []
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if is_max_worker(name):
            ids.append(int(task.name))
    return ids


def lower_worker_priority(levels: int | None = None) -> int:
    """Give MAX's workers `levels` (default `NABLA_WORKER_NICE`) nice levels below this
    process's; returns how many threads changed."""
    levels = CONFIG.worker_nice if levels is None else levels
    if levels <= 0 or not hasattr(os, "setpriority"):
        return 0
    target = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + levels)  # the main thread's
    changed = 0
    for tid in max_worker_ids():
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < target:
                os.setpriority(os.PRIO_PROCESS, tid, target)
                changed += 1
        except OSError:  # the thread ended, or the system does not allow it
            continue
    return changed
