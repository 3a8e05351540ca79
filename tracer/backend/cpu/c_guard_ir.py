"""The LLVM IR of C guards (`c_guard`): cached jit signatures served in machine code.

    structure(...)        # what the code depends on: ranks and parameter kinds
    slots(plan)           # [(name, value)]: the entry's words (addresses, dims, offsets)
    guard_ir(plan, names) # the code of every plan of that structure: two METH_O
                          # functions taking the call's args tuple

One compiled structure serves every entry with the same ranks and parameter kinds
(`a * b + c` on float32[4] and on float64[1000] alike): whatever differs between
entries (shapes, dtypes, the host function, the objects counted in) is read from
the entry's words, an int64 array the builtin holds as `self[0]`, at offsets named
in the IR (`%arg0.dim0` is the word `arg0.dim0`).

`@serve` reads the args tuple and each argument at their ABI offsets (`c_abi`): the
count, each argument's exact type (ndarray or EagerArray), rank, dims, dtype (one
descr object: built-in dtypes are singletons) and the C-contiguous and aligned
flags. A call that fits gets its buffers from `PyArray_NewFromDescr` (EagerArrays),
runs the host function's native code with the GIL released (as numba's entry point
of a `nogil` host does), and with the GIL again counts the hit in the `__slots__` of
the `CacheStats` and the `Entry`, as the Python guard does. Anything else, and a
host that returns an error status, returns NULL with no exception set, and the
caller (`@guard_sN`, `@plain_sN`) hands the call to the Python guard, which serves it
as before (a failed run again, raising its error).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import c_abi

# numba's calling convention: the host returns a status (0, or -2 for None: it ran;
# anything else: it raised) and takes pointers to its result and exception info, then
# each array flattened: meminfo, parent, nitems, itemsize, data, shape[ndim], strides[ndim].
RETCODE_OK, RETCODE_NONE = 0, -2


@dataclass(frozen=True)
class ArrayParam:
    """An array the host function takes: `source` is ("input", k), ("const", data
    address) or ("buffer", descr address); `strides` are those of a C-contiguous array
    (an input passes its own)."""

    source: tuple[str, int]
    shape: tuple[int, ...]
    itemsize: int

    @property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], self.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))


@dataclass(frozen=True)
class Plan:
    """What a C guard checks and calls (addresses of objects the guard keeps alive)."""

    inputs: tuple[tuple[tuple[int, ...], int], ...]  # (shape, descr address) per argument
    params: tuple[ArrayParam, ...]          # the host's array parameters, `dims` last
    output: int                             # the buffer parameter returned
    host: int                               # the host's native code
    types: tuple[int, int]                  # ndarray, EagerArray
    stats: tuple[int, int]                  # the CacheStats object, its `hits` slot offset
    entry: tuple[int, int]                  # the Entry object, its `used` slot offset
    fallbacks: tuple[int, int]              # the Python guard and plain functions
    new_from_descr: int                     # NumPy's PyArray_NewFromDescr


def structure(inputs: tuple, params: tuple[ArrayParam, ...], output: int) -> tuple:
    """What `guard_ir` depends on (a `Plan`'s `inputs`, `params` and `output`): the
    arguments' ranks, each parameter's kind, rank (and argument), the output."""
    kinds = tuple((p.source[0], p.source[1] if p.source[0] == "input" else -1, len(p.shape))
                  for p in params)
    return tuple(len(shape) for shape, _ in inputs), kinds, output


def slots(plan: Plan) -> list[tuple[str, int]]:
    """The entry's words, in an order that only the plan's `structure` decides."""
    words = [("ndarray_type", plan.types[0]), ("eager_type", plan.types[1]),
             ("stats", plan.stats[0]), ("stats.hits_offset", plan.stats[1]),
             ("entry", plan.entry[0]), ("entry.used_offset", plan.entry[1]),
             ("guard_fallback", plan.fallbacks[0]), ("plain_fallback", plan.fallbacks[1]),
             ("host", plan.host), ("new_from_descr", plan.new_from_descr)]
    for k, (shape, descr) in enumerate(plan.inputs):
        words += [(f"arg{k}.descr", descr), *((f"arg{k}.dim{i}", n) for i, n in enumerate(shape))]
    for j, p in enumerate(plan.params):
        nitems = 1
        for n in p.shape:
            nitems *= n
        words += [(f"p{j}.nitems", nitems), (f"p{j}.itemsize", p.itemsize)]
        if p.source[0] != "input":
            words.append((f"p{j}.{p.source[0]}", p.source[1]))  # (p.const / p.buffer)
        words += [(f"p{j}.dim{i}", n) for i, n in enumerate(p.shape)]
        words += [(f"p{j}.stride{i}", s) for i, s in enumerate(p.strides)]
    return words


_DECLARATIONS = """\
declare void @Py_IncRef(ptr)
declare void @Py_DecRef(ptr)
declare i64 @PyLong_AsLongLong(ptr)
declare ptr @PyLong_FromLongLong(i64)
declare ptr @PyObject_CallOneArg(ptr, ptr)
declare void @PyErr_Clear()
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)"""


def _read(name: str, kind: str, obj: str, offset: int) -> list[str]:
    """`%name` = the `kind` (i64, i32, ptr) at byte `offset` of `%obj`."""
    return [f"  %{name}.at = getelementptr i8, ptr %{obj}, i64 {offset}",
            f"  %{name} = load {kind}, ptr %{name}.at"]


class _Words:
    """Reads of the entry's words by name (`slots`' order)."""

    def __init__(self, plan: Plan):
        self.index = {name: i for i, (name, _) in enumerate(slots(plan))}

    def read(self, name: str, kind: str = "i64") -> list[str]:
        """`%name` = word `name` (an i64, or a ptr)."""
        return _read(name, kind, "words", 8 * self.index[name])

    def address(self, value: str, name: str) -> str:
        """`%value` = the address of word `name` (a shape in the words)."""
        return f"  %{value} = getelementptr i8, ptr %words, i64 {8 * self.index[name]}"


def _set_slot(name: str, obj: str, offset: str, value: str) -> list[str]:
    """Store the reference `%value` into the __slots__ member at `%offset` of `%obj`,
    releasing the one it held."""
    return [f"  %{name}.old.at = getelementptr i8, ptr %{obj}, i64 %{offset}",
            f"  %{name}.old = load ptr, ptr %{name}.old.at",
            f"  store ptr %{value}, ptr %{name}.old.at",
            f"  call void @Py_DecRef(ptr %{name}.old)"]


def _fits(w: _Words, k: int, rank: int, after: str) -> list[str]:
    """Blocks `argK`...: argument k is exactly what the entry's words say, or `miss`."""
    a = f"a{k}"
    lines = [f"arg{k}:", *_read(a, "ptr", "args", c_abi.TUPLE_ITEMS + 8 * k),
             *_read(f"{a}.type", "ptr", a, c_abi.OB_TYPE),
             f"  %{a}.is_ndarray = icmp eq ptr %{a}.type, %ndarray_type",
             f"  %{a}.is_eager = icmp eq ptr %{a}.type, %eager_type",
             f"  %{a}.is_array = or i1 %{a}.is_ndarray, %{a}.is_eager",
             f"  br i1 %{a}.is_array, label %arg{k}.layout, label %miss",
             f"arg{k}.layout:",
             *_read(f"{a}.nd", "i32", a, c_abi.ARRAY_ND),
             *_read(f"{a}.descr", "ptr", a, c_abi.ARRAY_DESCR),
             *_read(f"{a}.flags", "i32", a, c_abi.ARRAY_FLAGS), *w.read(f"arg{k}.descr", "ptr"),
             f"  %{a}.c_aligned = and i32 %{a}.flags, {c_abi.C_ALIGNED}",
             f"  %{a}.rank_ok = icmp eq i32 %{a}.nd, {rank}",
             f"  %{a}.descr_ok = icmp eq ptr %{a}.descr, %arg{k}.descr",
             f"  %{a}.layout_ok = icmp eq i32 %{a}.c_aligned, {c_abi.C_ALIGNED}",
             f"  %{a}.same_type = and i1 %{a}.rank_ok, %{a}.descr_ok",
             f"  %{a}.ok = and i1 %{a}.same_type, %{a}.layout_ok",
             f"  br i1 %{a}.ok, label %arg{k}.shape, label %miss",
             f"arg{k}.shape:", *_read(f"{a}.dims", "ptr", a, c_abi.ARRAY_DIMS)]
    fits = "true"
    for i in range(rank):
        lines += [*_read(f"{a}.dim{i}", "i64", f"{a}.dims", 8 * i), *w.read(f"arg{k}.dim{i}"),
                  f"  %{a}.dim{i}_ok = icmp eq i64 %{a}.dim{i}, %arg{k}.dim{i}",
                  f"  %{a}.dims{i}_ok = and i1 {fits}, %{a}.dim{i}_ok"]
        fits = f"%{a}.dims{i}_ok"
    return lines + [f"  br i1 {fits}, label %{after}, label %miss"]


