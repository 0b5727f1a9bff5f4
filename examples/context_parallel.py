"""Context-parallel training of a character-level causal language model on a simulated 2x2 mesh:
the batch split over "dp" (data parallel) and the sequence over "sp" (context parallel).

Every token's work (embeddings, projections, norms, MLPs, the loss) stays on the device that
holds the token. Attention needs every earlier key, so it runs as a ring: each device keeps its
queries and passes its key/value block round the "sp" devices (ppermutes), folding each block
into a running softmax; no device ever holds the whole sequence. The gradients are partial sums
that the optimizer's update all-reduces, all inside the one cached model each step runs.

    python examples/context_parallel.py
"""

from __future__ import annotations

import numpy as np
from char_transformer import CharLM, corpus
from tqdm import tqdm

import nabla as nb
import nabla_nn.functional as F
import nabla_optim as optim
from nabla import DeviceMesh, P
from nabla_nn.parallel import count_collectives


def main(steps: int = 150, batch: int = 8, seq: int = 64) -> None:
    nb.manual_seed(0)
    mesh = DeviceMesh("mesh", (2, 2), ("dp", "sp"))
    text = np.frombuffer(corpus().encode(), dtype=np.uint8).astype(np.int64)
    # No dropout (as in LLM pretraining): attention dropout would take the path that gathers keys.
    model = CharLM(d_model=64, nhead=4, layers=2, seq=seq, dropout=0.0)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    rng = np.random.default_rng(0)
    bar = tqdm(range(steps), desc="context parallel")
    first = None
    for i in bar:
        starts = rng.integers(0, len(text) - seq - 1, batch)
        chunk = text[starts[:, None] + np.arange(seq + 1)]
        # (batch, seq) token ids: rows over dp, positions over sp
        x, y = (nb.shard(nb.tensor(a), mesh, P("dp", "sp")) for a in (chunk[:, :-1], chunk[:, 1:]))
        opt.zero_grad()
        logits = model(x)
        # classes along dim 1, positions after: no reshape merging the dp and sp dims (which
        # would gather the sequence)
        loss = F.cross_entropy(logits.transpose(1, 2), y)
        loss.backward()
        if i == 0:  # the same every step: one cached model
            per_step = dict(count_collectives(loss, *[p.grad for p in model.parameters()]))
            print(f"\nlogits {tuple(logits.shape)} laid out {logits.sharding}")
        opt.step()
        first = loss.item() if first is None else first
        bar.set_postfix(loss=f"{loss.item():.4f}")
    print(f"loss {first:.3f} -> {loss.item():.3f}")
    print(f"communication per step, forward + backward: {per_step}")
    info = nb.cache_info()
    print(f"compiles {info.compiles}, cache hits {info.hits}")


if __name__ == "__main__":
    main()
