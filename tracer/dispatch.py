"""The hot path of a cached jit call: the cache's entries and how they run a call.

    entry = Entry(compiled, used)        # one cached signature of a jitted function
    entry.run(*leaves)                   # its result pytree, for ndarray arguments
    entry.guard(args)                    # the same for a call of its key, else MISSED
    run_compiled(compiled, inputs, leaves)   # any call that went through the full key

`Jitted.__call__` first hands a positional call to the guard of the entry that served
the last one (`Jitted._last.guard`, `tracer.guards`: generated comparisons of the
arguments with the entry's key, which ask the entry before that one when the call is
not its own): a loop that calls one function with one signature, or two in turn,
builds no key at all. A call no guard serves is looked up by `array_key(args)` alone,
each argument's (shape, dtype, False) (a scalar's weak signature), in a second index
of its cache (`Jitted._fast`: no pytree walk, no static values, no hashing of the
treedef), and its entry becomes the last one. Arrays in dicts, lists and tuples (a
training step's parameters) are looked up there too, by `tree_key`: the containers'
exact types, sorted dict keys and the leaves' signatures, everything `tree_flatten`
puts in the treedef, without building one (`serve_tree`). An entry reaches that
index, and gets its guard, only through a call that computed the full key with the
same (shape, dtype) of native byte order, positional arguments and nothing static,
so a hit there is a hit of the full key; a big-endian dtype, a NumPy scalar, an int
beyond int64 or a device array never matches one and takes the full path. Strides,
alignment and write permission are in no key: the guards send other layouts than
aligned C-contiguous to `Entry.run`, whose launcher checks them (a non-contiguous
argument is copied or read by the strided version, a read-only one is read as it
is). A change of `default_backend` or `debug_print` empties the fast index and
forgets the last entry; so do eviction and `clear_cache`, which replace the index,
so that a call which read the old one does not keep its entry as the last.

`Entry.run` starts as the path that works for every executable (the interpreter
tier while numba compiles, the interpreter and cuda backends, donated outputs) and
becomes, once the signature's executable is final, the cpu launcher's version that
returns `EagerArray` views (for one output; a pytree of several takes one more frame;
an output that passes an input through or repeats one is copied); the guard is then
made again around the final launcher. After a kernel that streamed megabytes every
Python step of a call misses the caches, so fewer steps is what makes a call cheap: a
guarded call of `a * b + c` is two Python frames (`Jitted.__call__`, the guard) around
numba's entry point, and one frame around machine code once the entry's guard is a C
guard (`guards.PROMOTE_AFTER`, `backend/cpu/c_guard.py`: it counts hits in the slots
of `Entry.used` and `CacheStats.hits` itself); what each part costs is in
`docs/performance.md`.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import cache, profiler
from .config import config
from .guards import INT64, MISSED, SCALARS, make_guard, no_guard
from .numpy._eager import EagerArray
from .stages import Compiled
from .tree_util import tree_flatten

# Every jitted function (`tr.clear_caches`, and the fast indexes a setting change empties)
ALL_JITTED: weakref.WeakSet = weakref.WeakSet()
# How often a setting in the full key (default_backend, debug_print) changed: the fast
# indexes, keyed without them, are emptied at each change.
_SETTING_CHANGES = [0]


def forget_fast(jitted: Any) -> None:
    """Empty `jitted`'s fast index and forget its last entry. (A new index: a call that
    read the old one sees the change and does not keep its entry as the last.)"""
    jitted._fast = {}
    jitted._last = NOTHING_SERVED


def _forget_fast_keys(_: Any) -> None:
    _SETTING_CHANGES[0] += 1
    for jitted in list(ALL_JITTED):
        forget_fast(jitted)


config.watch("default_backend", _forget_fast_keys)
config.watch("debug_print", _forget_fast_keys)


def setting_changes() -> int:
    return _SETTING_CHANGES[0]


class Entry:
    """One cached signature: its `Compiled`, when it last served, and its runner."""

    __slots__ = ("compiled", "used", "run", "trusted", "guard", "plain", "prev",
                 "signature", "stats", "c_guard", "__weakref__")

    def __init__(self, compiled: Compiled, used: int):
        self.compiled = compiled
        # the function's hit count when it last served: least recently used = smallest
        # (a miss takes the count as it is, and dict order breaks ties by age)
        self.used = used
        self.run: Callable[..., Any] = self._run_any
        # `run` for arrays known to be aligned C-contiguous ndarrays or EagerArrays
        self.trusted: Callable[..., Any] = self._run_any
        # `make_guard`'s functions for the entry's positional signature (`array_key`'s),
        # once a call with one put it in the fast index (`guard_calls`), and the entry
        # that was `Jitted._last` before this one (set when this one becomes the last)
        self.guard: Callable[[tuple], Any] = no_guard
        self.plain: Callable[[tuple], Any] = no_guard
        self.prev: Any = NOTHING_SERVED
        self.signature: tuple | None = None
        self.stats: cache.CacheStats | None = None
        # the `c_guard.CGuard` serving the entry's hits, once `guards` built one
        self.c_guard: Any = None

    def guard_calls(self, signature: tuple, stats: cache.CacheStats) -> None:
        """Give the entry the guard of positional calls of `signature` (hits counted in
        `stats`)."""
        self.signature, self.stats = signature, stats
        self.guard, self.plain = make_guard(signature, self, stats)

    def _run_any(self, *args: np.ndarray) -> Any:
        """A call through whatever executable the signature has now; once that is final
        machine code (the compile swapped out the interpreter tier), the direct runner
        (and a guard that runs the launcher in its own frame)."""
        compiled = self.compiled
        runners = _direct_runners(compiled)
        if runners is not None:
            self.run, self.trusted = runners
            if self.signature is not None and self.c_guard is None:  # (a C guard's
                # Python guards already run the final launcher, and read `run` anew)
                self.guard, self.plain = make_guard(self.signature, self, self.stats)
            return self.run(*args)
        return run_compiled(compiled, list(map(_as_input, args)), args)


def serve_tree(jitted: Any, tree: tuple[tuple, list]) -> Any:
    """A call of `jitted` with arrays in dicts, lists and tuples (`tree_key`'s (key,
    leaves)) run by the entry its fast index holds for the key; `MISSED` if none (or
    while the profiler records: the full path records the run)."""
    fast = jitted._fast
    entry = fast.get(tree[0])
    if entry is None or profiler._session is not None:
        return MISSED
    stats = jitted._stats
    stats.hits = entry.used = stats.hits + 1
    entry.prev, jitted._last = jitted._last, entry  # (its guard serves the next call)
    if jitted._fast is not fast:  # (replaced meanwhile: see `forget_fast`)
        jitted._last = NOTHING_SERVED
    return entry.run(*tree[1])


class _NothingServed:
    """What `Jitted._last` holds before an entry served a positional call."""

    __slots__ = ()
    guard = plain = staticmethod(no_guard)


NOTHING_SERVED = _NothingServed()


def _as_input(a: Any) -> np.ndarray:
    """What an executable gets for a fast-index argument (`cache.as_input`'s result)."""
    t = type(a)
    if t is np.ndarray:
        return a
    return a.view(np.ndarray) if t is EagerArray else np.asarray(a, SCALARS[t][1])


def run_compiled(compiled: Compiled, inputs: list, leaves: Sequence[Any]) -> Any:
    """Run `compiled` on the executable's `inputs` (from the call's `leaves`): the
    result pytree, outputs as `EagerArray`s, a donated input returned as passed."""
    outs = compiled.run(inputs) if compiled.aliased else compiled.executable(*inputs)
    outs = cache.donated_results(outs, inputs, leaves) if compiled.lowered.donated \
        else list(map(cache.as_result, outs))
    return compiled.lowered.out_tree.unflatten(outs)


def run_recorded(compiled: Compiled, inputs: list, leaves: Sequence[Any]) -> Any:
    """`run_compiled` as a timeline event (only while tr.profiler records)."""
    lowered = compiled.lowered
    with profiler.naming(lowered.name), profiler.span("run", "execute",
                                                      backend=lowered.backend):
        outs = compiled.run(inputs)
    return lowered.out_tree.unflatten(cache.donated_results(outs, inputs, leaves))


def remember_fast(fast: dict, sigs: tuple, entry: Entry, changes: int) -> None:
    """`entry` in the fast index under `sigs` (a call's `array_signatures`), unless the
    settings in the full key changed since that call read them (`changes`, from
    `setting_changes()`): then its key may be stale."""
    fast[sigs] = entry
    if _SETTING_CHANGES[0] != changes:
        fast.pop(sigs, None)


def remember_guarded(jitted: Any, key: tuple, entry: Entry, changes: int) -> None:
    """`remember_fast` of `jitted`'s `entry` under `key` (`array_key`'s or
    `tree_key`'s), and the entry's guard of calls with that key."""
    if entry.signature is None:
        entry.guard_calls(key, jitted._stats)
    remember_fast(jitted._fast, key, entry, changes)


def evict_least_recent(jitted: Any) -> None:
    """Drop the entry of `jitted`'s cache that served longest ago (O(cache size), on
    misses only: hits just stamp their entry), from its fast index too, and forget its
    last entry. (Copies of the dicts: other threads may insert meanwhile.)"""
    entries = jitted._cache
    key, old = min(list(entries.items()), key=lambda item: item[1].used)
    entries.pop(key, None)
    jitted._fast = {k: e for k, e in list(jitted._fast.items()) if e is not old}
    jitted._last = NOTHING_SERVED
    for entry in list(entries.values()):  # (so that nothing keeps the evicted entry alive)
        if entry.prev is old:
            entry.prev = NOTHING_SERVED


@functools.lru_cache(maxsize=64)
def flat_treedef(n: int) -> Any:
    """The treedef of `((a_0, ..., a_{n-1}), {})` for n array leaves."""
    return tree_flatten((tuple(range(n)), {}))[1]


@functools.lru_cache(maxsize=64)
def flat_tuple_treedef(n: int) -> Any:
    """The treedef of `(a_0, ..., a_{n-1})`."""
    return tree_flatten(tuple(range(n)))[1]


def _direct_runners(compiled: Compiled) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """(`run`, `trusted`) for a signature whose executable calls machine code through a
    launcher (`direct_call` and `trusted_call`, cpu: outputs as EagerArrays, the one
    array itself when there is one) and donates nothing: None for the others, which
    keep the general path (a donated output is the argument)."""
    call = getattr(compiled.executable, "direct_call", None)
    if call is None or compiled.lowered.donated:
        return None
    trusted = getattr(compiled.executable, "trusted_call", call)
    if compiled.aliased:
        call, trusted = _copying(call, compiled), _copying(trusted, compiled)
    return _returning_tree(call, compiled), _returning_tree(trusted, compiled)


def _copying(call: Callable[..., Any], compiled: Compiled) -> Callable[..., Any]:
    """`call` (a launcher) with the outputs that pass an input through or repeat an
    earlier output copied, as `Compiled.run` copies them."""
    if compiled.lowered.out_tree.num_leaves == 1:  # (the launcher returns the array)
        return lambda *args: call(*args).copy()
    aliased = compiled.aliased

    def run(*args: Any) -> list:
        outs = call(*args)
        for i in aliased:
            outs[i] = outs[i].copy()
        return outs
    return run


def _returning_tree(call: Callable[..., Any], compiled: Compiled) -> Callable[..., Any]:
    """`call` (a launcher: one output, or a list) made to return the output pytree."""
    tree = compiled.lowered.out_tree
    if tree == flat_tuple_treedef(tree.num_leaves) and tree.num_leaves != 1:
        return lambda *args: tuple(call(*args))  # (a tuple of arrays: no tree walk)
    if tree.num_leaves != 1:
        return lambda *args: tree.unflatten(call(*args))
    if tree.num_nodes == 1:  # one array out, the common case: the launcher is the runner
        return call
    return lambda *args: tree.unflatten((call(*args),))




def array_key(args: tuple) -> tuple | None:
    """The fast index's key of `args`: (shape, dtype, False) of each array (ndarray or
    EagerArray), the weak signature of each Python scalar; None when an argument is
    anything else. Byte order is not checked: a non-native dtype is a different dtype,
    which the index never holds."""
    if len(args) == 1:  # (the most common arity: a third cheaper without the loop)
        a = args[0]
        t = type(a)
        if t is np.ndarray or t is EagerArray:
            return ((a.shape, a.dtype, False),)
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray or t is EagerArray:
            key.append((a.shape, a.dtype, False))
            continue
        sig = SCALARS.get(t)
        if sig is None or t is int and not INT64.min <= a <= INT64.max:
            return None
        key.append(sig)
    return tuple(key)


def tree_key(args: tuple) -> tuple[tuple, list] | None:
    """(the fast index's key, the leaves in `tree_flatten`'s order) of positional
    `args` made of arrays in dicts, lists and tuples (a training step's parameters):
    the key is ("tree", structure, (shape, dtype, False) of each leaf), the structure
    each container's exact type, sorted dict keys and children, all `tree_flatten`
    puts in the treedef. None for anything else (another leaf or node type, dict keys
    that do not sort), which the full key handles."""
    leaves: list = []
    structure = _structure(args, leaves)
    if structure is None:
        return None
    return ("tree", structure, tuple([(a.shape, a.dtype, False) for a in leaves])), leaves


def _structure(node: Any, leaves: list) -> Any:
    """(type, dict keys, children's structures) of a container `node`, its array leaves
    appended to `leaves` (an array child's structure: 0); None if unsupported."""
    t = type(node)
    if t is dict:
        try:
            keys = tuple(sorted(node))
        except TypeError:
            return None
        children = [node[k] for k in keys]
    elif t is tuple or t is list:
        keys, children = None, node
    else:
        return None
    parts = []
    for child in children:
        c = type(child)
        if c is np.ndarray or c is EagerArray:  # (inline: most children are arrays)
            leaves.append(child)
            parts.append(0)
            continue
        part = _structure(child, leaves)
        if part is None:
            return None
        parts.append(part)
    return t, keys, tuple(parts)


def array_signatures(args: tuple) -> tuple | None:
    """`cache.leaf_signature` of each argument in one pass when every one is an array
    in native byte order or a Python scalar (None otherwise): the full key's
    signatures, equal to `array_key(args)` where that is not None."""
    key = array_key(args)
    if key is None or not all(d.isnative for _, d, _ in key):
        return None
    return key
