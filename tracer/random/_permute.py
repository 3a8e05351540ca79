"""permutation and choice, as `jax.random.permutation` / `jax.random.choice`.

A shuffle sorts the values by fresh random 32-bit keys, ceil(3 ln(n) / ln(2**32 - 1))
times (collisions of 32-bit keys then stop mattering), with a stable sort: JAX's
algorithm, so the permutations are JAX's. Weighted choice with replacement inverts
the cumulative weights (an index is the count of cumulative weights below the
draw, an O(draws * n) comparison); without replacement it takes the top n of
Gumbel-perturbed log weights.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import numpy as tnp
from .. import ops
from ..errors import ConcretizationError, TracerIndexError, TracerTypeError, TracerValueError
from ..ops.common import wrapper_error
from ..tracing import Tracer
from ._distributions import FLOATS, as_dtype, gumbel, randint, uniform
from ._keys import aval, canonical_shape, check_key, nth, random_bits, split

# Index results are int64, as jax.random gives them with x64 enabled (NumPy's int).
INDEX = np.dtype(np.int64)


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    shape = aval(x)[0]
    rounds = math.ceil(3 * math.log(max(1, math.prod(shape))) / math.log(2 ** 32 - 1))
    for _ in range(rounds):
        keys = split(key)
        key = nth(keys, 0)
        sort_keys = random_bits(nth(keys, 1), 32, shape)
        x = ops.sort((sort_keys, x), dimension=axis, is_stable=True, num_keys=1)[1]
    return x


def _count(name: str, x: Any) -> int | None:
    """The static int `x` when it is an integer scalar (`n` means arange(n)), else None."""
    shape, dtype = aval(x)
    if shape:
        return None
    if dtype.kind not in "iu":
        raise wrapper_error(TracerTypeError, name, f"x must be an integer or an array of at "
                            f"least one dimension, got {dtype}[]")
    try:
        return operator.index(x) if not isinstance(x, np.ndarray) else int(x)
    except ConcretizationError:
        raise wrapper_error(TracerTypeError, name, "an integer x must be static (it is a size); "
                            "pass tracer.numpy.arange(n) to shuffle a traced range") from None


def _axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise wrapper_error(TracerIndexError, name,
                            f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of arange(x) (int x, as int32) or of `x` along `axis`
    (`independent`: each slice along the axis is shuffled on its own)."""
    key = check_key("permutation", key)
    x = x if isinstance(x, Tracer) else (x if isinstance(x, int) else np.asarray(x))
    n = _count("permutation", x)
    if n is not None:
        return _shuffle(key, ops.iota(INDEX, (n,), 0), 0)
    shape = aval(x)[0]
    axis = _axis("permutation", axis, len(shape))
    if independent or len(shape) == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, ops.iota(INDEX, (shape[axis],), 0), 0)
    return tnp.take(x, order, axis=axis)


def _head(x: Any, axis: int, n: int) -> Any:
    shape = aval(x)[0]
    return ops.slice(x, (0,) * len(shape), tuple(n if d == axis else s
                                                 for d, s in enumerate(shape)))


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Any:
    """Random samples of a (an int: arange(a)) along `axis`, uniform or with weights p,
    with or without replacement, as `jax.random.choice`."""
    key = check_key("choice", key)
    shape = canonical_shape("choice", shape)
    a = a if isinstance(a, (Tracer, int)) else np.asarray(a)
    n_inputs = _count("choice", a)
    arr = None if n_inputs is not None else a
    if arr is not None:
        axis = _axis("choice", axis, len(aval(arr)[0]))
        n_inputs = aval(arr)[0][axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return tnp.zeros(shape, INDEX if arr is None else aval(arr)[1])
    if n_inputs <= 0:
        raise wrapper_error(TracerValueError, "choice",
                            "a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise wrapper_error(TracerValueError, "choice", f"cannot take a larger sample (size "
                            f"{n_draws}) than the population (size {n_inputs}) when "
                            f"replace=False")
    if p is None:
        ind = _uniform_indices(key, shape, n_inputs, replace, arr, axis)
    else:
        ind = _weighted_indices(key, shape, n_inputs, replace, p)
    if arr is None:
        return tnp.reshape(ind, shape)
    if p is None and not replace:
        return ind  # already the taken slices
    out = tnp.take(arr, tnp.reshape(ind, (n_draws,)), axis=axis)
    ashape = aval(arr)[0]
    return tnp.reshape(out, ashape[:axis] + shape + ashape[axis + 1:])


def _uniform_indices(key: Any, shape: tuple[int, ...], n: int, replace: bool, arr: Any,
                     axis: int) -> Any:
    if replace:
        return randint(key, shape, 0, n)
    if arr is None:
        return _head(permutation(key, n), 0, math.prod(shape))
    head = _head(permutation(key, arr, axis), axis, math.prod(shape))
    ashape = aval(arr)[0]
    return tnp.reshape(head, ashape[:axis] + shape + ashape[axis + 1:])


def _weighted_indices(key: Any, shape: tuple[int, ...], n: int, replace: bool, p: Any) -> Any:
    p = p if isinstance(p, Tracer) else np.asarray(p)
    pshape, dt = aval(p)
    if dt not in FLOATS:
        p, dt = as_dtype(p, np.float64), np.dtype(np.float64)
    if pshape != (n,):
        raise wrapper_error(TracerValueError, "choice", f"p must be None or a 1-D vector of "
                            f"the size of a's axis ({n}), got shape {pshape}")
    if replace:
        cumulative = tnp.cumsum(p)
        total = ops.reshape(ops.slice(cumulative, (n - 1,), (n,)), ())
        r = tnp.multiply(total, tnp.subtract(as_dtype(1, dt), uniform(key, shape, dt)))
        below = tnp.less(cumulative, tnp.expand_dims(r, -1))  # searchsorted(side="left")
        return as_dtype(tnp.sum(below, axis=-1), INDEX)
    noisy = tnp.add(gumbel(key, (n,), dt), tnp.log(p))
    order = ops.sort((ops.neg(noisy), ops.iota(INDEX, (n,), 0)), is_stable=True, num_keys=1)[1]
    return _head(order, 0, math.prod(shape))