def _serve_checks(w: _Words, ranks: tuple[int, ...]) -> list[str]:
    """The start of `@serve`: the argument count and each argument's checks."""
    n = len(ranks)
    lines = ["define private ptr @serve(ptr %words, ptr %args) {",
             "start:",
             "  %result = alloca ptr      ; (the host returns None: nothing is stored)",
             "  %exception = alloca ptr   ; (numba's exception info, on an error status)",
             *w.read("ndarray_type", "ptr"), *w.read("eager_type", "ptr"),
             *_read("count", "i64", "args", c_abi.TUPLE_SIZE),
             f"  %count_ok = icmp eq i64 %count, {n}",
             f"  br i1 %count_ok, label %{'arg0' if n else 'hit'}, label %miss"]
    for k, rank in enumerate(ranks):
        lines += _fits(w, k, rank, f"arg{k + 1}" if k + 1 < n else "hit")
    return lines


def _buffers(plan: Plan) -> list[int]:
    return [j for j, p in enumerate(plan.params) if p.source[0] == "buffer"]


def _allocations(w: _Words, plan: Plan) -> list[str]:
    """`hit:` every buffer (an EagerArray); one that fails sends the call to the
    Python guard."""
    lines, made = ["hit:", *w.read("new_from_descr", "ptr")], "true"
    for j in _buffers(plan):
        rank = len(plan.params[j].shape)
        shape = f"%p{j}.shape" if rank else "null"
        lines += [*w.read(f"p{j}.buffer", "ptr"), w.address(f"p{j}.shape", f"p{j}.dim0")
                  if rank else "",
                  f"  call void @Py_IncRef(ptr %p{j}.buffer)  ; (a dtype: NewFromDescr steals it)",
                  f"  %p{j} = call ptr %new_from_descr(ptr %eager_type, ptr %p{j}.buffer, "
                  f"i32 {rank}, ptr {shape}, ptr null, ptr null, i32 0, ptr null)",
                  f"  %p{j}.made = icmp ne ptr %p{j}, null",
                  f"  %made.p{j} = and i1 {made}, %p{j}.made"]
        made = f"%made.p{j}"
    return [line for line in lines if line] + [f"  br i1 {made}, label %run, label %failed"]


