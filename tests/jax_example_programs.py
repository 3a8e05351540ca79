"""Run JAX's example programs as they are (`tests/jax_examples/`, copied from jax-ml/jax
`examples/`, Apache-2.0: mnist_classifier, differentially_private_sgd and mnist_vae at
cec06d116c05; gaussian_process_regression and kernel_lsq at 035c1e566d61 and control,
control_test at 9f96a0474e76, the last commits before JAX removed them), with JAX or,
after the import rename of the doc pages (`jax_doc_cells.rename`), with tracer.

Nothing in a program is edited but its imports (and, for both libraries, control_test's
two lines of absl flag parsing, `jax.config` plumbing JAX itself no longer has). What
is not array code comes from `jax_example_standins`: the MNIST download (synthetic
arrays, so sizes stay small), absl flags (set as from a command line), matplotlib
(recording what it draws) and dp_accounting.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from tests import jax_doc_cells
from tests.jax_example_standins import Drawing, mnist_stand_in, stand_ins

EXAMPLES = pathlib.Path(__file__).parent / "jax_examples"
_ABSL_FLAG_PARSING = re.compile(
    r"^from jax\.config import config\n|^config\.parse_flags_with_absl\(\)\n", re.M)


@dataclass
class Program:
    """A loaded program: its module globals, what it printed and what it drew."""
    ns: dict[str, Any]
    library: str
    stdout: io.StringIO = field(default_factory=io.StringIO)
    drawing: Drawing = field(default_factory=Drawing)
    examples: types.ModuleType = field(default_factory=lambda: types.ModuleType("examples"))
    argv: dict[str, Any] = field(default_factory=dict)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The stand-ins installed and stdout captured (the program's own calls)."""
        with stand_ins(self.examples, self.argv, self.drawing), \
                contextlib.redirect_stdout(self.stdout):
            yield

    def record(self, name: str) -> list[tuple[Any, ...]]:
        """Wrap the program's global function `name`: every call's arguments are kept
        (how the tests see values a program computes inside `main`)."""
        calls: list[tuple[Any, ...]] = []
        fun = self.ns[name]

        def recorded(*args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            return fun(*args, **kwargs)
        self.ns[name] = recorded
        return calls

    def call(self, name: str, *args: Any) -> Any:
        with self.running():
            return self.ns[name](*args)

    def numbers(self) -> list[float]:
        """Every number the program printed, in order."""
        text = self.stdout.getvalue()
        return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", text)]


def source(name: str, library: str) -> str:
    text = _ABSL_FLAG_PARSING.sub("", (EXAMPLES / f"{name}.py").read_text())
    return jax_doc_cells.rename(text) if library == "tracer" else text


def load(name: str, library: str, *, as_main: bool = False, argv: dict[str, Any] | None = None,
         mnist: tuple[Any, ...] = (64, 32), examples: dict[str, Program] | None = None) -> Program:
    """Execute `examples/NAME.py` (as `__main__` when `as_main`: its script part runs)
    with the global NumPy seed fixed, as the module `examples.NAME`."""
    prog = Program({"__name__": "__main__" if as_main else f"examples.{name}",
                    "__file__": str(EXAMPLES / f"{name}.py")}, library, argv=argv or {})
    datasets = types.ModuleType("examples.datasets")
    datasets.mnist = mnist_stand_in(*mnist)
    prog.examples.datasets = datasets
    for other, loaded in (examples or {}).items():
        module = types.ModuleType(f"examples.{other}")
        module.__dict__.update(loaded.ns)
        setattr(prog.examples, other, module)
    np.random.seed(0)
    code = compile(source(name, library), prog.ns["__file__"], "exec")
    with prog.running():
        exec(code, prog.ns)
    return prog


@contextlib.contextmanager
def library_mode(library: str, backend: str = "interpreter") -> Iterator[None]:
    """JAX in float64 (tracer's default), or tracer on `backend`."""
    if library == "jax":
        import jax
        with jax.enable_x64(True):
            yield
        return
    import tracer as tr
    old = tr.config.default_backend
    tr.config.update("default_backend", backend)
    try:
        yield
    finally:
        tr.config.update("default_backend", old)
