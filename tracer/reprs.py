"""HTML pieces for Jupyter's `_repr_html_` (Jitted, Lowered, Compiled, HloModule, CacheInfo).

Plain strings, no JavaScript and no external CSS: they render the same in Jupyter,
in nbconvert's HTML and on code hosts that show stored notebook outputs.
"""

from __future__ import annotations

from typing import Any, Sequence


def escape(text: str) -> str:
    """HTML-escaped `text` (html is imported on first use: html.entities is a noticeable
    part of `import tracer`, and reprs are only drawn in notebooks)."""
    import html
    return html.escape(text)


_CARD = ("border:1px solid #d1d5db;border-radius:6px;padding:6px 10px;margin:4px 0;"
         "font-family:sans-serif;font-size:13px")
_CELL = "border:1px solid #e5e7eb;padding:2px 8px;text-align:left;font-family:monospace"


def card(title: str, *sections: str) -> str:
    """A bordered block with a bold title and the sections below it."""
    return (f'<div class="tracer-repr" style="{_CARD}"><b>{escape(title)}</b>'
            + "".join(sections) + "</div>")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{escape(str(c))}</td>' for c in row)
                   + "</tr>" for row in rows)
    return f'<table style="border-collapse:collapse;margin:4px 0"><tr>{head}</tr>{body}</table>'


def code(text: str, max_height: int = 420) -> str:
    return (f'<pre style="max-height:{max_height}px;overflow:auto;background:#f9fafb;'
            f'padding:6px;margin:2px 0">{escape(text)}</pre>')


def folded(summary: str, body: str, open_: bool = False) -> str:
    """A `<details>` block: `body` (HTML) shown when the summary is clicked."""
    state = " open" if open_ else ""
    return f"<details{state}><summary>{escape(summary)}</summary>{body}</details>"


def line(text: str) -> str:
    return f'<div style="margin:2px 0">{escape(text)}</div>'
