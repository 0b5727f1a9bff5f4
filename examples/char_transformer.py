"""A character-level transformer language model trained PyTorch-style (Embedding,
TransformerEncoder with a causal mask, AdamW, cosine schedule), then sampled from.

The text is generated from a tiny grammar, so no download is needed.

    python examples/char_transformer.py
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim


def corpus(length: int = 100_000, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "every bird"]
    verbs = ["sat on", "looked at", "ran past", "jumped over", "sang to"]
    objects = ["the mat", "a tree", "the river", "her house", "the moon"]
    parts = []
    while sum(map(len, parts)) < length:
        parts.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}. ")
    return "".join(parts)[:length]


class CharLM(nn.Module):
    def __init__(
        self, vocab: int = 128, d_model: int = 64, nhead: int = 4, layers: int = 2, seq: int = 64, dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.seq = seq
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=4 * d_model, dropout=dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("positions", nb.Tensor.from_numpy(np.arange(seq, dtype=np.int64)), persistent=False)
        mask = np.triu(np.full((seq, seq), -np.inf, np.float32), 1)
        self.register_buffer("causal", nb.Tensor.from_numpy(mask), persistent=False)

    def forward(self, idx: nb.Tensor) -> nb.Tensor:
        h = self.tok(idx) + self.pos(self.positions)
        return self.head(self.norm(self.encoder(h, mask=self.causal)))


def main(steps: int = 300, batch: int = 16) -> None:
    nb.manual_seed(0)
    text = np.frombuffer(corpus().encode(), dtype=np.uint8).astype(np.int64)
    model = CharLM()
    # The forward is traced once and recorded as one op per step (its gradient as one more):
    # Python's cost per step no longer grows with the model, and the step is still one model.
    model.compile()
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)  # a new lr every step, no recompile
    rng = np.random.default_rng(0)
    bar = tqdm(range(steps))
    for _ in bar:
        starts = rng.integers(0, len(text) - model.seq - 1, batch)
        chunk = text[starts[:, None] + np.arange(model.seq + 1)]
        x, y = nb.tensor(chunk[:, :-1]), nb.tensor(chunk[:, 1:])
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        sched.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    # Greedy sampling with a sliding window of `seq` characters (one eval model, reused).
    model.eval()
    context = list(b"the cat ".rjust(model.seq, b" "))[-model.seq :]
    out = []
    with nb.no_grad():
        for _ in range(60):
            logits = model(nb.tensor(np.array([context], np.int64)))
            nxt = int(logits[0, -1].argmax().item())
            out.append(nxt)
            context = context[1:] + [nxt]
    print("sample:", bytes(out).decode(errors="replace"))
    print(nb.cache_info())


if __name__ == "__main__":
    main()
