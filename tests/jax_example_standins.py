"""Stand-ins for what JAX's example programs import that is not array code: the MNIST
download (`examples.datasets`: synthetic arrays of MNIST's shapes and dtypes), absl
(`app`, `flags` read from a dict as if from the command line, `absltest`), matplotlib
(records the arrays it is asked to draw, so the tests can compare them) and
`dp_accounting` (the RDP accountant's interface; its epsilon is a plain formula, it
only has to run). They are put in `sys.modules` while a program loads and runs.
"""

from __future__ import annotations

import contextlib
import sys
import types
import unittest
from typing import Any, Iterator

import numpy as np


def mnist_stand_in(num_train: int, num_test: int, dtype: Any = np.float32) -> Any:
    """`datasets.mnist(permute_train=False)`: float32 images in [0, 1) of 784 pixels and
    float32 one-hot labels, as the real loader returns, drawn from a fixed seed (images
    as `dtype` where a JAX run in x64 needs them float64)."""
    def mnist(permute_train: bool = False) -> tuple[np.ndarray, ...]:
        rng = np.random.RandomState(1234)
        out = []
        for n in (num_train, num_test):
            images = rng.rand(n, 28 * 28).astype(np.float32).astype(dtype)
            labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, n)]
            out += [images, labels]
        if permute_train:
            perm = np.random.RandomState(0).permutation(num_train)
            out[0], out[1] = out[0][perm], out[1][perm]
        return tuple(out)
    return mnist


class _Flag:
    def __init__(self, value: Any):
        self.value = value


def _flags_module(argv: dict[str, Any]) -> types.ModuleType:
    """absl.flags: each DEFINE_* returns a holder whose `.value` is the default, or the
    value `argv` gives (what `--name=value` on the command line would)."""
    mod = types.ModuleType("absl.flags")

    def define(name: str, default: Any, help: str = "", **kwargs: Any) -> _Flag:
        return _Flag(argv.get(name, default))
    for kind in ("boolean", "float", "integer", "string", "enum"):
        setattr(mod, f"DEFINE_{kind}", define)
    mod.FLAGS = types.SimpleNamespace()
    return mod


def _absl(argv: dict[str, Any]) -> dict[str, types.ModuleType]:
    absl, app, testing = (types.ModuleType(n) for n in ("absl", "absl.app", "absl.testing"))
    app.run = lambda main, argv=None: main([sys.argv[0]])
    absltest = types.ModuleType("absl.testing.absltest")
    absltest.main = unittest.main
    parameterized = types.ModuleType("absl.testing.parameterized")
    parameterized.TestCase = unittest.TestCase
    flags = _flags_module(argv)
    absl.app, absl.flags, absl.testing = app, flags, testing
    testing.absltest, testing.parameterized = absltest, parameterized
    return {"absl": absl, "absl.app": app, "absl.flags": flags, "absl.testing": testing,
            "absl.testing.absltest": absltest, "absl.testing.parameterized": parameterized}


class Drawing:
    """matplotlib.pyplot: every call is recorded with its array arguments as NumPy."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any]]] = []
        self.cm = types.SimpleNamespace(gray="gray")

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, [np.asarray(a) for a in args if not isinstance(a, str)]))
        return record


def _matplotlib(drawing: Drawing) -> dict[str, Any]:
    mpl = types.ModuleType("matplotlib")
    mpl.pyplot = drawing
    return {"matplotlib": mpl, "matplotlib.pyplot": drawing}


def _dp_accounting() -> dict[str, types.ModuleType]:
    """The accountant's interface; epsilon = steps * q * sigma^-2 (a stand-in number)."""
    mod, dp_event, rdp = (types.ModuleType(n) for n in ("dp_accounting", "dp_event", "rdp"))
    dp_event.GaussianDpEvent = lambda sigma: ("gaussian", float(sigma))
    dp_event.PoissonSampledDpEvent = lambda q, event: ("poisson", float(q), event)

    class RdpAccountant:
        def __init__(self, orders: list[Any]):
            self.orders = [float(o) for o in orders]
            self.steps, self.event = 0, None

        def compose(self, event: Any, steps: int) -> None:
            self.steps, self.event = self.steps + steps, event

        def get_epsilon(self, delta: float) -> float:
            _, q, (_, sigma) = self.event
            return self.steps * q / sigma ** 2
    rdp.rdp_privacy_accountant = types.SimpleNamespace(RdpAccountant=RdpAccountant)
    mod.dp_event, mod.rdp = dp_event, rdp
    return {"dp_accounting": mod}


@contextlib.contextmanager
def stand_ins(examples: types.ModuleType, argv: dict[str, Any],
              drawing: Drawing) -> Iterator[None]:
    """`examples` (the package the programs import from), absl, matplotlib and
    dp_accounting in `sys.modules` for the duration."""
    modules: dict[str, Any] = {"examples": examples, **_absl(argv), **_matplotlib(drawing),
                               **_dp_accounting()}
    for name, mod in vars(examples).items():
        if isinstance(mod, types.ModuleType):
            modules[f"examples.{name}"] = mod
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
