"""Every op-table case on the cpu backend with each input given as a strided view
(stride -2 along its last axis): the results must equal the contiguous call's bit for
bit. Prints, per batch of cases, the inputs read in place and the inputs copied, then
the counts (a check too slow for CI, which runs two batches:
tests/backend/cpu/test_strided_inputs.py).

    python -m bench.strided_op_table
"""

from __future__ import annotations

import numpy as np

import tracer as tr
from tests.backend.cpu import test_backend as table
from tests.backend.cpu.test_strided_inputs import _strided_copy
from tracer.backend.cpu import strided


def _same(outs: list, expected: list) -> bool:
    return all(g.dtype == w.dtype and g.tobytes() == w.tobytes()
               for g, w in zip(outs, expected, strict=True))


def _culprits(cases: list) -> list[str]:
    """The cases of a failing batch that fail alone."""
    names = []
    for case in cases:
        exe = table.CPU.compile(table._trace(case.fn, case.args))
        inputs = table._inputs(case.args)
        if not _same(exe(*map(_strided_copy, inputs)), exe(*inputs)):
            names.append(case.name)
    return names


def main() -> None:
    strided.IN_PLACE_MIN_BYTES = 0
    in_place = copies = 0
    wrong: list[str] = []
    for k, cases in enumerate(table.BATCHES):
        fn, args = table._batched(cases)
        exe = table.CPU.compile(table._trace(fn, args))
        inputs = table._inputs(args)
        with np.errstate(all="ignore"):
            if not _same(exe(*map(_strided_copy, inputs)), exe(*inputs)):
                wrong += _culprits(cases)
        in_place, copies = in_place + exe.strided.in_place, copies + exe.strided.copies
        print(f"batch {k} ({cases[0].name}..): {exe.strided.in_place} inputs read in place, "
              f"{exe.strided.copies} copied", flush=True)
    print(f"{len(table.CASES)} cases: {in_place} strided inputs read in place, {copies} "
          f"copied, {len(wrong)} results differ {wrong}")


if __name__ == "__main__":
    tr.config.update("compile_mode", "sync")
    main()
