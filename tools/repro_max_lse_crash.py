"""Reproduces a MAX 26.7 CPU compiler crash (segfault / "operation's operand is unlinked").

A hand-written log-sum-exp with its VJP: reduce.max feeds both the shift (`a - m`) and the
final `+ m`, and the exp values are reused by the backward pass. The MAX graph printed before
compiling is clean (run with `--print`), so the crash is inside MAX's compiler; a likely suspect
is a softmax/logsumexp pattern fusion that does not expect the exp intermediate to have other
users. `nabla.logsumexp` and `log_softmax` are primitives and avoid the pattern.

    python tools/repro_max_lse_crash.py           # exit code 139 on MAX 26.7 (CPU)
    python tools/repro_max_lse_crash.py --print   # print the MAX graph instead of compiling
"""

import sys

import numpy as np

import nabla as nb
from nabla.core.graph import executors


def lse(a: nb.Tensor) -> nb.Tensor:
    m = nb.detach(nb.max(a, 1, True))
    return nb.reshape(nb.log(nb.sum(nb.exp(a - m), 1, True)) + m, (3,))


def main() -> None:
    if "--print" in sys.argv:

        def prepare(self: executors.MaxExecutor, program: object) -> None:
            print(self.build_module(program)._to_mlir_str())
            raise SystemExit(0)

        executors.MaxExecutor.prepare = prepare
    y, pullback = nb.vjp(lse, nb.tensor(np.random.rand(3, 4).astype(np.float32)))
    (g,) = pullback(nb.ones_like(y))
    nb.set_executor("max")
    nb.evaluate(y, g)
    print("compiled and ran:", y.numpy(), g.numpy())


if __name__ == "__main__":
    main()
