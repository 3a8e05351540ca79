"""Pytrees: nested containers of leaves, flattened to a list plus a `PyTreeDef`.

    leaves, treedef = tree_flatten({"w": w, "b": (b1, b2)})   # [b1, b2, w]
    tree_unflatten(treedef, [x + 1 for x in leaves])
    tree_map(lambda a, g: a - g, params, grads)

Names and behaviour follow `jax.tree_util`: tuples, lists, dicts (children in
sorted-key order), namedtuples, OrderedDict, defaultdict and `None` (a node with
no children) are nodes; more types join through `register_pytree_node` and
`register_dataclass`; everything else is a leaf. jit flattens its arguments on
every call and hashes the treedef into its cache key, so flattening dispatches
on `type(x)` through one dict and every `PyTreeDef` hashes once, when built.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict, defaultdict
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np

from .errors import TracerTypeError, TracerValueError

PyTree = Any
IsLeaf = Callable[[Any], bool] | None


# -- path keys ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The i-th child of a `register_pytree_node` type, whose children have no names."""
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey


def keystr(path: Sequence[KeyEntry]) -> str:
    """`(SequenceKey(1), DictKey('w'))` -> `"[1]['w']"`."""
    return "".join(map(str, path))


# -- node kinds ----------------------------------------------------------------------

class _NodeKind:
    """How to take one node type apart, put it back, name its children and print it."""
    __slots__ = ("type", "flatten", "unflatten", "keys", "fmt")

    def __init__(self, type_: type, flatten: Callable[[Any], tuple[Iterable[Any], Any]],
                 unflatten: Callable[[Any, list[Any]], Any],
                 keys: Callable[[Any, int], Iterable[KeyEntry]],
                 fmt: Callable[[Any, list[str]], str]):
        self.type, self.flatten, self.unflatten = type_, flatten, unflatten
        self.keys, self.fmt = keys, fmt


def _seq_keys(aux: Any, n: int) -> Iterable[KeyEntry]:
    return map(SequenceKey, range(n))


def _flat_keys(aux: Any, n: int) -> Iterable[KeyEntry]:
    return map(FlattenedIndexKey, range(n))


def _fmt_tuple(aux: Any, cs: list[str]) -> str:
    return "(" + ", ".join(cs) + ("," if len(cs) == 1 else "") + ")"


def _fmt_dict(keys: Sequence[Hashable], cs: list[str]) -> str:
    return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(keys, cs)) + "}"


def _dict_flatten(d: dict) -> tuple[list[Any], tuple]:
    try:
        keys = tuple(sorted(d))
    except TypeError:  # mixed key types: insertion order is still deterministic
        keys = tuple(d)
    return [d[k] for k in keys], keys


def _defaultdict_flatten(d: defaultdict) -> tuple[list[Any], tuple]:
    children, keys = _dict_flatten(d)
    return children, (d.default_factory, keys)


def _namedtuple_kind(t: type) -> _NodeKind:
    return _NodeKind(
        t, lambda x: (x, None), lambda aux, cs: t(*cs),
        lambda aux, n: map(GetAttrKey, t._fields),
        lambda aux, cs: f"{t.__name__}(" + ", ".join(
            f"{f}={c}" for f, c in zip(t._fields, cs)) + ")")


def _custom_fmt(t: type) -> Callable[[Any, list[str]], str]:
    return lambda aux, cs: f"CustomNode({t.__name__}[{aux!r}], [{', '.join(cs)}])"


_BUILTIN_KINDS = (
    _NodeKind(tuple, lambda x: (x, None), lambda aux, cs: tuple(cs), _seq_keys, _fmt_tuple),
    _NodeKind(list, lambda x: (x, None), lambda aux, cs: cs, _seq_keys,
              lambda aux, cs: "[" + ", ".join(cs) + "]"),
    _NodeKind(dict, _dict_flatten, lambda keys, cs: dict(zip(keys, cs)),
              lambda keys, n: map(DictKey, keys), _fmt_dict),
    _NodeKind(type(None), lambda x: ((), None), lambda aux, cs: None, _seq_keys,
              lambda aux, cs: "None"),
    _NodeKind(OrderedDict, lambda d: (list(d.values()), tuple(d)),
              lambda keys, cs: OrderedDict(zip(keys, cs)),
              lambda keys, n: map(DictKey, keys),
              lambda keys, cs: f"OrderedDict({_fmt_dict(keys, cs)})"),
    _NodeKind(defaultdict, _defaultdict_flatten,
              lambda aux, cs: defaultdict(aux[0], zip(aux[1], cs)),
              lambda aux, n: map(DictKey, aux[1]),
              lambda aux, cs: f"defaultdict({aux[0]!r}, {_fmt_dict(aux[1], cs)})"),
)
_registered: set[type] = {k.type for k in _BUILTIN_KINDS}


