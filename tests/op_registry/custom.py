"""Registry entries for nabla.ops.custom: ops defined with `nabla.custom_op`.

Two example ops cover both MAX lowerings:

- `nabla_int_pow` (x ** power, power a compile-time parameter) is a real Mojo kernel from
  `mojo_kernels/` (built once per process); its VJP and JVP call the op itself with power - 1,
  so derivatives exercise the custom kernel too.
- `nabla_square_and_double` returns two outputs (x * x, x + x) and lowers with `max_kernel`
  (MAX graph ops, no Mojo).
- `nabla_axpy` (alpha * x + y, two inputs) is elementwise and declares
  `vmap_method="broadcast_all"`: under vmap its pieces see the batch dims. The other two use
  the default "sequential" batching (one kernel call per batch element).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from max.graph import ops

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "custom"
KERNELS = Path(__file__).parent / "mojo_kernels"


def _int_pow_derivative(x, power: int):
    """d/dx x**power = power * x**(power - 1), through the custom op itself."""
    return nb.ones_like(x) if power == 1 else int_pow(x, power=power - 1) * power


def _check_power(x, *, power: int):
    if not isinstance(power, int) or power < 1:
        raise ValueError(f"nabla_int_pow: power must be an int >= 1, got {power!r}")
    return x


int_pow = nb.custom_op(
    "nabla_int_pow",
    abstract_eval=_check_power,
    numpy_kernel=lambda x, *, power: x**power,
    vjp=lambda primals, cots, outs, *, power: [cots[0] * _int_pow_derivative(primals[0], power)],
    jvp=lambda primals, tans, outs, *, power: [tans[0] * _int_pow_derivative(primals[0], power)],
    kernel_path=KERNELS,
)

square_and_double = nb.custom_op(
    "nabla_square_and_double",
    abstract_eval=lambda x: [x, x],
    numpy_kernel=lambda x: (x * x, x + x),
    max_kernel=lambda x: (ops.mul(x, x), ops.add(x, x)),
    vjp=lambda primals, cots, outs: [cots[0] * primals[0] * 2 + cots[1] * 2],
    jvp=lambda primals, tans, outs: [tans[0] * primals[0] * 2, tans[0] * 2],
)

axpy = nb.custom_op(
    "nabla_axpy",
    abstract_eval=lambda x, y, *, alpha: x,
    numpy_kernel=lambda x, y, *, alpha: alpha * x + y,
    max_kernel=lambda x, y, *, alpha: ops.add(ops.mul(x, ops.constant(alpha, x.dtype, x.device)), y),
    vjp=lambda primals, cots, outs, *, alpha: [cots[0] * alpha, cots[0]],
    jvp=lambda primals, tans, outs, *, alpha: [tans[0] * alpha + tans[1]],
    vmap_method="broadcast_all",
)

_CASES = {
    "int_pow": (lambda x, power: int_pow(x, power=power), lambda x, power: x**power),
    "two_outputs": (lambda x: square_and_double(x), lambda x: (x * x, x + x)),
    "axpy": (lambda x, y: axpy(x, y, alpha=1.5), lambda x, y: 1.5 * x + y),
}

SPECS: list[OpSpec] = [
    OpSpec(
        name="custom_op",
        fn=lambda *args, case: _CASES[case][0](*args),
        ref=lambda *args, case: _CASES[case][1](*args),
        samples=[
            Sample((uniform((3, 4), seed="ip"), 3), {"case": "int_pow"}, label="int_pow-cube"),
            Sample((uniform((5,), seed="ip"), 2), {"case": "int_pow"}, label="int_pow-square"),
            Sample((uniform((), seed="ip"), 1), {"case": "int_pow"}, label="int_pow-identity-0d"),
            Sample((uniform((2, 3, 2), seed="sd"),), {"case": "two_outputs"}, label="two_outputs"),
            Sample((np.zeros((0, 3)),), {"case": "two_outputs"}, label="two_outputs-empty"),
            Sample((uniform((2, 3), seed="ax"), uniform((2, 3), seed="ay")), {"case": "axpy"}, label="axpy"),
        ],
        family=FAMILY,
        covers=("custom",),
        rtol=1e-5,
    ),
]
