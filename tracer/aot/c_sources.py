"""The C text of a tfcompile-style library: NAME.h, NAME.c, NAME_test.c, NAME_benchmark.c.

NAME.c owns the buffers (32-byte aligned, row-major) and calls the kernel's entry
(`c_kernel.py`); `NAME_set_argK_data` points argument K at the caller's buffer.
NAME_test.c fills argument K element i with `fill_value(K, i)` (the Python side
computes the same numbers), runs once and prints every result; NAME_benchmark.c
times NAME_run.
"""

from __future__ import annotations

import numpy as np

from ..backend.cpu.generate import Module
from ..backend.numba.codegen import Param
from ..core import ShapedArray
from ..errors import UnsupportedOpError

C_TYPES = {"bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
           "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
           "uint64": "uint64_t", "float32": "float", "float64": "double",
           "complex64": "float _Complex", "complex128": "double _Complex"}


# The two numba runtime helpers the compiled kernel calls (`c_kernel.RUNTIME_SYMBOLS`),
# under this library's prefix and hidden, so they never meet numba's own in one process.
RUNTIME = r"""
#define HIDDEN __attribute__((visibility("hidden")))

/* Strides of a reshape that needs no copy (NumPy's rule, as numba's helper library has
   it): 1 and the new strides when the old axes can be regrouped, else 0. */
HIDDEN int NAME_numba_attempt_nocopy_reshape(int64_t nd, const int64_t *dims,
    const int64_t *strides, int64_t newnd, const int64_t *newdims, int64_t *newstrides,
    int64_t itemsize, int is_f_order) {
  int64_t olddims[64], oldstrides[64], np = 1, op = 1;
  int oldnd = 0, oi = 0, oj = 1, ni = 0, nj = 1;
  for (int64_t k = 0; k < nd && oldnd < 64; k++)
    if (dims[k] != 1) { olddims[oldnd] = dims[k]; oldstrides[oldnd++] = strides[k]; }
  for (int64_t k = 0; k < newnd; k++) np *= newdims[k];
  for (int k = 0; k < oldnd; k++) op *= olddims[k];
  if (np != op) return 0;
  if (np == 0) { for (int64_t k = 0; k < newnd; k++) newstrides[k] = itemsize; return 1; }
  while (ni < newnd && oi < oldnd) {
    np = newdims[ni]; op = olddims[oi];
    while (np != op) { if (np < op) np *= newdims[nj++]; else op *= olddims[oj++]; }
    for (int k = oi; k < oj - 1; k++) {
      if (is_f_order ? oldstrides[k + 1] != olddims[k] * oldstrides[k]
                     : oldstrides[k] != olddims[k + 1] * oldstrides[k + 1]) return 0;
    }
    if (is_f_order) {
      newstrides[ni] = oldstrides[oi];
      for (int k = ni + 1; k < nj; k++) newstrides[k] = newstrides[k - 1] * newdims[k - 1];
    } else {
      newstrides[nj - 1] = oldstrides[oj - 1];
      for (int k = nj - 1; k > ni; k--) newstrides[k - 1] = newstrides[k] * newdims[k];
    }
    ni = nj++; oi = oj++;
  }
  int64_t last = ni >= 1 ? newstrides[ni - 1] : itemsize;
  if (is_f_order && ni >= 1) last *= newdims[ni - 1];
  for (int64_t k = ni; k < newnd; k++) newstrides[k] = last;
  return 1;
}

/* numba's reference-counted memory (the MemInfo record of numba/core/runtime/nrt.cpp,
   whose count and data fields compiled code reads in place): arrays the kernel creates
   inside loop bodies. A count that reaches zero calls the destructor, which frees both. */
typedef struct {
  size_t refct;
  void (*dtor)(void *data, size_t size, void *info);
  void *dtor_info;
  void *data;
  size_t size;
  void *external_allocator;
} NAME_meminfo;

HIDDEN void *NAME_NRT_MemInfo_alloc_aligned(size_t size, unsigned align) {
  NAME_meminfo *mi = malloc(sizeof *mi);
  void *data = NULL;
  if (!mi || posix_memalign(&data, align < sizeof(void *) ? sizeof(void *) : align,
                            size ? size : 1) != 0) {
    free(mi);
    return NULL;
  }
  *mi = (NAME_meminfo){1, NULL, NULL, data, size, NULL};
  return mi;
}

HIDDEN void NAME_NRT_MemInfo_call_dtor(void *meminfo) {
  NAME_meminfo *mi = meminfo;
  if (mi->dtor) mi->dtor(mi->data, mi->size, mi->dtor_info);
  free(mi->data);
  free(mi);
}
"""


