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

Once such an entry has served `PROMOTE_AFTER` calls, a C guard takes its place where
`backend/cpu/c_guard.py` can build one (the same checks and launch in machine code,
about 0.17 µs instead of 0.9): a builtin whose misses and other layouts go to the
Python guard, so every call is served as before.
"""

from __future__ import annotations

import functools
import os
import warnings
import weakref
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

# Calls an entry serves through its Python guard before it gets a C guard: compiling
# a structure takes about 7 ms, what some 10^4 calls save (~0.7 µs each), so a
# function called fewer times never pays for it and one called more pays at most
# twice the least it could (buying when the rent paid equals the price: ski rental).
# Where the structure has its code, a guard costs about 30 µs: some 50 calls.
PROMOTE_AFTER = 10_000
PROMOTE_AFTER_COMPILED = 50
# A host on numba's thread pool saves ten times as much a call (~7 µs: the launcher's
# frame and numba's dispatch of its arguments, which its Python guard must go through)
PROMOTE_AFTER_THREADED = 1_000


def no_guard(args: tuple) -> Any:
    """The guard of an entry with no key to check: every call misses."""
    return MISSED


def make_guard(key: tuple, entry: Any, stats: cache.CacheStats,
               promote: bool = True) -> tuple[Guard, Guard]:
    """(`guard`, `plain`) of `entry` (a `dispatch.Entry`) for calls whose fast-index key
    would be `key`: a hit is counted in `stats` and run; a miss asks `entry.prev.plain`
    (`guard`: two signatures called in turn both skip the key) or is `MISSED` (`plain`).
    With `promote`, the guard of an entry a C guard can serve gives its place to one
    after `PROMOTE_AFTER` calls."""
    env: dict[str, Any] = {"ndarray": np.ndarray, "eager": EagerArray, "entry": entry,
                           "stats": stats, "MISSED": MISSED}
    single = _one_result(entry.compiled)
    launch = getattr(entry.compiled.executable, "trusted_launch", None) if single else None
    parts = _c_guard_parts(key, entry) if promote and single else None
    if parts is not None:
        from .backend.cpu import c_guard

        after = PROMOTE_AFTER_COMPILED if c_guard.compiled(parts) else \
            PROMOTE_AFTER_THREADED if entry.compiled.executable.threaded else PROMOTE_AFTER
        env["promote_at"] = stats.hits + after
        env["promote"] = functools.partial(_promote, key, entry, stats, parts)
    source = _source(key, env, launch, parts is not None)
    if launch is not None:
        if any(name in launch.env and launch.env[name] is not value
               for name, value in env.items()):  # (a name the launcher means otherwise)
            source = _source(key, env, None, parts is not None)
        else:
            env = {**launch.env, **env}
    exec(compile(source, "<tracer jit guard>", "exec"), env)
    return env["guard"], env["plain"]


def _c_guard_parts(key: tuple, entry: Any) -> tuple | None:
    """`c_guard.plan_parts` of the entry's executable for positional calls of `key`
    (None for arrays in containers, and for executables a C guard does not serve)."""
    native = getattr(entry.compiled.executable, "native", None)
    if native is None or (key and key[0] == "tree"):
        return None
    from .backend.cpu import c_guard  # (loaded with the cpu backend, which made `native`)

    return c_guard.plan_parts(entry.compiled.executable, key)


def _promote(key: tuple, entry: Any, stats: cache.CacheStats, parts: tuple) -> None:
    """Give `entry` a C guard in front of Python guards that no longer promote (those
    first: a call meanwhile, in another thread, builds no second one)."""
    from .backend.cpu import c_abi, c_guard

    entry.guard, entry.plain = fallbacks = make_guard(key, entry, stats, promote=False)
    counters = (stats, c_abi.check_slot(stats, type(stats).hits),
                entry, c_abi.check_slot(entry, type(entry).used))
    if None in counters:
        return
    try:
        built = c_guard.build(parts, counters, fallbacks, (entry.compiled,))
    except Exception as e:  # (a bug here must not fail the user's call: it still runs)
        call = f"{entry.compiled.lowered.name}({', '.join(map(cache.sig_text, key))})"
        warnings.warn(f"tracer: no C guard for {call}: {e}", RuntimeWarning, stacklevel=2)
        return
    entry.c_guard = built
    entry.guard, entry.plain = built.guard, built.plain
    if entry.compiled.executable.threaded:
        _watch_forks().add(entry)


@functools.cache
def _watch_forks() -> "weakref.WeakSet[Any]":
    """The entries whose C guard calls code on numba's thread pool. In a child forked
    from a pool that is unsafe there (GNU OpenMP: `threads.forked_from_pool`) they go
    back to Python guards, whose launch runs a serial version. (Registered at the first
    such guard: after `threads`' own handler, which runs first in the child.)"""
    from .backend.cpu import threads

    entries: "weakref.WeakSet[Any]" = weakref.WeakSet()

    def after_fork_in_child() -> None:
        if threads.forked_from_pool():
            for entry in list(entries):
                entry.c_guard = None
                entry.guard, entry.plain = make_guard(entry.signature, entry, entry.stats,
                                                      promote=False)
    os.register_at_fork(after_in_child=after_fork_in_child)
    return entries


def _source(key: tuple, env: dict[str, Any], launch: Any, promote: bool) -> str:
    w = SourceWriter()
    for name, miss in (("guard", "entry.prev.plain(args)"), ("plain", "MISSED")):
        with w.block(f"def {name}(args)"):
            w.embed(_guard_body(key, env, launch, miss, promote))
    return w.text()


def _guard_body(key: tuple, env: dict[str, Any], launch: Any, miss: str,
                promote: bool) -> SourceWriter:
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
        if promote:
            with w.block("if entry.used >= promote_at"):
                w.line("promote()")
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


def _one_result(compiled: Compiled) -> bool:
    """Whether the call returns one array the executable made: nothing donated or
    passed through (what a guard may run in its own frame, or a C guard serve)."""
    tree = compiled.lowered.out_tree
    return not (compiled.aliased or compiled.lowered.donated or tree.num_nodes != 1
                or tree.num_leaves != 1)


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
