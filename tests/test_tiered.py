"""The auto executor's policy, without MAX: a stand-in compiled tier and a compile service the
test finishes by hand, so the switch point is exact. Also: compile counts of whole training
loops, the in-memory LRU cache, and the on-disk model store's keys and files."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim
from nabla.core.graph import GRAPH, artifacts, background, executors
from nabla.core.graph import program as program_mod
from nabla.core.graph.background import CompileFailed
from nabla.core.graph.program import Program
from nabla.core.graph.symbolic import SymInt, _resolver, make_symbolic_pair, resolve_program
from nabla.core.graph.tiered import TieredExecutor
from nabla_optim.adam import Adam
from nabla_optim.fused import _Rule

NUMPY = executors.get_executor_impl("numpy")


class StandInCompiled:
    """Plays MaxExecutor: a 'compiled model' is the program, run by NumPy but counted."""

    def __init__(self) -> None:
        self.runs = 0

    def build_module(self, program, resolve=None):
        return program

    def compile_module(self, module, extensions):
        return module

    def load(self, compiled, program):
        return ("compiled", program)

    def load_stored(self, program, name):
        return None

    def run(self, model, inputs):
        self.runs += 1
        program = model[1]
        sizes = {  # a symbolic program (a symbolic dim's size read from the input carrying it)
            dim.coeffs[0][0]: np.shape(x)[d]
            for (_, shape), x in zip(program.input_types, inputs, strict=True)
            for d, dim in enumerate(shape)
            if isinstance(dim, SymInt)
        }
        if sizes:
            program = resolve_program(program, _resolver(lambda s: s.value(sizes)))
        return NUMPY.run(program, inputs)


class ManualService:
    """Jobs wait until the test calls `finish()` or `fail()`."""

    def __init__(self) -> None:
        self.jobs: list = []

    def submit(self, job):
        self.jobs.append(job)
        return job.future

    def pending(self) -> int:
        return len(self.jobs)

    def finish(self) -> None:
        for job in self.jobs:
            job.future.set_result(job.finish(job.build()))
        self.jobs.clear()

    def fail(self) -> None:
        for job in self.jobs:
            job.future.set_exception(CompileFailed("MAX could not compile the model: boom"))
        self.jobs.clear()

    def wait(self, timeout=None) -> bool:
        self.finish()
        return True


@pytest.fixture
def auto(monkeypatch):
    compiled = StandInCompiled()
    executor = TieredExecutor(NUMPY, compiled)
    executor.service = ManualService()
    executor.compile_after = 2
    monkeypatch.setitem(executors._EXECUTORS, "auto", executor)
    GRAPH.evaluate(GRAPH.pending_impls())  # (NumPy) tensors left pending elsewhere must not join these programs
    GRAPH.clear_cache()
    nb.set_executor("auto")
    nb.reset_cache_info()
    yield executor, compiled
    GRAPH.clear_cache()


def _affine(data: np.ndarray) -> nb.Tensor:
    return nb.Tensor.from_numpy(data) * 3.0 - 1.0


def test_tier0_first_then_compile_in_background_then_switch(auto):
    executor, compiled = auto
    rng = np.random.default_rng(0)
    states = []
    for i in range(6):
        if i == 3:
            executor.service.finish()
        data = rng.standard_normal(5).astype(np.float32)
        np.testing.assert_allclose(_affine(data).numpy(), data * 3.0 - 1.0, rtol=1e-6)
        states.append(nb.cached_models()[0].state)
    info = nb.cache_info()
    assert states == ["tier0", "compiling", "compiling", "compiled", "compiled", "compiled"]
    assert (info.compiles, info.misses, info.hits) == (1, 1, 5)
    assert info.tier0_executions == 3 and compiled.runs == 3
    entry = next(iter(GRAPH._cache.values()))[1]
    assert entry.switched_at == 4 and entry.runs == 6


def test_graphs_evaluated_once_never_compile(auto):
    x = nb.Tensor.from_numpy(np.ones(3, np.float32))
    for n in range(1, 11):  # ten programs (n exps), each evaluated once
        y = x
        for _ in range(n):
            y = nb.exp(y)
        y.numpy()
    info = nb.cache_info()
    assert info.compiles == 0 and info.tier0_executions == 10 and info.misses == 10


def test_one_program_at_many_sizes_compiles_one_symbolic_model(auto):
    """The second size merges the two traces into one model for every size; like any model, it
    compiles once it has run twice (compile_after=2): here at the third size."""
    executor, compiled = auto
    for n in range(1, 11):
        if n == 4:
            executor.service.finish()
        data = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(_affine(data).numpy(), data * 3.0 - 1.0, rtol=1e-6)
    info = nb.cache_info()
    assert (info.compiles, info.misses, info.tier0_executions, compiled.runs) == (1, 10, 3, 7)


def test_compiled_functions_compile_at_their_first_call(auto):
    executor, compiled = auto
    f = nb.compile(lambda a: a * 2.0 + 1.0)
    x = nb.Tensor.from_numpy(np.arange(4, dtype=np.float32))
    np.testing.assert_allclose(f(x).numpy(), [1, 3, 5, 7])
    assert f.stats.compiles == 1 and executor.service.pending() == 1 and compiled.runs == 0
    executor.service.finish()
    np.testing.assert_allclose(f(x).numpy(), [1, 3, 5, 7])
    assert compiled.runs == 1


def test_failed_compile_warns_once_and_stays_on_tier0(auto):
    executor, compiled = auto
    data = np.arange(3, dtype=np.float32)
    _affine(data).numpy(), _affine(data).numpy()
    executor.service.fail()
    with pytest.warns(RuntimeWarning, match="background compile failed, staying on NumPy"):
        out = _affine(data).numpy()
    np.testing.assert_allclose(out, data * 3.0 - 1.0)
    _affine(data).numpy()
    assert nb.cached_models()[0].state == "failed" and nb.cache_info().compiles == 1 and compiled.runs == 0


def test_wait_for_compiles_blocks_until_the_service_is_idle(auto):
    executor, _ = auto
    data = np.ones(2, np.float32)
    _affine(data).numpy(), _affine(data).numpy()
    assert nb.cache_info().compiling == 1
    assert nb.wait_for_compiles(timeout=1.0)
    assert nb.cache_info().compiling == 0


# -- compile economy: a whole training loop is one model ----------------------------------------
def _mlp():
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, optim.Adam(model.parameters(), lr=1e-2), None, lambda: np.zeros((8, 12), np.float32)


def _cnn():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3))
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return model, opt, None, lambda: np.zeros((4, 1, 8, 8), np.float32)


def _transformer():
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    model = nn.Sequential(layer, nn.Flatten(), nn.Linear(6 * 16, 3))
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    return model, opt, optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10), lambda: np.zeros((4, 6, 16), np.float32)


@pytest.mark.parametrize("make", [_mlp, _cnn, _transformer], ids=["mlp", "cnn", "transformer+scheduler"])
def test_training_loop_compiles_one_model_and_eval_one_more(auto, make):
    """Even compiling every structure at first sight (compile_after=1), parameter init, optimizer
    state, data transfer, `.item()` and the scheduler build no model of their own: the loop is
    one compile, and an `eval()` loop under `no_grad` one more."""
    executor, _ = auto
    executor.compile_after = 1
    nb.manual_seed(0)
    model, opt, sched, batch = make()
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(4):
        x = nb.Tensor.from_numpy(batch() + rng.standard_normal(batch().shape).astype(np.float32))
        y = nb.Tensor.from_numpy(rng.integers(0, 3, x.shape[0]))
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
        executor.service.finish()
    assert nb.cache_info().compiles == 1
    model.eval()
    with nb.no_grad():
        for _ in range(3):
            nb.Tensor.from_numpy(np.zeros(1)).item()  # data transfer and .item() of a realized tensor
            model(nb.Tensor.from_numpy(batch())).argmax(-1).numpy()
    assert nb.cache_info().compiles == 2
    assert all(np.isfinite(losses))


def _steps(make, sizes):
    """Train `make`'s model one step per batch size in `sizes`; the losses and final weights."""
    nb.manual_seed(0)
    model, opt, _, batch = make()
    rng = np.random.default_rng(0)
    losses = []
    for n in sizes:
        shape = (n, *batch().shape[1:])
        x = nb.Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32))
        y = nb.Tensor.from_numpy(rng.integers(0, 3, n))
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        executor = executors.get_executor_impl(nb.get_executor())
        if isinstance(executor, TieredExecutor):
            executor.service.finish()
    return losses, [p.numpy() for p in model.parameters()]


