"""tr.config: a bad TRACER_* value names the variable and the allowed values (and
`import tracer` still works); a bad value set from Python raises."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tracer as tr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_with(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import tracer as tr; print(tr.config.values())"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env,
                          "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name, value, allowed", [
    ("TRACER_RUNTIME_CHECKS", "maybe", "true/false"),
    ("TRACER_BACKEND", "tpu", "'interpreter'"),
    ("TRACER_JIT_CACHE_SIZE", "lots", "integer >= 1"),
    ("TRACER_CACHE_DIR", "", "non-empty directory"),
])
def test_bad_environment_value_warns_naming_variable_and_allowed_values(name, value, allowed):
    run = import_with({name: value})
    assert run.returncode == 0, run.stderr  # import tracer works
    assert name in run.stderr and repr(value) in run.stderr and allowed in run.stderr
    assert "ConfigWarning" in run.stderr


def test_good_environment_values_are_parsed():
    run = import_with({"TRACER_EXPLAIN_CACHE_MISSES": "yes", "TRACER_JIT_CACHE_SIZE": "7"})
    assert run.returncode == 0 and not run.stderr, run.stderr
    assert "'explain_cache_misses': True" in run.stdout and "'jit_cache_size': 7" in run.stdout


def test_bad_value_from_python_raises_naming_the_setting():
    with pytest.raises(tr.TracerError, match="jit_cache_size.*integer >= 1") as info:
        tr.config.update("jit_cache_size", 0)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="runtime_checks"):
        with tr.config.override(runtime_checks="sometimes"):
            pass
    with tr.config.override(runtime_checks="off", jit_cache_size="3"):  # as the variable says
        assert tr.config.runtime_checks is False and tr.config.jit_cache_size == 3



def test_watch_sees_the_value_now_and_every_change():
    """A copy of a setting kept outside Python (compiled code's view of an MPI job) stays
    equal to it through update, override and its restore, and reset."""
    from tracer.config import SETTINGS, Config
    config = Config(SETTINGS)
    seen = []
    config.watch("distributed_timeout", seen.append)
    config.distributed_timeout = 2.5
    with config.override(distributed_timeout=1.0):
        assert seen[-1] == config.distributed_timeout == 1.0
    config.reset()
    assert seen == [300.0, 2.5, 1.0, 2.5, 300.0]
    with pytest.raises(tr.TracerError, match="no setting 'nope'"):
        config.watch("nope", seen.append)
