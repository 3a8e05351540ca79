"""tutorials/10-export.ipynb runs top to bottom (its code cells as one script, in a fresh
process): the asserts inside it compare the fresh process's and the C program's
predictions with `tr.jit`'s."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

NOTEBOOK = pathlib.Path(__file__).resolve().parent.parent / "tutorials" / "10-export.ipynb"


@pytest.mark.skipif(shutil.which("cc") is None, reason="the tutorial builds a C program")
def test_export_tutorial_runs(tmp_path):
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    script = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    (tmp_path / "tutorial.py").write_text(script)
    done = subprocess.run([sys.executable, "tutorial.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loss after" in done.stdout and "libpython" not in done.stdout
