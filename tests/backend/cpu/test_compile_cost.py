"""Generated cpu code avoids the numba constructs that are slow to compile.

numba compiles an array-to-array assignment (`a[i] = row`, `a[...] = b`,
`a[s:e] = b`) with a shape-mismatch error path whose message formatting costs
seconds per pair of ranks in every fresh process (3.3 s for one
dynamic_update_slice, 2.8 s of a 5 s scan gradient); copies are written as
loops instead. This checks the source of every op-table case, fused and
unfused, without compiling it, and that the loop copies compute the same
values as the interpreter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.op_db import all_cases
from tracer import ops
from tracer.backend.cpu.generate import generate
from tracer.backend.numba.lower import lower
from tracer.core import aval_of
from tracer.tracing import trace_flat
from tracer.tree_util import tree_flatten

# a subscripted target assigned a bare name; it is an array assignment when that name is
# itself subscripted somewhere (scalar fills compile fast)
ASSIGNMENT = re.compile(r"^\s*\w+\[[^\]]*\] = ([A-Za-z_]\w*)\s*$")
CASES = all_cases()


def _source(fn, args, fuse):
    flat = lambda *xs: tree_flatten(fn(*xs))[0]  # noqa: E731
    graph, _ = trace_flat(flat, [aval_of(a) for a in args], "main")
    return generate(lower(graph), parallel_ok=True, fuse=fuse).source


def _array_assignments(source):
    found = []
    for line in source.splitlines():
        match = ASSIGNMENT.match(line)
        if match and re.search(rf"\b{match[1]}\[", source):
            found.append(line.strip())
    return found


@pytest.mark.parametrize("fuse", [True, False])
def test_no_op_table_case_generates_an_array_assignment(fuse):
    found = {}
    for case in CASES:
        lines = _array_assignments(_source(case.fn, case.args, fuse))
        if lines:
            found[case.name] = lines
    assert not found


def _scan_rows(x, w):
    def step(c, xi):
        c = tnp.tanh(c @ w + xi)
        return c, c * 2.0
    return ops.scan(step, x[0], x)


PROGRAMS = {
    "scan stacks rows": (_scan_rows, 2),
    "dynamic_update_slice": (lambda x, w: ops.dynamic_update_slice(x, x[:2] * 3, (1, 0)), 2),
    "concatenate": (lambda x, w: tnp.concatenate([x, (x @ w)[:, :2]], axis=1), 2),
    "output copy of an input-shaped result": (lambda x, w: (x, tnp.sort(x, axis=0)), 2),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_loop_copies_match_the_interpreter(name):
    fn, _ = PROGRAMS[name]
    r = np.random.default_rng(0)
    x, w = r.standard_normal((5, 4)), r.standard_normal((4, 4)) * 0.3
    assert not _array_assignments(_source(fn, (x, w), True))
    got = tree_flatten(tr.jit(fn)(x, w))[0]
    want = tree_flatten(tr.jit(fn, backend="interpreter")(x, w))[0]
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)
