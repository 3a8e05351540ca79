"""bench's at-a-glance table and JSON file, from fake result sets: the verdict per
workload (tracer, the best peer, the ratios, the bound), what the table prints, what the
JSON file holds, and `python -m bench.run`'s suites and --json end to end."""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

# bench/__init__ sets TRACER_COMPILE_MODE=sync for the benchmarks; the tests that share
# this process keep their own environment.
with mock.patch.dict(os.environ):
    from bench import common, run, summary


@pytest.fixture
def records():
    saved = list(common.RECORDS)
    common.RECORDS.clear()
    yield common.RECORDS
    common.RECORDS[:] = saved


def _record(times, bound=None, first_call=None, title="GELU, float32[16]"):
    return {"title": title, "module": "bench.fake", "baseline": next(iter(times)),
            "times": times, "first_call": first_call or {}, "bound": bound}


def test_summary_names_the_best_peer_and_the_ratios():
    s = summary.summarize(_record({"tracer cpu": 3.0, "tracer cpu (executable)": 1.0,
                                   "numpy": 4.0, "jax": 2.0, "(numba start-up)": 0.5},
                                  bound=1.5))
    assert (s["tracer"], s["tracer_s"]) == ("tracer cpu", 3.0)  # the first tracer row
    assert s["peers_s"] == {"numpy": 4.0, "jax": 2.0}  # no tracer rows, no notes
    assert (s["best_peer"], s["ratio_to_best"]) == ("jax", 1.5)
    assert (s["bound_s"], s["ratio_to_bound"]) == (1.5, 2.0)


def test_a_bound_given_as_a_row_is_the_bound_not_a_peer():
    s = summary.summarize(_record({"tracer cuda": 2.0, "cupy": 4.0,
                                   "bandwidth bound (4.8 TB/s)": 1.0}))
    assert s["peers_s"] == {"cupy": 4.0}
    assert (s["bound_s"], s["ratio_to_bound"], s["ratio_to_best"]) == (1.0, 2.0, 0.5)


def test_a_table_without_tracer_or_peers_is_kept_out_of_the_table_only(tmp_path):
    recs = [_record({"GELU": 1.0, "chain": 2.0}, title="cold compile"),
            _record({"tracer cpu": 1.0}, title="tracer alone")]
    assert summary.comparable([summary.summarize(r) for r in recs]) == []
    assert "no workload" in summary.format_table([summary.summarize(r) for r in recs])
    path = tmp_path / "out.json"
    summary.write_json(str(path), recs, {"cpu_count": 2})
    assert [w["title"] for w in json.loads(path.read_text())["workloads"]] == [
        "cold compile", "tracer alone"]


times_st = st.floats(1e-7, 10.0, allow_nan=False, allow_infinity=False)


@given(tracer=times_st, peers=st.dictionaries(st.sampled_from(["numpy", "jax", "torch",
                                                                "pytensor numba"]),
                                               times_st, min_size=1))
def test_the_ratio_is_tracer_over_the_fastest_peer_and_marked_when_above_one(tracer, peers):
    s = summary.summarize(_record({"tracer cpu": tracer, **peers}))
    best = min(peers, key=peers.get)
    assert s["best_peer_s"] == peers[best]
    assert s["ratio_to_best"] == pytest.approx(tracer / peers[best])
    first_line = summary.format_table([s]).splitlines()[3]
    assert (summary.MARK in first_line) == (tracer > peers[best])


def test_the_table_shows_every_peer_and_the_compiles(records):
    fn = common.first_call_timed("tracer cpu", lambda: None)
    fn()  # the first call is recorded for the next report
    common.report("GELU, float32[16]", [("tracer cpu", 2e-3), ("numpy", 4e-3),
                                        ("torch.compile", 1e-3)], "tracer cpu", bound=5e-4)
    [record] = records
    assert record["module"] == __name__ and set(record["first_call"]) == {"tracer cpu"}
    record["first_call"] = {"tracer cpu": 1.5, "numpy": 4e-3}  # a compile, and a plain call
    table = summary.format_table([summary.summarize(record)])
    assert "torch.compile 1.00 ms" in table and "2.00" + summary.MARK in table
    assert "numpy 4.00 ms" in table and "500.0 µs" in table and "4.00" in table  # ×bound
    assert "tracer cpu 1.50 s" in table and "numpy 4.00 ms ·" not in table.split("first")[1]
    assert "trails on: GELU, float32[16]" in table


def _fake_suite(module, selected):
    common.report(f"fake {','.join(selected)}", [("tracer cpu", 1.0), ("numpy", 2.0)],
                  "tracer cpu")


def test_run_saves_the_workloads_it_ran_as_json(records, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(run.SUITES, "fake", ("common", _fake_suite))
    path = tmp_path / "bench.json"
    run.main(["fake:a,b", "--warm-caches", "--json", str(path)])
    saved = json.loads(path.read_text())
    [workload] = saved["workloads"]
    assert workload["title"] == "fake a,b" and workload["ratio_to_best"] == 0.5
    assert saved["machine"]["cpu_count"] >= 1 and "numpy" in saved["versions"]
    assert "ahead of every peer on 1 of 1" in capsys.readouterr().out


def test_run_refuses_an_unknown_suite():
    with pytest.raises(SystemExit):
        run.main(["no-such-suite"])
