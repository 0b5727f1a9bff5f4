"""Recurrent cells: RNNCell, LSTMCell, GRUCell (PyTorch's `torch.nn.RNNCellBase` family): one time
step of `RNN` / `LSTM` / `GRU`, with PyTorch's parameter names, layouts and gate orders."""

from __future__ import annotations

import math
from typing import Any

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from .linear import empty_parameter
from .rnn import _gru_step, _lstm_step, _positive_int, _rnn_step

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase"]


class RNNCellBase(Module):
    """The shared parameters and input handling of the cells (PyTorch's `nn.RNNCellBase`).

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        bias: learn `bias_ih` and `bias_hh`.
        num_chunks: gates stacked in the weights (1 RNN, 4 LSTM, 3 GRU).
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        self.input_size = _positive_int(input_size, "input_size", cls, 0)
        self.hidden_size = _positive_int(hidden_size, "hidden_size", cls)
        self.bias = bias
        self.weight_ih = empty_parameter((num_chunks * hidden_size, input_size), dtype, device)
        self.weight_hh = empty_parameter((num_chunks * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = empty_parameter((num_chunks * hidden_size,), dtype, device)
            self.bias_hh = empty_parameter((num_chunks * hidden_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _input(self, input: Any) -> tuple[Tensor, bool]:
        """`input` as (N, input_size), and whether it was batched."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise self.input_error(input.shape, f"(N, {self.input_size}) or unbatched ({self.input_size},)")
        return (input if input.ndim == 2 else nb.unsqueeze(input, 0)), input.ndim == 2

    def _state(self, hx: Any, x: Tensor, batched: bool, what: str) -> Tensor:
        """The state (N, hidden_size): zeros, or `hx` checked against the input's batch."""
        if hx is None:
            return nb.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{type(self).__name__}: {what} must be a Tensor, got {type(hx).__name__}")
        expected = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        if tuple(hx.shape) != expected:
            shown = f"({expected[0]},)" if len(expected) == 1 else str(expected)
            given = tuple(x.shape) if batched else f"({self.input_size},)"
            raise self.input_error(hx.shape, f"{what} of shape {shown} for an input of shape {given}")
        return hx if batched else nb.unsqueeze(hx, 0)

    def _project(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight_ih, self.bias_ih)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """Elman RNN cell: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    Args:
        input_size, hidden_size, bias, device, dtype: as in `RNNCellBase`.
        nonlinearity: "tanh" (default) or "relu".

    forward(input, hx=None) -> h': input (N, H_in) or unbatched (H_in,); hx and h' (N, H) or (H,);
    hx defaults to zeros.

    Example:
        >>> cell = nn.RNNCell(10, 20)
        >>> cell(nb.randn(3, 10), nb.randn(3, 20)).shape
        (3, 20)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}, select from 'tanh' or 'relu'")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._input(input)
        h = self._state(hx, x, batched, "hx")
        step = _rnn_step(nb.tanh if self.nonlinearity == "tanh" else nb.relu)
        h = step(h, self._project(x), self.weight_hh, self.bias_hh)
        return h if batched else nb.squeeze(h, 0)


class LSTMCell(RNNCellBase):
    """LSTM cell, torch's gate order (input, forget, cell, output):

    i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh;
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c').

    Args:
        input_size, hidden_size, bias, device, dtype: as in `RNNCellBase`.

    forward(input, (h, c)=None) -> (h', c'): input (N, H_in) or unbatched (H_in,); h, c, h', c'
    (N, H) or (H,); the state defaults to zeros.

    Example:
        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(nb.randn(3, 10))
        >>> h.shape, c.shape
        ((3, 20), (3, 20))
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, batched = self._input(input)
        if hx is not None and (not isinstance(hx, tuple | list) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c), got {type(hx).__name__}")
        h_in, c_in = (None, None) if hx is None else hx
        state = (self._state(h_in, x, batched, "h"), self._state(c_in, x, batched, "c"))
        h, c = _lstm_step(state, self._project(x), self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (nb.squeeze(h, 0), nb.squeeze(c, 0))


class GRUCell(RNNCellBase):
    """GRU cell, torch's gate order (reset, update, new):

    r = sigmoid(x W_ir + b_ir + h W_hr + b_hr); z = sigmoid(x W_iz + b_iz + h W_hz + b_hz);
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)); h' = (1 - z) * n + z * h.

    Args:
        input_size, hidden_size, bias, device, dtype: as in `RNNCellBase`.

    forward(input, hx=None) -> h', shapes as `RNNCell`.

    Example:
        >>> cell = nn.GRUCell(10, 20)
        >>> cell(nb.randn(3, 10)).shape
        (3, 20)
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._input(input)
        h = _gru_step(self._state(hx, x, batched, "hx"), self._project(x), self.weight_hh, self.bias_hh)
        return h if batched else nb.squeeze(h, 0)
