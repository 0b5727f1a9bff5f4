"""nabla_optim: optimizers and learning-rate schedulers with PyTorch semantics.

A training step `opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()` evaluates
nothing until `opt.step()`, which computes forward, backward, every update and the loss as one
graph. The graph is the same from the first step on (state starts as realized tensors, the
learning rate and step count are graph inputs), so a loop compiles once, and schedulers that
change the learning rate never recompile.

Example:
    >>> import nabla_optim as optim
    >>> opt = optim.AdamW(model.parameters(), lr=1e-3)
    >>> sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    >>> for x, y in batches:
    ...     opt.zero_grad()
    ...     loss = loss_fn(model(x), y)
    ...     loss.backward()
    ...     opt.step()
    ...     sched.step()
"""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .lion import Lion
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "ASGD",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Lion",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "lr_scheduler",
    "swa_utils",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
]
