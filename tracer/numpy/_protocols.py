"""NumPy's override protocols on traced arrays: `np.sin(x)`, `np.sum(x, axis=0)` and
`np.concatenate([x, y])` on a `Tracer` run the `tracer.numpy` function of the same name.

- `__array_ufunc__` routes a ufunc call (`np.add(x, 1)`, `ndarray + tracer`) and the
  ufunc methods `reduce` (`np.add.reduce` is `sum`, `np.maximum.reduce` is `max`, ...),
  `accumulate` (`cumsum`, `cumprod`, running max / min) and `outer`.
- `__array_function__` routes every other NumPy function by its module and name
  (`numpy.linalg.solve` -> `tracer.numpy.linalg.solve`).
- `__array__` (`np.asarray(x)`, a NumPy function outside both protocols) raises
  `ConcretizationError` saying to use `tracer.numpy` instead.

A NumPy function tracer.numpy lacks raises `TracerTypeError` (a `TypeError`)
naming it. The protocols only apply when a traced array is an argument: NumPy on
plain ndarrays stays NumPy.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable

import numpy as np

from ..errors import ConcretizationError, TracerTypeError
from ..tracing import Tracer, concretization_message

__all__ = ["array_ufunc", "array_function", "array", "array_namespace", "ufunc_reduce",
           "ufunc_accumulate"]

# ufunc keyword arguments that only steer NumPy's loop selection; their defaults are fine.
_LOOP_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None}

# ufunc.reduce: the tracer.numpy reduction it is (NumPy's sum is add.reduce, ...).
_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "logical_and": "all", "logical_or": "any"}
# ufunc.accumulate: add and multiply are cumsum / cumprod (same dtypes in NumPy 2).
_ACCUMULATIONS = {"add": "cumsum", "multiply": "cumprod"}


def _tnp() -> ModuleType:
    return importlib.import_module("tracer.numpy")


def _unsupported(what: str, hint: str) -> TracerTypeError:
    return TracerTypeError(f"{what} is not supported on traced arrays: {hint}")


def _check_loop_kwargs(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Drop `out=None` and loop-selection defaults; anything else is NumPy's business
    only if tracer.numpy's function takes it."""
    out = kwargs.pop("out", None)
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise _unsupported(f"numpy.{name}(..., out=...)", "traced arrays are immutable; "
                           "use the returned value")
    for key, default in _LOOP_DEFAULTS.items():
        if key in kwargs:
            value = kwargs.pop(key)
            if value is not default and value != default:
                raise _unsupported(f"numpy.{name}(..., {key}={value!r})",
                                   f"tracer.numpy.{name} only computes with NumPy's "
                                   f"default {key}")
    return kwargs


def _ufunc_function(name: str) -> Callable[..., Any]:
    fn = getattr(_tnp(), name, None)
    if not callable(fn):
        raise _unsupported(f"the ufunc numpy.{name}", f"tracer.numpy has no {name}; write "
                           "it with the tracer.numpy functions it is made of")
    return fn


def array_ufunc(self: Tracer, ufunc: np.ufunc, method: str, *inputs: Any,
                **kwargs: Any) -> Any:
    """`Tracer.__array_ufunc__`: run ufunc (or one of its methods) with tracer.numpy."""
    name = ufunc.__name__
    kwargs = _check_loop_kwargs(name, kwargs)
    if method == "__call__":
        return _ufunc_function(name)(*inputs, **kwargs)
    if method == "reduce":
        return ufunc_reduce(name, *inputs, **kwargs)
    if method == "accumulate":
        return ufunc_accumulate(name, *inputs, **kwargs)
    if method == "outer":
        return _outer(name, *inputs, **kwargs)
    if method == "at":
        raise _unsupported(f"numpy.{name}.at (it updates its argument in place)",
                           "use the functional form `x = x.at[idx].add(v)` (also .set, "
                           ".multiply, .min, .max)")
    raise _unsupported(f"numpy.{name}.{method}", "use tracer.numpy reductions and "
                       "indexing instead")


def ufunc_reduce(name: str, array: Any, axis: Any = 0, dtype: Any = None,
                 keepdims: bool = False, **kwargs: Any) -> Any:
    """`np.<ufunc>.reduce`: NumPy's default axis is 0 (None reduces everything)."""
    tnp = _tnp()
    if name in _REDUCTIONS:
        fn = getattr(tnp, _REDUCTIONS[name])
        extra = {"dtype": dtype} if name in ("add", "multiply") else {}
        if dtype is not None and not extra:
            array = tnp.asarray(array, dtype=dtype)
        return fn(array, axis=axis, keepdims=keepdims, **extra, **kwargs)
    from ._accumulate import monoid_reduce

    return monoid_reduce(name, array, axis, dtype, keepdims, **kwargs)


