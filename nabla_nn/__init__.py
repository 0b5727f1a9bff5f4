"""nabla_nn: PyTorch-style modules, layers, losses, initialisation, state_dicts and data loading.

Example:
    >>> import nabla as nb, nabla_nn as nn, nabla_optim as optim
    >>> model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    >>> opt = optim.Adam(model.parameters(), lr=1e-3)
    >>> for x, y in nn.data.DataLoader(nn.data.TensorDataset(xs, ys), batch_size=128, shuffle=True):
    ...     opt.zero_grad()
    ...     loss = nn.functional.cross_entropy(model(x), y)
    ...     loss.backward()
    ...     opt.step()          # forward, backward and update run as one cached MAX model
    >>> nn.save(model, "model.safetensors")
"""

from . import data, functional, init, parallel, utils
from .module import IncompatibleKeys, Module, RemovableHandle
from .module_hooks import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter
from .serialization import load, save

__all__ = [
    "Buffer",
    "DataParallel",
    "IncompatibleKeys",
    "Module",
    "Parameter",
    "RemovableHandle",
    "data",
    "functional",
    "init",
    "load",
    "parallel",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "save",
    "utils",
    *_modules_all,
]
