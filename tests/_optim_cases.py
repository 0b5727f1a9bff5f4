"""Shared by the optimizer tests: the cases run against PyTorch, every optimizer's settings, and
the helpers that make data and run nabla's optimizers on it."""

from __future__ import annotations

import numpy as np
from _oracle import torch

import nabla as nb
import nabla_optim as optim
from nabla_nn.parameter import Parameter

SHAPES = ((4, 3), (3,))
# Muon takes 2-D parameters only (a tall and a wide one); Adafactor factors the second moment
# of a matrix and of a batch of them, and keeps a vector's whole
OWN_SHAPES = {"Muon": ((4, 3), (3, 5)), "Adafactor": ((4, 3), (2, 3, 5), (3,))}


def shapes_of(name: str) -> tuple:
    return OWN_SHAPES.get(name, SHAPES)


def torch_opt(name: str, params: list, **kwargs: object) -> object:
    """PyTorch's optimizer `name`, its single-tensor implementation where it has a choice."""
    return getattr(torch.optim, name)(params, **({} if name == "Muon" else {"foreach": False}), **kwargs)


# (optimizer name, kwargs): each runs in nabla and PyTorch from the same start with the same grads.
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    # RAdam rectifies from the 6th step on (rho_t > 5) where beta2 >= 0.9
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (0.02, 0.08), "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    # t0=2: mu = 1/2 after step 4, so steps 5 and 6 average
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "lambd": 0.05, "t0": 0.5, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.1, "beta2_decay": -0.5, "eps": (1e-30, 1e-2), "d": 1.5, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.01, "maximize": True}),
    ("Muon", {}),
    ("Muon", {"lr": 0.02, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0}),
    ("Muon", {"lr": 0.02, "adjust_lr_fn": "match_rms_adamw", "ns_steps": 3, "eps": 1e-5}),
    ("Muon", {"lr": 0.05, "ns_coefficients": (2.0, -1.5, 0.5), "adjust_lr_fn": "original"}),
]

ALL_OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"lr": 0.01},
    "AdamW": {"lr": 0.01},
    "RMSprop": {"lr": 0.01, "momentum": 0.5},
    "Adagrad": {"lr": 0.1},
    "Adamax": {"lr": 0.01},
    "NAdam": {"lr": 0.01},
    "Lion": {"lr": 0.01, "weight_decay": 0.1},
    "RAdam": {"lr": 0.01},
    "Adadelta": {"lr": 1.0},
    "Rprop": {"lr": 0.01},
    "ASGD": {"lr": 0.05, "lambd": 0.01, "t0": 2},
    "Adafactor": {"lr": 0.05},
    "Muon": {"lr": 0.02},
}


def make_data(steps: int, dtype: type = np.float32, seed: int = 0, shapes: tuple = SHAPES) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    return inits, grads


def run_nabla(name: str, kwargs: dict, inits: list, grads: list) -> tuple[list, optim.Optimizer]:
    params = [Parameter(nb.tensor(a)) for a in inits]
    opt = getattr(optim, name)(params, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = nb.tensor(g)
        opt.step()
    return params, opt
