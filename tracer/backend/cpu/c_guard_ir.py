"""The LLVM IR of a C guard (`c_guard`): one cached jit signature served in machine code.

    text = guard_ir(plan, (guard, plain))   # two METH_O functions taking the call's
                                            # args tuple, falling back to the Python
                                            # guard and plain functions

`@serve` reads the tuple and each argument at their ABI offsets (`c_abi`): the count,
each argument's exact type (ndarray or EagerArray), rank, dims, dtype (one descr
object: built-in dtypes are singletons) and the C-contiguous and aligned flags. A
call that fits gets its buffers from `PyArray_NewFromDescr` (EagerArrays), runs the
host function's native code with the GIL released (as numba's own entry point of a
`nogil` host does) and counts the hit in the `__slots__` of the `CacheStats` and the
`Entry`, as the Python guard does. Anything else, and a host that returns an error
status, returns NULL with no exception set, and the caller (`@guard`, `@plain`) hands
the call to the Python guard, which serves it as before (a failed run again, raising
its error). The names in the IR say what each value is: it is printed by
`CGuard.ir` for whoever debugs one.
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

    title: str                              # a comment line: the function and signature
    inputs: tuple[tuple[tuple[int, ...], int], ...]  # (shape, descr address) per argument
    params: tuple[ArrayParam, ...]          # the host's array parameters, `dims` last
    output: int                             # the buffer parameter returned
    host: str                               # the host's native symbol
    types: tuple[int, int]                  # ndarray, EagerArray
    stats: tuple[int, int]                  # the CacheStats object, its `hits` slot offset
    entry: tuple[int, int]                  # the Entry object, its `used` slot offset
    fallbacks: tuple[int, int]              # the Python guard and plain functions


_DECLARATIONS = """\
declare void @Py_IncRef(ptr)
declare void @Py_DecRef(ptr)
declare i64 @PyLong_AsLongLong(ptr)
declare ptr @PyLong_FromLongLong(i64)
declare ptr @PyObject_CallOneArg(ptr, ptr)
declare void @PyErr_Clear()
declare ptr @PyEval_SaveThread()
declare void @PyEval_RestoreThread(ptr)
declare ptr @{new}(ptr, ptr, i32, ptr, ptr, ptr, i32, ptr)"""


def _read(name: str, kind: str, obj: str, offset: int) -> list[str]:
    """`%name` = the `kind` (i64, i32, ptr) at byte `offset` of `%obj`."""
    return [f"  %{name}.at = getelementptr i8, ptr %{obj}, i64 {offset}",
            f"  %{name} = load {kind}, ptr %{name}.at"]


def _set_slot(name: str, obj: str, offset: int, value: str) -> list[str]:
    """Store the reference `%value` into the __slots__ member at `offset` of `%obj`,
    releasing the one it held."""
    return [*_read(f"{name}.old", "ptr", obj, offset),
            f"  store ptr %{value}, ptr %{name}.old.at",
            f"  call void @Py_DecRef(ptr %{name}.old)"]


def _constant(name: str, address: int, what: str) -> str:
    return (f"@{name} = private unnamed_addr constant ptr inttoptr (i64 {address} to ptr)"
            f"  ; {what}")


def _globals(plan: Plan) -> list[str]:
    """The objects the code compares with or calls (kept alive by the builtins)."""
    lines = [_constant("ndarray_type", plan.types[0], "numpy.ndarray"),
             _constant("eager_type", plan.types[1], "tracer's EagerArray"),
             _constant("stats", plan.stats[0], "the jitted function's CacheStats"),
             _constant("entry", plan.entry[0], "the cache entry (dispatch.Entry)"),
             _constant("guard_fallback", plan.fallbacks[0], "the Python guard"),
             _constant("plain_fallback", plan.fallbacks[1], "the Python plain guard")]
    for k, (shape, descr) in enumerate(plan.inputs):
        lines.append(_constant(f"arg{k}_descr", descr, f"argument {k}'s dtype, shape {shape}"))
    what = {"const": "a constant's data (the host's dims last)", "buffer": "a buffer's dtype"}
    for j, p in enumerate(plan.params):
        kind, address = p.source
        if kind != "input":
            lines.append(_constant(f"p{j}_{kind}", address, what[kind]))
        if kind == "buffer" and p.shape:
            dims = ", ".join(f"i64 {n}" for n in p.shape)
            lines.append(f"@p{j}_shape = private unnamed_addr constant [{len(p.shape)} x i64] "
                         f"[{dims}]")
    return lines


def _fits(k: int, shape: tuple[int, ...], after: str) -> list[str]:
    """Blocks `argK`...: argument k is exactly what the signature says, or `miss`."""
    a = f"a{k}"
    lines = [f"arg{k}:", *_read(a, "ptr", "args", c_abi.TUPLE_ITEMS + 8 * k),
             *_read(f"{a}.type", "ptr", a, c_abi.OB_TYPE),
             f"  %{a}.is_ndarray = icmp eq ptr %{a}.type, %ndarray",
             f"  %{a}.is_eager = icmp eq ptr %{a}.type, %eager",
             f"  %{a}.is_array = or i1 %{a}.is_ndarray, %{a}.is_eager",
             f"  br i1 %{a}.is_array, label %arg{k}.layout, label %miss",
             f"arg{k}.layout:",
             *_read(f"{a}.nd", "i32", a, c_abi.ARRAY_ND),
             *_read(f"{a}.descr", "ptr", a, c_abi.ARRAY_DESCR),
             *_read(f"{a}.flags", "i32", a, c_abi.ARRAY_FLAGS),
             f"  %{a}.expected_descr = load ptr, ptr @arg{k}_descr",
             f"  %{a}.c_aligned = and i32 %{a}.flags, {c_abi.C_ALIGNED}",
             f"  %{a}.rank_ok = icmp eq i32 %{a}.nd, {len(shape)}",
             f"  %{a}.descr_ok = icmp eq ptr %{a}.descr, %{a}.expected_descr",
             f"  %{a}.layout_ok = icmp eq i32 %{a}.c_aligned, {c_abi.C_ALIGNED}",
             f"  %{a}.same_type = and i1 %{a}.rank_ok, %{a}.descr_ok",
             f"  %{a}.ok = and i1 %{a}.same_type, %{a}.layout_ok",
             f"  br i1 %{a}.ok, label %arg{k}.shape, label %miss",
             f"arg{k}.shape:", *_read(f"{a}.dims", "ptr", a, c_abi.ARRAY_DIMS)]
    fits = "true"
    for i, n in enumerate(shape):
        lines += [*_read(f"{a}.dim{i}", "i64", f"{a}.dims", 8 * i),
                  f"  %{a}.dim{i}_ok = icmp eq i64 %{a}.dim{i}, {n}",
                  f"  %{a}.dims{i}_ok = and i1 {fits}, %{a}.dim{i}_ok"]
        fits = f"%{a}.dims{i}_ok"
    return lines + [f"  br i1 {fits}, label %{after}, label %miss"]


def _serve_checks(plan: Plan) -> list[str]:
    """The start of `@serve`: the argument count and each argument's checks."""
    n = len(plan.inputs)
    lines = ["define private ptr @serve(ptr %args) {",
             "start:",
             "  %result = alloca ptr      ; (the host returns None: nothing is stored)",
             "  %exception = alloca ptr   ; (numba's exception info, on an error status)",
             "  %ndarray = load ptr, ptr @ndarray_type",
             "  %eager = load ptr, ptr @eager_type",
             *_read("count", "i64", "args", c_abi.TUPLE_SIZE),
             f"  %count_ok = icmp eq i64 %count, {n}",
             f"  br i1 %count_ok, label %{'arg0' if n else 'hit'}, label %miss"]
    for k, (shape, _) in enumerate(plan.inputs):
        lines += _fits(k, shape, f"arg{k + 1}" if k + 1 < n else "hit")
    return lines


