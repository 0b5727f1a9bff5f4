"""Hook-based spectral normalization (PyTorch's `torch.nn.utils.spectral_norm`): the weight
moves to `<name>_orig`, the power-iteration vectors are buffers `<name>_u`, `<name>_v`, and a
forward pre-hook sets `module.<name> = W / sigma(W)` before every call. Prefer
`nabla_nn.utils.parametrizations.spectral_norm`."""

from __future__ import annotations

from typing import Any, TypeVar

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, is_lazy
from .weight_norm import _find_hook, _remove_hook

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

ModuleT = TypeVar("ModuleT", bound=Module)


class SpectralNorm:
    """The forward pre-hook: `module.<name> = <name>_orig / sigma`, with one power-method step
    (in place on `<name>_u`, `<name>_v`) per call in training mode.

    Args:
        name: the weight's name.
        n_power_iterations: power-method steps per call in training mode.
        dim: the output dimension (moved first before flattening to a matrix).
        eps: lower bound of the norms that normalize u and v.
    """

    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """The weight as a matrix, `dim` first and the other dimensions flattened."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """`<name>_orig / sigma`, after a power-method step if `do_power_iteration`."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with nb.no_grad():  # in place, as PyTorch's out=: the same buffers every step
                mat = nb.detach(weight_mat)
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(nb.matmul(mat.mT, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(nb.matmul(mat, v), dim=0, eps=self.eps))
        u, v = nb.detach(u), nb.detach(v)  # PyTorch's clones: the values of this moment
        sigma = nb.sum(u * nb.matmul(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put the current normalized weight back as a plain parameter."""
        with nb.no_grad():
            weight = Parameter(self.compute_weight(module, do_power_iteration=False))
        nb.evaluate(weight)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, weight)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        """Move `module.<name>` to `<name>_orig`, add the `_u`/`_v` buffers and the hook."""
        if _find_hook(module, SpectralNorm, name) is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if is_lazy(weight):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying spectral normalization"
            )
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u, v = (fn._random_unit(n, weight) for n in (h, w))
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)  # a plain attribute, recomputed by the hook
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn

    def _random_unit(self, n: int, like: Tensor) -> Tensor:
        draw = init.normal_(nb.zeros(n, dtype=like.dtype, device=like.device))
        unit = F.normalize(draw, dim=0, eps=self.eps)
        nb.evaluate(unit)
        return unit


def spectral_norm(
    module: ModuleT, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> ModuleT:
    """Spectral normalization with a forward pre-hook: `module.<name>` becomes W / sigma(W)
    (arXiv:1802.05957), W in the parameter `<name>_orig`, sigma from a power method on the
    buffers `<name>_u`, `<name>_v` (one step per call in training mode).

    Args:
        module: the module owning the weight.
        name: the weight's name.
        n_power_iterations: power-method steps per call in training mode.
        eps: lower bound of the norms that normalize u and v.
        dim: the output dimension; None means 1 for ConvTranspose layers, 0 otherwise.

    Returns:
        `module`.

    Example:
        >>> m = spectral_norm(nn.Linear(20, 40))
        >>> list(m.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: ModuleT, name: str = "weight") -> ModuleT:
    """Undo `spectral_norm`: `module.<name>` is a plain parameter holding W / sigma(W).

    Args:
        module: the module.
        name: the weight's name.

    Returns:
        `module`.

    Example:
        >>> remove_spectral_norm(spectral_norm(nn.Linear(40, 10)))
    """
    return _remove_hook(module, SpectralNorm, name, "spectral_norm")
