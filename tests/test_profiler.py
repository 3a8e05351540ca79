"""tr.profiler's Chrome trace-event timeline and config.log_compiles."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


def _model():
    @tr.jit
    def predict(w, x):
        return tnp.tanh(x @ w + 1.0)
    return predict


def _events(path):
    return [e for e in tr.profiler.load_trace(path) if e["ph"] == "X"]


def test_trace_records_each_stage_as_complete_events(tmp_path):
    predict = _model()
    w, x = np.ones((3, 2)), np.ones((4, 3))
    with tr.profiler.trace(tmp_path):
        predict(w, x)
        predict(w, x)
    (path,) = list(tmp_path.rglob("*.trace.json"))
    with open(path) as f:
        events = [e for e in json.load(f) if e["ph"] == "X"]  # a finished file is strict JSON
    cats = [e["cat"] for e in events]
    assert cats.count("trace") == 1 and cats.count("passes") == 1
    assert cats.count("execute") == 2  # one event per call, the cache hit included
    assert cats.count("backend") == 1 and cats.count("codegen") == 1
    assert next(e["name"] for e in events if e["cat"] == "compile") in (
        "numba compile jit_predict", "cache load jit_predict")  # which tier
    names = [e["name"] for e in events]  # every event says whose it is
    assert "trace jit_predict" in names and "codegen jit_predict" in names
    assert all(name.endswith(" jit_predict") for name in names), names
    assert all(e["dur"] >= 0 and {"ts", "pid", "tid"} <= set(e) for e in events)
    passes = next(e for e in events if e["cat"] == "passes")
    for p in (e for e in events if e["cat"] == "pass"):  # passes nest in their pipeline
        assert passes["ts"] <= p["ts"] and p["ts"] + p["dur"] <= passes["ts"] + passes["dur"]


def test_nothing_is_recorded_outside_a_trace(tmp_path):
    predict = _model()
    with tr.profiler.trace(tmp_path):
        pass
    predict(np.ones((3, 2)), np.ones((4, 3)))
    (path,) = list(tmp_path.rglob("*.trace.json"))
    assert _events(path) == []
    assert not tr.profiler.active()


def test_start_and_stop_out_of_order_raise(tmp_path):
    tr.profiler.start_trace(tmp_path)
    try:
        with pytest.raises(tr.TracerValueError, match="already running"):
            tr.profiler.start_trace(tmp_path)
    finally:
        path = tr.profiler.stop_trace()
    assert path.endswith(".trace.json") and os.path.dirname(path) == str(tmp_path)
    with pytest.raises(tr.TracerValueError, match="no trace is running"):
        tr.profiler.stop_trace()


def test_a_crashed_run_leaves_every_finished_event(tmp_path):
    script = textwrap.dedent(f"""
        import os, numpy as np, tracer as tr, tracer.numpy as tnp
        f = tr.jit(lambda x: tnp.sin(x) * 2.0, backend="interpreter")
        tr.profiler.start_trace({str(tmp_path)!r})
        for _ in range(3):
            f(np.ones(4))
        os._exit(3)   # dies without stop_trace: no closing bracket
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 3, proc.stderr
    (path,) = list(tmp_path.rglob("*.trace.json"))
    text = path.read_text()
    assert not text.rstrip().endswith("]")
    for line in text.splitlines()[1:]:  # every event is a whole JSON object on its line
        json.loads(line.rstrip(","))
    assert [e["cat"] for e in _events(path)].count("execute") == 3


def test_log_compiles_logs_one_line_per_compile(caplog):
    predict = _model()
    with tr.config.override(log_compiles=True), caplog.at_level(logging.WARNING, "tracer.jit"):
        predict(np.ones((3, 2)), np.ones((4, 3)))
        predict(np.ones((3, 2)), np.ones((4, 3)))  # a hit: no line
        predict(np.ones((3, 2), np.float32), np.ones((4, 3), np.float32))
    lines = [r.getMessage() for r in caplog.records if "compiled for" in r.getMessage()]
    assert len(lines) == 2
    assert lines[0].startswith("jit(predict): compiled for (f64[3,2], f64[4,3])")
    assert "first call" in lines[0] and " s, " in lines[0]
    assert "argument w changed from f64[3,2] to f32[3,2]" in lines[1]
    assert predict.cache_info().misses == 2


def test_log_compiles_is_a_setting_with_an_environment_variable():
    assert "TRACER_LOG_COMPILES" in tr.config.help()
    assert tr.config.log_compiles is False
