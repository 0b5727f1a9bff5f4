"""The op library: one module per op family, each op's forward, MAX lowering, NumPy kernel,
VJP and JVP side by side. Each module lists its public functions in `__all__`; this package
re-exports them all."""

import sys

from . import (
    activations,
    attention,
    base,
    batching,
    binary,
    bits,
    call,
    cast,
    communication,
    control_flow,
    conv,
    creation,
    cumulative,
    custom,
    gather_scatter,
    indexing,
    linalg,
    linalg_host,
    linalg_lu,
    linalg_matrix,
    normalization,
    orthogonal_polynomials,
    pooling,
    random_state,
    rearrange,
    reduction,
    reduction_softmax,
    shape,
    sorting,
    special,
    special_bessel,
    special_erf,
    spmd,
    statistics,
    triangular,
    unary,
    view,
)
from .activations import *  # noqa: F403
from .attention import *  # noqa: F403
from .base import Operation
from .binary import *  # noqa: F403
from .bits import *  # noqa: F403
from .cast import *  # noqa: F403
from .communication import *  # noqa: F403
from .control_flow import *  # noqa: F403
from .conv import *  # noqa: F403
from .creation import *  # noqa: F403
from .cumulative import *  # noqa: F403
from .custom import *  # noqa: F403
from .gather_scatter import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .linalg_host import *  # noqa: F403
from .linalg_lu import *  # noqa: F403
from .linalg_matrix import *  # noqa: F403
from .normalization import *  # noqa: F403
from .orthogonal_polynomials import *  # noqa: F403
from .pooling import *  # noqa: F403
from .random_state import *  # noqa: F403
from .rearrange import *  # noqa: F403
from .reduction import *  # noqa: F403
from .reduction_softmax import *  # noqa: F403
from .shape import *  # noqa: F403
from .sorting import *  # noqa: F403
from .special import *  # noqa: F403
from .special_bessel import *  # noqa: F403
from .special_erf import *  # noqa: F403
from .statistics import *  # noqa: F403
from .triangular import *  # noqa: F403
from .unary import *  # noqa: F403
from .view import *  # noqa: F403

FAMILIES = (
    "activations",
    "attention",
    "batching",
    "binary",
    "bits",
    "call",
    "cast",
    "communication",
    "control_flow",
    "conv",
    "creation",
    "cumulative",
    "custom",
    "gather_scatter",
    "indexing",
    "linalg",
    "linalg_host",
    "linalg_lu",
    "linalg_matrix",
    "normalization",
    "orthogonal_polynomials",
    "pooling",
    "random_state",
    "rearrange",
    "reduction",
    "reduction_softmax",
    "shape",
    "sorting",
    "special",
    "special_bessel",
    "special_erf",
    "spmd",
    "statistics",
    "triangular",
    "unary",
    "view",
)
__all__ = ["Operation", *sorted({name for f in FAMILIES for name in sys.modules[f"{__name__}.{f}"].__all__})]
