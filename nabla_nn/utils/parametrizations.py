"""Ready-made parametrizations (PyTorch's `torch.nn.utils.parametrizations`): `weight_norm`
and `spectral_norm`, registered with `parametrize.register_parametrization`, so their state
lives under PyTorch's keys (`parametrizations.weight.original0`, `..._u`).

`orthogonal` is not provided: it needs the matrix exponential, QR and Householder products,
which nabla does not have.
"""

from __future__ import annotations

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from . import parametrize

__all__ = ["spectral_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """PyTorch's `norm_except_dim(v, 2, dim)`: the 2-norm over every dimension but `dim`
    (kept, size 1), or of the whole tensor (a scalar) for dim -1."""
    if dim == -1:
        return nb.sqrt(nb.sum(v * v))
    dim = dim + v.ndim if dim < 0 else dim
    axes = tuple(d for d in range(v.ndim) if d != dim)
    return nb.sqrt(nb.sum(v * v, axis=axes, keepdims=True))


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm over every dimension but `dim` (all for None/-1)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization: `module.<name>` becomes g * v / ||v|| (arXiv:1602.07868).

    The magnitude g is `parametrizations.<name>.original0` and the direction v
    `parametrizations.<name>.original1` (new parameters: give them to the optimizer).

    Args:
        module: the module owning the weight.
        name: the weight's name.
        dim: the dimension kept by the norm (per output channel for 0); None normalizes the
            whole tensor (so does -1, as in PyTorch).

    Returns:
        `module`, parametrized.

    Example:
        >>> m = weight_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        ((40, 1), (40, 20))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma(weight), sigma estimated by power iteration on the buffers `_u`, `_v`
    (one step per access in training mode); a vector is divided by its 2-norm."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", self._random_unit(h, weight))
            self.register_buffer("_v", self._random_unit(w, weight))
            self._power_method(weight_mat, 15)  # start near the top singular vectors, as PyTorch

    def _random_unit(self, n: int, like: Tensor) -> Tensor:
        draw = init.normal_(nb.zeros(n, dtype=like.dtype, device=like.device))
        return F.normalize(draw, dim=0, eps=self.eps)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # In place (the same buffer objects), so a compiled step keeps one structure.
        with nb.no_grad():
            weight_mat = nb.detach(weight_mat)
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(nb.matmul(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(nb.matmul(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = nb.detach(self._u), nb.detach(self._v)  # PyTorch's clones: the values of this moment
        sigma = nb.sum(u * nb.matmul(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Spectral normalization: `module.<name>` becomes W / sigma(W) (arXiv:1802.05957).

    sigma is estimated with the power method on the buffers `parametrizations.<name>.0._u`
    and `_v` (15 iterations at registration, `n_power_iterations` more on every access in
    training mode, updating them in place); a weight with more than two dimensions is reshaped
    to a matrix with `dim` first.

    Args:
        module: the module owning the weight.
        name: the weight's name.
        n_power_iterations: power-method steps per access in training mode.
        eps: lower bound of the norms that normalize u and v.
        dim: the output dimension; None means 1 for ConvTranspose layers, 0 otherwise.

    Returns:
        `module`, parametrized.

    Example:
        >>> m = spectral_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight[0]._u.shape
        (40,)
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