def ufunc_accumulate(name: str, array: Any, axis: int = 0, dtype: Any = None) -> Any:
    """`np.<ufunc>.accumulate` along `axis` (default 0, as NumPy)."""
    tnp = _tnp()
    if name in _ACCUMULATIONS:
        return getattr(tnp, _ACCUMULATIONS[name])(array, axis=axis, dtype=dtype)
    from ._accumulate import running

    return running(name, array, axis, dtype)


def _outer(name: str, a: Any, b: Any, **kwargs: Any) -> Any:
    """`np.<ufunc>.outer(a, b)`: `ufunc(a[..., None, ...], b)` over all pairs."""
    tnp = _tnp()
    a, b = tnp.asarray(a), tnp.asarray(b)
    a = tnp.reshape(a, tuple(np.shape(a)) + (1,) * np.ndim(b))
    return _ufunc_function(name)(a, b, **kwargs)


def _namespace(module: str) -> ModuleType | None:
    """The tracer.numpy module standing for NumPy module `module` (None if there is none)."""
    parts = module.split(".")
    if parts[0] != "numpy":
        return None
    sub = [p for p in parts[1:] if not p.startswith("_")]
    if len(sub) > 1 or (sub and sub[0] not in ("linalg", "fft")):
        return None
    return _tnp() if not sub else importlib.import_module(f"tracer.numpy.{sub[0]}")


def _public_function(module: ModuleType, name: str) -> Callable[..., Any] | None:
    fn = getattr(module, name, None)
    exported = getattr(module, "__all__", None)
    if not callable(fn) or isinstance(fn, type) or (exported is not None and
                                                   name not in exported):
        return None
    return fn


# Functions tracer.numpy itself applies to traced arrays: answered here, without a call.
_DIRECT: dict[Any, Callable[..., Any]] = {
    np.shape: lambda a: tuple(a.shape),
    np.ndim: lambda a: a.ndim,
}


def array_function(self: Tracer, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    """`Tracer.__array_function__`: run the tracer.numpy function NumPy's `func` names."""
    direct = _DIRECT.get(func)
    if direct is not None and len(args) == 1 and not kwargs and isinstance(args[0], Tracer):
        return direct(args[0])
    if any(not issubclass(t, (Tracer, np.ndarray)) for t in types):
        return NotImplemented
    module = getattr(func, "__module__", None) or "numpy"
    name = func.__name__
    namespace = _namespace(module)
    fn = None if namespace is None else _public_function(namespace, name)
    if fn is None:
        where = "tracer.numpy" + module[len("numpy"):] if namespace is not None \
            else "tracer.numpy"
        raise _unsupported(f"{module}.{name}", f"{where} has no {name}. Write it with "
                           "tracer.numpy functions (`import tracer.numpy as tnp`), or call "
                           "it outside the traced function")
    return fn(*args, **kwargs)


def array(self: Tracer, dtype: Any = None, copy: Any = None) -> np.ndarray:
    """`Tracer.__array__`: a traced value has no NumPy array yet."""
    raise ConcretizationError(concretization_message(
        self.aval, "a NumPy array (np.asarray / np.array, or a NumPy function that converts "
        "its argument). Inside jit / grad / vmap use tracer.numpy (`tnp.asarray(x)`), or "
        "call NumPy's functions on the traced array (np.sin(x), np.sum(x, axis=0) run "
        "tracer.numpy); return values from the traced function to get concrete arrays. "
        "To index a NumPy constant with a traced index (`table[i]`), write "
        "`tnp.take(table, i, axis=0)`"))


def array_namespace(self: Tracer, /, *, api_version: str | None = None) -> ModuleType:
    """`Tracer.__array_namespace__`: the array API standard namespace (2024.12)."""
    ns = importlib.import_module("tracer.numpy._array_api")
    if api_version is not None and api_version not in ns.SUPPORTED_VERSIONS:
        raise TracerTypeError(f"__array_namespace__: api_version {api_version!r} is not "
                              f"supported; use one of {ns.SUPPORTED_VERSIONS}")
    return ns
