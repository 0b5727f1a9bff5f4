"""MAX's CPU worker threads run below the Python thread's scheduling priority.

After each execution MAX's workers ("🔥 Thread0", "🔥 Thread1", ... : one per core) keep
spinning for a while, waiting for the next task. On a machine with few cores the Python
thread that records the next training step then shares the cores with them: W3 (a small
transformer LM, 2 cores) spent 7-8 ms of wall time a step in Python for 3.3 ms of CPU. With
the workers some nice levels lower the scheduler hands the core to Python whenever it wants
one, so the spin costs nothing (3.1-3.7 ms a step), and while a model executes the Python
thread sleeps, so the workers still get every core.

Linux only (threads are found in /proc/self/task); elsewhere, or where the system refuses, the
threads keep their priority. The MAX executor calls this before its first executions, until
every worker has been found: they name themselves a moment after they start, so a look right
after MAX's device appears often finds none. A lower priority can not be raised back without
privileges; `NABLA_WORKER_NICE=0` turns it off.
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


def lower_worker_priority(levels: int | None = None) -> bool:
    """Give MAX's workers `levels` (default `NABLA_WORKER_NICE`) nice levels below the main
    thread. Returns whether that is settled: every worker MAX starts (one per usable core) was
    found, or there is nothing to do (turned off, or no /proc to find threads in). A worker
    names itself some time after it starts: while some are missing, call again later."""
    levels = CONFIG.worker_nice if levels is None else levels
    if levels <= 0 or not hasattr(os, "setpriority") or not _TASKS.is_dir():
        return True
    target = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + levels)  # the main thread's
    ids = max_worker_ids()
    for tid in ids:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < target:
                os.setpriority(os.PRIO_PROCESS, tid, target)
        except OSError:  # the thread ended, or the system does not allow it
            continue
    return len(ids) >= _usable_cores()


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