def _releases(values: list[str]) -> list[str]:
    """Py_DecRef (NULL-safe) of each of `values`."""
    return [f"  call void @Py_DecRef(ptr {v})" for v in values]


def _host_arguments(w: _Words, plan: Plan) -> tuple[list[str], list[str]]:
    """(lines that read the words and the inputs' data and strides, the host's
    arguments after the status pointers: meminfo and parent null, as `numba.carray`
    makes)."""
    lines, args = [], []
    for j, p in enumerate(plan.params):
        kind, source = p.source
        rank = len(p.shape)
        lines += [*w.read(f"p{j}.nitems"), *w.read(f"p{j}.itemsize")]
        lines += [line for i in range(rank) for line in w.read(f"p{j}.dim{i}")]
        strides = [f"i64 %p{j}.stride{i}" for i in range(rank)]
        data = f"%p{j}.const" if kind == "const" else f"%p{j}.data"
        if kind == "input":  # (numba reads an input's own strides)
            a = f"a{source}"
            lines += [*_read(f"p{j}.data", "ptr", a, c_abi.ARRAY_DATA),
                      *_read(f"p{j}.strides", "ptr", a, c_abi.ARRAY_STRIDES)]
            for i in range(rank):
                lines += _read(f"p{j}.stride{i}", "i64", f"p{j}.strides", 8 * i)
        else:
            lines += [line for i in range(rank) for line in w.read(f"p{j}.stride{i}")]
            lines += (_read(f"p{j}.data", "ptr", f"p{j}", c_abi.ARRAY_DATA) if kind == "buffer"
                      else w.read(f"p{j}.const", "ptr"))
        args += ["ptr null", "ptr null", f"i64 %p{j}.nitems", f"i64 %p{j}.itemsize",
                 f"ptr {data}", *(f"i64 %p{j}.dim{i}" for i in range(rank)), *strides]
    return lines, args


