"""`Distribution`, the base class of every distribution (torch.distributions.Distribution)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import ops
from ..core.common import no_grad
from ..core.tensor import Size, Tensor
from . import constraints
from .utils import known_host as _known
from .utils import lazy_property, size

__all__ = ["Distribution"]


def _satisfied(constraint: constraints.Constraint, value: Any) -> bool:
    """Whether the host-known values of `value` satisfy `constraint` (True when unknown)."""
    known = value if isinstance(value, np.ndarray) else _known(value)
    if known is None:
        return True
    try:
        return bool(np.all(constraint.check(known)))
    except constraints.UnknownValues:  # (a tensor bound not yet computed)
        return True


class Distribution:
    """Base class for probability distributions (PyTorch's `torch.distributions.Distribution`).

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: whether to check parameters and `log_prob`'s values against their
            constraints; None means the class default (True, as torch; see
            `set_default_validate_args`). Checks are made on values the host already has:
            a parameter that is still a pending promise (e.g. a network's output) is not
            checked, because checking it would evaluate the graph early.

    Example:
        >>> d = nabla.distributions.Normal(nabla.zeros(3), 1.0)
        >>> d.batch_shape, d.event_shape, d.sample((2,)).shape
        (nabla.Size([3]), nabla.Size([]), (2, 3))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    _expand_params: tuple[str, ...] = ()  # (see `expand`)
    _expand_shared: tuple[str, ...] = ()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made later without an
        explicit `validate_args`.

        Example:
            >>> Distribution.set_default_validate_args(False)
        """
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: value must be True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = size(batch_shape), size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if not self._validate_args:
            return
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                "or initialize the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
        # (host values a subclass computed for parameters it derived, e.g. normalized probs)
        host_params = self.__dict__.pop("_host_params", {})
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # (skip constraints that cannot be checked)
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                continue  # (skip probs when logits were given, and the reverse)
            value = getattr(self, param)
            if not _satisfied(constraint, host_params.get(param, value)):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                    f"but found invalid values:\n{value}"
                )

    # -- shapes ----------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        """sample_shape + batch_shape + event_shape: the shape of `sample(sample_shape)`."""
        return Size(tuple(size(sample_shape)) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution of the same kind with its parameters expanded to `batch_shape`
        (no copies).

        Subclasses list what to expand in `_expand_params` rather than each writing `expand`:
        a tensor is broadcast to `batch_shape` plus its own dims past the old batch dims, a
        wrapped distribution is expanded, and a name the instance has not set (a `probs` not
        yet computed from `logits`) is skipped. `_expand_shared` names attributes the new
        distribution shares as they are. As torch's, the new instance keeps `validate_args`.

        Example:
            >>> nabla.distributions.Normal(nabla.zeros(3), 1.0).expand((2, 3)).batch_shape
            nabla.Size([2, 3])
        """
        # (the class that listed the parameters: a subclass of it with its own __init__ may hold
        # more state, so it must write its own expand, as torch requires)
        owner = next(c for c in type(self).__mro__ if "_expand_params" in vars(c))
        if owner is Distribution:
            raise NotImplementedError
        new = self._get_checked_instance(owner, _instance)
        batch = tuple(batch_shape)
        for name in self._expand_params:
            value = self.__dict__.get(name)
            if isinstance(value, Distribution):
                setattr(new, name, value.expand(batch_shape))
            elif value is not None:
                setattr(new, name, ops.broadcast_to(value, batch + tuple(value.shape[len(self._batch_shape) :])))
        for name in self._expand_shared:
            setattr(new, name, getattr(self, name))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    # -- constraints -----------------------------------------------------------------------------
    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each parameter's constraint, checked when `validate_args` is on."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint the values of the distribution satisfy."""
        raise NotImplementedError

    def _validate_sample(self, value: Any) -> None:
        """torch's checks of a `log_prob`/`cdf` argument: a Tensor whose shape broadcasts with
        batch_shape + event_shape, with values (when the host has them) in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {tuple(value.shape)} vs {tuple(self._event_shape)}."
            )
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                "the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if not _satisfied(support, value):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    # -- moments ---------------------------------------------------------------------------------
    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    # -- sampling and densities ------------------------------------------------------------------
    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A sample (or a `sample_shape` batch of them), without gradients."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterized sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """`n` samples (deprecated in torch in favour of `sample((n,))`)."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density/mass at `value`."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at `value`."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution, along a new leading dim."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, batched over batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return self.entropy().exp()

    def __repr__(self) -> str:
        parts = []
        for p in self.arg_constraints:
            value = self.__dict__.get(p)
            if isinstance(value, Tensor):  # (a pending value is shown by shape: printing never evaluates)
                known = _known(value) if value.numel() == 1 else None
                parts.append(f"{p}: {known.reshape(()).item() if known is not None else tuple(value.shape)}")
        return f"{self.__class__.__name__}({', '.join(parts)})"
