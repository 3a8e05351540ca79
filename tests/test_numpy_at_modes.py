"""`x.at[idx].get(mode=, fill_value=)` and `.set/.add(..., mode=)` for out-of-bounds
indices, against JAX (x64): eager, under `jit` with traced indices, and under `grad`;
and against NumPy on random index arrays (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

CASES = {
    "fill_scalar": lambda L: L.arange(10.0).at[11].get(mode="fill", fill_value=L.nan),
    "clip_scalar": lambda L: L.arange(10.0).at[11].get(mode="clip"),
    "fill_default_int": lambda L: L.arange(10).at[np.array([-12, 3, 10, -1])].get(mode="fill"),
    "fill_default_bool": lambda L: (L.arange(4) > 1).at[np.array([5, 3])].get(mode="fill"),
    "fill_row_and_slice": lambda L: L.arange(12.0).reshape(3, 4).at[5, 1:].get(mode="fill"),
    "fill_2d_index_array": lambda L: L.arange(12.0).reshape(3, 4).at[
        :, np.array([[0, 7], [-5, 2]])].get(mode="fill", fill_value=-1.0),
    "fill_split_advanced": lambda L: L.arange(24.0).reshape(2, 3, 4).at[
        np.array([1, 2]), :, np.array([-1, 4])].get(mode="fill", fill_value=0.0),
    "clip_after_ellipsis": lambda L: L.arange(12.0).reshape(3, 4).at[
        ..., np.array([0, 9])].get(mode="clip"),
    "in_bounds_unchanged": lambda L: L.arange(6.0).at[np.array([1, -2])].get(mode="fill"),
    "set_drop": lambda L: L.arange(5.0).at[np.array([1, 7, -9])].set(
        np.array([10.0, 20.0, 30.0]), mode="drop"),
    "add_clip": lambda L: L.arange(5.0).at[np.array([1, 7, -9])].add(1.0, mode="clip"),
    "set_drop_static_pair": lambda L: L.arange(6).reshape(2, 3).at[1, 5].set(9, mode="drop"),
    "multiply_drop_none_axis": lambda L: L.arange(6.0).reshape(2, 3).at[
        None, 1, np.array([0, 3])].multiply(2.0, mode="drop"),
}


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mode_matches_jax(name: str) -> None:
    with jax.enable_x64(True):
        want = CASES[name](jnp)
    _same(CASES[name](tnp), want)


def test_traced_indices_under_jit_and_grad_match_jax() -> None:
    x, i = np.arange(4.0), np.array([0, 5, -1, -7])

    def fill(L):
        return lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0)

    def drop(L):
        return lambda x, i: x.at[i].set(7.0, mode="drop")

    def loss(L):
        return lambda x: (x.at[np.array([1, 9])].get(mode="fill", fill_value=0.0) ** 2).sum()

    with jax.enable_x64(True):
        want = [jax.jit(fill(jnp))(x, i), jax.jit(drop(jnp))(x, i[:2]), jax.grad(loss(jnp))(x)]
    jit = lambda f: tr.jit(f, backend="interpreter")  # noqa: E731
    got = [jit(fill(tnp))(x, i), jit(drop(tnp))(x, i[:2]), tr.grad(loss(tnp))(x)]
    for g, w in zip(got, want, strict=True):
        _same(g, w)


def test_unknown_mode_is_refused_with_the_user_line() -> None:
    with pytest.raises(tr.TracerError, match=r"mode must be one of .*'fill'.*got 'wrap'") as e:
        tnp.arange(3.0).at[1].get(mode="wrap")
    assert isinstance(e.value, ValueError) and "test_numpy_at_modes.py" in str(e.value)
    with pytest.raises(ValueError, match=r"\.at\[\]\.set: mode must be one of .*'drop'"):
        tnp.arange(3.0).at[1].set(0.0, mode="fill")


def test_results_say_they_live_on_the_host() -> None:
    x = tr.jit(lambda a: a + 1)(np.ones(2))
    assert x.devices() == {"cpu"} == tnp.arange(3).devices()
    assert x.sharding.device_set == {"cpu"}


def _normalized(i: np.ndarray, n: int) -> np.ndarray:
    return np.where(i < 0, i + n, i)


@settings(max_examples=60)
@given(st.data())
def test_modes_against_numpy_on_random_indices(data) -> None:
    """Any integer index array along any axis: 'fill' reads the fill value exactly where
    the index is out of bounds, 'clip' clamps, 'drop' skips those updates."""
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape")
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-2 * n - 1, 2 * n), min_size=1,
                                      max_size=5), label="idx"))
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    where = (slice(None),) * axis + (idx,)
    norm = _normalized(idx, n)
    inside = (norm >= 0) & (norm < n)
    taken = np.take(x, np.clip(norm, 0, n - 1), axis=axis)
    mask = inside.reshape((1,) * axis + (-1,) + (1,) * (len(shape) - axis - 1))
    np.testing.assert_array_equal(tnp.array(x).at[where].get(mode="clip"), taken)
    np.testing.assert_array_equal(tnp.array(x).at[where].get(mode="fill", fill_value=-1.0),
                                  np.where(mask, taken, -1.0))
    want = x.copy()
    np.moveaxis(want, axis, 0)[norm[inside]] = -5.0
    np.testing.assert_array_equal(tnp.array(x).at[where].set(-5.0, mode="drop"), want)
