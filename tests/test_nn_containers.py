"""nabla_nn containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

PyTorch's naming ("0.weight", "layers.1.bias"), list/dict behaviour, reprs, layer-path errors,
and state_dicts that move between torch and nabla models of the same structure."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn


def _build(net, m) -> None:
    """Give `net` (a nabla or torch Module) a submodule of every container kind."""
    ones = nb.ones if m is nn else torch.ones
    net.features = m.Sequential(m.Linear(4, 8), m.ReLU(), m.Linear(8, 8))
    net.blocks = m.ModuleList([m.Linear(8, 8), m.LayerNorm(8)])
    net.heads = m.ModuleDict({"cls": m.Linear(8, 3), "reg": m.Linear(8, 1)})
    net.scales = m.ParameterList([m.Parameter(ones(3)), m.Parameter(ones(1))])
    net.extra = m.ParameterDict({"gain": m.Parameter(ones(1))})


def _forward(net, x):
    h = net.features(x)
    for block in net.blocks:
        h = block(h)
    return net.heads["cls"](h) * net.scales[0] * net.extra["gain"], net.heads["reg"](h) * net.scales[1]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        _build(self, nn)

    def forward(self, x):
        return _forward(self, x)


def _torch_net():
    net = torch.nn.Module()
    _build(net, torch.nn)
    net.forward = lambda x: _forward(net, x)
    return net


EXPECTED_KEYS = [
    "features.0.weight",
    "features.0.bias",
    "features.2.weight",
    "features.2.bias",
    "blocks.0.weight",
    "blocks.0.bias",
    "blocks.1.weight",
    "blocks.1.bias",
    "heads.cls.weight",
    "heads.cls.bias",
    "heads.reg.weight",
    "heads.reg.bias",
    "scales.0",
    "scales.1",
    "extra.gain",
]


def test_nested_state_dict_keys_follow_pytorch():
    net = Net()
    assert list(net.state_dict()) == EXPECTED_KEYS
    assert [n for n, _ in net.named_parameters()] == EXPECTED_KEYS
    cls, reg = net(nb.ones(2, 4))
    assert cls.shape == (2, 3) and reg.shape == (2, 1)


@needs_torch
def test_nested_model_matches_torch_keys_and_outputs():
    torch.manual_seed(0)
    ref = _torch_net()
    net = Net()
    assert list(ref.state_dict()) == list(net.state_dict())
    net.load_state_dict({k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}, strict=True)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for a, b in zip(net(nb.tensor(x)), ref(torch.tensor(x)), strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_sequential_forward_and_layer_path_error():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(16, 2))
    with pytest.raises(ValueError, match=r"2 \(Linear in_features=16 .*got input \(3, 8\)") as err:
        model(nb.ones(3, 4))
    assert "2 (Linear in_features=16" in str(err.value) and "got input (3, 8)" in str(err.value)
    outer = nn.Sequential(OrderedDict([("body", nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 2)))]))
    with pytest.raises(ValueError, match=r"^body\.1 \(Linear in_features=5"):
        outer(nb.ones(3, 4))
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    expected = np.maximum(x @ m[0].weight.numpy().T + m[0].bias.numpy(), 0)
    np.testing.assert_allclose(m(nb.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_sequential_ordered_dict_indexing_and_slicing():
    fc, act, out = nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)
    model = nn.Sequential(OrderedDict([("fc", fc), ("act", act), ("out", out)]))
    assert model.fc is fc and model[0] is fc and model[-1] is out
    assert list(model.state_dict()) == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    head = model[1:]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is act
    assert list(head.state_dict()) == ["out.weight", "out.bias"]  # slicing keeps the names
    assert list(model) == [fc, act, out]
    with pytest.raises(IndexError, match="out of range"):
        model[3]
    with pytest.raises(TypeError, match="not a Module subclass"):
        nn.Sequential(nn.ReLU(), "relu")


def test_sequential_mutation_renumbers_like_pytorch():
    a, b, c, d = nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Linear(2, 2)
    model = nn.Sequential(a, b)
    model.append(c)
    assert len(model) == 3 and model[2] is c
    model.insert(1, d)
    assert list(model) == [a, d, b, c] and list(model.state_dict()) == ["1.weight", "1.bias"]
    del model[0]
    assert list(model) == [d, b, c] and list(model.state_dict()) == ["0.weight", "0.bias"]
    model.extend([nn.ReLU(), nn.ReLU()])
    assert len(model) == 5
    del model[3:]
    assert list(model) == [d, b, c]
    model[1] = a
    assert model[1] is a
    assert model.pop(0) is d and len(model) == 2
    assert len(model + nn.Sequential(nn.ReLU())) == 3
    assert len(model * 2) == 4
    with pytest.raises(IndexError):
        model.insert(5, nn.ReLU())


def test_module_list():
    layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
    assert len(layers) == 3 and [k for k in layers.state_dict()][:2] == ["0.weight", "0.bias"]
    layers.append(nn.ReLU())
    layers.insert(0, nn.Tanh())
    assert isinstance(layers[0], nn.Tanh) and isinstance(layers[-1], nn.ReLU)
    assert list(layers.state_dict())[:2] == ["1.weight", "1.bias"]
    del layers[0]
    assert list(layers.state_dict())[:2] == ["0.weight", "0.bias"]
    sub = layers[1:3]
    assert isinstance(sub, nn.ModuleList) and len(sub) == 2
    layers += [nn.Sigmoid()]
    assert len(layers) == 5 and isinstance(layers.pop(-1), nn.Sigmoid)
    assert repr(nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()])) == (
        "ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n  (2): ReLU()\n)"
    )
    with pytest.raises(NotImplementedError):
        layers(nb.ones(2, 3))
    with pytest.raises(TypeError, match="iterable"):
        layers.extend(nn.ReLU())


def test_module_dict():
    heads = nn.ModuleDict({"a": nn.Linear(2, 2)})
    heads["b"] = nn.ReLU()
    heads.update([("c", nn.Tanh())])
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert list(heads.keys()) == ["a", "b", "c"] and isinstance(dict(heads.items())["c"], nn.Tanh)
    assert isinstance(heads.pop("b"), nn.ReLU) and "b" not in heads
    with pytest.raises(KeyError, match="'b'"):
        heads["b"]
    with pytest.raises(TypeError, match="not a Module"):
        heads["x"] = 3
    heads.clear()
    assert len(heads) == 0


def test_parameter_list_and_dict():
    plist = nn.ParameterList([nb.ones(2), nn.Parameter(nb.zeros(3))])
    assert isinstance(plist[0], nn.Parameter) and plist[0].requires_grad  # tensors are wrapped
    plist.append(np.ones((2, 2), np.float32))
    assert len(plist) == 3 and list(plist.state_dict()) == ["0", "1", "2"]
    assert [p.shape for p in plist] == [(2,), (3,), (2, 2)]
    assert len(list(plist.parameters())) == 3
    assert "(2): Parameter containing: [float32 of size 2x2]" in repr(plist)
    pdict = nn.ParameterDict({"w": nb.ones(2)})
    pdict["b"] = nn.Parameter(nb.zeros(1))
    assert list(pdict) == ["w", "b"] and list(pdict.state_dict()) == ["w", "b"]
    assert isinstance(pdict["w"], nn.Parameter) and "b" in pdict and pdict.get("z") is None
    popped = pdict.pop("w")
    assert popped.shape == (2,) and list(pdict.state_dict()) == ["b"]
    with pytest.raises(KeyError, match="'w'"):
        pdict["w"]


def test_train_eval_reaches_every_container_child():
    net = Net()
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_container_is_pytorchs_deprecated_module_of_keyword_children():
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        box = nn.Container(fc=nn.Linear(2, 3), act=nn.ReLU())
    assert list(box._modules) == ["fc", "act"] and list(box.state_dict()) == ["fc.weight", "fc.bias"]


@needs_torch
def test_dicts_update_from_their_own_kind_and_order_keys_like_torch():
    def run(m, t):
        md = m.ModuleDict({"b": m.ReLU(), "a": m.Tanh()})  # a plain dict keeps its order here
        md.update(m.ModuleDict({"c": m.GELU()}))
        copied = m.ModuleDict(md)
        pd = m.ParameterDict({"b": t(1), "a": t(2)})  # a plain dict's keys are sorted here
        pd2 = m.ParameterDict(OrderedDict([("z", t(3)), ("c", t(4))]))
        pd.update(pd2)
        merged, rmerged = pd2 | m.ParameterDict({"y": t(5)}), pd2.__ror__(m.ParameterDict({"y": t(5)}))
        inplace = m.ParameterDict(OrderedDict([("q", t(6))]))
        same = inplace.__ior__(pd2) is inplace
        return [list(md), list(copied), list(pd), list(m.ParameterDict(pd)), list(merged), list(rmerged)], [
            list(inplace),
            same,
            [p.shape[0] for p in m.ParameterDict(pd).values()],
        ]

    ours = run(nn, lambda n: nb.zeros(n))
    assert ours == run(torch.nn, lambda n: torch.zeros(n))
    assert ours[0][2] == ["a", "b", "z", "c"]


@needs_torch
def test_sequential_rmul_and_imul_like_torch():
    def run(m):
        a, b = m.ReLU(), m.Tanh()
        seq = m.Sequential(a, b)
        doubled = 2 * seq
        seq *= 3
        errors = []
        for bad in (0, 1.5):
            try:
                seq * bad
            except (TypeError, ValueError) as e:
                errors.append(type(e).__name__)
        return [type(x).__name__ for x in doubled], list(seq._modules), seq[4] is a, errors

    assert (
        run(nn)
        == run(torch.nn)
        == (
            ["ReLU", "Tanh", "ReLU", "Tanh"],
            ["0", "1", "2", "3", "4", "5"],
            True,
            [
                "ValueError",
                "TypeError",
            ],
        )
    )


@needs_torch
def test_parameter_list_and_dict_repr_match_torchs_layout():
    def reprs(m, zeros):
        one = m.ParameterList([m.Parameter(zeros(3, 4))])
        two = m.ParameterList([m.Parameter(zeros(3, 4)), m.Parameter(zeros(2))])
        two.append("x")
        return [repr(one), repr(two), repr(m.ParameterDict({"a": m.Parameter(zeros(3))}))]

    ours = reprs(nn, nb.zeros)
    ref = [
        r.replace("torch.float32", "float32").replace("torch.FloatTensor", "float32")
        for r in reprs(torch.nn, torch.zeros)
    ]
    assert ours == ref
    assert ours[1] == (
        "ParameterList(\n"
        "    (0): Parameter containing: [float32 of size 3x4]\n"
        "    (1): Parameter containing: [float32 of size 2]\n"
        "    (2): Object of type: str\n"
        ")"
    )
