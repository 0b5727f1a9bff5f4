"""Save, reload and resume: model weights in safetensors (PyTorch names and layouts),
optimizer and scheduler state alongside; the resumed run continues bit-identically.

    python examples/checkpoint_resume.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from mlp_classifier import MLP, make_data

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim


def train(model: nn.Module, opt: optim.Optimizer, sched, batches: list) -> float:
    for xb, yb in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        sched.step()
    return loss.item()


def save_train_state(opt: optim.Optimizer, sched, path: Path) -> None:
    """Optimizer tensors as safetensors entries, the rest (hyperparameters, scheduler) as JSON
    metadata: nothing that loading would have to execute (no pickle)."""
    sd = opt.state_dict()
    tensors = {f"{i}.{k}": v for i, s in sd["state"].items() for k, v in s.items()}
    meta = {"param_groups": json.dumps(sd["param_groups"]), "scheduler": json.dumps(sched.state_dict())}
    nn.save(tensors, path, metadata=meta)


def load_train_state(opt: optim.Optimizer, sched, path: Path) -> None:
    tensors = nn.load(path)
    meta = nn.serialization.load_metadata(path)
    state: dict = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        state.setdefault(int(index), {})[name] = value
    opt.load_state_dict({"state": state, "param_groups": json.loads(meta["param_groups"])})
    sched.load_state_dict(json.loads(meta["scheduler"]))


def main() -> None:
    nb.manual_seed(0)
    x, y = make_data(4096)
    batches = [(nb.tensor(x[i : i + 128]), nb.tensor(y[i : i + 128])) for i in range(0, 4096, 128)]
    model = MLP()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=len(batches))
    train(model, opt, sched, batches[:16])
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp)
        model.save_weights(ckpt / "model.safetensors")  # atomic: a crash never loses the old file
        save_train_state(opt, sched, ckpt / "train_state.safetensors")
        final = train(model, opt, sched, batches[16:])

        resumed = MLP()
        resumed.load_weights(ckpt / "model.safetensors")
        opt2 = optim.AdamW(resumed.parameters(), lr=1e-3)
        sched2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=len(batches))
        load_train_state(opt2, sched2, ckpt / "train_state.safetensors")
        final2 = train(resumed, opt2, sched2, batches[16:])
    same = all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(model.state_dict().values(), resumed.state_dict().values(), strict=True)
    )
    print(f"final loss {final:.6f}, resumed {final2:.6f}; parameters bit-identical: {same}")


if __name__ == "__main__":
    main()