def _run(w: _Words, plan: Plan) -> list[str]:
    """`run:` the host call without the GIL; then, with it again, the hit counted
    (from the count as it is now: other threads count too) and the output returned.
    An error status, or no memory for the count, releases everything instead."""
    lines, args = _host_arguments(w, plan)
    buffers = [f"%p{j}" for j in _buffers(plan)]
    return ["run:", *lines, *w.read("host", "ptr"),
            "  %thread = call ptr @PyEval_SaveThread()",
            f"  %status = call i32 %host(ptr %result, ptr %exception, {', '.join(args)})",
            "  call void @PyEval_RestoreThread(ptr %thread)",
            f"  %returned = icmp eq i32 %status, {RETCODE_OK}",
            f"  %returned_none = icmp eq i32 %status, {RETCODE_NONE}",
            "  %ran = or i1 %returned, %returned_none",
            "  br i1 %ran, label %counting, label %failed",
            "counting:",
            *w.read("stats", "ptr"), *w.read("stats.hits_offset"),
            "  %hits_before.at = getelementptr i8, ptr %stats, i64 %stats.hits_offset",
            "  %hits_before = load ptr, ptr %hits_before.at",
            "  %hits_count = call i64 @PyLong_AsLongLong(ptr %hits_before)",
            "  %hits_plus_one = add i64 %hits_count, 1",
            "  %hits = call ptr @PyLong_FromLongLong(i64 %hits_plus_one)",
            "  %counted = icmp ne ptr %hits, null",
            "  br i1 %counted, label %served, label %failed",
            "served:  ; stats.hits = entry.used = stats.hits + 1",
            *_set_slot("stats.hits", "stats", "stats.hits_offset", "hits"),
            "  call void @Py_IncRef(ptr %hits)",
            *w.read("entry", "ptr"), *w.read("entry.used_offset"),
            *_set_slot("entry.used", "entry", "entry.used_offset", "hits"),
            *_releases([b for b in buffers if b != f"%p{plan.output}"]),
            f"  ret ptr %p{plan.output}",
            "failed:  ; (the Python guard serves the call: runs it again, raises its error)",
            *_releases(buffers), "  call void @PyErr_Clear()", "  ret ptr null",
            "miss:", "  ret ptr null", "}"]


def _entry_point(w: _Words, name: str, fallback: str) -> str:
    """A METH_O function of `self` = (words, ...): `@serve`'s result, else the
    Python function's (word `fallback`)."""
    return "\n".join([
        f"define ptr @{name}(ptr %self, ptr %args) {{",
        *_read("block", "ptr", "self", c_abi.TUPLE_ITEMS),
        *_read("words", "ptr", "block", c_abi.ARRAY_DATA),
        "  %served = call ptr @serve(ptr %words, ptr %args)",
        "  %hit = icmp ne ptr %served, null",
        "  br i1 %hit, label %done, label %python",
        "done:", "  ret ptr %served",
        "python:", *w.read(fallback, "ptr"),
        f"  %out = tail call ptr @PyObject_CallOneArg(ptr %{fallback}, ptr %args)",
        "  ret ptr %out", "}"])


def guard_ir(plan: Plan, names: tuple[str, str]) -> str:
    """The module text: `@names[0]` (falls back to the Python guard) and `@names[1]`
    (to the Python plain guard), both METH_O, for every plan of `structure(plan)`."""
    w = _Words(plan)
    ranks, params, output = structure(plan.inputs, plan.params, plan.output)
    title = (f"; C guard: {len(ranks)} arrays of ranks {ranks}; host parameters "
             f"(kind, argument, rank) {params}; returns parameter {output}")
    body = _serve_checks(w, ranks) + _allocations(w, plan) + _run(w, plan)
    return "\n\n".join([title, _DECLARATIONS, "\n".join(body),
                        _entry_point(w, names[0], "guard_fallback"),
                        _entry_point(w, names[1], "plain_fallback")]) + "\n"