def c_type(aval: ShapedArray, name: str) -> str:
    if aval.dtype.name not in C_TYPES:
        raise UnsupportedOpError(f"aot {name}: the C library has no element type for {aval}")
    return C_TYPES[aval.dtype.name]


def fill_value(k: int, i: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """What NAME_test.c stores in element i of argument k (the same formula as `_FILL`)."""
    step = (i * 7 + k * 3) % 13
    if dtype == np.bool_:
        return (step % 2).astype(bool)
    if dtype.kind in "iu":
        return (step if dtype.kind == "u" else step - 6).astype(dtype)
    return ((step - 6) * 0.25).astype(dtype)


def header(name: str, fun: str, ins: list[ShapedArray], outs: list[ShapedArray]) -> str:
    guard = f"{name.upper()}_H"
    sig = ", ".join(f"arg{k} {a}" for k, a in enumerate(ins))
    res = ", ".join(f"result{k} {a}" for k, a in enumerate(outs))
    lines = [f"/* {name}: `{fun}` compiled ahead of time by tracer.aot (tfcompile's tf_library).",
             f"   Arguments: {sig}; results: {res}.",
             "   Buffers are row-major and 32-byte aligned. Build a program with",
             f"   cc main.c -L. -l{name} -Wl,-rpath,'$ORIGIN'  (no Python at run time). */",
             f"#ifndef {guard}", f"#define {guard}", "", "#include <stdbool.h>",
             "#include <stdint.h>", "", "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             f"typedef struct {name} {name};", "",
             (f"enum {{ {name.upper()}_NUM_ARGS = {len(ins)}, "
             f"{name.upper()}_NUM_RESULTS = {len(outs)} }};")]
    for kind, avals in (("arg", ins), ("result", outs)):
        for k, a in enumerate(avals):
            lines.append(f"#define {name.upper()}_{kind.upper()}{k}_SIZE {a.size}  /* {a} */")
    lines += ["", f"{name} *{name}_new(void);  /* NULL when out of memory */",
              f"void {name}_free({name} *self);",
              f"int {name}_run({name} *self);  /* 0: success */"]
    for k, a in enumerate(ins):
        t = c_type(a, name)
        lines.append(f"{t} *{name}_arg{k}_data({name} *self);")
        lines.append(f"void {name}_set_arg{k}_data({name} *self, {t} *data);")
    for k, a in enumerate(outs):
        lines.append(f"{c_type(a, name)} *{name}_result{k}_data({name} *self);")
    lines += ["", "#ifdef __cplusplus", "}", "#endif", "", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)


def _bytes(a: ShapedArray) -> int:
    return a.size * a.dtype.itemsize


def _c_literal(value: np.ndarray) -> str:
    flat = np.ascontiguousarray(value).reshape(-1)
    if flat.dtype.kind == "c":
        return ", ".join(f"{x.real!r} + {x.imag!r} * 1.0i" for x in flat.tolist())
    if flat.dtype == np.bool_:
        return ", ".join("1" if x else "0" for x in flat.tolist())
    return ", ".join(repr(x) for x in flat.tolist())


def library(name: str, symbol: str, module: Module, pointers: list[Param], ins: list[ShapedArray],
            outs: list[ShapedArray]) -> str:
    """NAME.c: the struct, allocation, NAME_run, and the accessors."""
    buffers = [p for p in pointers if p.kind == "buffer"]
    kernel_args = [f"self->args[{p.index}]" if p.kind == "input"
                   else f"self->buffers[{buffers.index(p)}]" for p in pointers]
    lines = ["#include <stdlib.h>", "#include <string.h>", "", f'#include "{name}.h"',
             RUNTIME.replace("NAME_", f"{name}_"),
             "/* numba's calling convention: a return slot, an exception slot, the buffers */",
             f"extern int {symbol}(void *ret, void **excinfo"
             + "".join(f", void *p{i}" for i in range(len(pointers))) + ");", ""]
    results, copies = _result_sources(module, buffers, outs, lines)
    n_args, n_buffers, n_results = max(len(ins), 1), max(len(buffers), 1), max(len(outs), 1)
    lines += [f"struct {name} {{", f"  void *args[{n_args}];   /* what the kernel reads */",
              f"  void *own_args[{n_args}];", f"  void *buffers[{n_buffers}];",
              f"  void *results[{n_results}];  /* results copying an argument or a constant */",
              "};", "", "static void *alloc32(size_t bytes) {",
              "  return aligned_alloc(32, bytes ? (bytes + 31) / 32 * 32 : 32);", "}", "",
              f"void {name}_free({name} *self) {{", "  if (!self) return;",
              f"  for (int k = 0; k < {n_args}; k++) free(self->own_args[k]);",
              f"  for (int k = 0; k < {n_buffers}; k++) free(self->buffers[k]);",
              f"  for (int k = 0; k < {n_results}; k++) free(self->results[k]);",
              "  free(self);", "}", "", f"{name} *{name}_new(void) {{",
              f"  {name} *self = calloc(1, sizeof *self);", "  if (!self) return NULL;",
              "  int ok = 1;"]
    for k, a in enumerate(ins):
        lines.append(f"  ok &= (self->args[{k}] = self->own_args[{k}] = "
                     f"alloc32({_bytes(a)})) != NULL;")
    for j, p in enumerate(buffers):
        lines.append(f"  ok &= (self->buffers[{j}] = alloc32({_bytes(p.value)})) != NULL;")
    for k, source in results.items():
        lines.append(f"  ok &= (self->results[{k}] = alloc32({_bytes(outs[k])})) != NULL;")
        if source.startswith("literal"):
            lines.append(f"  if (ok) memcpy(self->results[{k}], {source}, {_bytes(outs[k])});")
    lines += [f"  if (!ok) {{ {name}_free(self); return NULL; }}", "  return self;", "}", "",
              f"int {name}_run({name} *self) {{", "  void *ret = NULL, *excinfo = NULL;",
              f"  int status = {symbol}(&ret, &excinfo{''.join(', ' + a for a in kernel_args)});",
              "  if (status != 0) return status;"]
    lines += [f"  memcpy(self->results[{k}], self->args[{i}], {_bytes(outs[k])});"
              for k, i in copies]
    lines += ["  return 0;", "}", ""]
    lines += _accessors(name, ins, outs, buffers, module, results)
    return "\n".join(lines) + "\n"


def _result_sources(module: Module, buffers: list[Param], outs: list[ShapedArray],
                    lines: list[str]) -> tuple[dict[int, str], list[tuple[int, int]]]:
    """Results that are not a kernel buffer: a copied argument or a literal (declared here)."""
    results: dict[int, str] = {}
    copies = []
    for k, (kind, payload) in enumerate(module.outputs):
        if kind == "input":
            results[k] = f"arg{payload}"
            copies.append((k, payload))
        elif kind == "literal":
            t = c_type(outs[k], "literal")
            lines.append(f"static const {t} literal{k}[] = {{{_c_literal(payload)}}};")
            results[k] = f"literal{k}"
    return results, copies


def _accessors(name: str, ins: list[ShapedArray], outs: list[ShapedArray], buffers: list[Param],
               module: Module, results: dict[int, str]) -> list[str]:
    lines = []
    for k, a in enumerate(ins):
        t = c_type(a, name)
        lines += [f"{t} *{name}_arg{k}_data({name} *self) {{ return ({t} *)self->args[{k}]; }}",
                  (f"void {name}_set_arg{k}_data({name} *self, {t} *data) "
                  f"{{ self->args[{k}] = data; }}")]
    for k, a in enumerate(outs):
        t = c_type(a, name)
        if k in results:
            where = f"self->results[{k}]"
        else:
            param = module.params[module.outputs[k][1]]
            where = f"self->buffers[{buffers.index(param)}]"
        lines.append(f"{t} *{name}_result{k}_data({name} *self) {{ return ({t} *){where}; }}")
    return lines
