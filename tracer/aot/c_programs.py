"""NAME_test.c and NAME_benchmark.c: tfcompile's `<name>_test` and `<name>_benchmark`.

Both fill argument K element i with the pattern of `c_sources.fill_value`. The
test runs once and prints each result as a header line (`result0 f32[2,2]`) and
a line of values; the benchmark times `NAME_run` over many calls.
"""

from __future__ import annotations

from ..core import ShapedArray
from .c_sources import c_type

_PRINT = {"f": ('printf(" %.9g", (double)v);', 'printf(" %.17g", (double)v);'),
          "c": ('printf(" %.9g %.9g", (double)__real__ v, (double)__imag__ v);',
                'printf(" %.17g %.17g", (double)__real__ v, (double)__imag__ v);'),
          "i": ('printf(" %lld", (long long)v);',) * 2,
          "u": ('printf(" %llu", (unsigned long long)v);',) * 2,
          "b": ('printf(" %d", (int)v);',) * 2}


def _fill_expr(aval: ShapedArray) -> str:
    kind = aval.dtype.kind
    if kind == "b":
        return "(step % 2) != 0"
    if kind == "u":
        return "step"
    if kind == "i":
        return "step - 6"
    return "(step - 6) * 0.25"


def _fill_functions(name: str, ins: list[ShapedArray]) -> list[str]:
    lines = []
    for k, a in enumerate(ins):
        t = c_type(a, name)
        lines += [f"static void fill_arg{k}({t} *data) {{",
                  f"  for (long long i = 0; i < {a.size}; i++) {{",
                  f"    long long step = (i * 7 + {k * 3}) % 13;",
                  f"    data[i] = ({t})({_fill_expr(a)});", "  }", "}", ""]
    return lines


def _fill_calls(name: str, ins: list[ShapedArray]) -> list[str]:
    return [f"  fill_arg{k}({name}_arg{k}_data(m));" for k in range(len(ins))]


def test_program(name: str, ins: list[ShapedArray], outs: list[ShapedArray]) -> str:
    lines = ["#include <stdio.h>", "", f'#include "{name}.h"', "", *_fill_functions(name, ins),
             "int main(void) {", f"  {name} *m = {name}_new();",
             f'  if (!m) {{ fprintf(stderr, "{name}_new failed\\n"); return 1; }}',
             *_fill_calls(name, ins), f"  int status = {name}_run(m);",
             "  if (status != 0) {",
             f'    fprintf(stderr, "{name}_run failed: %d\\n", status);', "    return 1;", "  }"]
    for k, a in enumerate(outs):
        kind = a.dtype.kind
        fmt = _PRINT[kind][a.dtype.itemsize >= (16 if kind == "c" else 8)]
        lines += [f'  printf("result{k} {a}\\n");',
                  f"  for (long long i = 0; i < {a.size}; i++) {{",
                  f"    {c_type(a, name)} v = {name}_result{k}_data(m)[i];", f"    {fmt}", "  }",
                  '  printf("\\n");']
    lines += [f"  {name}_free(m);", "  return 0;", "}", ""]
    return "\n".join(lines)


def benchmark_program(name: str, ins: list[ShapedArray]) -> str:
    """Times each call; prints the median (robust to the process being descheduled on a
    busy machine), the best and the mean, in microseconds."""
    lines = ["#include <stdio.h>", "#include <stdlib.h>", "#include <time.h>", "",
             f'#include "{name}.h"', "", *_fill_functions(name, ins),
             "static double seconds(void) {", "  struct timespec t;",
             "  clock_gettime(CLOCK_MONOTONIC, &t);", "  return t.tv_sec + 1e-9 * t.tv_nsec;", "}",
             "", "static int by_value(const void *a, const void *b) {",
             "  double x = *(const double *)a, y = *(const double *)b;",
             "  return (x > y) - (x < y);", "}", "",
             "/* usage: NAME_benchmark [iterations] */",
             "int main(int argc, char **argv) {",
             "  long iters = argc > 1 ? atol(argv[1]) : 1000;",
             "  if (iters < 1) iters = 1;",
             "  double *times = malloc(iters * sizeof *times), total = 0;",
             f"  {name} *m = {name}_new();", "  if (!m || !times) return 1;",
             *_fill_calls(name, ins),
             f"  for (int i = 0; i < 3; i++) if ({name}_run(m)) return 1;",
             "  for (long i = 0; i < iters; i++) {", "    double t0 = seconds();",
             f"    if ({name}_run(m)) return 1;", "    times[i] = seconds() - t0;",
             "    total += times[i];", "  }",
             "  qsort(times, iters, sizeof *times, by_value);",
             (f'  printf("{name}_run: %ld runs, median %.3f us, best %.3f us, mean %.3f us\\n", '
             "iters, 1e6 * times[iters / 2], 1e6 * times[0], 1e6 * total / iters);"),
             f"  {name}_free(m);", "  free(times);", "  return 0;", "}", ""]
    return "\n".join(lines)
