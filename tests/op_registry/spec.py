"""The conformance registry's data model: one `OpSpec` per public op, with sample inputs.

Sample arrays of a floating dtype are written in float64; each check casts them to the dtype
it needs (float32 for forward values and MAX, float64 for finite differences). Integer and
bool arrays are passed unchanged; any non-array argument is passed through as is.

Every check in `tests/test_conformance*.py` is driven from here, so a new op only needs an
entry (and cannot land without one: `test_every_op_has_a_registry_entry`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Sample:
    """One call: `fn(*args, **kwargs)`. `grad=False` keeps it out of derivative checks
    (edge values such as nan/inf, points on a kink, integer-only inputs)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    label: str = ""
    grad: bool = True
    max: bool = True  # include in the MAX graphs
    # False: integer arrays set the output's shape by their values (one_hot's inferred
    # num_classes, repeat_interleave's repeats), which cannot differ per vmap batch element;
    # the vmap level then leaves them unmapped.
    vmap_ints: bool = True
    # False: the output's shape depends on the values of every array argument (unique), which
    # cannot differ per vmap batch element; the vmap level then maps none of them.
    vmap: bool = True


@dataclass
class OpSpec:
    """How to call an op, what it should compute, and which checks apply.

    Args:
        name: the public function's name in `nabla` (e.g. "sin").
        fn: calls nabla: `fn(*tensors_and_values, **kwargs)`; may return a Tensor or a tuple.
        ref: the NumPy reference with the same signature on arrays (None: use `check`).
        samples: the calls to make.
        family: the op family (`nabla/ops/<family>.py`); MAX graphs group families.
        covers: the `Operation.name`s this entry exercises (default: just `name`).
        aliases: other public names of the same function (e.g. "clip" for "clamp").
        torch_ref: `torch_ref(torch, *torch_tensors, **kwargs)` when PyTorch has the op.
        differentiable: run the VJP/JVP checks on samples with `grad=True`.
        diff_args: positional indices to differentiate (default: every float array).
        rtol, atol: forward tolerances in float32 (the MAX comparison uses 10x).
        check_dtype: compare the output dtype with the reference's.
        check: replaces value comparison (random ops): `check(outputs, args, kwargs)`.
        max_compare: compare MAX values with NumPy's (False for random draws).
        dtypes: extra floating dtypes whose forward values are checked ("float64", "float16",
            "bfloat16").
    """

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any] | None
    samples: list[Sample]
    family: str
    covers: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    torch_ref: Callable[..., Any] | None = None
    differentiable: bool = True
    diff_args: tuple[int, ...] | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    check_dtype: bool = True
    check: Callable[..., None] | None = None
    max_compare: bool = True
    dtypes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.covers:
            self.covers = (self.name,)

    def sample_ids(self) -> list[str]:
        return [f"{self.name}[{s.label or i}]" for i, s in enumerate(self.samples)]


def float_args(args: tuple, dtype: Any) -> tuple:
    """Cast the floating arrays of a sample to `dtype` (NumPy dtype)."""
    return tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args)


def diff_indices(spec: OpSpec, sample: Sample) -> tuple[int, ...]:
    if spec.diff_args is not None:
        return spec.diff_args
    return tuple(i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f")


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded by the op's name, so samples are stable across runs."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def uniform(shape: tuple, low: float = -2.0, high: float = 2.0, *, seed: str = "") -> np.ndarray:
    return np.asarray(rng_for(seed + str(shape) + str(low)).uniform(low, high, size=shape))


def away_from(values: np.ndarray, points: tuple[float, ...], margin: float = 0.05) -> np.ndarray:
    """Nudge `values` off non-differentiable `points` (kinks), so finite differences are valid."""
    out = values.copy()
    for p in points:
        close = np.abs(out - p) < margin
        out[close] = p + np.where(out[close] >= p, margin, -margin) * 2
    return out