def _buffers(plan: Plan) -> list[int]:
    return [j for j, p in enumerate(plan.params) if p.source[0] == "buffer"]


def _allocations(plan: Plan) -> list[str]:
    """`hit:` every buffer (an EagerArray); one that fails sends the call to the
    Python guard."""
    lines, made = ["hit:"], "true"
    for j in _buffers(plan):
        p = plan.params[j]
        shape = f"@p{j}_shape" if p.shape else "null"
        lines += [f"  %p{j}.descr = load ptr, ptr @p{j}_buffer",
                  f"  call void @Py_IncRef(ptr %p{j}.descr)  ; (PyArray_NewFromDescr steals it)",
                  f"  %p{j} = call ptr @{NEW_FROM_DESCR}(ptr %eager, ptr %p{j}.descr, "
                  f"i32 {len(p.shape)}, ptr {shape}, ptr null, ptr null, i32 0, ptr null)",
                  f"  %p{j}.made = icmp ne ptr %p{j}, null",
                  f"  %made.p{j} = and i1 {made}, %p{j}.made"]
        made = f"%made.p{j}"
    return lines + [f"  br i1 {made}, label %run, label %failed"]


def _releases(values: list[str]) -> list[str]:
    """Py_DecRef (NULL-safe) of each of `values`."""
    return [f"  call void @Py_DecRef(ptr {v})" for v in values]


