"""ChannelShuffle (PyTorch's `torch.nn.modules.channelshuffle`): ShuffleNet's channel interleave."""

from __future__ import annotations

from typing import Any

import numpy as np

from nabla import Tensor

from ..functional.vision import channel_shuffle
from ..module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Divide the channels of an (N, C, *) input into `groups` groups and interleave them.

    Args:
        groups: number of groups; must divide the input's channel count.

    Shape:
        input `(N, C, *)` (at least 3 dims), output the same shape.

    Example:
        >>> m = nn.ChannelShuffle(2)
        >>> m(nb.arange(4, dtype=nb.float32).reshape(1, 4, 1, 1)).reshape(-1).tolist()
        [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        if isinstance(groups, bool) or not isinstance(groups, int | np.integer) or groups <= 0:
            raise ValueError(f"ChannelShuffle: groups must be a positive int, got {groups!r}")
        self.groups = int(groups)

    def forward(self, input: Tensor) -> Tensor:
        if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[1] % self.groups != 0:
            got: Any = getattr(input, "shape", ())
            raise self.input_error(got, f"(N, C, *) with C divisible by groups={self.groups}")
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
