"""Module's state_dict hooks (PyTorch's `register_state_dict_pre_hook`, `register_state_dict_post_hook`,
`_register_state_dict_hook`, `register_load_state_dict_pre_hook`, `_register_load_state_dict_pre_hook`,
`register_load_state_dict_post_hook`): arguments, prefixes, order, removal, key renaming,
atomic failed loads, and weight_norm's compatibility hook for old `weight_g`/`weight_v` checkpoints.

Only `test_weight_norm_loads_torch_old_style_checkpoint` needs PyTorch (the expected arguments
and orders were checked against torch 2.13 and are written out here).
"""

from __future__ import annotations

import copy
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import nabla as nb
import nabla_nn as nn
from nabla import DeviceMesh
from nabla_nn.module import IncompatibleKeys, Module
from nabla_nn.parallel import rowwise, shard_module
from nabla_nn.utils import parametrizations
from nabla_nn.utils import weight_norm as legacy_weight_norm

RNG = np.random.default_rng(0)


class Inner(Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 3)
        self.register_buffer("buf", nb.zeros(3))


class Outer(Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.inner = Inner()


class Counter(Module):
    """A module with extra state, to check that a failed load never sets it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.steps = 0
        self.set_calls = 0

    def get_extra_state(self):
        return {"steps": self.steps}

    def set_extra_state(self, state):
        self.set_calls += 1
        self.steps = state["steps"]


def _filled(model: Module, value: float) -> OrderedDict:
    """A state_dict for `model` (float32 layers) whose every tensor holds `value`, extra state left out."""
    out = OrderedDict()
    for key, t in model.state_dict().items():
        if isinstance(t, nb.Tensor):
            out[key] = nb.Tensor.from_numpy(np.full(tuple(t.shape), value, dtype=np.float32))
    return out


def _values(model: Module) -> dict[str, np.ndarray]:
    return {k: v.numpy().copy() for k, v in model.state_dict().items() if isinstance(v, nb.Tensor)}


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# -- state_dict hooks ----------------------------------------------------------------------------
def test_state_dict_hooks_arguments_prefixes_and_order():
    model = Outer()
    calls = []
    for path, sub in model.named_modules():
        sub.register_state_dict_pre_hook(
            lambda m, prefix, keep_vars, path=path: calls.append(("pre", path, m, prefix, keep_vars))
        )
        sub.register_state_dict_post_hook(
            lambda m, sd, prefix, meta, path=path: calls.append(("post", path, m, prefix, list(sd), dict(meta)))
        )
    sd = model.state_dict(prefix="model.", keep_vars=True)
    # PyTorch's recursion: a module's pre-hooks, its entries, its children, then its post-hooks
    assert [c[:2] for c in calls] == [
        ("pre", ""),
        ("pre", "a"),
        ("post", "a"),
        ("pre", "inner"),
        ("pre", "inner.lin"),
        ("post", "inner.lin"),
        ("post", "inner"),
        ("post", ""),
    ]
    pre = {c[1]: c[2:] for c in calls if c[0] == "pre"}
    assert pre["inner.lin"] == (model.inner.lin, "model.inner.lin.", True)
    assert pre[""] == (model, "model.", True)
    post = {c[1]: c[2:] for c in calls if c[0] == "post"}
    assert post["a"] == (model.a, "model.a.", ["model.a.weight", "model.a.bias"], {"version": 1})
    everything = ["model.a.weight", "model.a.bias", "model.inner.buf", "model.inner.lin.weight", "model.inner.lin.bias"]
    assert post["inner"] == (model.inner, "model.inner.", everything, {"version": 1})
    assert list(sd) == everything
    assert sd["model.a.weight"] is model.a.weight  # keep_vars: the parameters themselves
    assert sd._metadata == {
        "model": {"version": 1},
        "model.a": {"version": 1},
        "model.inner": {"version": 1},
        "model.inner.lin": {"version": 1},
    }


def test_state_dict_metadata_and_local_metadata_written_by_a_hook():
    model = Outer()
    sd = model.state_dict()
    assert list(sd._metadata) == ["", "a", "inner", "inner.lin"]
    assert all(entry == {"version": Module._version} for entry in sd._metadata.values())

    def tag(module, state_dict, prefix, local_metadata):  # like PyTorch's SpectralNormStateDictHook
        local_metadata["note"] = prefix

    model.inner.register_state_dict_post_hook(tag)
    sd = model.state_dict()
    assert sd._metadata["inner"] == {"version": 1, "note": "inner."}
    assert sd._metadata["a"] == {"version": 1}


def test_state_dict_post_hook_modifies_the_dict_in_place():
    model = Outer()

    def rename(module, state_dict, prefix, local_metadata):
        state_dict[prefix + "w"] = state_dict.pop(prefix + "weight")
        del state_dict[prefix + "bias"]

    handle = model.inner.lin.register_state_dict_post_hook(rename)
    sd = model.state_dict()
    assert list(sd) == ["a.weight", "a.bias", "inner.buf", "inner.lin.w"]
    np.testing.assert_array_equal(sd["inner.lin.w"].numpy(), model.inner.lin.weight.numpy())
    handle.remove()
    assert list(model.state_dict()) == ["a.weight", "a.bias", "inner.buf", "inner.lin.weight", "inner.lin.bias"]


def test_public_post_hook_must_return_none_and_private_hook_may_replace_the_dict():
    model = Outer()

    def returns_dict(module, state_dict, prefix, local_metadata):
        return {"x": 1}

    model.a.register_state_dict_post_hook(returns_dict)
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        model.state_dict()
    with pytest.raises(RuntimeError, match="previously registered via register_state_dict_post_hook"):
        model._register_state_dict_hook(returns_dict)

    other = Outer()
    other.inner._register_state_dict_hook(lambda m, sd, prefix, meta: {"child": 1})
    # A child's new dict is returned by the child's own state_dict only: its parent keeps its dict.
    assert list(other.state_dict()) == ["a.weight", "a.bias", "inner.buf", "inner.lin.weight", "inner.lin.bias"]
    assert other.inner.state_dict() == {"child": 1}
    other._register_state_dict_hook(lambda m, sd, prefix, meta: {"root": 1})
    assert other.state_dict() == {"root": 1}


def test_state_dict_hooks_with_destination():
    model = Outer()
    seen = []
    model.inner.register_state_dict_post_hook(lambda m, sd, prefix, meta: seen.append((sd, prefix, dict(meta))))
    dest: dict = {"kept": 0}
    out = model.state_dict(destination=dest, prefix="m.")
    assert out is dest and seen[0][0] is dest and seen[0][1] == "m.inner."
    assert list(dest) == ["kept", "m.a.weight", "m.a.bias", "m.inner.buf", "m.inner.lin.weight", "m.inner.lin.bias"]
    assert not hasattr(dest, "_metadata")  # a given destination gets _metadata only if it has one
    dest = OrderedDict()
    dest._metadata = OrderedDict()
    model.state_dict(dest)
    assert dest._metadata["inner"] == {"version": 1} and seen[-1][2] == {"version": 1}


# -- load_state_dict pre-hooks -------------------------------------------------------------------
def test_load_pre_hooks_arguments_prefixes_and_order():
    model = Outer()
    sd = model.state_dict()
    calls = []
    for path, sub in model.named_modules():
        sub.register_load_state_dict_pre_hook(
            lambda m, state_dict, prefix, meta, strict, missing, unexpected, errors, path=path: calls.append(
                (path, m, prefix, list(state_dict), dict(meta), strict, list(missing), list(unexpected), errors)
            )
        )
    partial = OrderedDict((k, v) for k, v in sd.items() if k != "inner.lin.bias")
    partial["zzz"] = sd["a.bias"]
    partial["inner.qq"] = sd["a.bias"]
    partial._metadata = sd._metadata
    result = model.load_state_dict(partial, strict=False)
    assert [c[0] for c in calls] == ["", "a", "inner", "inner.lin"]
    by_path = {c[0]: c[1:] for c in calls}
    root = ["a.weight", "a.bias", "inner.buf", "inner.lin.weight", "zzz", "inner.qq"]
    assert by_path[""] == (model, "", root, {"version": 1}, True, [], [], [])
    # A child's dict holds its parent's entries under its prefix; strict is always True (PyTorch's).
    assert by_path["a"] == (model.a, "a.", ["a.weight", "a.bias"], {"version": 1}, True, [], ["zzz"], [])
    assert by_path["inner"][1:3] == ("inner.", ["inner.buf", "inner.lin.weight", "inner.qq"])
    assert by_path["inner.lin"][1:] == (
        "inner.lin.",
        ["inner.lin.weight"],
        {"version": 1},
        True,
        [],
        ["zzz", "inner.qq"],
        [],
    )
    assert result == IncompatibleKeys(["inner.lin.bias"], ["zzz", "inner.qq"])


def test_private_load_pre_hook_without_module_and_local_metadata():
    model = Outer()
    seen = []
    model.inner._register_load_state_dict_pre_hook(
        lambda sd, prefix, meta, strict, missing, unexpected, errors: seen.append(
            (prefix, dict(meta), hasattr(sd, "_metadata"))
        )
    )
    model.inner.lin._register_load_state_dict_pre_hook(
        lambda m, sd, prefix, *rest: seen.append((m, prefix)), with_module=True
    )
    model.register_load_state_dict_pre_hook(
        lambda m, sd, prefix, meta, *rest: seen.append((prefix, dict(meta), hasattr(sd, "_metadata")))
    )
    sd = model.state_dict()
    model.load_state_dict(sd)
    # The root gets the caller's _metadata on its copy; children get plain dicts.
    assert seen == [("", {"version": 1}, True), ("inner.", {"version": 1}, False), (model.inner.lin, "inner.lin.")]
    seen.clear()
    model.load_state_dict(dict(sd))  # no _metadata: every local_metadata is empty
    assert seen[:2] == [("", {}, False), ("inner.", {}, False)]
    seen.clear()
    model.load_state_dict(sd, assign=True)
    assert seen[1] == ("inner.", {"version": 1, "assign_to_params_buffers": True}, False)
    assert sd._metadata["inner"] == {"version": 1}  # the caller's metadata is not written to


def test_load_pre_hook_renames_keys_without_touching_the_callers_dict():
    src = Outer()
    model = Outer()
    sd = src.state_dict()
    old = OrderedDict((k.replace("inner.lin.", "inner.old_lin."), v) for k, v in sd.items())
    snapshot = OrderedDict(old)

    def upgrade(module, state_dict, prefix, meta, strict, missing, unexpected, errors):
        for key in [k for k in state_dict if k.startswith(prefix + "old_lin.")]:
            state_dict[prefix + "lin." + key[len(prefix + "old_lin.") :]] = state_dict.pop(key)

    model.inner.register_load_state_dict_pre_hook(upgrade)
    assert model.load_state_dict(old) == IncompatibleKeys([], [])
    assert _same(_values(model), _values(src))
    assert list(old) == list(snapshot) and all(old[k] is snapshot[k] for k in old)


def test_parent_pre_hook_renames_a_childs_keys():
    src = Outer()
    model = Outer()
    old = OrderedDict((k.replace("a.", "first.") if k.startswith("a.") else k, v) for k, v in src.state_dict().items())

    def rename(module, state_dict, prefix, *rest):
        for key in [k for k in state_dict if k.startswith("first.")]:
            state_dict["a." + key[len("first.") :]] = state_dict.pop(key)

    model.register_load_state_dict_pre_hook(rename)
    seen = []
    model.a.register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest: seen.append(list(sd)))
    model.load_state_dict(old)
    assert seen == [["a.weight", "a.bias"]]
    assert _same(_values(model), _values(src))


def test_load_pre_hook_error_message_fails_the_load():
    model = Outer()
    before = _values(model)
    model.a.register_load_state_dict_pre_hook(
        lambda m, sd, prefix, meta, strict, mk, uk, errors: errors.append("bad a")
    )
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for Outer:\n  bad a"):
        model.load_state_dict(_filled(model, 5.0))
    assert _same(_values(model), before)


# -- load_state_dict post-hooks ------------------------------------------------------------------
def test_load_post_hooks_arguments_and_order():
    model = Outer()
    calls = []
    for path, sub in model.named_modules():
        sub.register_load_state_dict_post_hook(
            lambda m, keys, path=path: calls.append((path, m, list(keys.missing_keys), list(keys.unexpected_keys)))
        )
    sd = model.state_dict()
    partial = OrderedDict((k, v) for k, v in sd.items() if k != "inner.lin.bias")
    partial["zzz"] = sd["a.bias"]
    partial["a.w.x"] = sd["a.bias"]
    model.load_state_dict(partial, strict=False)
    # After each module's subtree, with the lists as they are then (PyTorch's order).
    assert calls == [
        ("a", model.a, [], ["zzz", "a.w.x"]),
        ("inner.lin", model.inner.lin, ["inner.lin.bias"], ["zzz", "a.w.x"]),
        ("inner", model.inner, ["inner.lin.bias"], ["zzz", "a.w.x"]),
        ("", model, ["inner.lin.bias"], ["zzz", "a.w.x"]),
    ]


def test_load_post_hook_clearing_missing_keys_lets_a_strict_load_pass():
    src, model = Outer(), Outer()
    sd = OrderedDict((k, v) for k, v in src.state_dict().items() if not k.startswith("inner.lin."))
    with pytest.raises(RuntimeError, match="missing key\\(s\\): inner.lin.weight, inner.lin.bias"):
        model.load_state_dict(sd)

    def ignore_lin(module, keys):
        keys.missing_keys[:] = [k for k in keys.missing_keys if not k.startswith("inner.lin.")]

    handle = model.register_load_state_dict_post_hook(ignore_lin)
    assert model.load_state_dict(sd) == IncompatibleKeys([], [])
    np.testing.assert_array_equal(model.a.weight.numpy(), src.a.weight.numpy())
    handle.remove()
    with pytest.raises(RuntimeError, match="missing key"):
        model.load_state_dict(sd)


def test_load_post_hook_sees_the_values_loaded_so_far():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2)), nn.Linear(2, 2))
    seen = []

    def loaded():
        return tuple(float(w.numpy()[0, 0]) == 7.0 for w in (model[0].weight, model[1][0].weight, model[2].weight))

    model[1][0].register_load_state_dict_post_hook(lambda m, keys: seen.append(("inner", *loaded())))
    model[2].register_load_state_dict_pre_hook(lambda *args: seen.append(("pre 2", *loaded())))
    model.register_load_state_dict_post_hook(lambda m, keys: seen.append(("root", *loaded())))
    model.load_state_dict(_filled(model, 7.0))
    # As PyTorch: a module's post-hooks run once it, its subtree and the modules before it are loaded.
    assert seen == [("inner", True, True, False), ("pre 2", True, True, False), ("root", True, True, True)]


def test_load_post_hook_must_return_none():
    model = Outer()
    before = _values(model)
    model.inner.register_load_state_dict_post_hook(lambda m, keys: keys)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        model.load_state_dict(_filled(model, 3.0))
    assert _same(_values(model), before)


def test_failed_load_after_post_hooks_puts_every_value_back():
    model = Counter()
    before = _values(model)
    model.register_load_state_dict_post_hook(lambda m, keys: keys.unexpected_keys.append("made.up"))
    sd = _filled(model, 9.0)
    sd["_extra_state"] = {"steps": 5}
    with pytest.raises(RuntimeError, match="unexpected key\\(s\\): made.up"):
        model.load_state_dict(sd)
    assert _same(_values(model), before)
    assert model.set_calls == 0 and model.steps == 0  # extra state is set only by a load that succeeds
    assert model.load_state_dict(sd, strict=False) == IncompatibleKeys([], ["made.up"])
    assert model.set_calls == 1 and model.steps == 5 and float(model.lin.weight.numpy()[0, 0]) == 9.0


# -- order, removal, atomicity, copies -----------------------------------------------------------
def test_hooks_run_in_registration_order_and_handles_remove_them():
    model = Outer()
    log = []
    handles = [
        model.register_state_dict_pre_hook(lambda *a: log.append("pre 1")),
        model.register_state_dict_pre_hook(lambda *a: log.append("pre 2")),
        model.register_state_dict_post_hook(lambda *a: log.append("post 1")),
        model._register_state_dict_hook(lambda *a: log.append("private post 2")),
        model.register_load_state_dict_pre_hook(lambda *a: log.append("load pre 1")),
        model._register_load_state_dict_pre_hook(lambda *a: log.append("load pre 2")),
        model.register_load_state_dict_post_hook(lambda *a: log.append("load post 1")),
        model.register_load_state_dict_post_hook(lambda *a: log.append("load post 2")),
    ]
    model.load_state_dict(model.state_dict())
    assert log == [
        "pre 1",
        "pre 2",
        "post 1",
        "private post 2",
        "load pre 1",
        "load pre 2",
        "load post 1",
        "load post 2",
    ]
    for handle in handles[::2]:
        handle.remove()
    log.clear()
    model.load_state_dict(model.state_dict())
    assert log == ["pre 2", "private post 2", "load pre 2", "load post 2"]
    with handles[1], handles[3], handles[5], handles[7]:  # `with handle:` removes on exit
        pass
    log.clear()
    model.load_state_dict(model.state_dict())
    assert log == []
    assert (
        not any((model._state_dict_pre_hooks, model._state_dict_hooks, model._load_state_dict_pre_hooks))
        and not model._load_state_dict_post_hooks
    )


def test_a_shared_module_runs_its_hooks_under_each_prefix():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    prefixes = []
    shared.register_state_dict_pre_hook(lambda m, prefix, keep_vars: prefixes.append(prefix))
    shared.register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest: prefixes.append("load " + prefix))
    model.load_state_dict(model.state_dict())
    assert prefixes == ["0.", "1.", "load 0.", "load 1."]


def test_failed_load_with_a_renaming_hook_changes_nothing():
    model = Outer()
    before = _values(model)
    sd = _filled(model, 4.0)
    sd["inner.lin.w"] = sd.pop("inner.lin.weight")
    sd["a.bias"] = nb.Tensor.from_numpy(np.zeros(5, np.float32))  # wrong shape
    snapshot = OrderedDict(sd)

    def rename(module, state_dict, prefix, *rest):
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")

    model.inner.lin.register_load_state_dict_pre_hook(rename)
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(sd)
    assert "a.bias: shape (5,) in the state_dict, the module has (2,)" in str(err.value)
    assert _same(_values(model), before)
    assert list(sd) == list(snapshot) and all(sd[k] is snapshot[k] for k in sd)
    del sd["a.bias"]
    with pytest.raises(RuntimeError, match="missing key\\(s\\): a.bias"):  # strict failure, after the rename
        model.load_state_dict(sd)
    assert _same(_values(model), before)
    assert model.load_state_dict(sd, strict=False) == IncompatibleKeys(["a.bias"], [])
    assert float(model.inner.lin.weight.numpy()[0, 0]) == 4.0
    np.testing.assert_array_equal(model.a.bias.numpy(), before["a.bias"])


def test_deepcopy_keeps_hooks_bound_to_the_copy():
    class Tagged(Outer):
        def __init__(self) -> None:
            super().__init__()
            self.seen = []
            self.register_load_state_dict_post_hook(self.note)

        def note(self, module, keys):
            self.seen.append(module)

    model = Tagged()
    clone = copy.deepcopy(model)
    clone.load_state_dict(clone.state_dict())
    assert clone.seen == [clone] and model.seen == []


def test_setstate_adds_missing_hook_stores():
    model = Outer()
    state = model.__getstate__()
    for name in (
        "_state_dict_pre_hooks",
        "_state_dict_hooks",
        "_load_state_dict_pre_hooks",
        "_load_state_dict_post_hooks",
    ):
        del state[name]
    old = Outer.__new__(Outer)
    old.__setstate__(state)
    assert old.load_state_dict(old.state_dict()) == IncompatibleKeys([], [])
    assert old._load_state_dict_post_hooks == OrderedDict() and old._state_dict_hooks == OrderedDict()


def test_hooks_on_a_sharded_model_see_assembled_values_and_loads_keep_the_layout():
    mesh = DeviceMesh("sd_hooks_tp2", (2,), ("tp",))
    model = shard_module(nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 2)), mesh, {"0": rowwise("tp")})
    model.tied = nn.Linear(4, 6)
    model.tied.weight = model[0].weight
    seen = {}
    model[1].register_state_dict_post_hook(
        lambda m, sd, prefix, meta: seen.update((k, v.sharding) for k, v in sd.items())
    )
    sd = model.state_dict()
    assert seen and all(layout is None for layout in seen.values())  # assembled before the hook ran
    assert sd["0.weight"].sharding is None and sd["0.weight"]._impl.data is sd["tied.weight"]._impl.data
    layout = model[0].weight.sharding
    before = _values(model)
    new = _filled(model, 2.0)
    loaded = []
    model.register_load_state_dict_post_hook(
        lambda m, keys: loaded.append((m[0].weight.sharding == layout, float(m[0].weight.numpy()[0, 0])))
    )
    model.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.append("made.up"))
    with pytest.raises(RuntimeError, match="missing key\\(s\\): made.up"):
        model.load_state_dict(new)
    assert loaded == [(True, 2.0)] and _same(_values(model), before)
    assert model[0].weight.sharding == layout
    model.load_state_dict(new, strict=False)
    assert model[0].weight.sharding == layout and float(model[0].weight.numpy()[0, 0]) == 2.0


# -- weight_norm: old-style checkpoints ----------------------------------------------------------
def test_weight_norm_loads_old_style_weight_g_weight_v_keys():
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    x = nb.Tensor.from_numpy(RNG.standard_normal((2, 4)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = legacy_weight_norm(nn.Linear(4, 3))
    old.weight_v.data = nb.Tensor.from_numpy(w)
    old.weight_g.data = nb.Tensor.from_numpy(np.full((3, 1), 2.0, np.float32))
    old_sd = old.state_dict()
    assert list(old_sd) == ["bias", "weight_g", "weight_v"]
    new = parametrizations.weight_norm(nn.Linear(4, 3))
    assert new.load_state_dict(old_sd) == IncompatibleKeys([], [])
    assert list(old_sd) == ["bias", "weight_g", "weight_v"]  # renamed in the load's copy only
    np.testing.assert_allclose(new(x).numpy(), old(x).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(new.parametrizations.weight.original1.numpy(), w)
    # through a parent (the hook's prefix), and the new keys still load as they are
    parent = nn.Sequential(nn.ReLU(), parametrizations.weight_norm(nn.Linear(4, 3)))
    assert parent.load_state_dict({f"1.{k}": v for k, v in old_sd.items()}) == IncompatibleKeys([], [])
    np.testing.assert_allclose(parent[1](x).numpy(), old(x).numpy(), rtol=1e-6, atol=1e-6)
    assert parent.load_state_dict(parent.state_dict()) == IncompatibleKeys([], [])
    assert copy.deepcopy(parent).load_state_dict({f"1.{k}": v for k, v in old_sd.items()}) == IncompatibleKeys([], [])
    # only one of the two old keys: nothing is renamed, so the strict error names them
    with pytest.raises(RuntimeError, match="unexpected key\\(s\\): weight_g"):
        parametrizations.weight_norm(nn.Linear(4, 3)).load_state_dict(
            {"bias": old_sd["bias"], "weight_g": old_sd["weight_g"]}
        )


def test_weight_norm_loads_torch_old_style_checkpoint():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    for dim in (0, 1, None):
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            reference = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3), dim=dim)
        with torch.no_grad():
            reference.weight_g.mul_(1.5)
        saved = reference.state_dict()
        assert list(saved) == ["bias", "weight_g", "weight_v"]
        model = parametrizations.weight_norm(nn.Linear(4, 3), dim=dim)
        assert model.load_state_dict(saved) == IncompatibleKeys([], [])
        expected = reference(torch.tensor(x)).detach().numpy()
        np.testing.assert_allclose(model(nb.Tensor.from_numpy(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
        # and PyTorch's own parametrization loads the same checkpoint to the same output
        twin = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3), dim=dim)
        twin.load_state_dict(saved)
        np.testing.assert_allclose(twin(torch.tensor(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


class _Upgraded(nn.Linear):
    """PyTorch's way to read an old checkpoint and to save an extra entry: overrides of
    `_load_from_state_dict` and `_save_to_state_dict` that call the base."""

    def _load_from_state_dict(self, sd, prefix, *args):
        if prefix + "w_old" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "w_old")
        super()._load_from_state_dict(sd, prefix, *args)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = nb.full((), 2.0)


def test_save_and_load_overrides_are_called_with_prefixes_and_stay_atomic():
    model = nn.Sequential(_Upgraded(2, 2))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "0.scale"]
    result = model.load_state_dict({"0.w_old": nb.full((2, 2), 3.0), "0.bias": nb.zeros(2)})
    assert result == IncompatibleKeys([], [])
    np.testing.assert_array_equal(model[0].weight.numpy(), np.full((2, 2), 3.0))
    before = model[0].weight.numpy().copy()
    with pytest.raises(RuntimeError, match=r"0.weight: shape \(3, 2\) in the state_dict"):
        model.load_state_dict({"0.w_old": nb.zeros((3, 2)), "0.bias": nb.ones(2)})
    np.testing.assert_array_equal(model[0].weight.numpy(), before)  # (the bias was not loaded either)
    np.testing.assert_array_equal(model[0].bias.numpy(), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="runs inside load_state_dict"):
        model[0]._load_from_state_dict({}, "", {}, True, [], [], [])
