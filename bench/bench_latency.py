"""Compile latency, tracer beside JAX: what a person in a notebook waits for.

    python -m bench.bench_latency                     # every model
    python -m bench.bench_latency mlp rnn --mode sync # some models, synchronous compiles

For each model of `bench.latency_models` (an MLP step, a vmap'd transformer step, a
vmap(grad) DP-SGD convnet step, a scan RNN step) and each framework, fresh processes:

- cold:  empty compile cache; `import`, the first call (trace + compile + run), then
         (after the compile finished) one op of the model edited and called again;
- warm:  a new process with the cache the cold run filled: the first call;
- steady: the per-step time once compiled, on a quiet machine, and with two CPU-bound
         processes keeping both cores busy.

Tracer's times are for its default `compile_mode` unless `--mode` is given. Ratios are
tracer / JAX from this one run (the machine is shared: compare ratios, not seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.latency_models import MODELS, framework, make

_BUSY = "while True: pass"


def _block(fw_name: str, out: Any) -> None:
    if fw_name == "jax":
        import jax
        jax.block_until_ready(out)


def _first_call(fw_name: str, step: Any, args: tuple) -> float:
    t0 = time.perf_counter()
    _block(fw_name, step(*args))
    return time.perf_counter() - t0


def _wait(step: Any) -> float:
    """Seconds until tracer's background compile finished (0 for JAX)."""
    t0 = time.perf_counter()
    wait = getattr(step, "wait_compiled", None)
    if wait is not None:
        wait()
    return time.perf_counter() - t0


def _default_mode() -> str:
    """tracer's own default compile_mode (the benchmark package runs sync otherwise)."""
    from tracer.config import SETTINGS
    return next(s.default for s in SETTINGS if s.name == "compile_mode")


def _tiers(step: Any) -> str:
    info = step.cache_info() if hasattr(step, "cache_info") else None
    return str(getattr(info, "tiers", ""))


def _steady(fw_name: str, step: Any, args: tuple) -> float:
    from bench.common import timeit
    return timeit(lambda: _block(fw_name, step(*args)), repeat=7, min_time=0.2)


def child(fw_name: str, model: str, phase: str) -> dict[str, Any]:
    """One measurement in this (fresh) process; the result as a dict."""
    t0 = time.perf_counter()
    fw = framework(fw_name)
    result: dict[str, Any] = {"import": time.perf_counter() - t0}
    step, args = make(model, fw)
    result["first"] = _first_call(fw_name, step, args)
    result["first_tier"] = _tiers(step)
    result["to_compiled"] = result["first"] + _wait(step)
    if phase == "cold":
        edited, _ = make(model, fw, edit=True)
        result["edit"] = _first_call(fw_name, edited, args)
        result["edit_to_compiled"] = result["edit"] + _wait(edited)
    elif phase == "steady":
        result["steady"] = _steady(fw_name, step, args)
    return result


def _run_child(fw_name: str, model: str, phase: str, env: dict[str, str],
               timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_latency", "--child", fw_name, model, phase]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _busy_processes(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", _BUSY]) for _ in range(n)]


def _stop(processes: list[subprocess.Popen]) -> None:
    for p in processes:
        p.kill()
        p.wait()


def measure(model: str, fw_name: str, env: dict[str, str], timeout: float,
            busy: bool) -> dict[str, Any]:
    """cold (+edit), warm and steady (quiet, and with both cores busy) for one framework."""
    out = {"cold": _run_child(fw_name, model, "cold", env, timeout)}
    out["warm"] = _run_child(fw_name, model, "steady", env, timeout)
    if busy:
        loads = _busy_processes(os.cpu_count() or 2)
        try:
            out["busy"] = _run_child(fw_name, model, "steady", env, timeout)
        finally:
            _stop(loads)
    return out


_ROWS = [("import", "cold", "import"), ("cold first call", "cold", "first"),
         ("cold until compiled", "cold", "to_compiled"), ("edit one op, call", "cold", "edit"),
         ("warm start first call", "warm", "first"), ("steady step", "warm", "steady"),
         ("steady, cores busy", "busy", "steady")]


def report(model: str, results: dict[str, dict]) -> None:
    tracer, jax = results["tracer"], results.get("jax", {})
    print(f"\n{model}: tracer vs JAX (fresh processes, one run)")
    for label, phase, field in _ROWS:
        t = tracer.get(phase, {}).get(field)
        j = jax.get(phase, {}).get(field)
        if t is None:
            continue
        ratio = f"x{t / j:6.2f}" if j else "   n/a"
        jtext = f"{j:10.4f} s" if j is not None else " " * 12
        print(f"  {label:<24} tracer {t:10.4f} s   jax {jtext}   {ratio}")
    for phase in ("cold", "warm", "busy"):
        if "error" in tracer.get(phase, {}):
            print(f"  tracer {phase} failed: {tracer[phase]['error']}")
    tier = tracer.get("cold", {}).get("first_tier")
    if tier:
        print(f"  tracer's first call served by: {tier}")


def main(argv: list[str] | None = None) -> dict[str, dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--mode", choices=["sync", "async"], default=None,
                        help="tracer's compile_mode (default: tracer's own default)")
    parser.add_argument("--no-busy", action="store_true", help="skip the loaded-machine run")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800.0)
    opts = parser.parse_args(argv)
    all_results = {}
    for model in opts.models:
        results = {}
        for fw_name in ["tracer"] + ([] if opts.no_jax else ["jax"]):
            env = dict(os.environ, TRACER_CACHE_DIR=tempfile.mkdtemp(prefix="tracer-latency-"),
                       TRACER_COMPILE_MODE=opts.mode or _default_mode())
            results[fw_name] = measure(model, fw_name, env, opts.timeout, not opts.no_busy)
        report(model, results)
        all_results[model] = results
    return all_results


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(*sys.argv[2:5])))
    else:
        main()
