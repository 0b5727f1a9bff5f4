"""nabla_nn: PyTorch-style modules, layers, losses and state_dicts on top of nabla.

Not built yet: Module, layers, functional, losses, init and safetensors save/load arrive with
the nn/optim issue. This package exists so the distribution's layout is final.
"""

__all__: list[str] = []
