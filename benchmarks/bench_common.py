"""Shared by the W1-W4 benchmarks: data, batches and the JSON report (NumPy only, so the
nabla and PyTorch processes each load just their own framework).

W1 MLP 784-512-512-10, ReLU, cross-entropy, Adam, batch 128
W2 CNN on 28x28x1 (conv3x3 32, relu, maxpool2, conv3x3 64, relu, maxpool2, linear 10), batch 64, SGD momentum
W3 transformer LM (vocab 256, d_model 128, 4 heads, 2 layers, MLP 512, seq 64, batch 16), AdamW
W4 W1's forward at batch 1024 (inference)

Data is synthetic and learnable (labels from a fixed random teacher; text from a tiny grammar),
so every run can check that the loss goes down.
"""

from __future__ import annotations

import json
import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Batch:
    x: np.ndarray
    y: np.ndarray


def mlp_data(n: int, rng: np.random.Generator) -> Batch:
    x = rng.standard_normal((n, 784)).astype(np.float32)
    teacher = np.random.default_rng(123).standard_normal((784, 10)).astype(np.float32)
    return Batch(x, np.argmax(x @ teacher, axis=1).astype(np.int64))


def image_data(n: int, rng: np.random.Generator) -> Batch:
    x = rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    teacher = np.random.default_rng(321).standard_normal((196, 10)).astype(np.float32)
    pooled = x.reshape(n, 14, 2, 14, 2).mean(axis=(2, 4)).reshape(n, 196)
    return Batch(x, np.argmax(pooled @ teacher, axis=1).astype(np.int64))


def text_corpus(length: int = 200_000, seed: int = 0) -> np.ndarray:
    """Bytes from a tiny grammar ("the cat sat on the mat. ..."): predictable enough to learn."""
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "every bird"]
    verbs = ["sat on", "looked at", "ran past", "jumped over", "sang to"]
    objects = ["the mat", "a tree", "the river", "her house", "the moon"]
    words = []
    while sum(len(w) for w in words) < length:
        words.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}. ")
    return np.frombuffer("".join(words).encode()[:length], dtype=np.uint8).astype(np.int64)


def text_data(corpus: np.ndarray, batch: int, seq: int, rng: np.random.Generator) -> Batch:
    starts = rng.integers(0, len(corpus) - seq - 1, batch)
    idx = starts[:, None] + np.arange(seq + 1)[None, :]
    chunk = corpus[idx]
    return Batch(chunk[:, :-1], chunk[:, 1:])


def batches(workload: str, steps: int) -> list[Batch]:
    rng = np.random.default_rng(0)
    if workload == "W1":
        return [mlp_data(128, rng) for _ in range(min(steps, 20))]
    if workload == "W4":
        return [mlp_data(1024, rng) for _ in range(min(steps, 5))]
    if workload == "W2":
        return [image_data(64, rng) for _ in range(min(steps, 20))]
    corpus = text_corpus()
    return [text_data(corpus, 16, 64, rng) for _ in range(min(steps, 20))]


def warm_median(times: list) -> float:
    """The median of `times` without the first fifth (warm-up)."""
    return float(np.median(times[len(times) // 5 :] or times))


def report(framework: str, mode: str, workload: str, times: list, losses: list, compiles: int | None) -> dict:
    """One JSON-able record; the median skips the first fifth of the steps (warm-up)."""
    median = warm_median(times)
    return {
        "framework": framework,
        "mode": mode,
        "workload": workload,
        "first_step_s": round(times[0], 3),
        "median_step_ms": round(median * 1e3, 3),
        "steps_per_s": round(1.0 / median, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "compiles": compiles,
        "first_loss": None if not losses else round(float(losses[0]), 4),
        "last_loss": None if not losses else round(float(losses[-1]), 4),
    }


PHASES = ("forward", "forward+backward", "step")  # phases.py: each phase is its own graph


def timed(fn: Callable[..., object], *args: object) -> float:
    """Seconds one call `fn(*args)` takes."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def matmul_flops(op: str, shapes: list) -> int | None:
    """Floating-point operations of a `matmul` ((..., m, k) @ (..., k, n), batch dims broadcast)
    or `linear` (x (..., k), weight (n, k)) with these input shapes; None for other ops."""
    if op == "matmul" and len(shapes[0]) >= 2 and len(shapes[1]) >= 2:
        (m, k), n = shapes[0][-2:], shapes[1][-1]
        batch = np.broadcast_shapes(tuple(shapes[0][:-2]), tuple(shapes[1][:-2]))
        return 2 * math.prod(batch) * m * k * n
    if op == "linear":
        return 2 * math.prod(shapes[0][:-1]) * shapes[0][-1] * shapes[1][0]
    return None


def median_ms(fn: Callable[..., object], *args: object, runs: int = 30, warmup: int = 5) -> float:
    """Median ms of `runs` calls `fn(*args)`, after `warmup` calls not timed."""
    for _ in range(warmup):
        fn(*args)
    return float(np.median([timed(fn, *args) for _ in range(runs)]) * 1e3)


def interleaved_ms(fns: dict[str, Callable[[], object]], runs: int = 40) -> dict[str, float]:
    """Median ms of each function, called in turn `runs` times (after warm-up, see `warm_median`):
    the machine's drift (15-30% within minutes on these VMs) moves them together."""
    times: dict[str, list] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: warm_median(t) * 1e3 for name, t in times.items()}


def train_step(model, opt, loss_fn, x, y) -> float:
    """One PyTorch-style step (the same code runs on nabla and torch); returns the loss."""
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def check_descent(losses: list[float]) -> None:
    """Steps on one batch must lower its loss: a broken update fails the run."""
    if not losses[-1] < losses[0]:
        raise SystemExit(f"loss did not go down over {len(losses)} steps on one batch: {losses}")


def print_phases(framework: str, workload: str, phases: dict[str, float]) -> None:
    """`phases.py`'s output: one JSON line per phase."""
    for phase, ms in phases.items():
        print(json.dumps({"framework": framework, "workload": workload, "phase": phase, "median_ms": round(ms, 3)}))
