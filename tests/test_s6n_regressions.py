"""Regressions found by differential fuzzing of tracer.numpy against NumPy 2 (eagerly and
under `tr.jit`): every case is checked against NumPy itself."""

import warnings

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def _both(fn, np_fn, *arrays):
    """tnp eagerly and under jit (arrays traced) both match NumPy."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np_fn(*arrays)
        _same(fn(*arrays), want)
        _same(tr.jit(fn)(*arrays), want)


def _raises_like_numpy(fn, np_fn, *args):
    with pytest.raises(Exception) as np_err:
        np_fn(*args)
    builtin = next(b for b in (IndexError, TypeError, ValueError) if isinstance(np_err.value, b))
    with pytest.raises(tr.TracerError) as err:
        fn(*args)
    assert isinstance(err.value, builtin)


I8 = np.array([1, 2], np.int8)


@pytest.mark.parametrize("scalar", [300, -129, 2.5])
def test_nextafter_python_int_meets_the_float_loop(scalar):
    # NumPy: the Python int goes to the float16 loop directly, no int8 overflow
    _both(lambda a: tnp.nextafter(a, scalar), lambda a: np.nextafter(a, scalar), I8)
    _both(lambda a: tnp.nextafter(scalar, a), lambda a: np.nextafter(scalar, a), I8)


def test_ldexp_of_a_python_int_is_float16_with_an_array_exponent():
    _both(lambda n: tnp.ldexp(3, n), lambda n: np.ldexp(3, n), I8)
    _same(tnp.ldexp(3, 2), np.ldexp(3, 2))  # both Python: float64


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "ptp",
                                  "count_nonzero", "nansum", "nanmax", "argmax", "argmin",
                                  "cumsum", "cumprod", "nanargmin", "nancumsum", "argsort",
                                  "nanstd"])
@pytest.mark.parametrize("axis", [0, -1])
def test_zero_d_reductions_take_axis_0_and_minus_1(name, axis):
    x = np.array(2.5)
    _both(lambda a: getattr(tnp, name)(a, axis=axis), lambda a: getattr(np, name)(a, axis=axis),
          x)


@pytest.mark.parametrize("name,axis", [("sum", 1), ("sum", (0,)), ("argmax", 1),
                                       ("cumsum", 1), ("argsort", 1), ("mean", 0)])
def test_zero_d_reductions_still_reject_other_axes(name, axis):
    _raises_like_numpy(lambda a: getattr(tnp, name)(a, axis=axis),
                       lambda a: getattr(np, name)(a, axis=axis), np.array(2.5))


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd"])
def test_nan_statistics_refuse_an_integer_dtype_for_float_input(name):
    _raises_like_numpy(lambda a: getattr(tnp, name)(a, dtype=np.int32),
                       lambda a: getattr(np, name)(a, dtype=np.int32), np.ones(3))


@pytest.mark.parametrize("name,dtype", [("std", np.bool_), ("nanstd", np.int16),
                                        ("nanstd", np.bool_), ("nanvar", np.int16)])
def test_std_with_an_integer_or_bool_dtype(name, dtype):
    x = np.array([[2, 3], [4, 6]])
    _both(lambda a: getattr(tnp, name)(a, dtype=dtype), lambda a: getattr(np, name)(a, dtype=dtype),
          x)
    if name.endswith("std"):  # NumPy's sqrt(out=var) cannot write floats into the dtype
        _raises_like_numpy(lambda a: getattr(tnp, name)(a, dtype=dtype, axis=0),
                           lambda a: getattr(np, name)(a, dtype=dtype, axis=0), x)


@pytest.mark.parametrize("name,shape,axis", [
    ("median", (4, 0, 0), 2), ("median", (1, 0, 0), (-3,)), ("median", (0, 3, 4), 1),
    ("nanmedian", (0,), (0,)), ("nanmedian", (0, 3, 4), 0), ("nanmedian", (0, 3, 4), ()),
])
def test_median_of_empty_slices(name, shape, axis):
    x = np.zeros(shape)
    _both(lambda a: getattr(tnp, name)(a, axis=axis, keepdims=True),
          lambda a: getattr(np, name)(a, axis=axis, keepdims=True), x)


def test_nanquantile_of_empty_slices_is_nan():
    x = np.zeros((2, 0, 4))
    _both(lambda a: tnp.nanquantile(a, 0.5, axis=(1, 2)),
          lambda a: np.nanquantile(a, 0.5, axis=(1, 2)), x)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": -1}, {"include_initial": True}])
def test_cumulative_of_a_zero_d_array(name, kw):
    _both(lambda a: getattr(tnp, name)(a, **kw), lambda a: getattr(np, name)(a, **kw),
          np.array(5))


def test_diff_with_n_0_returns_the_input_unchecked():
    _same(tnp.diff(np.array(3), n=0), np.diff(np.array(3), n=0))
    _same(tnp.diff(np.array([3, 4]), n=0, axis=5), np.diff(np.array([3, 4]), n=0, axis=5))


@pytest.mark.parametrize("shape,idx", [
    ((2, 0, 4), (-1, None, np.array([], bool))), ((0, 0), (Ellipsis, np.array([], bool))),
    ((4, 0), (np.array([], int), None, np.array([], int))), ((0, 3), (np.array([], int), 1)),
])
def test_integer_index_arrays_into_an_empty_axis(shape, idx):
    x = np.zeros(shape, np.float32)
    _both(lambda a: tnp.getitem(a, idx), lambda a: a[idx], x)


def test_traced_indices_into_an_empty_axis_give_an_empty_result_or_raise():
    f = tr.jit(lambda x, i: x[i])
    assert f(np.zeros((0, 3)), np.zeros(0, np.int64)).shape == (0, 3)
    with pytest.raises(tr.TracerError) as err:
        f(np.zeros((0, 3)), np.array([0]))
    assert isinstance(err.value, IndexError)


@pytest.mark.parametrize("call", [
    lambda m: m.full((2,), 300, dtype=np.uint8), lambda m: m.full((2,), -1, dtype=np.uint8),
    lambda m: m.full_like(np.zeros(2, np.int8), -129),
])
def test_full_refuses_an_out_of_range_python_int(call):
    with pytest.raises(OverflowError):
        call(np)
    with pytest.raises(tr.TracerError):
        call(tnp)


def test_full_still_casts_other_fill_values_unsafely():
    _same(tnp.full((2,), 300.0, dtype=np.int32), np.full((2,), 300.0, dtype=np.int32))
    big = np.int64(300)  # a NumPy integer is cast unsafely (wraps), not checked
    _same(tnp.full((2,), big, dtype=np.uint8), np.full((2,), big, dtype=np.uint8))


@pytest.mark.parametrize("spec,shapes", [
    ("i->", [(0,)]), ("ij,jk->ik", [(2, 0), (0, 3)]), ("ij,ij->ij", [(1, 0), (3, 1)]),
    ("i,i->", [(0,), (1,)]), ("ij,jk", [(2, 1), (0, 3)]), ("...i,...i", [(0, 2), (1, 2)]),
])
def test_einsum_size_0_labels_win_over_broadcast_1(spec, shapes):
    arrays = [np.ones(s) for s in shapes]
    _both(lambda *a: tnp.einsum(spec, *a), lambda *a: np.einsum(spec, *a), *arrays)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("a,v", [([3, 0.5, 7, 1e-3, 0.5], [np.inf, 7, 7]), ([1, 2, 3], [np.nan, 1]),
                                 ([1, np.inf], [1, 2, 3, 4]), ([1, 2], [1j, np.inf])])
def test_convolve_never_multiplies_padding_by_inf_or_nan(name, mode, a, v):
    _both(lambda x, y: getattr(tnp, name)(x, y, mode=mode),
          lambda x, y: getattr(np, name)(x, y, mode=mode), np.asarray(a), np.asarray(v))


def test_cross_of_a_zero_d_array_is_a_value_error():
    _raises_like_numpy(tnp.cross, np.cross, np.array(3.0), np.ones((3, 2)))


def test_roll_with_a_tuple_shift_and_no_axis_adds_the_shifts():
    x = np.arange(6).reshape(2, 3)
    _both(lambda a: tnp.roll(a, (1, 2)), lambda a: np.roll(a, (1, 2)), x)
    _both(lambda a: tnp.roll(a, (1, -5), axis=None), lambda a: np.roll(a, (1, -5), axis=None), x)


@pytest.mark.parametrize("v", [300, -1, 2.5])
def test_searchsorted_python_scalar_outside_the_array_dtype(v):
    a = np.array([0, 2, 3, 200], np.uint8)
    _both(lambda x: tnp.searchsorted(x, v), lambda x: np.searchsorted(x, v), a)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("name", ["concatenate", "stack", "vstack", "hstack"])
@pytest.mark.parametrize("dtype,casting", [(np.float32, "same_kind"), (np.int8, "same_kind"),
                                           (np.int8, "unsafe"), (None, "no"), (None, "safe"),
                                           (np.complex64, "safe")])
def test_joins_check_casting(name, dtype, casting):
    arrays = (np.array([3, 200, 1], np.uint64), np.array([1 + 2j, 3, 4], np.complex64),
              np.array([1, 2, 3], np.uint8))
    for items in (arrays, arrays[::2], (arrays[2], np.array([1.5, 2, 3]))):
        np_fn = lambda *a: getattr(np, name)(a, dtype=dtype, casting=casting)  # noqa: E731
        fn = lambda *a: getattr(tnp, name)(a, dtype=dtype, casting=casting)  # noqa: E731
        try:
            want = np_fn(*items)
        except TypeError:
            _raises_like_numpy(fn, np_fn, *items)
            continue
        _same(fn(*items), want)


def test_sort_of_complex_treats_signed_zero_real_parts_as_equal():
    x = np.array([np.inf - 2.25j, -0.0 + 1e-3j, -2.25 - np.inf * 1j, 1e-3 + 0.5j,
                  complex(0.5, np.inf), complex(0, -np.inf), 3 + 7j])
    _both(tnp.sort, np.sort, x)
    got = tnp.sort(x)
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(np.sort(x).real))


@pytest.mark.parametrize("name", ["negative", "absolute", "square", "isnan", "add"])
def test_python_ints_beyond_int64_raise_a_tracer_error(name):
    fn = getattr(tnp, name)
    args = (2**64, 1) if name == "add" else (2**64,)
    with pytest.raises(tr.TracerError) as err:
        fn(*args)
    assert isinstance(err.value, OverflowError)


_NAN_COMPLEX = np.array([complex(-0.0, 1), complex(0.0, -1), complex(np.nan, 0), complex(0, np.nan),
                         1 + 1j, complex(-0.0, -0.0), complex(np.nan, -3), complex(2, np.nan),
                         complex(np.nan, np.nan), complex(-np.inf, 2)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complex_nan_order_of_sort_argsort_searchsorted(seed):
    # NumPy: R+Rj < R+nanj < nan+Rj < nan+nanj, each class in its own order
    z = np.random.default_rng(seed).permutation(_NAN_COMPLEX)
    _both(tnp.sort, np.sort, z)
    _both(lambda a: tnp.argsort(a, stable=True), lambda a: np.argsort(a, stable=True), z)
    _both(lambda a, v: tnp.searchsorted(a, v, side="right"),
          lambda a, v: np.searchsorted(a, v, side="right"), np.sort(z), z)
    _same(tnp.lexsort((z, z.real)), np.lexsort((z, z.real)))


@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_merges_every_complex_with_a_nan_part(equal_nan):
    z = np.random.default_rng(3).permutation(_NAN_COMPLEX)
    kw = dict(return_index=True, return_inverse=True, return_counts=True, equal_nan=equal_nan)
    for got, want in zip(tnp.unique(z, **kw), np.unique(z, **kw), strict=True):
        _same(got, want)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", [None, np.complex64, np.complex128])
@pytest.mark.parametrize("complex_input", [False, True])
def test_var_std_keep_an_explicit_complex_dtype(name, dtype, complex_input):
    x = np.arange(4, dtype=np.float32)
    if complex_input:
        x = x + 1j * x[::-1]
    fn, np_fn = getattr(tnp, name), getattr(np, name)
    want = np_fn(x, dtype=dtype)
    got = fn(x, dtype=dtype)
    assert got.dtype == want.dtype and tr.jit(lambda v: fn(v, dtype=dtype))(x).dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
