"""The at-a-glance table and the JSON file of a bench run, from `bench.common.RECORDS`.

Per workload: tracer's time (its first row whose name starts with "tracer"), the
fastest peer (every other row except bounds and parenthesized notes), tracer's ratio
to it (above 1.0: tracer trails, marked), the bound where the row has one and the
ratio to it, then every peer's time and the first-call (compile + one run) seconds of
the rows that compile.
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

MARK = "◀"  # tracer slower than the best peer
_BOUND_PREFIXES = ("bandwidth bound", "bound")
# The rows whose first call compiles (the table shows their first calls; the JSON file
# keeps every row's): tracer's and JAX's jit, hand-written numba, torch.compile, PyTensor.
COMPILING = ("tracer", "jax", "numba", "torch.compile", "pytensor")
_PACKAGES = ("numpy", "numba", "jax", "torch", "pytensor")


def summarize(record: dict[str, Any]) -> dict[str, Any]:
    """One workload's verdict: tracer, the best peer, the ratios, the bound."""
    times = dict(record["times"])
    bound = record.get("bound")
    for name in [n for n in times if n.startswith(_BOUND_PREFIXES)]:
        seconds = times.pop(name)  # a bound given as a row (bench_cuda's style)
        bound = seconds if bound is None else bound
    tracer = next((n for n in times if n.startswith("tracer")), None)
    peers = {n: t for n, t in times.items()
             if not n.startswith(("tracer", "(")) and n != tracer}
    best = min(peers, key=peers.__getitem__) if peers else None
    out = {"title": record["title"], "module": record.get("module", ""),
           "tracer": tracer, "tracer_s": times.get(tracer) if tracer else None,
           "peers_s": peers, "best_peer": best, "best_peer_s": peers.get(best),
           "ratio_to_best": None, "bound_s": bound, "ratio_to_bound": None,
           "first_call_s": dict(record.get("first_call", {})), "times_s": record["times"]}
    if tracer and best:
        out["ratio_to_best"] = times[tracer] / peers[best]
    if tracer and bound:
        out["ratio_to_bound"] = times[tracer] / bound
    return out


def comparable(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workloads with a tracer row and at least one peer (the table's rows)."""
    return [s for s in summaries if s["ratio_to_best"] is not None]


def format_table(summaries: list[dict[str, Any]]) -> str:
    rows = comparable(summaries)
    if not rows:
        return "no workload had both a tracer row and a peer row"
    width = min(56, max(len(s["title"]) for s in rows))
    head = (f"{'workload':<{width}}  {'tracer':>10}  {'best peer':<30} {'×best':>7}"
            f"  {'bound':>10} {'×bound':>7}")
    lines = [f"tracer beside its peers: one run, ×best = tracer / fastest peer "
             f"({MARK}: tracer trails)", head, "-" * len(head)]
    for s in rows:
        lines += _workload_lines(s, width)
    trailing = [s["title"] for s in rows if s["ratio_to_best"] > 1.0]
    lines.append(f"tracer ahead of every peer on {len(rows) - len(trailing)} of {len(rows)} "
                 f"workloads" + (f"; trails on: {'; '.join(trailing)}" if trailing else ""))
    return "\n".join(lines)


def _workload_lines(s: dict[str, Any], width: int) -> list[str]:
    title = s["title"] if len(s["title"]) <= width else s["title"][:width - 1] + "…"
    best = f"{s['best_peer']} {fmt(s['best_peer_s'])}"
    mark = MARK if s["ratio_to_best"] > 1.0 else " "
    bound = fmt(s["bound_s"]) if s["bound_s"] else "-"
    to_bound = f"{s['ratio_to_bound']:7.2f}" if s["ratio_to_bound"] else f"{'-':>7}"
    lines = [f"{title:<{width}}  {fmt(s['tracer_s']):>10}  {best:<30} "
             f"{s['ratio_to_best']:6.2f}{mark}  {bound:>10} {to_bound}"]
    peers = " · ".join(f"{n} {fmt(t)}" for n, t in s["peers_s"].items())
    lines.append(f"    peers: {peers}")
    compiled = {n: t for n, t in s["first_call_s"].items() if n.startswith(COMPILING)}
    if compiled:
        first = " · ".join(f"{n} {fmt(t)}" for n, t in compiled.items())
        lines.append(f"    first call (compile + run): {first}")
    return lines


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def versions() -> dict[str, str]:
    """The installed versions of tracer's peers (those present)."""
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def to_json(records: list[dict[str, Any]], machine: dict[str, Any]) -> dict[str, Any]:
    """Everything the run measured: the machine, the versions, each workload's summary
    (its raw times and first calls included)."""
    return {"machine": machine, "versions": versions(),
            "workloads": [summarize(r) for r in records]}


def write_json(path: str, records: list[dict[str, Any]], machine: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(records, machine), f, indent=1, ensure_ascii=False)
        f.write("\n")
