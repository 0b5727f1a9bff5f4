"""The compile worker process: MLIR bytecode in, a `.mef` file out.

Started by `background.py` as `python _compile_worker.py` (by path, so it imports MAX only,
never nabla or the user's `__main__`). Protocol on stdin/stdout, one job at a time:

  request:  one JSON line {"id", "out", "extensions", "device": [kind, index]} then 8 bytes (little-endian length)
            and the module's bytecode
  reply:    one JSON line {"id", "ok", "seconds", "error"}

The model is written to a temporary file and renamed to `out`, so the file appears whole. A
worker whose parent is gone finishes the job it holds (its model is stored) and exits at the
next read.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
import traceback

from max import mlir
from max._core import Operation
from max.driver import CPU, Accelerator
from max.engine import InferenceSession
from max.graph import Module


def main() -> None:
    sessions: dict[tuple, InferenceSession] = {}  # one per device: a model is compiled for its device
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b'{"ready": true}\n')
    stdout.flush()
    while True:
        line = stdin.readline()
        if not line:
            return
        job = json.loads(line)
        (size,) = struct.unpack("<Q", stdin.read(8))
        bytecode = stdin.read(size)
        start = time.perf_counter()
        reply = {"id": job["id"], "ok": True, "error": ""}
        try:
            module = Module(mlir_module=Operation.from_bytecode(bytecode, mlir.Context()))
            kind, index = job.get("device", ("cpu", 0))
            session = sessions.get((kind, index))
            if session is None:
                device = CPU() if kind == "cpu" else Accelerator(index)
                session = sessions[(kind, index)] = InferenceSession(devices=[device])
            compiled = session.compile(module, custom_extensions=job["extensions"] or None)
            tmp = f"{job['out']}.{os.getpid()}.tmp"
            compiled.export_mef(tmp)
            os.replace(tmp, job["out"])
        except Exception:
            reply.update(ok=False, error=traceback.format_exc(limit=3))
        reply["seconds"] = time.perf_counter() - start
        try:
            stdout.write((json.dumps(reply) + "\n").encode())
            stdout.flush()
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
