"""Mapping Python functions over arrays: vectorize, apply_along_axis, apply_over_axes.

NumPy loops in Python; here the function is traced once on one element (or one
core slice) and mapped with `tracer.transforms.vmap`, once per loop dimension, so
it compiles to one kernel and works inside jit / grad. The function must therefore
be traceable: data-dependent Python `if`s raise ConcretizationError (as under JAX).
`tracer.transforms` sits at tracer.numpy's level and imports tracer.numpy's
methods, so vmap is imported when a mapped function is first called.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ShapeError, TracerTypeError, TracerValueError
from ._promotion import (as_result, asarray_like, broadcast_shapes, broadcast_to_shape, cast,
                         desc, dtype_of, error, normalize_axis)
from ._shape import expand_dims, moveaxis

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes"]

_DIMS = r"\w+(?:\s*,\s*\w+)*"
_ARG = rf"\(\s*(?:{_DIMS})?\s*\)"
_SIGNATURE = re.compile(rf"^\s*{_ARG}(?:\s*,\s*{_ARG})*\s*->\s*{_ARG}(?:\s*,\s*{_ARG})*\s*$")


def _vmap(fun: Callable[..., Any], times: int) -> Callable[..., Any]:
    from ..transforms import vmap  # see the module docstring

    for _ in range(times):
        fun = vmap(fun)
    return fun


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """"(m,n),(n)->(m)" -> ([("m", "n"), ("n",)], [("m",)])."""
    if not _SIGNATURE.match(signature):
        raise error(TracerValueError, "vectorize", f"not a valid gufunc signature: "
                    f"{signature!r}")
    lhs, rhs = signature.split("->")

    def args(side: str) -> list[tuple[str, ...]]:
        return [tuple(d.strip() for d in group.split(",") if d.strip())
                for group in re.findall(r"\(([^)]*)\)", side)]
    return args(lhs), args(rhs)


class vectorize:
    """NumPy's vectorize: call `pyfunc` element-wise (or on core slices given by a gufunc
    `signature`) over broadcast arguments, via vmap.

    NumPy rule: positional indices / keyword names in `excluded` are passed through
    unmapped; `otypes` casts the outputs; a function returning a tuple gives a tuple.

    vectorize(lambda a, b: a - b if a > b else a + b) needs a traceable body: use
    tnp.where(a > b, a - b, a + b) instead of `if`.
    """

    def __init__(self, pyfunc: Any = None, otypes: Any = None, doc: str | None = None,
                 excluded: Any = None, cache: bool = False, signature: str | None = None):
        self.pyfunc = pyfunc
        self.otypes = None if otypes is None else [np.dtype(t) for t in (
            otypes if not isinstance(otypes, str) else list(otypes))]
        self.excluded = set(excluded or ())
        self.signature = signature
        self._core = _parse_signature(signature) if signature is not None else None
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.pyfunc is None:  # @vectorize(signature=...) used as a decorator factory
            (fn,) = args
            return vectorize(fn, self.otypes, self.__doc__, self.excluded, False,
                             self.signature)
        mapped = [i for i in range(len(args)) if i not in self.excluded]
        names = [k for k in kwargs if k not in self.excluded]
        values = [asarray_like(args[i], "vectorize") for i in mapped] + \
                 [asarray_like(kwargs[k], "vectorize") for k in names]
        values = [cast(v, dtype_of(v)) for v in values]
        cores = self._core[0] if self._core else [()] * len(values)
        if len(cores) != len(values):
            raise error(TracerTypeError, "vectorize", f"wrong number of positional arguments: "
                        f"expected {len(cores)}, got {len(values)}")
        values, loop_ndim = _broadcast_loops(values, cores)

        def core(*vs: Any) -> Any:
            full = list(args)
            for i, v in zip(mapped, vs, strict=False):
                full[i] = v
            kw = dict(kwargs)
            kw.update(zip(names, vs[len(mapped):], strict=True))
            return self.pyfunc(*full, **kw)

        out = _vmap(core, loop_ndim)(*values) if loop_ndim else core(*values)
        return self._finish(out)

    def _finish(self, out: Any) -> Any:
        outs = list(out) if isinstance(out, tuple) else [out]
        if self.otypes is not None:
            if len(self.otypes) != len(outs):
                raise error(TracerValueError, "vectorize", f"otypes has {len(self.otypes)} "
                            f"entries but the function returned {len(outs)} outputs")
            outs = [cast(asarray_like(o, "vectorize"), t) for o, t in zip(outs, self.otypes,
                                                                            strict=True)]
        outs = [as_result(o) for o in outs]
        return tuple(outs) if isinstance(out, tuple) else outs[0]


def _broadcast_loops(values: list[Any], cores: Sequence[tuple[str, ...]]
                     ) -> tuple[list[Any], int]:
    """Check core dims, then broadcast every argument's loop dims to the common shape."""
    sizes: dict[str, int] = {}
    loops = []
    for v, dims in zip(values, cores, strict=True):
        shape = tuple(np.shape(v))
        if len(shape) < len(dims):
            raise error(ShapeError, "vectorize", f"{desc(v)} does not have enough dimensions "
                        f"for its core dimensions {dims}")
        for name, n in zip(dims, shape[len(shape) - len(dims):], strict=True):
            if sizes.setdefault(name, n) != n:
                raise error(ShapeError, "vectorize", f"inconsistent size for core dimension "
                            f"{name!r}: {n} vs {sizes[name]}")
        loops.append(shape[:len(shape) - len(dims)])
    loop = broadcast_shapes(*loops, fname="vectorize")
    out = [broadcast_to_shape(v, loop + tuple(np.shape(v)[len(np.shape(v)) - len(d):]),
                              "vectorize") for v, d in zip(values, cores, strict=True)]
    return out, len(loop)


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any,
                     **kwargs: Any) -> Any:
    """func1d applied to every 1-D slice of arr along axis (via vmap).

    NumPy rule: the slices' results take the place of the axis: the result shape is
    arr.shape[:axis] + result.shape + arr.shape[axis + 1:].

    apply_along_axis(lambda v: v[0] + v[-1], 1, [[1, 2, 3], [4, 5, 6]]) -> [4, 10]
    """
    x = asarray_like(arr, "apply_along_axis")
    x = cast(x, dtype_of(x))
    nd = np.ndim(x)
    if nd == 0:
        raise error(TracerValueError, "apply_along_axis", "arr must have at least one "
                    "dimension")
    ax = normalize_axis(axis, nd, "apply_along_axis", of=x)
    moved = moveaxis(x, ax, -1)
    out = _vmap(lambda v: asarray_like(func1d(v, *args, **kwargs), "apply_along_axis"),
                nd - 1)(moved)
    out = asarray_like(out, "apply_along_axis")
    extra = np.ndim(out) - (nd - 1)
    if extra:
        out = moveaxis(out, tuple(range(nd - 1, nd - 1 + extra)),
                       tuple(range(ax, ax + extra)))
    return as_result(out)


def apply_over_axes(func: Callable[..., Any], a: Any, axes: Any) -> Any:
    """Apply func(a, axis) for each axis in turn, keeping the number of dimensions.

    NumPy rule: a result with one dimension fewer gets the axis back (size 1); any
    other change of ndim raises.

    apply_over_axes(tnp.sum, ones((2, 3, 4)), [0, 2]).shape -> (1, 3, 1)
    """
    val = asarray_like(a, "apply_over_axes")
    val = cast(val, dtype_of(val))
    nd = np.ndim(val)
    for axis in (axes if isinstance(axes, (list, tuple, np.ndarray)) else [axes]):
        ax = normalize_axis(int(axis), nd, "apply_over_axes", of=val)
        res = asarray_like(func(val, ax), "apply_over_axes")
        if np.ndim(res) == nd:
            val = res
        elif np.ndim(res) == nd - 1:
            val = expand_dims(res, ax)
        else:
            raise error(TracerValueError, "apply_over_axes", "function is not returning an "
                        "array of the correct shape")
    return as_result(val)
