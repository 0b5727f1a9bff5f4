"""Save, reload and resume: model weights in safetensors (PyTorch names and layouts), and a
training checkpoint as `torch.save` users write one (a dict of state_dicts and numbers), also in
safetensors (no pickle); the resumed run continues bit-identically.

    python examples/checkpoint_resume.py
"""

from __future__ import annotations

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
        state = {"optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "step": 16}
        nn.save(state, ckpt / "train_state.safetensors")  # tensors stored, the rest as JSON
        final = train(model, opt, sched, batches[16:])

        resumed = MLP()
        resumed.load_weights(ckpt / "model.safetensors")
        opt2 = optim.AdamW(resumed.parameters(), lr=1e-3)
        sched2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=len(batches))
        state = nn.load(ckpt / "train_state.safetensors")  # the same nesting back
        opt2.load_state_dict(state["optimizer"])
        sched2.load_state_dict(state["scheduler"])
        final2 = train(resumed, opt2, sched2, batches[16:])
    same = all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(model.state_dict().values(), resumed.state_dict().values(), strict=True)
    )
    print(f"final loss {final:.6f}, resumed {final2:.6f}; parameters bit-identical: {same}")


if __name__ == "__main__":
    main()
