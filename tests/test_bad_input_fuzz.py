"""Random bad input (wrong shapes, dtypes, axes, values) for tracer.numpy, eagerly and
under jit on the cpu backend, each case in a worker process: every case gives a result
equal to NumPy's or a clear TracerError, never a raw exception, a crash or a hang.
(bench/fault_injection.py runs many more and prints the counts.)"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tracer as tr
import tracer.numpy as tnp
from tests import fuzz_cases as fc


@pytest.fixture(scope="module")
def runner():
    r = fc.Runner("cpu", timeout=180)
    yield r
    r.close()


def test_bad_input_gives_numpy_result_or_clear_error(runner):
    counts: collections.Counter = collections.Counter()
    bad: list = []

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fc.cases())
    def one(case):
        outcome, detail = runner.run(case)
        counts[outcome] += 1
        if outcome not in ("ok", "clear"):
            bad.append((case[0], [(str(a.dtype), a.shape) for a in case[1]], case[2],
                        outcome, detail))

    one()
    assert not bad, "\n".join(map(str, bad))
    assert counts["clear"] and counts["ok"]  # the strategies reach both kinds of case


@pytest.mark.parametrize("mode", [None, "clip", "wrap"])
def test_take_with_non_integer_indices_is_a_clear_error(mode):
    # Found by the fuzz: take(mode="wrap") with float or complex indices was a raw
    # NumPy TypeError from its remainder.
    for idx in (np.array([0.5, 1.0]), np.array(1 + 2j, np.complex64)):
        with pytest.raises(tr.TracerError) as info:
            tnp.take(np.arange(4.0), idx, mode=mode)
        assert isinstance(info.value, TypeError) and "integers" in str(info.value)
    np.testing.assert_array_equal(tnp.take(np.arange(4.0), [], mode=mode), [])
