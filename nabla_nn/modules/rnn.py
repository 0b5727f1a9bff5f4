"""Recurrent layers: RNN, LSTM, GRU (PyTorch's `torch.nn.modules.rnn`), with PyTorch's parameter
names, layouts and gate orders, so torch state_dicts load as they are.

The input projection of a whole sequence is one matmul; the recurrence is `nabla.scan` (a loop
over time steps unrolled into the graph), so it differentiates, vmaps and compiles. A
`PackedSequence` input runs padded (time-major, in its sorted order) with a per-step validity
mask: a sequence's state stops changing past its length, and the reverse direction starts at
its last valid step, so every final state is the one at the sequence's own end, as torch's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from ..utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
from .linear import empty_parameter

__all__ = ["GRU", "LSTM", "RNN", "RNNBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_WEIGHT_KINDS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")  # torch's order in a cell


def _positive_int(value: Any, name: str, cls: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{cls}: {name} must be an int >= {minimum}, got {value!r}")
    return value


# -- one step of each cell; `xw` is the precomputed input projection x @ W_ih^T + b_ih --------------
def _rnn_step(act: Callable[[Tensor], Tensor]) -> Callable:
    def step(h: Tensor, xw: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
        return act(xw + F.linear(h, w_hh, b_hh))

    return step


def _gru_step(h: Tensor, xw: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    x_r, x_z, x_n = nb.chunk(xw, 3, axis=-1)
    h_r, h_z, h_n = nb.chunk(F.linear(h, w_hh, b_hh), 3, axis=-1)
    r = nb.sigmoid(x_r + h_r)
    z = nb.sigmoid(x_z + h_z)
    n = nb.tanh(x_n + r * h_n)
    return (1.0 - z) * n + z * h


def _lstm_step(
    state: tuple[Tensor, Tensor], xw: Tensor, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None
) -> tuple[Tensor, Tensor]:
    h, c = state
    i, f, g, o = nb.chunk(xw + F.linear(h, w_hh, b_hh), 4, axis=-1)
    c = nb.sigmoid(f) * c + nb.sigmoid(i) * nb.tanh(g)
    h = nb.sigmoid(o) * nb.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _keep_where(valid: Tensor, new: Any, old: Any) -> Any:
    """The new state where the step is valid, the old one past a sequence's length."""
    if isinstance(new, tuple):
        return tuple(nb.where(valid, n, o) for n, o in zip(new, old, strict=True))
    return nb.where(valid, new, old)


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU (PyTorch's `nn.RNNBase`).

    Args:
        mode: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU".
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        num_layers: stacked recurrent layers (each reads the previous one's output).
        bias: learn `bias_ih_l*` and `bias_hh_l*`.
        batch_first: input and output are (N, L, H) instead of (L, N, H) (states are not); a
            PackedSequence input gives a PackedSequence output either way.
        dropout: dropout on each layer's output except the last (training only).
        bidirectional: also run each layer backwards in time (`*_reverse` parameters); the
            outputs of both directions are concatenated.
        proj_size: LSTM only: project h to this size with `weight_hr_l*`.
        device: where the parameters live ("cpu", "gpu", "cuda:N"; default the CPU).
        dtype: parameter dtype (float32 by default).
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        if mode not in _GATES:
            raise ValueError(f"{cls}: unknown mode {mode!r}, expected one of {sorted(_GATES)}")
        _positive_int(input_size, "input_size", cls, 0)
        _positive_int(hidden_size, "hidden_size", cls)
        _positive_int(num_layers, "num_layers", cls)
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout <= 1:
            raise ValueError(f"{cls}: dropout should be a number in range [0, 1], got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{cls}: dropout={dropout} has no effect with num_layers=1 (it applies between layers)", stacklevel=2
            )
        _positive_int(proj_size, "proj_size", cls, 0)
        if proj_size and mode != "LSTM":
            raise ValueError(f"{cls}: proj_size is only supported for LSTM, got proj_size={proj_size}")
        if proj_size >= hidden_size:
            raise ValueError(f"{cls}: proj_size ({proj_size}) must be smaller than hidden_size ({hidden_size})")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._make_parameters(device, dtype)
        self.reset_parameters()

    @property
    def _num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _out_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _make_parameters(self, device: Any, dtype: Any) -> None:
        """torch's names and registration order: per layer, per direction, ih, hh, biases, hr."""
        gate_size = _GATES[self.mode] * self.hidden_size
        for layer in range(self.num_layers):
            in_size = self.input_size if layer == 0 else self._out_size * self._num_directions
            for suffix in ("", "_reverse")[: self._num_directions]:
                name = f"l{layer}{suffix}"
                setattr(self, f"weight_ih_{name}", empty_parameter((gate_size, in_size), dtype, device))
                setattr(self, f"weight_hh_{name}", empty_parameter((gate_size, self._out_size), dtype, device))
                if self.bias:
                    setattr(self, f"bias_ih_{name}", empty_parameter((gate_size,), dtype, device))
                    setattr(self, f"bias_hh_{name}", empty_parameter((gate_size,), dtype, device))
                if self.proj_size > 0:
                    shape = (self.proj_size, self.hidden_size)
                    setattr(self, f"weight_hr_{name}", empty_parameter(shape, dtype, device))

    def reset_parameters(self) -> None:
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -stdv, stdv)

    def _cell_parameters(self, layer: int, reverse: bool) -> tuple[Tensor, ...]:
        # Attribute access, not `_parameters`: a parametrization or weight_norm replaces the
        # parameter with a computed attribute of the same name.
        name = f"l{layer}{'_reverse' if reverse else ''}"
        return tuple(getattr(self, f"{kind}_{name}", None) for kind in _WEIGHT_KINDS)

    # -- input handling ------------------------------------------------------------------------
    def _check_input(self, input: Any) -> bool:
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            layout = "(N, L, {})" if self.batch_first else "(L, N, {})"
            raise self.input_error(input.shape, f"{layout.format(self.input_size)} or unbatched (L, {self.input_size})")
        if input.shape[1 if self.batch_first and input.ndim == 3 else 0] == 0:
            raise ValueError(
                f"{type(self).__name__}: expected a sequence length above 0, got input of shape {input.shape}"
            )
        return input.ndim == 3

    def _state(self, hx: Any, batched: bool, batch: int, size: int, what: str, dtype: Any) -> Tensor:
        """The initial state (layers * directions, N, size): zeros, or `hx` checked."""
        layers = self.num_layers * self._num_directions
        if hx is None:
            return nb.zeros((layers, batch, size), dtype=dtype)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{type(self).__name__}: {what} must be a Tensor, got {type(hx).__name__}")
        expected = (layers, batch, size) if batched else (layers, size)
        if tuple(hx.shape) != expected:
            shown = ", ".join(str(d) for d in expected)
            raise self.input_error(hx.shape, f"{what} of shape ({shown}) for an input of batch size {batch}")
        return hx if batched else nb.unsqueeze(hx, 1)

    # -- the recurrence ------------------------------------------------------------------------
    def _run_direction(
        self, x: Tensor, state: Any, layer: int, reverse: bool, valid: Tensor | None = None
    ) -> tuple[Any, Tensor]:
        """One layer, one direction over the whole sequence x (L, N, in): (final state, outputs).

        `valid` (L, N, 1) marks the steps within each sequence's length (packed input): the state
        is carried unchanged across the others, so the reverse scan starts at each sequence's end.
        """
        w_ih, w_hh, b_ih, b_hh, w_hr = self._cell_parameters(layer, reverse)
        xw = F.linear(x, w_ih, b_ih)  # every time step's input projection in one matmul
        if self.mode == "LSTM":

            def step(carry: Any, xt: Tensor) -> tuple[Any, Tensor]:
                carry = _lstm_step(carry, xt, w_hh, b_hh, w_hr)
                return carry, carry[0]
        else:
            cell = _gru_step if self.mode == "GRU" else _rnn_step(nb.tanh if self.mode == "RNN_TANH" else nb.relu)

            def step(carry: Any, xt: Tensor) -> tuple[Any, Tensor]:
                h = cell(carry, xt, w_hh, b_hh)
                return h, h

        if valid is None:
            return nb.scan(step, state, xw, reverse=reverse)

        def masked_step(carry: Any, xs: tuple[Tensor, Tensor]) -> tuple[Any, Tensor]:
            new, y = step(carry, xs[0])
            return _keep_where(xs[1], new, carry), y

        return nb.scan(masked_step, state, (xw, valid), reverse=reverse)

    def _layers(
        self, x: Tensor, h0: Tensor, c0: Tensor | None, valid: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self._num_directions):
                k = layer * self._num_directions + d
                state = h0[k] if c0 is None else (h0[k], c0[k])
                final, ys = self._run_direction(x, state, layer, d == 1, valid)
                outs.append(ys)
                h_n.append(final if c0 is None else final[0])
                if c0 is not None:
                    c_n.append(final[1])
            x = outs[0] if len(outs) == 1 else nb.concatenate(outs, axis=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, nb.stack(h_n, axis=0), (nb.stack(c_n, axis=0) if c0 is not None else None)

    def _forward(self, input: Tensor, hx: Any) -> tuple[Tensor, Any]:
        batched = self._check_input(input)
        x = input
        if not batched:
            x = nb.unsqueeze(x, 1)
        elif self.batch_first:
            x = nb.transpose(x, 0, 1)
        h0, c0 = self._initial_states(hx, batched, x.shape[1], x.dtype)
        out, h_n, c_n = self._layers(x, h0, c0)
        if not batched:
            out, h_n = nb.squeeze(out, 1), nb.squeeze(h_n, 1)
            c_n = None if c_n is None else nb.squeeze(c_n, 1)
        elif self.batch_first:
            out = nb.transpose(out, 0, 1)
        return out, (h_n if c_n is None else (h_n, c_n))

    def _initial_states(self, hx: Any, batched: bool, batch: int, dtype: Any) -> tuple[Tensor, Tensor | None]:
        """(h_0, c_0) as (layers * directions, N, size); c_0 is None except for LSTM."""
        if self.mode != "LSTM":
            return self._state(hx, batched, batch, self.hidden_size, "hx", dtype), None
        if hx is not None and (not isinstance(hx, tuple | list) or len(hx) != 2):
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        h_in, c_in = (None, None) if hx is None else hx
        h0 = self._state(h_in, batched, batch, self._out_size, "h_0", dtype)
        return h0, self._state(c_in, batched, batch, self.hidden_size, "c_0", dtype)

    def _forward_packed(self, input: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """torch's packed path: states follow `sorted_indices`; outputs exist only within lengths."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        if not isinstance(data, Tensor) or data.ndim != 2 or data.shape[-1] != self.input_size:
            shape = data.shape if isinstance(data, Tensor) else type(data).__name__
            raise self.input_error(shape, f"PackedSequence data of shape (sum(lengths), {self.input_size})")
        x, lengths = pad_packed_sequence(PackedSequence(data, batch_sizes))  # time-major, sorted order
        lengths = lengths.numpy()
        valid = nb.tensor((np.arange(x.shape[0])[:, None] < lengths[None, :])[..., None])
        h0, c0 = self._initial_states(hx, True, x.shape[1], x.dtype)
        if sorted_indices is not None:
            h0 = nb.index_select(h0, 1, sorted_indices)
            c0 = None if c0 is None else nb.index_select(c0, 1, sorted_indices)
        out, h_n, c_n = self._layers(x, h0, c0, valid)
        if unsorted_indices is not None:
            h_n = nb.index_select(h_n, 1, unsorted_indices)
            c_n = None if c_n is None else nb.index_select(c_n, 1, unsorted_indices)
        packed = PackedSequence(pack_padded_sequence(out, lengths).data, batch_sizes, sorted_indices, unsorted_indices)
        return packed, (h_n if c_n is None else (h_n, c_n))

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward(input, hx)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (cuDNN's weight packing does not apply)."""

    @property
    def _flat_weights_names(self) -> list[str]:
        """torch's names of every weight, layer by layer and direction by direction."""
        kinds = [k for k in _WEIGHT_KINDS if (self.bias or "bias" not in k) and (self.proj_size or k != "weight_hr")]
        return [
            f"{kind}_l{layer}{'_reverse' if d else ''}"
            for layer in range(self.num_layers)
            for d in range(self._num_directions)
            for kind in kinds
        ]

    @property
    def _flat_weights(self) -> list[Tensor]:
        """The weights named by `_flat_weights_names` (parametrized ones as computed)."""
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters of each layer and direction, in torch's order."""
        return [
            [p for p in self._cell_parameters(layer, bool(d)) if p is not None]
            for layer in range(self.num_layers)
            for d in range(self._num_directions)
        ]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
        device, dtype: as in `RNNBase`.
        nonlinearity: "tanh" (default) or "relu".

    forward(input, hx=None) -> (output, h_n): input (L, N, H_in) ((N, L, H_in) with
    batch_first) or unbatched (L, H_in); hx and h_n (num_layers * D, N, H); output
    (L, N, D * H); D = 2 if bidirectional. A PackedSequence input (`nabla_nn.utils.rnn`) gives a
    PackedSequence output, and h_n holds each sequence's state at its own last step.

    Example:
        >>> rnn = nn.RNN(10, 20, num_layers=2)
        >>> out, h_n = rnn(nb.randn(5, 3, 10))
        >>> out.shape, h_n.shape
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}, select from 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        super().__init__(
            modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
            device=device, dtype=dtype,
        )  # fmt: skip


class LSTM(RNNBase):
    """Long short-term memory, torch's gate order (input, forget, cell, output):

    i, f, g, o = chunks of x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh;
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g); h_t = sigmoid(o) * tanh(c_t)
    (then h_t W_hr^T with proj_size > 0).

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
        proj_size, device, dtype: as in `RNNBase`.

    forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n)): h (num_layers * D, N, H_out),
    c (num_layers * D, N, H); H_out = proj_size or hidden_size; output (L, N, D * H_out), or a
    PackedSequence for a PackedSequence input.

    Example:
        >>> lstm = nn.LSTM(10, 20, batch_first=True, bidirectional=True)
        >>> out, (h, c) = lstm(nb.randn(3, 5, 10))
        >>> out.shape, h.shape
        ((3, 5, 40), (2, 3, 20))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
            device=device, dtype=dtype,
        )  # fmt: skip


class GRU(RNNBase):
    """Gated recurrent unit, torch's gate order (reset, update, new):

    r = sigmoid(x W_ir + b_ir + h W_hr + b_hr); z = sigmoid(x W_iz + b_iz + h W_hz + b_hz);
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)); h_t = (1 - z) * n + z * h_{t-1}.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
        device, dtype: as in `RNNBase`.

    forward(input, hx=None) -> (output, h_n), shapes as `RNN`.

    Example:
        >>> gru = nn.GRU(10, 20, num_layers=2)
        >>> out, h_n = gru(nb.randn(5, 3, 10))
        >>> out.shape, h_n.shape
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
            device=device, dtype=dtype,
        )  # fmt: skip