class _KindCache(dict):
    """type -> _NodeKind, or None for leaf types.

    Lookups happen once per node and per leaf, so misses (namedtuple classes and
    leaf types alike) are classified once and remembered; exact-type dispatch
    means subclasses of registered types are leaves, as in JAX.
    """

    def __missing__(self, t: type) -> _NodeKind | None:
        kind = _namedtuple_kind(t) if issubclass(t, tuple) and hasattr(t, "_fields") else None
        self[t] = kind
        return kind


_kinds = _KindCache((k.type, k) for k in _BUILTIN_KINDS)


def register_pytree_node(nodetype: type, flatten_fn: Callable[[Any], tuple[Iterable[Any], Any]],
                         unflatten_fn: Callable[[Any, list[Any]], Any]) -> None:
    """Make `nodetype` a node: `flatten_fn(x) -> (children, aux_data)`,
    `unflatten_fn(aux_data, children) -> x`. aux_data becomes part of the treedef."""
    _check_node_type("register_pytree_node", nodetype)
    for name, fn in (("flatten_fn", flatten_fn), ("unflatten_fn", unflatten_fn)):
        if not callable(fn):
            raise TracerTypeError(f"register_pytree_node: {name} must be callable, got "
                                  f"{type(fn).__name__}")

    def flatten(x: Any) -> tuple[Iterable[Any], Any]:
        out = flatten_fn(x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TracerTypeError(f"register_pytree_node({nodetype.__qualname__}): flatten_fn "
                                  f"must return (children, aux_data), got {out!r:.60}")
        return out

    _register(_NodeKind(nodetype, flatten, unflatten_fn, _flat_keys, _custom_fmt(nodetype)))


# Leaves by nature: registering them as nodes would break every later flatten.
_LEAF_TYPES = (bool, int, float, complex, str, bytes, np.ndarray, np.generic)


def _check_node_type(what: str, nodetype: Any) -> None:
    if not isinstance(nodetype, type):
        raise TracerTypeError(f"{what}: expected a class, got {nodetype!r:.60}")
    if issubclass(nodetype, _LEAF_TYPES):
        raise TracerTypeError(f"{what}: {nodetype.__qualname__} is an array or scalar type "
                              f"(always a leaf); register your own class instead")


def _register(kind: _NodeKind) -> None:
    if kind.type in _registered:
        raise TracerValueError(f"register_pytree_node: {kind.type.__qualname__} is already "
                               "registered as a pytree node")
    _registered.add(kind.type)
    _kinds[kind.type] = kind  # replaces a cached "leaf" verdict


def register_pytree_node_class(cls: type) -> type:
    """Class decorator (JAX's): `cls` becomes a node through its own
    `tree_flatten(self) -> (children, aux_data)` and classmethod
    `tree_unflatten(aux_data, children)`."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def tree_reduce(function: Callable[[Any, Any], Any], tree: PyTree, *initializer: Any,
                is_leaf: IsLeaf = None) -> Any:
    """`functools.reduce(function, tree_leaves(tree), *initializer)`."""
    return functools.reduce(function, tree_leaves(tree, is_leaf=is_leaf), *initializer)


def register_dataclass(cls: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None) -> type:
    """Make `cls` a node whose children are `data_fields` and whose `meta_fields`
    are static (kept in the treedef). Left out, they come from the dataclass fields:
    `field(metadata=dict(static=True))` marks meta fields, the other init fields are data."""
    _check_node_type("register_dataclass", cls)
    if data_fields is None and not dataclasses.is_dataclass(cls):
        raise TracerTypeError(f"register_dataclass: {cls.__qualname__} is not a dataclass; "
                              "pass data_fields and meta_fields explicitly")
    fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
    if meta_fields is None:
        meta_fields = [f.name for f in fields if f.metadata.get("static")]
    if data_fields is None:
        data_fields = [f.name for f in fields if f.init and f.name not in meta_fields]
    data, meta = tuple(data_fields), tuple(meta_fields)
    names = {f.name for f in fields}
    if fields and not set(data + meta) <= names:
        raise TracerValueError(f"register_dataclass: {sorted(set(data + meta) - names)} are "
                               f"not fields of {cls.__qualname__}")
    if set(data) & set(meta):
        raise TracerValueError(f"register_dataclass: {sorted(set(data) & set(meta))} are "
                               "both data and meta fields")

    def flatten(x: Any) -> tuple[list[Any], tuple]:
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple, children: list[Any]) -> Any:
        return cls(**dict(zip(data, children)), **dict(zip(meta, aux)))

    _register(_NodeKind(cls, flatten, unflatten, lambda aux, n: map(GetAttrKey, data),
                        _custom_fmt(cls)))
    return cls


# -- PyTreeDef -----------------------------------------------------------------------

class PyTreeDef:
    """The structure of a pytree: node types, aux data and arity, but no leaves.

    Immutable (read-only properties over private slots) and hashable; the hash is
    computed once here because jit hashes the treedef on every call.
    """
    __slots__ = ("_kind", "_aux", "_children", "_num_leaves", "_num_nodes", "_hash")

    def __init__(self, kind: _NodeKind | None, aux: Any, children: tuple[PyTreeDef, ...]):
        self._kind, self._aux, self._children = kind, aux, children
        leaves, nodes, hashes = (1 if kind is None else 0), 1, []
        for c in children:
            leaves += c._num_leaves
            nodes += c._num_nodes
            hashes.append(c._hash)
        self._num_leaves, self._num_nodes = leaves, nodes
        try:
            aux_hash = hash(aux)
        except TypeError:  # unhashable aux is allowed; equal treedefs still hash equal
            aux_hash = 0
        self._hash = hash((kind, aux_hash, *hashes))

    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        return list(self._children)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        leaves = list(leaves)
        if len(leaves) != self._num_leaves:
            raise TracerValueError(f"tree_unflatten: {self!r} expected {self._num_leaves} "
                                   f"leaves, got {len(leaves)}")
        return _build(self, iter(leaves))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef) or self._hash != other._hash:
            return False
        return (self._kind is other._kind and self._children == other._children
                and bool(self._aux == other._aux))

    def __repr__(self) -> str:
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self._kind is None:
            return "*"
        return self._kind.fmt(self._aux, [c._str() for c in self._children])


_LEAF = PyTreeDef(None, None, ())


def _build(td: PyTreeDef, leaves: Iterator[Any]) -> PyTree:
    if td._kind is None:
        return next(leaves)
    children = [next(leaves) if c._kind is None else _build(c, leaves) for c in td._children]
    return td._kind.unflatten(td._aux, children)


# -- flatten / unflatten / map -------------------------------------------------------

def tree_flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
    """Leaves in order (dict children by sorted key) and the structure to rebuild them."""
    kind = _kinds[type(tree)]
    if kind is None or (is_leaf is not None and is_leaf(tree)):
        return [tree], _LEAF
    leaves: list[Any] = []
    treedef = _flatten(tree, kind, leaves, is_leaf)
    return leaves, treedef


def _flatten(node: Any, kind: _NodeKind, leaves: list[Any], is_leaf: IsLeaf) -> PyTreeDef:
    children, aux = kind.flatten(node)
    defs = []
    for c in children:
        # Leaves are handled inline: most children are leaves, and a call per leaf
        # would dominate the cost of flattening a flat tuple of arrays.
        k = _kinds[type(c)]
        if k is None or (is_leaf is not None and is_leaf(c)):
            leaves.append(c)
            defs.append(_LEAF)
        else:
            defs.append(_flatten(c, k, leaves, is_leaf))
    return PyTreeDef(kind, aux, tuple(defs))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> PyTree:
    if not isinstance(treedef, PyTreeDef):
        raise TracerTypeError(f"tree_unflatten: expected a PyTreeDef (from tree_flatten or "
                              f"tree_structure), got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: IsLeaf = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """`f` applied leafwise; every tree in `rest` must have the structure of `tree`."""
    if not callable(f):
        raise TracerTypeError(f"tree_map: f must be callable, got {type(f).__name__}")
    leaves, treedef = tree_flatten(tree, is_leaf)
    all_leaves = [leaves]
    for i, other in enumerate(rest, 1):
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            raise TracerValueError(f"tree_map: tree {i} has structure {other_def!r}, but the "
                                   f"first tree has structure {treedef!r}")
        all_leaves.append(other_leaves)
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_flatten_with_path(tree: PyTree, is_leaf: IsLeaf = None
                           ) -> tuple[list[tuple[tuple[KeyEntry, ...], Any]], PyTreeDef]:
    """Like `tree_flatten`, with each leaf paired with its path of keys from the root."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    paths: list[tuple[KeyEntry, ...]] = []
    _leaf_paths(treedef, (), paths)
    return list(zip(paths, leaves)), treedef


def _leaf_paths(td: PyTreeDef, prefix: tuple[KeyEntry, ...],
                out: list[tuple[KeyEntry, ...]]) -> None:
    if td._kind is None:
        out.append(prefix)
        return
    for key, child in zip(td._kind.keys(td._aux, len(td._children)), td._children):
        _leaf_paths(child, prefix + (key,), out)
