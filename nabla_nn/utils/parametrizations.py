"""Ready-made parametrizations (PyTorch's `torch.nn.utils.parametrizations`): `weight_norm`,
`spectral_norm` and `orthogonal`, registered with `parametrize.register_parametrization`, so their
state lives under PyTorch's keys (`parametrizations.weight.original0`, `..._u`, `...0.base`).

`orthogonal` builds on nabla's composite matrix functions (`nabla.matrix_exp`, `nabla.solve`,
`nabla.householder_product`, `nabla.geqrf`); complex (unitary) weights are not supported.
"""

from __future__ import annotations

from enum import Enum, auto

import nabla as nb
from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


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


class _WeightNormCompatHook:
    """The load pre-hook `weight_norm` registers (PyTorch's `_weight_norm_compat_hook`): a
    state_dict saved with the deprecated hook-based `weight_norm` (`<name>_g`, `<name>_v`, as
    PyTorch's `torch.nn.utils.weight_norm` saves it) loads into the parametrization, its entries
    renamed to `parametrizations.<name>.original0` and `original1`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, state_dict: dict, prefix: str, *args: object) -> None:
        g_key, v_key = f"{prefix}{self.name}_g", f"{prefix}{self.name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0, original1 = state_dict.pop(g_key), state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{self.name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{self.name}.original1"] = original1


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization: `module.<name>` becomes g * v / ||v|| (arXiv:1602.07868).

    The magnitude g is `parametrizations.<name>.original0` and the direction v
    `parametrizations.<name>.original1` (new parameters: give them to the optimizer). As in
    PyTorch, `load_state_dict` also accepts a checkpoint of the deprecated hook-based
    `weight_norm` (`<name>_g`, `<name>_v`): a load pre-hook renames them.

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
    module._register_load_state_dict_pre_hook(_WeightNormCompatHook(name))
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


# -- orthogonal --------------------------------------------------------------------------------
_FINFO_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def _is_orthogonal(q: Tensor) -> bool:
    """PyTorch's check: `allclose(Q^T Q, I, atol=10 n eps)` (rtol 1e-5), read on the host."""
    n, k = q.shape[-2], q.shape[-1]
    ident = nb.eye(k, dtype=q.dtype)
    atol = 10.0 * n * _FINFO_EPS[q.dtype.name]
    return bool(nb.all(nb.abs(q.mT @ q - ident) <= atol + 1e-5 * ident).item())


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q factor of a tall `a = QR` with diag(R) >= 0 (PyTorch's `_make_orthogonal`)."""
    x, tau = nb.geqrf(a)
    q = nb.householder_product(x, tau)
    return q * nb.unsqueeze(nb.sign(x.diagonal(dim1=-2, dim2=-1)), -2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Q from an unconstrained matrix X (PyTorch's `_Orthogonal`): `exp(A)` or the Cayley map
    `(I - A/2)^-1 (I + A/2)` of the skew-symmetric A built from X's lower triangle (a tall X
    embedded in a square matrix, Q its first columns), or the product of the Householder
    reflectors below X's diagonal (X's diagonal, +-1, flips the signs of Q's columns). A wide X is
    handled transposed. With trivialization, Q is `base @ Q`, `base` an orthogonal buffer that
    assignments (`module.weight = Q`) set, the original then reset to -I (Q = base)."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = nb.tril(X)
            if n != k:  # embed the tall lower triangle into a square matrix
                X = nb.concatenate([X, nb.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)], axis=-1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = nb.matrix_exp(A)
            else:
                ident = nb.eye(n, dtype=A.dtype)
                Q = nb.solve(ident - 0.5 * A, ident + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = nb.tril(X, -1)
            tau = 2.0 / (1.0 + (A * A).sum(axis=-2))
            Q = nb.householder_product(A, tau)
            # X's diagonal holds +-1: truncated to an int as PyTorch's, so no gradient reaches it.
            Q = Q * nb.unsqueeze(X.diagonal(dim1=-2, dim2=-1).int(), -2).astype(Q.dtype)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with nb.no_grad():
            return self._right_inverse(nb.detach(Q))

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {Q.shape}."
            )
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential "
                    "or the Cayley parametrizations when use_trivialization=False."
                )
            # Householder: the reflectors of Q's QR, the diagonal the signs of R's (flipped where
            # LAPACK used no reflection, tau = 0), so that the forward gives back Q's Q factor.
            A, tau = nb.geqrf(Q)
            signs = nb.sign(A.diagonal(dim1=-2, dim2=-1))
            signs = nb.where(tau == 0.0, -signs, signs)
            A = nb.where(nb.eye(n, k, dtype=nb.bool_), nb.unsqueeze(signs, -2), A)
            A = A.mT if transpose else A
            nb.evaluate(A)
            return A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete Q to an n x n orthogonal matrix
            N = nb.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype)
            Q = _make_orthogonal(nb.concatenate([Q, N], axis=-1))
        nb.evaluate(Q)
        self.base = Q
        # -I: householder(0) with the diagonal -1 is I, and exp(0) = cayley(0) = I, so Q = base.
        neg_id = nb.zeros(*Q_init.shape, dtype=Q_init.dtype) - nb.eye(*Q_init.shape[-2:], dtype=Q_init.dtype)
        nb.evaluate(neg_id)
        return neg_id


def orthogonal(
    module: Module, name: str = "weight", orthogonal_map: str | None = None, *, use_trivialization: bool = True
) -> Module:
    """Make `module.<name>` an orthogonal matrix (or a batch of them, `(..., m, n)`): orthonormal
    columns when m >= n, orthonormal rows otherwise (PyTorch's `orthogonal`).

    The weight is computed from `parametrizations.<name>.original` by `orthogonal_map`:
    "matrix_exp" (the exponential of a skew-symmetric matrix: `nabla.matrix_exp`), "cayley"
    (`(I + A/2)(I - A/2)^-1`: `nabla.solve`, a graph of O(n) ops) or "householder" (a product of
    Householder reflectors: `nabla.householder_product`). With `use_trivialization` (the default)
    it is also multiplied by the orthogonal buffer `parametrizations.<name>.0.base`; registering
    sets base to the weight if that is orthogonal, else to the Q factor of its QR (a tall or wide
    weight is completed with random columns first), and the original to -I, so the weight starts
    as that matrix. Assigning `module.<name> = Q` does the same; without trivialization only
    "householder" supports it. The state_dict keys are PyTorch's, so a torch state_dict of an
    orthogonal layer loads as it is and gives the same weight.

    Args:
        module: the module owning the weight.
        name: the weight's name (at least 2-D).
        orthogonal_map: "matrix_exp", "cayley" or "householder"; None means "matrix_exp" for
            square matrices, "householder" otherwise.
        use_trivialization: keep the `base` buffer (the dynamic trivialization framework).

    Returns:
        `module`, parametrized.

    Example:
        >>> m = orthogonal(nn.Linear(20, 40))
        >>> q = m.weight
        >>> float(nb.abs(q.mT @ q - nb.eye(20)).max()) < 1e-5
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = _OrthMaps.__members__.get(orthogonal_map) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
