"""nabla_nn layers, one family per file (as in PyTorch's `torch/nn/modules/`)."""

from . import (
    activation,
    adaptive,
    attention,
    batchnorm,
    channel_shuffle,
    container,
    conv,
    ctc,
    distance,
    dropout,
    extra_losses,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    normalization,
    padding,
    pooling,
    rnn,
    rnn_cells,
    sparse,
    transformer,
    upsampling,
)
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .attention import *  # noqa: F403
from .channel_shuffle import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .ctc import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .extra_losses import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .rnn_cells import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

__all__ = [
    name
    for m in (
        activation,
        adaptive,
        attention,
        channel_shuffle,
        container,
        conv,
        ctc,
        distance,
        dropout,
        extra_losses,
        flatten,
        fold,
        lazy,
        linear,
        loss,
        normalization,
        padding,
        pooling,
        rnn,
        rnn_cells,
        sparse,
        transformer,
        upsampling,
    )
    for name in m.__all__
]
