"""Compile latency, tracer beside JAX: what a person in a notebook waits for.

    python -m bench.bench_latency                     # every model
    python -m bench.bench_latency mlp rnn --mode sync # some models, synchronous compiles

For each model of `bench.latency_models` (an MLP step, a vmap'd transformer step, a
vmap(grad) DP-SGD convnet step, a scan RNN step) and each framework, fresh processes:

- cold:  empty compile cache; `import`, the first call (trace + compile + run), then
         (after the compile finished) one op of the model edited and called again;
- warm:  a new process with the cache the cold run filled: the first call;
- steady: the per-step time once compiled, on a quiet machine, and with two CPU-bound
         processes keeping both cores busy: tracer and JAX compiled in one process whose
         timing rounds alternate between them (`paired`), so a change of the machine's
         load (it is shared) reaches both alike; the ratio is the median of the rounds'.

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


def _calibrated(fn: Any) -> int:
    """Calls per timing round: enough for about 50 ms."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= 0.05 or number >= 1 << 16:
            return number
        number *= 2


def paired(model: str, rounds: int = 9) -> dict[str, Any]:
    """Steady per-step seconds of tracer and JAX, measured in alternating rounds in this
    process, and the median of the per-round ratios."""
    import statistics
    steps = {}
    for fw_name in ("tracer", "jax"):
        step, args = make(model, framework(fw_name))
        _first_call(fw_name, step, args)
        _wait(step)
        steps[fw_name] = (lambda s=step, a=args, f=fw_name: _block(f, s(*a)))
    numbers = {fw_name: _calibrated(fn) for fw_name, fn in steps.items()}
    times: dict[str, list[float]] = {"tracer": [], "jax": []}
    for _ in range(rounds):
        for fw_name, fn in steps.items():
            t0 = time.perf_counter()
            for _ in range(numbers[fw_name]):
                fn()
            times[fw_name].append((time.perf_counter() - t0) / numbers[fw_name])
    return {"tracer": statistics.median(times["tracer"]), "jax": statistics.median(times["jax"]),
            "ratio": statistics.median(t / j for t, j in zip(times["tracer"], times["jax"]))}


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


def _run_child(args: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    """`python -m bench.bench_latency *args` in a fresh process: its JSON result."""
    cmd = [sys.executable, "-m", "bench.bench_latency", *args]
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


def measure(model: str, fw_name: str, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """cold (+edit), then warm start and steady state for one framework."""
    out = {"cold": _run_child(["--child", fw_name, model, "cold"], env, timeout)}
    out["warm"] = _run_child(["--child", fw_name, model, "steady"], env, timeout)
    return out


def measure_paired(model: str, env: dict[str, str], timeout: float,
                   busy: bool) -> dict[str, Any]:
    """Steady state of both frameworks in one child (tracer's filled cache in `env`), on
    the machine as it is and with both cores busy."""
    out = {"quiet": _run_child(["--paired", model], env, timeout)}
    if busy:
        loads = _busy_processes(os.cpu_count() or 2)
        try:
            out["busy"] = _run_child(["--paired", model], env, timeout)
        finally:
            _stop(loads)
    return out


_ROWS = [("import", "cold", "import"), ("cold first call", "cold", "first"),
         ("cold until compiled", "cold", "to_compiled"), ("edit one op, call", "cold", "edit"),
         ("warm start first call", "warm", "first"), ("steady step, unpaired", "warm", "steady")]
_PAIRED_ROWS = [("steady step, paired", "quiet"), ("steady busy, paired", "busy")]


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
    for label, phase in _PAIRED_ROWS:
        row = results.get("paired", {}).get(phase, {})
        if "ratio" in row:
            print(f"  {label:<24} tracer {row['tracer']:10.4f} s   jax {row['jax']:10.4f} s   "
                  f"x{row['ratio']:6.2f}")
        elif "error" in row:
            print(f"  {label} failed: {row['error']}")
    for phase in ("cold", "warm"):
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
        results, envs = {}, {}
        for fw_name in ["tracer"] + ([] if opts.no_jax else ["jax"]):
            envs[fw_name] = dict(os.environ, TRACER_COMPILE_MODE=opts.mode or _default_mode(),
                                 TRACER_CACHE_DIR=tempfile.mkdtemp(prefix="tracer-latency-"))
            results[fw_name] = measure(model, fw_name, envs[fw_name], opts.timeout)
        if not opts.no_jax:  # (tracer's cache, filled by its cold run)
            results["paired"] = measure_paired(model, envs["tracer"], opts.timeout,
                                               not opts.no_busy)
        report(model, results)
        all_results[model] = results
    return all_results


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(*sys.argv[2:5])))
    elif sys.argv[1:2] == ["--paired"]:
        print(json.dumps(paired(sys.argv[2])))
    else:
        main()
