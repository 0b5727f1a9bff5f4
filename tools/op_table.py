"""Print (or check) the op status table in nabla/ops/README.md from the op registry.

    python tools/op_table.py          # rewrite the table in nabla/ops/README.md
    python tools/op_table.py --check  # exit 1 if the README's table is stale

Each public op is listed with its family, the Operation primitives it lowers to, and whether
those primitives define a VJP rule and a JVP rule, and how they shard: "factors" (a factor
rule propagates layouts), "replicated" (sharded inputs are gathered and the op runs
replicated), or "partly". A "composite" is a function built from other ops: its derivatives
and sharding come from theirs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from op_registry import REGISTRY  # noqa: E402

import nabla as nb  # noqa: E402

README = ROOT / "nabla" / "ops" / "README.md"
BEGIN, END = "<!-- op-table:begin -->", "<!-- op-table:end -->"


def _operation_classes() -> dict[str, type]:
    seen, stack = {}, [nb.Operation]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__.startswith("nabla.") and sub.name != "?":
                seen[sub.name] = sub
            stack.append(sub)
    return seen


def _overrides(cls: type, method: str) -> bool:
    return getattr(cls, method) is not getattr(nb.Operation, method)


def _rule(spec, prims: list[type], method: str) -> str:
    if not spec.differentiable:
        return "n/a"
    diff = [c for c in prims if c.differentiable]
    return "yes" if all(_overrides(c, method) for c in diff) else "missing"


def _sharding(prims: list[type]) -> str:
    if not prims:
        return "-"
    kinds = {"factors" if c.sharding_rule or _overrides(c, "sharding_rule_for") else "replicated" for c in prims}
    return kinds.pop() if len(kinds) == 1 else "partly"


def table() -> str:
    ops = _operation_classes()
    rows = ["| op | family | kind | primitives used | VJP | JVP | sharding |", "|---|---|---|---|---|---|---|"]
    for spec in sorted(REGISTRY, key=lambda s: (s.family, s.name)):
        prims = [ops[n] for n in spec.covers if n in ops]
        kind = "primitive" if spec.name in ops else "composite"
        names = ", ".join(c.name for c in prims) or "-"
        shard = _sharding(prims)
        public = spec.name + "".join(f" / {a}" for a in spec.aliases)
        vjp, jvp = _rule(spec, prims, "vjp_rule"), _rule(spec, prims, "jvp_rule")
        rows.append(f"| `{public}` | {spec.family} | {kind} | {names} | {vjp} | {jvp} | {shard} |")
    return "\n".join(rows)


def main() -> int:
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + table() + "\n" + text[end:]
    if "--check" in sys.argv:
        if new != text:
            print("nabla/ops/README.md's op table is stale: run python tools/op_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