def _compiled_mlp():
    model, opt, sched, batch = _mlp()
    model.compile()
    return model, opt, sched, batch


@pytest.mark.parametrize(
    "make", [_mlp, _cnn, _transformer, _compiled_mlp], ids=["mlp", "cnn", "transformer", "mlp+module.compile"]
)
def test_a_partial_batch_compiles_one_model_for_every_batch_size(auto, make):
    """PyTorch's automatic dynamic shapes: a training step at a second batch size compiles one
    model with a symbolic batch dim (forward, the recorded backward inside its `call` op, and the
    optimizer update), which then runs every later size with no compile, matching NumPy."""
    executor, compiled = auto
    executor.compile_after = 1
    sizes = [8, 5, 8, 3, 7, 3]
    losses, weights = _steps(make, sizes)
    info = nb.cache_info()
    assert (info.compiles, info.misses, info.hits) == (2, 4, 2)
    assert info.tier0_executions == 2 and compiled.runs == 4  # sizes 8, 3, 7 and 3 on compiled models
    nb.set_executor("numpy")
    ref_losses, ref_weights = _steps(make, sizes)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for w, r in zip(weights, ref_weights, strict=True):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)


class _TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(11, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.head = nn.Linear(16, 11)
        self.register_buffer("causal", nb.Tensor.from_numpy(np.triu(np.full((6, 6), -np.inf, np.float32), 1)))

    def forward(self, idx):
        return self.head(self.layer(self.tok(idx), src_mask=self.causal))


def _step_program(model, opt, n: int, make_x) -> Program:
    """The program of one training step at batch size n (as the engine collects it)."""
    seen = []
    original = GRAPH._lookup_or_prepare

    def spy(executor, collected, hot=False, split_constants=False):
        seen.append(collected.to_program())
        return original(executor, collected, hot, split_constants)

    GRAPH._lookup_or_prepare = spy
    try:
        rng = np.random.default_rng(n)
        x, y = make_x(n, rng)
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        loss.item()
    finally:
        GRAPH._lookup_or_prepare = original
    return seen[-1]


def _image_batch(n, rng):
    return nb.Tensor.from_numpy(rng.standard_normal((n, 1, 8, 8)).astype(np.float32)), nb.tensor(rng.integers(0, 3, n))


def _token_batch(n, rng):
    return nb.tensor(rng.integers(0, 11, (n, 6))), nb.tensor(rng.integers(0, 11, (n, 6)))


@pytest.mark.parametrize("which", ["cnn", "lm"])
def test_symbolic_training_steps_lower_to_max_graphs(which):
    """Every lowering in a CNN's and a language model's step (convolutions, pooling, NHWC twins,
    embedding gradients by scatter, attention) builds with a symbolic batch dim: no kernel
    reads a symbolic size as an int (MAX's graph is built, not compiled)."""
    nb.set_executor("numpy")
    nb.manual_seed(0)
    if which == "cnn":
        model, opt, _, _ = _cnn()
        make_x = _image_batch
    else:
        model = _TinyLM()
        opt, make_x = optim.AdamW(model.parameters(), lr=1e-3), _token_batch
    plan = make_symbolic_pair(_step_program(model, opt, 4, make_x), _step_program(model, opt, 3, make_x))
    assert any(isinstance(d, SymInt) for _, shape in plan.program.input_types for d in shape)
    module = executors.get_executor_impl("max").build_module(plan.program, _resolver(SymInt.to_dim))
    assert "<n>" in str(module.mlir_module)  # the graph is generic in the symbolic batch dim


def test_sizes_that_are_not_affine_get_models_of_their_own_and_say_why(auto, capsys):
    executor, compiled = auto
    executor.compile_after = 1
    nb.set_log_recompiles(True)
    try:
        for n in (8, 6, 8, 4):
            x = nb.Tensor.from_numpy(np.arange(n, dtype=np.float32))
            np.testing.assert_allclose(x[: n // 2].sum().item(), sum(range(n // 2)))
            executor.service.finish()
    finally:
        nb.set_log_recompiles(False)
    assert nb.cache_info().compiles == 3  # 8, 6 and 4 (the merge of 8 and 6 failed)
    assert "not an affine function of the size" in capsys.readouterr().err


def test_a_size_whose_trace_is_not_the_symbolic_programs_instance_compiles_its_own(auto):
    """sum(x) * min(n, 5) is affine in n at n = 2 and 4 (the merged program multiplies by n), but
    not at 8: the engine compares each new trace with the symbolic program at its size."""
    executor, compiled = auto
    executor.compile_after = 1
    for n in (2, 4, 8):
        x = nb.Tensor.from_numpy(np.ones(n, np.float32))
        assert (x.sum() * float(min(n, 5))).item() == n * min(n, 5)
        executor.service.finish()
    assert nb.cache_info().compiles == 3


def test_no_recompile_allows_a_size_the_symbolic_model_serves(auto):
    executor, _ = auto
    for n in (4, 6):
        _affine(np.ones(n, np.float32)).numpy()
    with nb.no_recompile():
        np.testing.assert_allclose(_affine(np.ones(9, np.float32)).numpy(), np.full(9, 2.0))
        with pytest.raises(nb.RecompileError):
            (_affine(np.ones(9, np.float32)) * 2.0).numpy()


def test_auto_dynamic_off_compiles_every_size(auto):
    executor, _ = auto
    executor.compile_after = 1
    nb.set_auto_dynamic(False)
    try:
        for n in (4, 6, 9):
            _affine(np.ones(n, np.float32)).numpy()
    finally:
        nb.set_auto_dynamic(True)
    assert nb.cache_info().compiles == 3


# -- the in-memory cache -----------------------------------------------------------------------
def test_model_cache_is_bounded_least_recently_used_first():
    nb.set_executor("numpy")
    GRAPH.clear_cache()
    limit = GRAPH.max_cache_size
    try:
        nb.set_cache_limit(2)
        for n in (1, 2, 3):
            _affine(np.ones(n, np.float32)).numpy()
        assert [m.inputs[0][1] for m in nb.cached_models()] == [(2,), (3,)]
        _affine(np.ones(2, np.float32)).numpy()  # a hit moves (2,) to the back
        _affine(np.ones(1, np.float32)).numpy()  # a miss evicts (3,)
        assert [m.inputs[0][1] for m in nb.cached_models()] == [(2,), (1,)]
        with pytest.raises(ValueError, match="at least 1, got 0"):
            nb.set_cache_limit(0)
    finally:
        nb.set_cache_limit(limit)
    nb.clear_cache()
    assert nb.cached_models() == [] and nb.cache_info().cached_models == 0


def test_numpy_executor_frees_intermediates_after_their_last_use():
    x = nb.Tensor.from_numpy(np.ones(3, np.float32))
    y = ((x + 1.0) * 2.0).exp().sum()
    collected = program_mod.collect([y._impl])
    program = collected.to_program()
    freed_after = {slot: i for slot, i in program.last_use.items() if slot not in program.output_slots}
    assert freed_after and all(i < len(program.steps) for i in freed_after.values())


# -- the on-disk model store -------------------------------------------------------------------
def test_store_names_are_stable_and_refuse_process_local_keys():
    key = ((("add", (("axis", 1),)), (0, 1)), ((0, nb.float32, (2, 3), None),), (2,))
    ops = [type("Op", (), {})()]
    assert artifacts.digest(key, ops) == artifacts.digest(key, ops)
    assert artifacts.digest(key, ops) != artifacts.digest((*key[:2], (3,)), ops)
    assert artifacts.digest((object(),), ops) is None
    assert artifacts.stable_text((1.0, -0.0, "a", None, True)) == "(f1.0,f-0.0,'a',None,True,)"


def test_store_names_cover_the_helper_modules_a_lowering_imports():
    # conv's kernels call window helpers in nabla/ops/windows.py and its weight gradient lives
    # in conv_grad.py: editing either must change the stored model's name.
    found = artifacts._lowering_modules("nabla.ops.conv")
    assert {"nabla.ops.conv", "nabla.ops.windows", "nabla.ops.conv_grad", "nabla.ops.base"} <= found
    assert not any(m.startswith("nabla.core.") for m in found)  # the graph layer is hashed on its own


def test_an_optimizer_rule_keys_by_its_code():
    key = _Rule(Adam.rule).structural_key()
    assert key == (f"{Adam.rule.__module__}.{Adam.rule.__qualname__}", artifacts.source_hash("nabla_optim.adam"))


_CALL_DIGEST = """
import sys
import numpy as np
import nabla as nb, nabla_nn as nn
from nabla.core.graph import artifacts, executors, program

def digest(act):
    nb.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), act)
    m.compile()  # its forward is recorded as one `call` op
    y = m(nb.Tensor.from_numpy(np.ones((2, 4), np.float32)))
    collected = program.collect([y._impl])
    ops = executors.lowered_ops((n.op, n.adapted_kwargs) for n in collected.nodes)
    return artifacts.digest(collected.key, ops), sorted(op.name for op in ops)

acts = [nn.ReLU(), nn.Tanh()] if sys.argv[1] == "relu-first" else [nn.Tanh(), nn.ReLU()]
print(repr([digest(a) for a in acts]))
"""


def test_store_names_a_model_that_calls_a_compiled_module_by_the_body_it_runs():
    # Two processes that compile different modules with equal signatures must not share a
    # stored model: the name of a `call`'s body is a digest of it, not a per-process counter.
    runs = [
        subprocess.run([sys.executable, "-c", _CALL_DIGEST, order], capture_output=True, text=True, check=True)
        for order in ("relu-first", "tanh-first")
    ]
    (relu, relu_ops), (tanh, tanh_ops) = ast.literal_eval(runs[0].stdout)
    (tanh2, _), (relu2, _) = ast.literal_eval(runs[1].stdout)
    assert relu is not None and relu != tanh
    assert (relu, tanh) == (relu2, tanh2)
    assert "relu" in relu_ops and "tanh" in tanh_ops and "call" in relu_ops  # the body's ops are in the name


def test_kernel_packages_of_custom_ops_inside_a_call_reach_the_compiler():
    # A compiled module that uses a custom (Mojo) op records one `call`: the program's list of
    # kernel packages for MAX must look inside it, or the compile would miss the kernel.
    inner = SimpleNamespace(name="my_kernel", custom_extensions=(Path("/k/my_kernel.mojopkg"),))
    sub = SimpleNamespace(ops=[inner])
    call_op = SimpleNamespace(name="call", inner_ops=lambda kwargs: kwargs["sub"].ops)
    plain = SimpleNamespace(name="add")
    steps = [
        program_mod.Step(plain, {}, (0,), (1,), ()),
        program_mod.Step(call_op, {"sub": sub}, (1,), (2,), ()),
    ]
    program = program_mod.Program(steps, [0], [(nb.float32, (2,))], [2], 3)
    assert executors.program_ops(program) == [plain, call_op, inner]
    assert executors.custom_extensions(program) == [Path("/k/my_kernel.mojopkg")]


def test_store_writes_atomically_trims_least_recent_and_clears(tmp_path):
    store = artifacts.ArtifactStore(tmp_path)
    store.enabled = True
    for i, name in enumerate(("a", "b", "c")):
        tmp = store.reserve(name)
        tmp.write_bytes(b"x" * 100)
        os.utime(tmp, (time.time() - 100 + i, time.time() - 100 + i))
        store.limit_bytes = 10_000
        store.publish(tmp, name)
        os.utime(store.path(name), (time.time() - 100 + i, time.time() - 100 + i))
    assert store.find("a") is not None  # finding touches it: now the most recent
    store.limit_bytes = 250
    store.trim()
    assert sorted(p.stem for p in tmp_path.joinpath("models").glob("*.mef")) == ["a", "c"]
    assert not list(tmp_path.joinpath("models").glob("*.tmp"))
    info = store.info()
    assert (info.models, info.bytes) == (2, 200)
    assert store.clear() == 2 and store.info().models == 0
    assert store.find("a") is None and store.find(None) is None


# -- compile economy of the examples themselves --------------------------------------------------
def _example(name: str):
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("name", "kwargs", "models"),
    [("mlp_classifier", {"epochs": 1}, 2), ("cnn", {"epochs": 1}, 2), ("char_transformer", {"steps": 4}, 3)],
)
def test_examples_compile_one_training_model_and_one_evaluation_model(auto, name, kwargs, models, capsys):
    """Each example trains (the transformer with a cosine scheduler) and then evaluates in
    `eval()` mode; compiling every structure at first sight, training is one model and the
    evaluation one more. The transformer's sampling loop is two: its compiled module runs its
    forward at once under `no_grad` (as `torch.compile` does), and picking the next token from
    the logits (`logits[0, -1].argmax()`) is a small model of its own."""
    executor, _ = auto
    executor.compile_after = 1
    _example(name).main(**kwargs)
    executor.service.finish()
    assert nb.cache_info().compiles == models
    assert nb.cached_models()[0].runs > 1  # the training step (least recently used by now) ran every step
    assert "compiles" in capsys.readouterr().out


# -- bfloat16 across the tiers -------------------------------------------------------------------
def test_numpy_tier_stores_bfloat16_values_rounded_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.standard_normal(1000).astype(np.float32) * 100, [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    a = a.astype(np.float32)
    want = torch.tensor(a).bfloat16().float().numpy()
    np.testing.assert_array_equal(executors.round_to_bfloat16(a), want)
    np.testing.assert_array_equal(executors.storage_to_numpy(executors.bfloat16_buffer(a)), want)
    nb.set_executor("numpy")
    x = nb.Tensor.from_numpy(a[:1000]).to(nb.bfloat16)
    got = (x * 3.0).to(nb.float32).numpy()
    np.testing.assert_array_equal(got, (torch.tensor(a[:1000]).bfloat16() * 3.0).float().numpy())


def test_compiles_move_into_the_process_when_no_worker_process_can_start(monkeypatch, tmp_path):
    monkeypatch.setattr(background, "WORKER_SCRIPT", tmp_path / "missing_worker.py")
    compiled_in_thread = []
    service = background.CompileService(
        lambda module, ext, device: compiled_in_thread.append((module, device)) or ("artifact", module)
    )
    service.mode = "process"
    module = SimpleNamespace(mlir_module=SimpleNamespace(bytecode=b""))  # what the worker would be sent
    job = background.CompileJob(build=lambda: module, finish=lambda artifact: ("model", artifact))
    assert service.submit(job).result(timeout=60) == ("model", ("artifact", module))
    assert service.mode == "thread" and compiled_in_thread == [(module, nb.Device("cpu", 0))]
    assert service.wait(timeout=1.0) and service.completed == 1


def test_tier0_runs_blas_on_one_thread_only_while_a_compile_runs(auto, monkeypatch):
    executor, _ = auto
    seen = []
    run = NUMPY.run

    def spy(program, inputs):
        seen.append(_blas_threads())
        return run(program, inputs)

    monkeypatch.setattr(NUMPY, "run", spy)
    data = np.ones(3, np.float32)
    for _ in range(3):  # tier 0, then compiling (the second starts it), still compiling
        _affine(data).numpy()
    executor.service.finish()
    executor.compile_after = 10**9
    _affine(np.ones(4, np.float32)).numpy()  # a new structure, nothing compiling
    assert seen[1:3] == [1, 1] and seen[0] == seen[3] == _blas_threads()


def _blas_threads() -> int:
    return max(lib["num_threads"] for lib in ThreadpoolController().info() if lib["user_api"] == "blas")
