"""JAX's example programs run as they are, under the import rename alone
(`tests/jax_example_programs.py`), against the same programs run by JAX in float64
(`jax_enable_x64`) in this process: what they compute (parameters, predictions, what
they draw) to 1e-12 (1e-9 after a thousand optimizer steps), what they print, equal.

CI runs tracer on the interpreter backend with small synthetic datasets; the VAE
(100 epochs fixed in the program) and JAX's own run of control_test are `slow_ports`.
"""

from __future__ import annotations

import re
import unittest

import numpy as np
import pytest

from tests.jax_example_programs import Program, library_mode, load

jax = pytest.importorskip("jax")


def _both(run, backend: str = "interpreter") -> tuple[Program, Program]:
    with library_mode("tracer", backend):
        got = run("tracer")
    with library_mode("jax"):
        want = run("jax")
    return got, want


def _close(got, want, rtol: float = 1e-12) -> None:
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves) > 0
    for g, w in zip(got_leaves, want_leaves, strict=True):
        w = np.asarray(w)
        assert np.shape(g) == w.shape
        # JAX's mean of bools is float32 even with x64: compare at its precision
        tol = max(rtol, 1e-6) if w.dtype == np.float32 else rtol
        np.testing.assert_allclose(np.asarray(g, np.float64), w.astype(np.float64), rtol=tol,
                                   atol=tol)


def _printed(prog: Program, pattern: str) -> list[str]:
    return re.findall(pattern, prog.stdout.getvalue())


def _drawn(prog: Program) -> list[np.ndarray]:
    return [a.astype(np.float64) for _, args in prog.drawing.calls for a in args]


def test_mnist_classifier_with_stax_and_optimizers() -> None:
    got, want = _both(lambda lib: load("mnist_classifier", lib, as_main=True, mnist=(16, 16)))
    params = [p.ns["get_params"](p.ns["opt_state"]) for p in (got, want)]
    _close(*params)
    accuracy = r"set accuracy (\S+)"
    assert _printed(got, accuracy) == _printed(want, accuracy)
    assert len(_printed(got, accuracy)) == 20


def test_differentially_private_sgd() -> None:
    def run(lib: str) -> Program:
        # JAX in x64 refuses float32 images against float64 conv parameters; tracer's
        # stax promotes them, so JAX gets the same images as float64
        mnist = (16, 8) if lib == "tracer" else (16, 8, np.float64)
        prog = load("differentially_private_sgd", lib, argv={"epochs": 2, "batch_size": 8},
                    mnist=mnist)
        prog.ns["evaluated"] = prog.record("accuracy")
        prog.call("main", None)
        return prog
    got, want = _both(run)
    _close(got.ns["evaluated"], want.ns["evaluated"])
    lines = r"(Test set loss.*|For delta.*)"
    assert _printed(got, lines) == _printed(want, lines)
    assert len(_printed(got, lines)) == 4


def test_gaussian_process_hyperparameter_fit() -> None:
    got, want = _both(lambda lib: _main(load("gaussian_process_regression", lib)))
    likelihood = r"neg marginal likelihood: (\S+)"
    assert _printed(got, likelihood) == _printed(want, likelihood)
    # a thousand steps of the example's RMSProp-with-momentum: rounding differences grow
    _close(_drawn(got), _drawn(want), rtol=1e-9)
    assert [name for name, _ in got.drawing.calls] == ["plot", "plot", "fill_between"]


def _main(prog: Program) -> Program:
    prog.call("main", None)
    return prog


def test_kernel_least_squares() -> None:
    def run(lib: str) -> Program:
        prog = load("kernel_lsq", lib, as_main=True)
        prog.ns["predicted"] = prog.call("predict", prog.ns["xs"])
        return prog
    got, want = _both(run)
    _close(got.ns["predicted"], want.ns["predicted"], rtol=1e-9)
    mse = [float(_printed(p, r"MSE: (\S+)")[0]) for p in (got, want)]
    np.testing.assert_allclose(mse[0], mse[1], rtol=1e-6)
    assert mse[0] < 1e-6
    assert "jaxpr of gram(rbf_kernel)" in got.stdout.getvalue()


