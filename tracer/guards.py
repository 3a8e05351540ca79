"""Guards: generated functions that serve a cached jit call of one signature without
building its key (`tracer.dispatch` asks the guard of the entry that served last).

    guard, plain = make_guard(key, entry, stats)
    guard(args)   # entry's result for positional `args` of its signature, else
                  # entry.prev.plain(args); plain(args): the same, else MISSED

`key` is the entry's key in the fast index: `dispatch.array_key`'s (arrays and Python
scalars) or `dispatch.tree_key`'s (arrays in dicts, lists and tuples). The guard checks
what the key holds, the way the key would tell it apart, with comparisons to
constants: each container's exact type, length and dict keys, each array's type
(ndarray or EagerArray), shape and dtype, each scalar's Python type and an int's int64
range. Arrays that are also aligned and C-contiguous (`flags.carray`) go to the
launcher's version without layout checks (`cpu/launch.py`, `TrustedLaunch`), written
into the guard where the entry's code is final and returns one array; other layouts
to `entry.run`, whose launcher checks them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import cache
from .backend.numba.source import SourceWriter
from .numpy._eager import EagerArray
from .stages import Compiled

# What a guard returns for a call it does not serve.
MISSED = object()

# A Python scalar's signature (`cache.leaf_signature`: weakly typed, 0-d); an int
# outside int64 is left to the full path, which raises its OverflowError.
SCALARS = {t: cache.leaf_signature(t()) for t in (bool, int, float, complex)}
INT64 = np.iinfo(np.int64)
_SCALAR_TYPES = {sig: t for t, sig in SCALARS.items()}

Guard = Callable[[tuple], Any]


def no_guard(args: tuple) -> Any:
    """The guard of an entry with no key to check: every call misses."""
    return MISSED


def make_guard(key: tuple, entry: Any, stats: cache.CacheStats) -> tuple[Guard, Guard]:
    """(`guard`, `plain`) of `entry` (a `dispatch.Entry`) for calls whose fast-index key
    would be `key`: a hit is counted in `stats` and run; a miss asks `entry.prev.plain`
    (`guard`: two signatures called in turn both skip the key) or is `MISSED` (`plain`)."""
    env: dict[str, Any] = {"ndarray": np.ndarray, "eager": EagerArray, "entry": entry,
                           "stats": stats, "MISSED": MISSED}
    launch = _embeddable_launch(entry.compiled)
    source = _source(key, env, launch)
    if launch is not None:
        if any(name in launch.env and launch.env[name] is not value
               for name, value in env.items()):  # (a name the launcher means otherwise)
            source = _source(key, env, None)
        else:
            env = {**launch.env, **env}
    exec(compile(source, "<tracer jit guard>", "exec"), env)
    return env["guard"], env["plain"]


def _source(key: tuple, env: dict[str, Any], launch: Any) -> str:
    w = SourceWriter()
    for name, miss in (("guard", "entry.prev.plain(args)"), ("plain", "MISSED")):
        with w.block(f"def {name}(args)"):
            w.embed(_guard_body(key, env, launch, miss))
    return w.text()


def _guard_body(key: tuple, env: dict[str, Any], launch: Any, miss: str) -> SourceWriter:
    """The lines of a guard: the arguments' structure, leaves named a0, a1, ...; their
    signatures; the hit."""
    w = SourceWriter()
    if key and key[0] == "tree":  # ("tree", structure, leaf signatures)
        _, structure, sigs = key
        _unpack(w, "args", structure, env, iter(range(len(sigs))), miss)
    else:  # arrays and scalars as positional arguments
        sigs = key
        listed = ", ".join(f"a{k}" for k in range(len(sigs)))
        with w.block(f"if len(args) != {len(sigs)}"):
            w.line(f"return {miss}")
        if sigs:
            w.line(f"{listed}{',' if len(sigs) == 1 else ''} = args")
    names = [f"a{k}" for k in range(len(sigs))]
    checks = [_check(a, k, sig, env) for k, (a, sig) in enumerate(zip(names, sigs))]
    layouts = [f"{a}.flags.carray" for a, sig in zip(names, sigs) if not sig[2]]
    listed = ", ".join(names)
    with w.block(f"if {' and '.join(checks) or 'True'}"):
        w.line("stats.hits = entry.used = stats.hits + 1")
        # (aligned, C-contiguous, writeable: what the code reads)
        with w.block(f"if {' and '.join(layouts) or 'True'}"):
            if launch is None:
                w.line(f"return entry.trusted({listed})")
            else:
                w.embed(launch.body)
        w.line(f"return entry.run({listed})")
    w.line(f"return {miss}")
    return w


def _unpack(w: SourceWriter, node: str, structure: Any, env: dict[str, Any], leaf: Any,
            miss: str) -> None:
    """Lines that return `miss` unless `node` has `structure` (`dispatch.tree_key`'s:
    0 for an array, else (container type, sorted dict keys, children's structures)),
    binding its array leaves to a0, a1, ... (`leaf` counts them) in `tree_flatten`'s
    order."""
    if structure == 0:
        w.line(f"a{next(leaf)} = {node}")
        return
    kind, keys, children = structure
    env[f"type_{node}"] = kind
    test = f"type({node}) is not type_{node} or len({node}) != {len(children)}"
    if keys is not None:
        env[f"keys_{node}"] = frozenset(keys)
        test += f" or {node}.keys() != keys_{node}"
    with w.block(f"if {test}"):
        w.line(f"return {miss}")
    names = [f"{node}_{i}" for i in range(len(children))]
    if keys is not None:
        for i, (name, k) in enumerate(zip(names, keys)):
            env[f"key_{name}"] = k
            w.line(f"{name} = {node}[key_{name}]")
    elif names:
        w.line(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {node}")
    for name, child in zip(names, children):
        _unpack(w, name, child, env, leaf, miss)


def _embeddable_launch(compiled: Compiled) -> Any:
    """The executable's `TrustedLaunch` when a guard can run it in its own frame: final
    code, one array out, nothing donated or passed through; else None."""
    launch = getattr(compiled.executable, "trusted_launch", None)
    tree = compiled.lowered.out_tree
    if launch is None or compiled.aliased or compiled.lowered.donated \
            or tree.num_nodes != 1 or tree.num_leaves != 1:
        return None
    return launch


def _check(a: str, k: int, sig: tuple, env: dict[str, Any]) -> str:
    """The condition that leaf `a` has signature `sig` (constants go in `env`)."""
    shape, dtype, weak = sig
    if weak:  # a Python scalar
        t = _SCALAR_TYPES[sig]
        env[f"type{k}"] = t
        if t is int:
            return f"type({a}) is type{k} and {INT64.min} <= {a} <= {INT64.max}"
        return f"type({a}) is type{k}"
    env[f"shape{k}"], env[f"dtype{k}"] = shape, dtype
    # (a built-in dtype is one object: `is`; a parametrized one may be built per array)
    same = "is" if dtype.isbuiltin else "=="
    return (f"(type({a}) is ndarray or type({a}) is eager) and {a}.shape == shape{k} "
            f"and {a}.dtype {same} dtype{k}")
