"""Run the code cells of a JAX documentation page (MyST markdown, `tests/jax_docs/`,
copied from jax-ml/jax at cec06d116c05, Apache-2.0) with JAX and, after the import
rename, with tracer; report which cells pass under each.

A cell passes when it runs, or, if the page tags it `raises-exception`, when it
raises. IPython magics are dropped (`%timeit f(x)` runs `f(x)` once); output is
discarded. The rename is textual, as a user would do it: `jax.numpy` -> `tracer.numpy`,
`jax.lax` -> `tracer.ops`, `import jax` -> `import tracer as jax`, and so on.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import signal
from dataclasses import dataclass

DOCS = pathlib.Path(__file__).parent / "jax_docs"

_RENAMES = [
    (re.compile(r"^(\s*from jax import [^\n]*?)\blax\b", re.M), r"\1ops as lax"),
    (re.compile(r"^(\s*)from jax\.lax import", re.M), r"\1from tracer.ops import"),
    (re.compile(r"^(\s*)import jax\.lax as", re.M), r"\1import tracer.ops as"),
    (re.compile(r"\bjax\.lax\b"), "jax.ops"),
    (re.compile(r"^(\s*)import jax\s*$", re.M), r"\1import tracer as jax"),
    (re.compile(r"^(\s*)import jax\.(\w+(?:\.\w+)*) as", re.M), r"\1import tracer.\2 as"),
    (re.compile(r"^(\s*)from jax\.(\w+(?:\.\w+)*) import", re.M), r"\1from tracer.\2 import"),
    (re.compile(r"^(\s*)from jax import", re.M), r"\1from tracer import"),
]


@dataclass
class Cell:
    source: str
    raises: bool
    line: int


def cells(page: str) -> list[Cell]:
    """The page's `{code-cell}` blocks, magics dropped."""
    text = (DOCS / page).read_text()
    out = []
    for m in re.finditer(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, re.M | re.S):
        body = m.group(1).splitlines()
        opts = [ln for ln in body if ln.startswith(":")]
        code = [ln for ln in body if not ln.startswith(":")]
        code = [re.sub(r"^(\s*)%+\w+\s*", r"\1", ln) if ln.lstrip().startswith("%") else ln
                for ln in code if not ln.lstrip().startswith("!")]
        raises = any("raises-exception" in o for o in opts)
        out.append(Cell("\n".join(code), raises, text[:m.start()].count("\n") + 1))
    return out


def rename(source: str) -> str:
    for pattern, repl in _RENAMES:
        source = pattern.sub(repl, source)
    return source


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout


def run_page(page: str, library: str, seconds: int = 60) -> list[bool]:
    """Pass / fail of each cell of `page` run in order in one namespace."""
    ns: dict[str, object] = {"__name__": "__doc_page__"}
    results = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for cell in cells(page):
            src = rename(cell.source) if library == "tracer" else cell.source
            ok = True
            signal.alarm(seconds)
            try:
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(src, f"{page}:{cell.line}", "exec"), ns)  # noqa: S102
            except _Timeout:
                ok = False
            except BaseException:  # noqa: BLE001 - any failure of the cell counts
                ok = cell.raises
            else:
                ok = not cell.raises
            finally:
                signal.alarm(0)
            results.append(ok)
    finally:
        signal.signal(signal.SIGALRM, old)
    return results