def _control_tests(library: str) -> dict[str, str | None]:
    """control_test's eleven tests of control.py: None for a pass, else the traceback."""
    with library_mode(library):
        control = load("control", library)
        tests = load("control_test", library, examples={"control": control})
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(
            tests.ns["ControlExampleTest"])
        outcome: dict[str, str | None] = {t._testMethodName: None for t in suite}
        result = unittest.TestResult()
        with tests.running():
            suite.run(result)
    for test, trace in result.errors + result.failures:
        outcome[test._testMethodName] = trace
    return outcome


# control.py reads `spec.Q[T + 1]` of an array of T + 1 entries: JAX clamps the static
# index to T, tracer raises IndexError as NumPy does (docs/porting-from-jax.md).
OUT_OF_BOUNDS = {"testLqrSolve", "testLqrPredict", "testIlqrWithLqrProblem",
                 "testIlqrWithLqrProblemSpecifiedGenerally", "testIlqrWithNonlinearProblem",
                 "testMpcWithLqrProblem", "testMpcWithLqrProblemSpecifiedGenerally",
                 "testMpcWithNonlinearProblem"}


def test_control_tests_pass_but_for_the_static_out_of_bounds_index() -> None:
    outcome = _control_tests("tracer")
    assert len(outcome) == 11
    failed = {name for name, trace in outcome.items() if trace is not None}
    assert failed == OUT_OF_BOUNDS
    for name in failed:
        assert "IndexError" in outcome[name] and "index 11 is out of bounds" in outcome[name]


def test_control_trajectories_match_jax() -> None:
    def run(lib: str) -> Program:
        prog = load("control", lib)
        U = prog.ns["jnp"].array(np.linspace(-1.0, 1.0, 12).reshape(6, 2))
        prog.ns["X"] = prog.call("trajectory", lambda t, x, u: x * 0.9 + u * (t + 1), U,
                                 np.array([0.5, -0.25]))
        return prog
    got, want = _both(run)
    _close(got.ns["X"], want.ns["X"])


@pytest.mark.slow_ports
def test_control_tests_all_pass_under_jax() -> None:
    assert all(trace is None for trace in _control_tests("jax").values())


@pytest.mark.slow_ports
def test_mnist_vae() -> None:
    got, want = _both(lambda lib: load("mnist_vae", lib, as_main=True, mnist=(32, 32)))
    params = [p.ns["get_params"](p.ns["opt_state"]) for p in (got, want)]
    _close(*params, rtol=1e-9)
    elbo = r"(?m)^\s*\d+ (\S+) \("
    got_elbo, want_elbo = (np.array(_printed(p, elbo), float) for p in (got, want))
    np.testing.assert_allclose(got_elbo, want_elbo, rtol=1e-9)
    assert all(np.array_equal(a, b) for a, b in zip(_drawn(got), _drawn(want), strict=True))


@pytest.mark.slow_ports
def test_programs_on_the_cpu_backend() -> None:
    gp = _both(lambda lib: _main(load("gaussian_process_regression", lib)), "cpu")
    _close(_drawn(gp[0]), _drawn(gp[1]), rtol=1e-9)

    def kernel_lsq(lib: str) -> Program:
        prog = load("kernel_lsq", lib, as_main=True)
        prog.ns["predicted"] = prog.call("predict", prog.ns["xs"])
        return prog
    got, want = _both(kernel_lsq, "cpu")
    _close(got.ns["predicted"], want.ns["predicted"], rtol=1e-9)
    mnist = _both(lambda lib: load("mnist_classifier", lib, as_main=True, mnist=(16, 16)), "cpu")
    _close(*[p.ns["get_params"](p.ns["opt_state"]) for p in mnist], rtol=1e-10)
