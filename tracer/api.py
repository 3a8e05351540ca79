"""User-facing entry points: `jit`, `make_hlo`, `eval_shape`, `devices`, `device_put`.

Thin wrappers: flatten the arguments, build the cache key (`tracer.cache`),
trace on a miss (`tracer.tracing`), optimize and compile (`tracer.stages`).
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from . import cache, dispatch, profiler, progress, reprs, tiers
from .backend import backend_loaded, backend_names, get_backend
from .config import config
from .core import ShapedArray, typecheck
from .errors import (TracerError, TracerTypeError, TracerValueError, add_user_line,
                     names_user_line)
from .hlo import HloModule
from .stages import Lowered
from .tracing import GraphBuilder, current_builder, is_value
from .tree_util import (keystr, tree_flatten, tree_flatten_with_path, tree_map,
                        tree_unflatten)

class Jitted:
    """A function traced once per signature, cached, and run compiled."""

    def __init__(self, fun: Callable[..., Any], static_argnums: Iterable[int] = (),
                 static_argnames: Iterable[str] = (), donate_argnums: Iterable[int] = (),
                 backend: str | None = None):
        if not callable(fun):
            raise TracerTypeError(f"jit: expected a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = getattr(fun, "__name__", "fun")
        # What `fun` accepts: a wrapper's own signature (`functools.wraps` copies only
        # the wrapped function's names, which still name the static arguments).
        self._signature = _signature(fun, follow_wrapped=False)
        self._params = _positional_params(_signature(fun))
        self.static_argnums, self.static_argnames = _resolve_statics(
            self._signature, self._params, _as_tuple(static_argnums, "static_argnums", int),
            _as_tuple(static_argnames, "static_argnames", str), self.name)
        # checked as JAX checks them; the cpu backend may write results into them
        self.donate_argnums = _resolve_donated(
            self._signature, self._params, _as_tuple(donate_argnums, "donate_argnums", int),
            self.static_argnums, self.name)
        self.backend = backend
        self._statics = bool(self.static_argnums or self.static_argnames)
        # at most config.jit_cache_size entries; the least recently used goes first
        self._cache: dict[tuple, dispatch.Entry] = {}
        # the same entries by `dispatch.array_key` (see tracer.dispatch)
        self._fast: dict[tuple, dispatch.Entry] = {}
        self._last: Any = dispatch.NOTHING_SERVED  # served the last positional call
        self._stats = cache.CacheStats()
        dispatch.ALL_JITTED.add(self)

    # -- the hot path ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:  # (free when nothing raises: no extra call frame on the hot path)
            if current_builder() is not None:
                return self._inline(args, kwargs)
            if not kwargs and profiler._session is None:  # positional: tracer.dispatch
                if (out := self._last.guard(args)) is not dispatch.MISSED:  # the last entry's
                    return out
                fast = self._fast
                if (entry := fast.get(dispatch.array_key(args))) is not None:  # the new last
                    self._stats.hits = entry.used = self._stats.hits + 1
                    entry.prev, self._last = self._last, entry
                    if self._fast is not fast:  # (replaced meanwhile: tracer.dispatch)
                        self._last = dispatch.NOTHING_SERVED
                    return entry.run(*args)
            return self._call_keyed(args, kwargs)
        except TracerError as e:
            self._stats.failed += 1
            add_user_line(e)
            raise

    def _call_keyed(self, args: tuple, kwargs: dict) -> Any:
        """A call looked up by its full key (pytree, signatures, statics, config), unless
        its arrays in dicts, lists and tuples are in the fast index (`serve_tree`)."""
        tree = None if kwargs or self._statics else dispatch.tree_key(args)
        if tree is not None and (out := dispatch.serve_tree(self, tree)) is not dispatch.MISSED:
            return out
        changes = dispatch.setting_changes()
        sigs = None if kwargs or self._statics else dispatch.array_signatures(args)
        if sigs is not None:  # the common case: arrays, positional, nothing static
            dynamic, statics = (args, kwargs), ()
            leaves, treedef = args, dispatch.flat_treedef(len(args))
        else:
            dynamic, statics = self._split(args, kwargs)
            leaves, treedef = tree_flatten(dynamic)
            sigs = tuple(map(cache.leaf_signature, leaves))
        key = (treedef, sigs, statics, self.backend or config.default_backend,
               config.debug_print)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._miss(key, args, kwargs, dynamic)
        else:
            self._stats.hits = entry.used = self._stats.hits + 1
        if leaves is args:
            dispatch.remember_guarded(self, sigs, entry, changes)
        elif tree is not None and all(d.isnative for _, d, _ in tree[0][2]):
            dispatch.remember_guarded(self, tree[0], entry, changes)
        compiled = entry.compiled
        try:
            inputs = list(map(cache.as_input, leaves, sigs))
        except OverflowError:
            raise cache.overflow_error(self.name, self._leaf_names(dynamic), leaves,
                                       sigs) from None
        if profiler._session is not None:
            return dispatch.run_recorded(compiled, inputs, leaves)
        return dispatch.run_compiled(compiled, inputs, leaves)

    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
        """(dynamic (args, kwargs) pytree, hashable static values)."""
        if not self.static_argnums and not self.static_argnames:
            return (args, kwargs), ()
        statics = []
        dyn_args = list(args)
        for i in self.static_argnums:
            if i < len(args):
                statics.append((self._arg_name(i), _types(args[i]), _hashable(args[i], self, i)))
                dyn_args[i] = None
        dyn_kwargs = dict(kwargs)
        for name in self.static_argnames:
            if name in kwargs:
                statics.append((name, _types(kwargs[name]), _hashable(kwargs[name], self, name)))
                del dyn_kwargs[name]
        return (tuple(dyn_args), dyn_kwargs), tuple(statics)

    # -- misses, tracing, lowering ---------------------------------------------------
    def _miss(self, key: tuple, args: tuple, kwargs: dict, dynamic: tuple) -> tuple:
        self._check_call(args, kwargs)
        self._stats.misses += 1
        reason = None
        if config.explain_cache_misses or config.log_compiles:
            reason = cache.explain_miss(self.name, key, list(self._cache),
                                        self._leaf_names(dynamic))
        if config.explain_cache_misses:
            cache.log().warning(reason)
        start = time.perf_counter()
        lowered = self._lower_key(key, args, kwargs, dynamic)
        if tiers.tiered(lowered.backend):
            compiled = tiers.compile_tiered(lowered, self._stats, bool(self._cache))
        else:
            with progress.shown(f"compiling {self.name}"):
                compiled = lowered.compile()
        fresh = bool(getattr(compiled.executable, "fresh_compile", True))
        if config.log_compiles:
            cache.log().warning(cache.compile_line(self.name, key, reason, fresh,
                                                   time.perf_counter() - start))
        # Shape-generic backends reuse machine code across sizes: count real compiles.
        self._stats.compiles += int(fresh)
        while len(self._cache) >= config.jit_cache_size:
            dispatch.evict_least_recent(self)
        self._cache[key] = entry = dispatch.Entry(compiled, self._stats.hits)
        return entry

    def _lower_key(self, key: tuple, args: tuple, kwargs: dict, dynamic: tuple) -> Lowered:
        treedef, sigs, _, backend, _ = key
        try:
            avals = [cache.aval_from_signature(s) for s in sigs]
        except TracerError:  # name the argument (only now: names cost a tree walk)
            avals = [cache.aval_from_signature(s, name)
                     for s, name in zip(sigs, self._leaf_names(dynamic), strict=True)]
        with profiler.naming(f"jit_{self.name}"), profiler.span("trace", "trace"), \
                GraphBuilder() as builder:
            tracers = [builder.new_input(a) for a in avals]
            out = self._call_with(tree_unflatten(treedef, tracers), args, kwargs)
            out_leaves, out_tree = tree_flatten(out)
            if not all(map(is_value, out_leaves)):
                raise _non_array_output(self.name, out)
            graph, _ = builder.build(out_leaves, self.name)
        self._stats.traces += 1
        if config.runtime_checks:
            typecheck(graph)
        return Lowered(graph, f"jit_{self.name}", treedef, avals, out_tree, backend,
                       self._split, key[2], self._donated_leaves(dynamic))

    def _donated_leaves(self, dynamic: tuple) -> tuple[int, ...]:
        """Positions, among the flat input leaves, of the donated arguments' leaves."""
        if not self.donate_argnums:
            return ()
        dyn_args = dynamic[0]
        sizes = [len(tree_flatten(a, is_leaf=_is_aval)[0]) for a in dyn_args]
        starts = np.cumsum([0] + sizes)
        return tuple(j for i in self.donate_argnums if i < len(dyn_args)
                     for j in range(starts[i], starts[i] + sizes[i]))

    def _call_with(self, dynamic: tuple, args: tuple, kwargs: dict) -> Any:
        """Call fun with dynamic leaves from `dynamic` and static values from args/kwargs."""
        dyn_args, dyn_kwargs = dynamic
        full_args = [args[i] if i in self.static_argnums else a for i, a in enumerate(dyn_args)]
        full_kwargs = {**dyn_kwargs, **{k: kwargs[k] for k in self.static_argnames if k in kwargs}}
        return self.fun(*full_args, **full_kwargs)

    def _inline(self, args: tuple, kwargs: dict) -> Any:
        """Called inside another trace: the function's ops join that trace."""
        self._check_call(args, kwargs)
        self._stats.traces += 1
        self._split(args, kwargs)  # still validates static arguments
        return self.fun(*args, **kwargs)

    def _check_call(self, args: tuple, kwargs: dict) -> None:
        """A wrong number or name of arguments, as a TracerTypeError naming `fun` (checked
        before tracing, so a TypeError raised inside `fun` is never mistaken for it)."""
        if self._signature is None:
            return
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TracerTypeError(f"jit({self.name}): {e}; the signature is "
                                  f"{self.name}{self._signature}") from None

    @names_user_line
    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace for these arguments (arrays, scalars or `ShapedArray`s) without running."""
        dynamic, statics = self._split(args, kwargs)
        leaves, treedef = tree_flatten(dynamic, is_leaf=_is_aval)
        sigs = tuple(map(cache.leaf_signature, leaves))
        key = (treedef, sigs, statics, self.backend or config.default_backend,
                   config.debug_print)
        self._check_call(args, kwargs)
        return self._lower_key(key, args, kwargs, dynamic)

    # -- introspection ---------------------------------------------------------------
    def cache_info(self) -> cache.CacheInfo:
        return self._stats.info(len(self._cache))

    def clear_cache(self) -> None:
        self._cache.clear()
        dispatch.forget_fast(self)

    def wait_compiled(self) -> None:
        """Block until every signature called so far runs compiled code (with
        `config.compile_mode == "async"` the first calls run on the interpreter while
        numba compiles); raises the compile's error as a synchronous compile would."""
        pending = [e.compiled.executable for e in list(self._cache.values())
                   if isinstance(e.compiled.executable, tiers.TieredExecutable)]
        if pending:
            with progress.shown(f"compiling {self.name}"):
                for executable in pending:
                    executable.wait()

    def _arg_name(self, i: int) -> str:
        return self._params[i] if i < len(self._params) else f"args[{i}]"

    def _leaf_names(self, dynamic: tuple) -> list[str]:
        paths, _ = tree_flatten_with_path(dynamic)
        return [self._path_name(path) for path, _ in paths]

    def _path_name(self, path: tuple) -> str:
        if not path or len(path) < 2:
            return keystr(path)
        where, rest = path[1], path[2:]
        head = (self._arg_name(where.idx) if path[0].idx == 0 else repr(where.key))
        return head + keystr(rest)

    def __repr__(self) -> str:
        return f"<jit {self.name}>"

    def _repr_html_(self) -> str:
        """The cache table (one row per signature), its counters, and the graph and
        generated source of the latest compile."""
        rows = [(", ".join(map(cache.sig_text, key[1])) or "()",
                 ", ".join(f"{n}={v!r}" for n, _, v in key[2]), key[3]) for key in self._cache]
        info = self.cache_info()
        parts = [reprs.line(f"{self.name}{self._signature or '(...)'}: {len(rows)} cached "
                            f"signature(s)")]
        if rows:
            parts.append(reprs.table(("arguments", "static arguments", "backend"), rows))
        parts.append(info._repr_html_())
        if self._cache:
            latest = list(self._cache.values())[-1].compiled
            parts.append(reprs.folded("latest compile: graph and generated source",
                                      latest._repr_html_(), open_=True))
        return reprs.card(f"jit({self.name})", *parts)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def jit(fun: Callable[..., Any] | None = None, *, static_argnums: int | Iterable[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Iterable[int] = (),
        backend: str | None = None) -> Any:
    """Trace `fun` once per argument signature, cache it, and run it compiled.

    Works as `@jit` and `@jit(static_argnames="n")`. Arguments and results are
    pytrees of arrays; Python scalars are traced as weakly typed 0-d values.
    """
    if backend is not None and backend not in backend_names():
        raise TracerValueError(f"jit: unknown backend {backend!r}; available: "
                               f"{', '.join(backend_names())}")
    make = functools.partial(Jitted, static_argnums=static_argnums,
                             static_argnames=static_argnames, donate_argnums=donate_argnums,
                             backend=backend)
    return make if fun is None else make(fun)


def make_hlo(fun: Callable[..., Any],
             static_argnums: int | Iterable[int] = ()) -> Callable[..., HloModule]:
    """`make_hlo(f)(*args)` → the HLO module of `f` traced for `args`."""
    jitted = fun if isinstance(fun, Jitted) else Jitted(fun, static_argnums=static_argnums)

    @names_user_line
    def lower_to_hlo(*args: Any, **kwargs: Any) -> HloModule:
        return jitted.lower(*args, **kwargs).hlo

    return lower_to_hlo


def make_jaxpr(fun: Callable[..., Any], static_argnums: int | Iterable[int] = ()
               ) -> Callable[..., HloModule]:
    """JAX's name for seeing the traced program: tracer's graph is HLO, so this is
    `make_hlo` (`print(make_jaxpr(f)(x))` prints one instruction a line)."""
    return make_hlo(fun, static_argnums)


def block_until_ready(x: Any) -> Any:
    """`x` once every array in it is computed (JAX's name). cpu and interpreter results
    are NumPy arrays, ready when returned; device arrays wait for their stream."""
    for leaf in tree_flatten(x)[0]:
        wait = getattr(leaf, "block_until_ready", None)
        if callable(wait):
            wait()
    return x


@names_user_line
def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The pytree of `ShapedArray`s `fun(*args)` would return, without running it."""
    jitted = fun if isinstance(fun, Jitted) else Jitted(fun)
    lowered = jitted.lower(*args, **kwargs)
    return tree_unflatten(lowered.out_tree, list(lowered.graph.out_avals))


def clear_caches() -> None:
    """Empty the cache of every jitted function and the backends' in-memory caches
    (the persistent compile cache on disk stays)."""
    for jitted in list(dispatch.ALL_JITTED):
        jitted.clear_cache()
    for name in backend_names():
        clear = getattr(get_backend(name), "clear_memory", None) if backend_loaded(name) else None
        if clear is not None:
            clear()


def devices() -> list[str]:
    """Names of the backends tracer can run on here ('cuda' when numba.cuda finds a GPU,
    or runs its simulator)."""
    return [name for name in backend_names() if name != "cuda" or _cuda_available()]


def _cuda_available() -> bool:
    try:
        from numba import cuda
    except ImportError:
        return False
    return bool(cuda.is_available())


def device_put(x: Any, device: str | None = None) -> Any:
    """`x` (a pytree of arrays) on `device` (as JAX's, the default backend when None):
    numba device arrays for 'cuda' (jitted functions given device arrays return device
    arrays), NumPy arrays for the others."""
    device = config.default_backend if device is None else device
    if device not in backend_names():
        raise TracerValueError(f"device_put: unknown device {device!r}; available: "
                               f"{', '.join(devices())}")
    if device == "cuda":
        get_backend("cuda")  # a clear error when there is no GPU (or simulator)
        from .backend.cuda.lib.arrays import device_put as put
        return tree_map(put, x)
    return tree_map(np.asarray, x)


def _is_aval(x: Any) -> bool:
    return isinstance(x, ShapedArray)


def _as_tuple(x: Any, what: str, kind: type) -> tuple:
    """`x` (one `kind` value or an iterable of them) as a tuple; TracerTypeError else."""
    if x is None:
        return ()
    items = (x,) if isinstance(x, (int, str)) else x
    try:
        items = tuple(items)
    except TypeError:
        items = (x,)
    for i in items:
        if not isinstance(i, kind) or isinstance(i, bool):
            raise TracerTypeError(f"jit: {what} must be {kind.__name__}s or a tuple of them, "
                                  f"got {x!r}")
    return items


def _signature(fun: Callable[..., Any], follow_wrapped: bool = True
               ) -> inspect.Signature | None:
    try:
        return inspect.signature(fun, follow_wrapped=follow_wrapped)
    except (TypeError, ValueError):
        return None


def _positional_params(sig: inspect.Signature | None) -> list[str]:
    if sig is None:
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def _check_argnums(sig: inspect.Signature | None, nums: tuple, what: str,
                   fun_name: str) -> None:
    """As in JAX: `static_argnums` / `donate_argnums` must be positions `fun` has."""
    if sig is None:
        return
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values()):
        return
    params = _positional_params(sig)
    bad = [i for i in nums if not -len(params) <= i < len(params)]
    if bad:
        raise TracerValueError(f"jit({fun_name}): {what}={nums} but {fun_name} "
                               f"takes only {len(params)} positional arguments")


def _check_static_names(sig: inspect.Signature | None, nums: tuple, names: tuple,
                        fun_name: str) -> None:
    """As in JAX: static arguments must be arguments `fun` can take."""
    _check_argnums(sig, nums, "static_argnums", fun_name)
    if sig is None:
        return
    kinds = {p.kind for p in sig.parameters.values()}
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        bad = [n for n in names if n not in sig.parameters]
        if bad:
            raise TracerValueError(f"jit({fun_name}): static_argnames {bad} are not "
                                   f"parameters of {fun_name}{sig}")


def _resolve_statics(sig: inspect.Signature | None, params: Sequence[str], nums: tuple,
                     names: tuple, fun_name: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Each static argument is known both by position and by name, as in JAX."""
    _check_static_names(sig, nums, names, fun_name)
    nums = tuple(i + len(params) if i < 0 and params else i for i in nums)
    nums += tuple(params.index(n) for n in names if n in params)
    names += tuple(params[i] for i in nums if 0 <= i < len(params))
    return tuple(sorted(set(nums))), tuple(dict.fromkeys(names))


def _resolve_donated(sig: inspect.Signature | None, params: Sequence[str], nums: tuple,
                     static_argnums: tuple[int, ...], fun_name: str) -> tuple[int, ...]:
    """Donated positions, negatives counted from the end; never a static argument (a
    static value is part of the cache key, there is no buffer to donate)."""
    _check_argnums(sig, nums, "donate_argnums", fun_name)
    if any(i < 0 for i in nums) and not params:
        raise TracerValueError(f"jit({fun_name}): donate_argnums={nums}: a negative position "
                               f"needs a signature with named positional arguments")
    resolved = tuple(sorted({i + len(params) if i < 0 else i for i in nums}))
    both = sorted(set(resolved) & set(static_argnums))
    if both:
        raise TracerValueError(f"jit({fun_name}): argument(s) {both} are both static "
                               f"(static_argnums/static_argnames) and donated "
                               f"(donate_argnums={nums}); static and donated arguments "
                               f"cannot overlap")
    return resolved


def _types(value: Any) -> Any:
    """The type of a static value, and of its elements for tuples and frozensets: part
    of the cache key because `==` mixes them up ((2,) == (2.0,) == (True,)), while the
    trace can differ (an int or a float multiplier gives an int or a float result)."""
    t = type(value)
    if isinstance(value, tuple):
        return (t,) + tuple(map(_types, value))
    if isinstance(value, frozenset):
        return (t, frozenset(map(_types, value)))
    return t


def _hashable(value: Any, jitted: Jitted, where: int | str) -> Any:
    try:
        hash(value)
    except TypeError:
        name = jitted._arg_name(where) if isinstance(where, int) else where
        raise TracerTypeError(
            f"jit({jitted.name}): static argument {name!r} has unhashable type "
            f"{type(value).__name__}; static arguments are part of the cache key, so pass a "
            f"hashable value (a tuple instead of a list) or make the argument dynamic") from None
    return value


def _non_array_output(fun_name: str, out: Any) -> TracerTypeError:
    """The error for the first output leaf that is not a value, named by its path."""
    path, leaf = next((p, x) for p, x in tree_flatten_with_path(out)[0] if not is_value(x))
    return TracerTypeError(
        f"jit({fun_name}): output{keystr(path)} is a {type(leaf).__name__} "
        f"({leaf!r:.40}), not an array; return arrays, scalars or pytrees of them")
