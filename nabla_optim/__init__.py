"""nabla_optim: optimizers and LR schedulers with PyTorch semantics.

Not built yet: they arrive with the nn/optim issue. This package exists so the
distribution's layout is final.
"""

__all__: list[str] = []
