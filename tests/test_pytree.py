"""Public pytree utilities: flatten/unflatten round trips, tree_map, registered node types, and
their use by the transforms (vmap, grad, jacrev) on custom containers."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import nabla as nb

Pair = namedtuple("Pair", ["first", "second"])


class Point:
    """A registered container: children x and y, aux data the name."""

    def __init__(self, x, y, name="p"):
        self.x, self.y, self.name = x, y, name


nb.register_pytree_node(Point, lambda p: ((p.x, p.y), p.name), lambda name, kids: Point(*kids, name=name))


TREES = [
    1,
    None,
    (),
    [1, 2, 3],
    (1, (2, 3), [4, {"b": 5, "a": 6}]),
    {"z": [1, None, 2], "a": (3,)},
    Pair(1, [2, 3]),
    OrderedDict([("z", 1), ("a", 2)]),
    [(), [], {}, None, 7],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_unflatten_round_trip(tree):
    leaves, treedef = nb.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    assert nb.tree_unflatten(treedef, leaves) == tree
    assert nb.tree_leaves(tree) == leaves
    assert nb.tree_structure(tree) == treedef


def test_leaf_order_and_dict_keys_sorted():
    leaves, treedef = nb.tree_flatten({"b": 1, "a": (2, 3), "c": [4]})
    assert leaves == [2, 3, 1, 4]
    assert repr(treedef) == "{'a': (*, *), 'b': *, 'c': [*]}"
    rebuilt = nb.tree_unflatten(treedef, ["A0", "A1", "B", "C"])
    assert rebuilt == {"a": ("A0", "A1"), "b": "B", "c": ["C"]}


def test_none_is_an_empty_node_and_ordered_dict_keeps_order():
    assert nb.tree_leaves([None, 1, None]) == [1]
    leaves, treedef = nb.tree_flatten(OrderedDict([("z", 1), ("a", 2)]))
    assert leaves == [1, 2]
    assert list(nb.tree_unflatten(treedef, [3, 4]).items()) == [("z", 3), ("a", 4)]


def test_structures_compare_by_container_type_and_keys():
    assert nb.tree_structure((1, 2)) != nb.tree_structure([1, 2])
    assert nb.tree_structure({"a": 1}) != nb.tree_structure({"b": 1})
    assert nb.tree_structure((1, (2, 3))) == nb.tree_structure(("x", ("y", "z")))
    assert nb.tree_structure(Pair(1, 2)) != nb.tree_structure((1, 2))


def test_tensors_are_leaves():
    x = nb.ones((2, 3))
    leaves, treedef = nb.tree_flatten({"w": x, "b": [x, x]})
    assert len(leaves) == 3 and all(leaf is x for leaf in leaves)
    assert treedef.num_leaves == 3


def test_tree_map_one_and_several_trees():
    tree = {"a": [1, 2], "b": (3, None)}
    assert nb.tree_map(lambda v: v * 10, tree) == {"a": [10, 20], "b": (30, None)}
    other = {"a": [5, 6], "b": (7, None)}
    assert nb.tree_map(lambda u, v: u + v, tree, other) == {"a": [6, 8], "b": (10, None)}


def test_tree_map_with_tensors():
    params = {"w": nb.ones((2, 2)), "b": nb.zeros(2)}
    grads = {"w": nb.full((2, 2), 0.5), "b": nb.ones(2)}
    new = nb.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    np.testing.assert_allclose(new["w"].numpy(), np.full((2, 2), 0.95), rtol=1e-6)
    np.testing.assert_allclose(new["b"].numpy(), np.full(2, -0.1), rtol=1e-6)


def test_tree_map_structure_mismatch_names_both_structures():
    with pytest.raises(ValueError, match=r"tree 1 has structure \[\*, \*, \*\].*first tree has structure \[\*, \*\]"):
        nb.tree_map(lambda u, v: u + v, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="structure"):
        nb.tree_map(lambda u, v: u + v, {"a": 1}, {"b": 1})


def test_is_leaf_stops_recursion():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves = nb.tree_leaves(tree, is_leaf=lambda n: isinstance(n, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    mapped = nb.tree_map(lambda t: sum(t) if isinstance(t, tuple) else t, tree, is_leaf=lambda n: isinstance(n, tuple))
    assert mapped == {"a": 3, "b": [3, 9]}


def test_unflatten_with_wrong_leaf_count_raises():
    _, treedef = nb.tree_flatten((1, [2, 3]))
    with pytest.raises(ValueError, match="3 leaves, got 2"):
        nb.tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="3 leaves, got 4"):
        nb.tree_unflatten(treedef, [1, 2, 3, 4])


def test_registered_node_flattens_with_aux_data():
    p = Point(1, [2, 3], name="q")
    leaves, treedef = nb.tree_flatten(p)
    assert leaves == [1, 2, 3]
    back = nb.tree_unflatten(treedef, [10, 20, 30])
    assert isinstance(back, Point) and (back.x, back.y, back.name) == (10, [20, 30], "q")
    # aux data is part of the structure
    assert nb.tree_structure(Point(1, 2, "a")) != nb.tree_structure(Point(1, 2, "b"))
    assert "Point" in repr(treedef)


def test_register_twice_raises():
    with pytest.raises(ValueError, match="already a pytree node type"):
        nb.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda aux, kids: Point(*kids))
    with pytest.raises(ValueError, match="already"):
        nb.register_pytree_node(dict, lambda d: (list(d.values()), tuple(d)), lambda k, v: dict(zip(k, v, strict=True)))


def test_grad_and_vmap_through_registered_node():
    x, y = nb.tensor([1.0, 2.0]), nb.tensor([3.0, -1.0])
    g = nb.grad(lambda p: (p.x * p.x * p.y).sum())(Point(x, y))
    assert isinstance(g, Point)
    np.testing.assert_allclose(g.x.numpy(), 2 * x.numpy() * y.numpy())
    np.testing.assert_allclose(g.y.numpy(), x.numpy() ** 2)

    xs = nb.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    out = nb.vmap(lambda p: Point(p.x.sum(), p.y * 2, "out"), in_axes=(Point(0, None),))(Point(xs, y))
    assert isinstance(out, Point) and out.name == "out"
    np.testing.assert_allclose(out.x.numpy(), xs.numpy().sum(1))
    np.testing.assert_allclose(out.y.numpy(), np.broadcast_to(2 * y.numpy(), (3, 2)))


def test_namedtuple_through_vmap_and_jacrev():
    xs = nb.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    out = nb.vmap(lambda p: Pair(p.first * 2, p.second.sum()))(Pair(xs, xs))
    assert isinstance(out, Pair)
    assert out.first.shape == (3, 2) and out.second.shape == (3,)
    jac = nb.jacrev(lambda p: p.first * p.second)(Pair(nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0])))
    assert isinstance(jac, Pair)
    np.testing.assert_allclose(jac.first.numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_allclose(jac.second.numpy(), np.diag([1.0, 2.0]))


def test_dicts_come_back_in_insertion_order_while_leaves_stay_sorted():
    """Leaves follow the sorted keys (equal dicts flatten alike, as JAX's), but unflattening
    rebuilds a dict in its insertion order, as torch's pytrees do: a functional-MAML step that
    zips `params.values()` with `grads.values()` pairs the right tensors."""
    d = {"q.weight": 1, "k.weight": 2, "10.bias": 3, "2.bias": 4}
    leaves, treedef = nb.tree_flatten(d)
    assert leaves == [3, 4, 2, 1]  # sorted by key
    assert list(nb.tree_unflatten(treedef, leaves)) == list(d)
    assert treedef == nb.tree_structure(dict(sorted(d.items())))  # (order is not structure)
    assert list(nb.tree_map(lambda v: v * 10, d).items()) == [
        ("q.weight", 10),
        ("k.weight", 20),
        ("10.bias", 30),
        ("2.bias", 40),
    ]
    x = nb.ones(2)
    params = {"q": nb.tensor([1.0, 2.0]), "k": nb.tensor([3.0, 4.0])}
    grads = nb.func.grad(lambda p: (p["q"] * x).sum() + 2 * (p["k"] * x).sum())(params)
    assert list(grads) == ["q", "k"] and [g.tolist() for g in grads.values()] == [[1.0, 1.0], [2.0, 2.0]]
    out = nb.vmap(lambda t: {"z": t * 2, "a": t})(nb.ones(3))
    assert list(out) == ["z", "a"]
