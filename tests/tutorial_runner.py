"""Re-execute a stored tutorial notebook and compare it with its stored outputs.

A tutorial is stored with its outputs (they are what a reader sees on a code host),
so the oracle is the notebook itself: every code cell must run without error on a
fresh compile cache, and print and return what the stored copy shows. Numbers are
compared to a relative 1e-6 or one unit of their last printed digit (BLAS and libm
may differ in the last bits),
object addresses and kernel temp-file names are ignored, and cells tagged `varies`
(timings, compile seconds) only have to run.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Any

import pytest

TUTORIALS = pathlib.Path(__file__).resolve().parent.parent / "tutorials"
NOTEBOOKS = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]_*.ipynb"))

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_NOISE = [(re.compile(r"0x[0-9a-f]+"), "0x?"), (re.compile(r"ipykernel_\d+"), "ipykernel_?")]


def run_tutorial(name: str, cache_dir: pathlib.Path, monkeypatch: Any) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = TUTORIALS / name
    stored = nbformat.read(path, as_version=4)
    fresh = nbformat.read(path, as_version=4)
    monkeypatch.setenv("TRACER_CACHE_DIR", str(cache_dir))  # the kernel inherits this
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TUTORIALS.parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("TRACER_RUNTIME_CHECKS", raising=False)  # run as a user would
    nbclient.NotebookClient(fresh, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(TUTORIALS)}}).execute()
    for number, (old, new) in enumerate(zip(stored.cells, fresh.cells, strict=True)):
        if old.cell_type == "code" and "varies" not in old.metadata.get("tags", []):
            was, now = _texts(old.outputs), _texts(new.outputs)
            assert _same(was, now), (f"{name} cell {number} ({old.source.splitlines()[0]!r}) "
                                     f"printed\n{now}\nbut the stored notebook shows\n{was}")


def _texts(outputs: list[Any]) -> list[str]:
    """What a reader sees: streams (however the kernel chunked them, one text per run of
    stream outputs) and the plain-text form of results, noise removed."""
    texts: list[str] = []
    streaming = False
    for out in outputs:
        if out.output_type == "stream":
            text = out.text
        elif out.output_type in ("execute_result", "display_data"):
            text = out.data.get("text/plain", "")
        else:
            text = f"{out.output_type}: {out.get('ename')}: {out.get('evalue')}"
        for pattern, repl in _NOISE:
            text = pattern.sub(repl, text)
        if streaming and out.output_type == "stream":
            texts[-1] += text
        else:
            texts.append(text)
        streaming = out.output_type == "stream"
    return texts


def _same(old: list[str], new: list[str], rtol: float = 1e-6) -> bool:
    """Equal words around the numbers (spacing may change with a number's width), and
    numbers equal to `rtol` or to one unit of their last printed digit (a value that
    another BLAS rounds the other way)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        if _words(a) != _words(b):
            return False
        xs, ys = _NUMBER.findall(a), _NUMBER.findall(b)
        if any(abs(float(x) - float(y)) > max(rtol * max(abs(float(x)), abs(float(y))),
                                              _last_digit(x) * 1.01)
               for x, y in zip(xs, ys, strict=True)):
            return False
    return True


def _last_digit(number: str) -> float:
    """One unit of the last printed decimal (0 for integers and exponent forms)."""
    if "." not in number or "e" in number.lower():
        return 0.0
    return 10.0 ** -len(number.split(".")[1])


def _words(text: str) -> list[str]:
    return [" ".join(part.split()) for part in _NUMBER.split(text)]
