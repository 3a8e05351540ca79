"""A long fault-injection run: `python -m bench.fault_injection [--cases N] [--backend cpu]`.

Prints counts (cases, ok, clear errors, other exceptions, wrong values, crashes,
hangs) for
  - the random bad-input fuzz of tests/fuzz_cases.py (each case in a worker process),
  - every way of breaking a compile-cache entry (tests/cache_faults.py): each break
    of each of a module's three files, run in a fresh process, then run again to see
    that the entry was repaired.
The short versions of both run in CI (tests/test_bad_input_fuzz.py,
tests/test_cache_faults.py).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import tempfile
import time

from hypothesis import HealthCheck, given, settings

from tests import cache_faults as cf
from tests import fuzz_cases as fc


def fuzz(n: int, backend: str, show: int) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    runner = fc.Runner(backend, timeout=300)

    @settings(max_examples=n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(fc.cases())
    def one(case: tuple) -> None:
        outcome, detail = runner.run(case)
        counts[outcome] += 1
        if outcome not in ("ok", "clear") and counts[outcome] <= show:
            print(f"  {outcome}: {case[0]} {[(str(a.dtype), a.shape) for a in case[1]]} "
                  f"{case[2]}\n    {detail}")

    try:
        one()
    finally:
        runner.close()
    return counts


def cache_breaks() -> collections.Counter:
    """Each (file, break) in its own module; a fresh process must give right values."""
    counts: collections.Counter = collections.Counter()
    cases = [(t, b) for t in ("py", "nbi", "nbc") for b in cf.BREAKS]
    ks = list(range(1, len(cases) + 1))
    root = tempfile.mkdtemp(prefix="tracer-faults-")
    try:
        paths = cf.run_worker(root, ks)["paths"]
        for k, (target, how) in zip(ks, cases, strict=True):
            index, data = cf.numba_files(paths[str(k)])
            cf.break_entry({"py": paths[str(k)], "nbi": index, "nbc": data}[target], how)
        for rnd in ("broken", "repaired"):
            try:
                out = cf.run_worker(root, ks)
            except AssertionError as e:  # the process failed: every case counts
                counts["other"] += len(ks)
                print(f"  {rnd}: {str(e)[:400]}")
                continue
            counts["ok"] += sum(out["ok"])
            counts["wrong"] += len(ks) - sum(out["ok"])
            counts["leftover .tmp"] += len(cf.leftovers(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return counts


def report(title: str, counts: collections.Counter, seconds: float) -> None:
    total = sum(v for k, v in counts.items() if k in fc.OUTCOMES)
    cols = " ".join(f"{k}={counts.get(k, 0)}" for k in fc.OUTCOMES)
    extra = " ".join(f"{k}={v}" for k, v in counts.items() if k not in fc.OUTCOMES)
    print(f"{title}: cases={total} {cols} {extra} ({seconds:.0f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--show", type=int, default=5, help="examples printed per outcome")
    args = parser.parse_args(argv)
    t = time.perf_counter()
    report(f"bad-input fuzz ({args.backend})", fuzz(args.cases, args.backend, args.show),
           time.perf_counter() - t)
    t = time.perf_counter()
    report("cache entry breaks", cache_breaks(), time.perf_counter() - t)


if __name__ == "__main__":
    main()