def _host_arguments(plan: Plan) -> tuple[list[str], list[str]]:
    """(lines that read the data pointers and input strides, the host's arguments
    after the status pointers: meminfo and parent null, as `numba.carray` makes)."""
    lines, args = [], []
    for j, p in enumerate(plan.params):
        kind, source = p.source
        strides = [f"i64 {s}" for s in p.strides]
        if kind == "input":  # (numba reads an input's own strides)
            a = f"a{source}"
            lines += [*_read(f"p{j}.data", "ptr", a, c_abi.ARRAY_DATA),
                      *_read(f"p{j}.strides", "ptr", a, c_abi.ARRAY_STRIDES)]
            for i in range(len(p.shape)):
                lines += _read(f"p{j}.stride{i}", "i64", f"p{j}.strides", 8 * i)
            strides = [f"i64 %p{j}.stride{i}" for i in range(len(p.shape))]
        elif kind == "buffer":
            lines += _read(f"p{j}.data", "ptr", f"p{j}", c_abi.ARRAY_DATA)
        else:
            lines.append(f"  %p{j}.data = load ptr, ptr @p{j}_const")
        size = 1
        for n in p.shape:
            size *= n
        args += ["ptr null", "ptr null", f"i64 {size}", f"i64 {p.itemsize}",
                 f"ptr %p{j}.data", *(f"i64 {n}" for n in p.shape), *strides]
    return lines, args


def _run(plan: Plan) -> list[str]:
    """`run:` the host call without the GIL; then, with it again, the hit counted
    (from the count as it is now: other threads count too) and the output returned.
    An error status, or no memory for the count, releases everything instead."""
    lines, args = _host_arguments(plan)
    buffers = [f"%p{j}" for j in _buffers(plan)]
    out = f"%p{plan.output}"
    return ["run:", *lines,
            "  %thread = call ptr @PyEval_SaveThread()",
            f"  %status = call i32 @{plan.host}(ptr %result, ptr %exception, "
            f"{', '.join(args)})",
            "  call void @PyEval_RestoreThread(ptr %thread)",
            f"  %returned = icmp eq i32 %status, {RETCODE_OK}",
            f"  %returned_none = icmp eq i32 %status, {RETCODE_NONE}",
            "  %ran = or i1 %returned, %returned_none",
            "  br i1 %ran, label %counting, label %failed",
            "counting:",
            "  %stats = load ptr, ptr @stats",
            *_read("hits_before", "ptr", "stats", plan.stats[1]),
            "  %hits_count = call i64 @PyLong_AsLongLong(ptr %hits_before)",
            "  %hits_plus_one = add i64 %hits_count, 1",
            "  %hits = call ptr @PyLong_FromLongLong(i64 %hits_plus_one)",
            "  %counted = icmp ne ptr %hits, null",
            "  br i1 %counted, label %served, label %failed",
            "served:  ; stats.hits = entry.used = stats.hits + 1",
            *_set_slot("stats.hits", "stats", plan.stats[1], "hits"),
            "  call void @Py_IncRef(ptr %hits)",
            "  %entry = load ptr, ptr @entry",
            *_set_slot("entry.used", "entry", plan.entry[1], "hits"),
            *_releases([b for b in buffers if b != out]),
            f"  ret ptr {out}",
            "failed:  ; (the Python guard serves the call: runs it again, raises its error)",
            *_releases(buffers), "  call void @PyErr_Clear()", "  ret ptr null",
            "miss:", "  ret ptr null", "}"]


def _entry_point(name: str, fallback: str) -> str:
    """A METH_O function: `@serve`'s result, else the Python function's."""
    return "\n".join([
        f"define ptr @{name}(ptr %self, ptr %args) {{",
        "  %served = call ptr @serve(ptr %args)",
        "  %hit = icmp ne ptr %served, null",
        "  br i1 %hit, label %done, label %python",
        "done:", "  ret ptr %served",
        "python:",
        f"  %fallback = load ptr, ptr @{fallback}",
        "  %out = tail call ptr @PyObject_CallOneArg(ptr %fallback, ptr %args)",
        "  ret ptr %out", "}"])


NEW_FROM_DESCR = "tracer_PyArray_NewFromDescr"


def guard_ir(plan: Plan, names: tuple[str, str]) -> str:
    """The module text: `@names[0]` (falls back to the Python guard) and `@names[1]`
    (to the Python plain guard), both METH_O."""
    host = plan.host
    params = ", ".join(["ptr", "ptr"] + [t for p in plan.params
                                         for t in ["ptr", "ptr", "i64", "i64", "ptr",
                                                   *["i64"] * (2 * len(p.shape))]])
    parts = [f"; {plan.title}", *_globals(plan), f"declare i32 @{host}({params})",
             _DECLARATIONS.format(new=NEW_FROM_DESCR),
             "\n".join(_serve_checks(plan) + _allocations(plan) + _run(plan)),
             _entry_point(names[0], "guard_fallback"), _entry_point(names[1], "plain_fallback")]
    return "\n\n".join(parts) + "\n"
