"""Shared test setup.

Every test runs on the NumPy executor (no MAX compile, which costs 10-50 s) unless its module
sets `USES_MAX = True`, in which case the executor is "max" for that module's tests. The
previous executor is restored after each test either way.

Compiled models are stored on disk in a directory of this test session, so counts of compiles
never depend on what an earlier run left in the user's model store (MAX's own kernel cache,
`NABLA_CACHE_DIR`, still makes repeated compiles cheap).
"""

from __future__ import annotations

import gc

import pytest

import nabla


def _realize_leftovers() -> None:
    """Compute (on the NumPy executor) promise tensors a test left alive, e.g. in the frames of
    a caught exception's traceback, or a test module created at import: a pending tensor joins
    the next evaluation, so a leftover would change a later test's cache key and counters."""
    if not nabla.GRAPH.pending_impls():
        return
    gc.collect()
    pending = nabla.GRAPH.pending_impls()
    if pending:
        nabla.GRAPH.evaluate(pending)


@pytest.fixture(autouse=True, scope="session")
def _session_model_store(tmp_path_factory: pytest.TempPathFactory):
    nabla.set_model_store(str(tmp_path_factory.mktemp("nabla-cache")))
    yield
    nabla.set_model_store(None)


@pytest.fixture(autouse=True)
def _executor_for_test(request: pytest.FixtureRequest):
    previous = nabla.get_executor()
    uses_max = bool(getattr(request.module, "USES_MAX", False))
    nabla.set_executor("numpy")
    _realize_leftovers()  # module-level tensors of any collected test file (`W = nb.ones(3)`) too
    nabla.set_executor("max" if uses_max else "numpy")
    try:
        yield
        if not uses_max:
            _realize_leftovers()
    finally:
        nabla.set_executor(previous)
