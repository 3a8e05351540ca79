"""tracer.tree_util: flatten/unflatten round trips, leaf order, treedefs, registration, paths."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, namedtuple
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.checks import raises
from tracer.tree_util import (DictKey, FlattenedIndexKey, GetAttrKey, PyTreeDef, SequenceKey,
                              keystr, register_dataclass, register_pytree_node,
                              tree_flatten, tree_flatten_with_path, tree_leaves, tree_map,
                              tree_structure, tree_unflatten)

Point = namedtuple("Point", ["x", "y"])


@register_dataclass
@dataclass
class Layer:
    w: Any
    b: Any
    name: str = field(default="dense", metadata=dict(static=True))


@dataclass
class Scaled:
    value: Any
    scale: float


register_dataclass(Scaled, meta_fields=["scale"])


class Box:
    """A plain class registered by hand; its aux data (a list) is unhashable."""

    def __init__(self, a: Any, b: Any, tags: list[str]):
        self.a, self.b, self.tags = a, b, tags

    def __eq__(self, other: object) -> bool:
        return (type(other) is Box and (self.a, self.b, self.tags)
                == (other.a, other.b, other.tags))


register_pytree_node(Box, lambda box: ((box.a, box.b), box.tags),
                     lambda tags, children: Box(*children, tags))


# -- hypothesis trees ------------------------------------------------------------------

def _nodes(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=2), children, max_size=4),
        st.builds(Point, children, children),
        st.builds(Layer, children, children, st.sampled_from(["a", "b"])),
        st.builds(Scaled, children, st.floats(allow_nan=False)),
        st.builds(Box, children, children, st.lists(st.text(max_size=2), max_size=2)),
    )


leaves_st = st.integers() | st.text(max_size=3)
trees = st.recursive(leaves_st | st.none(), _nodes, max_leaves=20)


def reference_leaves(x: Any) -> list[Any]:
    """An independent, obviously-correct statement of the leaf order."""
    if x is None:
        return []
    if isinstance(x, Point):
        return reference_leaves(x.x) + reference_leaves(x.y)
    if isinstance(x, (list, tuple)):
        return [leaf for c in x for leaf in reference_leaves(c)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in reference_leaves(x[k])]
    if isinstance(x, Layer):
        return reference_leaves(x.w) + reference_leaves(x.b)
    if isinstance(x, Scaled):
        return reference_leaves(x.value)
    if isinstance(x, Box):
        return reference_leaves(x.a) + reference_leaves(x.b)
    return [x]


@given(trees)
def test_round_trip(tree: Any) -> None:
    leaves, treedef = tree_flatten(tree)
    back = tree_unflatten(treedef, leaves)
    assert back == tree
    # The treedef compares node types too, which `==` on the trees does not
    # (Point(1, 2) == (1, 2)), so this checks every node was rebuilt with its type.
    assert tree_structure(back) == treedef
    assert treedef.num_leaves == len(leaves)


@given(trees)
def test_leaf_order_matches_reference(tree: Any) -> None:
    assert tree_leaves(tree) == reference_leaves(tree)


@given(trees)
def test_tree_map_visits_every_leaf(tree: Any) -> None:
    class Seen:  # an unregistered type, hence a leaf
        def __init__(self, x: Any):
            self.x = x

    mapped = tree_map(Seen, tree)
    assert [s.x for s in tree_leaves(mapped)] == tree_leaves(tree)
    assert tree_structure(mapped) == tree_structure(tree)


def test_leaf_order_example() -> None:
    tree = {"b": 1, "a": [2, (3, 4)], "c": None}
    assert tree_leaves(tree) == [2, 3, 4, 1]


def test_none_has_no_leaves() -> None:
    leaves, treedef = tree_flatten(None)
    assert leaves == []
    assert treedef.num_leaves == 0
    assert tree_unflatten(treedef, []) is None
    assert tree_leaves([None, (None,), {"a": None}]) == []
    assert tree_unflatten(tree_structure([1, None]), ["x"]) == ["x", None]


def test_unregistered_values_are_leaves() -> None:
    a = np.arange(3)

    class Thing:
        pass

    thing = Thing()
    for value in (a, np.float32(1), 1.5, "s", thing):
        assert tree_flatten(value) == ([value], tree_structure(0))
    assert tree_leaves((a, thing))[0] is a


def test_subclasses_of_builtin_nodes_are_leaves() -> None:
    class MyList(list):
        pass

    assert tree_leaves([MyList([1, 2])]) == [MyList([1, 2])]


def test_treedef_equality_and_hash() -> None:
    s = tree_structure
    assert s((1, {"a": 2})) == s(("x", {"a": np.zeros(2)}))
    assert hash(s((1, {"a": 2}))) == hash(s(("x", {"a": np.zeros(2)})))
    different = [s((1, 2)), s([1, 2]), s(Point(1, 2)), s({"a": 1, "b": 2}),
                 s({"a": 1, "c": 2}), s((1, None)), s((1, (2,))), s(1), s(None),
                 s(OrderedDict(a=1, b=2)), s(Layer(1, 2, "a")), s(Layer(1, 2, "b"))]
    for i, x in enumerate(different):
        for j, y in enumerate(different):
            assert (x == y) == (i == j), (x, y)
    assert len(set(different)) == len(different)
    assert s((1, 2)) != (1, 2)


def test_treedef_with_unhashable_aux_is_hashable() -> None:
    t1 = tree_structure(Box(1, 2, ["t"]))
    t2 = tree_structure(Box(3, 4, ["t"]))
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != tree_structure(Box(1, 2, ["u"]))
    assert {t1: "cached"}[t2] == "cached"


def test_treedef_hash_is_computed_once() -> None:
    class CountingAux:
        calls = 0

        def __hash__(self) -> int:
            CountingAux.calls += 1
            return 1

    aux = CountingAux()
    treedef = tree_structure([Box(1, 2, aux)])  # type: ignore[arg-type]
    built = CountingAux.calls
    assert built >= 1
    for _ in range(3):
        hash(treedef)
    assert CountingAux.calls == built


def test_treedef_is_immutable() -> None:
    treedef = tree_structure((1, 2))
    with pytest.raises(AttributeError):
        treedef.num_leaves = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        treedef.extra = 1  # type: ignore[attr-defined]


def test_treedef_attributes_and_repr() -> None:
    treedef = tree_structure((1, {"a": 2, "b": [3, None]}))
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 7  # tuple, leaf, dict, leaf, list, leaf, None
    assert treedef.children() == [tree_structure(0), tree_structure({"a": 0, "b": [0, None]})]
    assert repr(treedef) == "PyTreeDef((*, {'a': *, 'b': [*, None]}))"
    assert repr(tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree_structure(Point(1, 2))) == "PyTreeDef(Point(x=*, y=*))"
    assert repr(tree_structure(Layer(1, 2, "a"))) == "PyTreeDef(CustomNode(Layer[('a',)], [*, *]))"


def test_unflatten_wrong_leaf_count() -> None:
    treedef = tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match=r"expected 3 leaves, got 2"):
        tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match=r"expected 3 leaves, got 4"):
        tree_unflatten(treedef, [1, 2, 3, 4])


def test_is_leaf() -> None:
    tree = [(1, 2), (3,), {"k": (4, 5)}]
    is_tuple = lambda x: type(x) is tuple  # noqa: E731
    leaves, treedef = tree_flatten(tree, is_leaf=is_tuple)
    assert leaves == [(1, 2), (3,), (4, 5)]
    assert tree_unflatten(treedef, leaves) == tree
    assert tree_leaves((1, 2), is_leaf=is_tuple) == [(1, 2)]
    assert tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    assert tree_map(len, tree, is_leaf=is_tuple) == [2, 1, {"k": 2}]


def test_tree_map_several_trees() -> None:
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    c = {"x": 100, "y": (200, 300)}
    assert tree_map(lambda p, q, r: p + q + r, a, b, c) == {"x": 111, "y": (222, 333)}


def test_tree_map_structure_mismatch() -> None:
    with pytest.raises(ValueError) as info:
        tree_map(lambda p, q: p + q, {"x": 1, "y": (2, 3)}, {"x": 1, "y": [2, 3]})
    message = str(info.value)
    assert "PyTreeDef({'x': *, 'y': (*, *)})" in message
    assert "PyTreeDef({'x': *, 'y': [*, *]})" in message


def test_register_pytree_node_custom_class() -> None:
    box = Box(np.ones(2), [3, 4], ["tag"])
    leaves, treedef = tree_flatten(box)
    assert leaves[0] is box.a and leaves[1:] == [3, 4]
    back = tree_unflatten(treedef, ["a", "b", "c"])
    assert type(back) is Box and back.a == "a" and back.b == ["b", "c"] and back.tags == ["tag"]
    assert repr(treedef) == "PyTreeDef(CustomNode(Box[['tag']], [*, [*, *]]))"


def test_register_same_type_twice() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Box, lambda b: ((), None), lambda aux, cs: Box(0, 0, []))
    with pytest.raises(ValueError, match="already registered"):
        register_dataclass(Layer)
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(tuple, lambda t: (t, None), lambda aux, cs: tuple(cs))


def test_register_leaf_type_after_use() -> None:
    class Late:
        def __init__(self, v: Any):
            self.v = v

    late = Late(1)
    assert tree_leaves([late]) == [late]  # cached as a leaf type first
    register_pytree_node(Late, lambda x: ((x.v,), None), lambda aux, cs: Late(*cs))
    assert tree_leaves([late]) == [1]


def test_register_dataclass_meta_fields() -> None:
    layer = Layer(np.ones(2), np.zeros(2), "enc")
    leaves, treedef = tree_flatten(layer)
    assert leaves[0] is layer.w and leaves[1] is layer.b
    back = tree_unflatten(treedef, [1, 2])
    assert back == Layer(1, 2, "enc")
    assert tree_structure(Layer(1, 2, "enc")) == treedef
    assert tree_structure(Layer(1, 2, "dec")) != treedef

    assert tree_leaves(Scaled([1, 2], 0.5)) == [1, 2]
    assert tree_structure(Scaled(1, 0.5)) != tree_structure(Scaled(1, 2.0))
    assert tree_map(lambda v: v * 2, Scaled(3, 0.5)) == Scaled(6, 0.5)


def test_register_dataclass_explicit_fields_on_plain_class() -> None:
    class Pair:
        def __init__(self, left: Any, right: Any, label: str):
            self.left, self.right, self.label = left, right, label

    assert register_dataclass(Pair, data_fields=["left", "right"], meta_fields=["label"]) is Pair
    back = tree_map(lambda v: v + 1, Pair(1, 2, "p"))
    assert (type(back), back.left, back.right, back.label) == (Pair, 2, 3, "p")


def test_register_dataclass_errors() -> None:
    class NotADataclass:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        register_dataclass(NotADataclass)

    @dataclass
    class Both:
        a: Any

    with pytest.raises(ValueError, match="both data and meta"):
        register_dataclass(Both, data_fields=["a"], meta_fields=["a"])


def test_ordered_and_default_dicts() -> None:
    od = OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tree_flatten(od)
    assert leaves == [1, 2]
    back = tree_unflatten(treedef, leaves)
    assert type(back) is OrderedDict and list(back.items()) == [("b", 1), ("a", 2)]
    assert treedef != tree_structure({"b": 1, "a": 2})

    dd = defaultdict(list, {"y": 1, "x": 2})
    leaves, treedef = tree_flatten(dd)
    assert leaves == [2, 1]
    back = tree_unflatten(treedef, ["X", "Y"])
    assert type(back) is defaultdict and back.default_factory is list
    assert dict(back) == {"x": "X", "y": "Y"}
    assert treedef != tree_structure(defaultdict(int, {"y": 1, "x": 2}))


def test_unsortable_dict_keys_keep_insertion_order() -> None:
    tree = {1: "one", "a": "letter"}
    leaves, treedef = tree_flatten(tree)
    assert leaves == ["one", "letter"]
    assert tree_unflatten(treedef, leaves) == tree


def test_flatten_with_path() -> None:
    tree = (1, {"w": 2, "b": [3]}, Point(4, 5), Layer(6, 7), Box(8, 9, []), None)
    pairs, treedef = tree_flatten_with_path(tree)
    assert treedef == tree_structure(tree)
    assert [leaf for _, leaf in pairs] == tree_leaves(tree)
    assert [keystr(path) for path, _ in pairs] == [
        "[0]", "[1]['b'][0]", "[1]['w']", "[2].x", "[2].y", "[3].w", "[3].b",
        "[4][<flat index 0>]", "[4][<flat index 1>]"]
    assert pairs[1][0] == (SequenceKey(1), DictKey("b"), SequenceKey(0))
    assert pairs[3][0] == (SequenceKey(2), GetAttrKey("x"))
    assert pairs[7][0] == (SequenceKey(4), FlattenedIndexKey(0))


def test_flatten_with_path_of_a_leaf_and_is_leaf() -> None:
    assert tree_flatten_with_path(7)[0] == [((), 7)]
    assert keystr(()) == ""
    pairs, _ = tree_flatten_with_path({"a": (1, 2)}, is_leaf=lambda x: type(x) is tuple)
    assert pairs == [((DictKey("a"),), (1, 2))]


@given(trees)
def test_paths_lead_to_their_leaves(tree: Any) -> None:
    def follow(node: Any, path: tuple) -> Any:
        for key in path:
            if isinstance(key, SequenceKey):
                node = node[key.idx]
            elif isinstance(key, DictKey):
                node = node[key.key]
            elif isinstance(key, GetAttrKey):
                node = getattr(node, key.name)
            else:  # Box is the only custom node in these trees
                node = (node.a, node.b)[key.key]
        return node

    for path, leaf in tree_flatten_with_path(tree)[0]:
        assert follow(tree, path) is leaf


def test_key_strings() -> None:
    assert str(SequenceKey(0)) == "[0]"
    assert str(DictKey("a")) == "['a']"
    assert str(DictKey(3)) == "[3]"
    assert str(GetAttrKey("name")) == ".name"
    assert keystr((SequenceKey(1), DictKey("w"))) == "[1]['w']"
    assert isinstance(tree_structure(1), PyTreeDef)


def test_leaf_types_cannot_be_registered_as_nodes():
    from tracer import tree_util as tu
    raises(TypeError, lambda: tu.register_dataclass(int, ["real"], []))
    raises(TypeError, lambda: tu.register_pytree_node(np.ndarray, lambda x: ((), None),
                                                       lambda a, c: None))
    raises(TypeError, lambda: tu.register_pytree_node(3, lambda x: ((), None),
                                                       lambda a, c: None))
    assert tu.tree_leaves((1, 2.0)) == [1, 2.0]  # ints and floats are still leaves


def test_tree_util_bad_arguments():
    from tracer import tree_util as tu

    class Node:
        pass

    tu.register_pytree_node(Node, lambda n: 5, lambda aux, children: Node())
    msg = raises(TypeError, lambda: tu.tree_flatten(Node()))
    assert "flatten_fn must return (children, aux_data)" in msg
    raises(TypeError, lambda: tu.tree_unflatten((1, 2), [1, 2]))
    raises(TypeError, lambda: tu.tree_map(3, (1, 2)))


def test_register_dataclass_checks_field_names():
    import dataclasses

    from tracer import tree_util as tu

    @dataclasses.dataclass
    class P:
        a: float

    msg = raises(ValueError, lambda: tu.register_dataclass(P, ["b"], []))
    assert "'b'" in msg
