"""nabla/ops/README.md's op status table is generated from the registry and must stay true."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_op_table_in_readme_is_current():
    spec = importlib.util.spec_from_file_location("op_table", ROOT / "tools" / "op_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.README.read_text()
    start, end = text.index(module.BEGIN) + len(module.BEGIN), text.index(module.END)
    assert text[start:end].strip() == module.table(), "stale op table: run `python tools/op_table.py`"
    assert "| missing |" not in text, "an op lacks a VJP or JVP rule"
