"""JVP, transpose and batching rules of the element-wise ops (`elementwise.py`).

JVP formulas follow `jax.lax`; tangents of integer or bool results are symbolic
zeros. Binary ops broadcast by the seeds' rules (a scalar operand, degenerate
size-1 dims, `broadcast_dimensions` for a lower-rank operand), so a JVP
contribution is broadcast to the output shape and a transpose sums the
cotangent back to its operand's shape. Batching moves batch dims to the front
(unless every operand already agrees) and rewrites `broadcast_dimensions` for
the new leading dim. Rules use the public ops, so they run eagerly and traced.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import TracerTypeError
from . import elementwise as ew
from .ad import UndefinedPrimal, Zero, add_tangents, aval_of_value, defjvp_zero, \
    instantiate, zeros_like_aval
from .reduce import reduce
from .registry import Op
from .shape import broadcast_in_dim, reshape, transpose

Rule = Callable[..., Any]


def _inexact(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def _shape(x: Any) -> tuple[int, ...]:
    return aval_of_value(x).shape


# ---------------------------------------------------------------- broadcasting helpers

def _placement(aval: ShapedArray, out_rank: int, dims: tuple[int, ...] | None) -> tuple[int, ...]:
    """The output dims a binary-op operand's dims line up with (seed broadcasting)."""
    if aval.ndim == out_rank:
        return tuple(range(out_rank))
    return dims or ()


def _expand(x: Any, shape: tuple[int, ...], dims: tuple[int, ...] | None) -> Any:
    """Broadcast a binary-op operand (or its tangent) to the output shape."""
    aval = aval_of_value(x)
    if aval.shape == shape:
        return x
    return broadcast_in_dim(x, shape, _placement(aval, len(shape), dims))


def _unbroadcast(ct: Any, aval: ShapedArray, dims: tuple[int, ...] | None) -> Any:
    """Sum an output-shaped cotangent back to a binary-op operand's shape."""
    out_shape = _shape(ct)
    place = _placement(aval, len(out_shape), dims)
    summed = [d for d in range(len(out_shape)) if d not in place]
    summed += [d for d, size in zip(place, aval.shape, strict=True)
               if size == 1 and out_shape[d] != 1]
    if summed:
        ct = reduce(ct, 0, ew.add, sorted(summed))
    return ct if _shape(ct) == aval.shape else reshape(ct, aval.shape)


# ---------------------------------------------------------------- JVP helpers

def _defjvp(op: Op, *rules: Rule | None) -> None:
    """JVP from one `rule(t, out, *primals, **params)` per argument (None: no
    derivative); integer or bool results get a Zero tangent."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
        out = op.bind(*primals, **params)
        total: Any = Zero(aval_of_value(out))
        if not _inexact(total.aval):
            return out, total
        for rule, t in zip(rules, tangents, strict=True):
            if rule is not None and not isinstance(t, Zero):
                total = add_tangents(total, rule(t, out, *primals, **params))
        return out, total

    op.jvp = jvp


def _binary(fn: Callable[[Any, Any, Any, Any], Any]) -> Rule:
    """A binary-op JVP rule written on operands broadcast to the output shape:
    `fn(T, Z, X, Y)` with T the (broadcast) tangent and Z the output."""
    def rule(t: Any, z: Any, x: Any, y: Any, *,
             broadcast_dimensions: tuple[int, ...] | None = None) -> Any:
        shape, dims = _shape(z), broadcast_dimensions
        return fn(_expand(t, shape, dims), z, _expand(x, shape, dims), _expand(y, shape, dims))
    return rule


def _const(like: Any, value: float) -> Any:
    """An array of `value` with the shape and dtype of `like` (not `like * 0 + value`,
    which is NaN where `like` is infinite)."""
    aval = aval_of_value(like)
    return broadcast_in_dim(np.array(value, aval.dtype), aval.shape, ())


def _replace_zero(x: Any) -> Any:
    return ew.select(ew.eq(x, 0), _const(x, 1), x)


def _balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """d max(x, y) / dx: 1 where x wins, 1/2 on ties (JAX), 0 where y wins."""
    tie = ew.select(ew.eq(y, z), _const(z, 0.5), _const(z, 1))
    return ew.select(ew.eq(x, z), tie, _const(z, 0))


def _trunc(q: Any) -> Any:
    return ew.mul(ew.sign(q), ew.floor(ew.abs(q)))


def _pow_lhs(t: Any, z: Any, x: Any, y: Any) -> Any:
    # y * x**(y-1), with 0 where y == 0 so that 0**0 has derivative 0 (JAX)
    jac = ew.mul(_replace_zero(y), ew.pow(x, ew.sub(y, 1)))
    return ew.mul(t, ew.select(ew.eq(y, 0), _const(y, 0), jac))


def _pow_lhs_rule(t: Any, z: Any, x: Any, y: Any, *,
                  broadcast_dimensions: tuple[int, ...] | None = None) -> Any:
    """d x**y / dx; for a constant scalar y (`x ** 2` in a loss) the factor y and the
    exponent y - 1 are computed now, so the graph holds `t * (2 * x)`, not a select
    between broadcast constants and a second `pow`."""
    if not isinstance(y, np.ndarray | np.generic) or np.ndim(y) != 0:
        return _binary(_pow_lhs)(t, z, x, y, broadcast_dimensions=broadcast_dimensions)
    shape = _shape(z)
    t, x, y = _expand(t, shape, None), _expand(x, shape, None), np.asarray(y)
    if y == 0:
        return ew.mul(t, _const(z, 0))
    if y == 1:  # y * x**0 is 1 everywhere (NaN and inf included)
        return t
    power = x if y == 2 else ew.pow(x, np.asarray(y - 1, y.dtype))
    return ew.mul(t, ew.mul(y, power))


def _atan2_lhs(t: Any, z: Any, x: Any, y: Any) -> Any:
    return ew.mul(t, ew.div(y, ew.add(ew.mul(x, x), ew.mul(y, y))))


def _atan2_rhs(t: Any, z: Any, x: Any, y: Any) -> Any:
    return ew.mul(t, ew.div(ew.neg(x), ew.add(ew.mul(x, x), ew.mul(y, y))))


_BINARY_JVPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda t, z, x, y: t, lambda t, z, x, y: t),
    "sub": (lambda t, z, x, y: t, lambda t, z, x, y: ew.neg(t)),
    "mul": (lambda t, z, x, y: ew.mul(t, y), lambda t, z, x, y: ew.mul(x, t)),
    "div": (lambda t, z, x, y: ew.div(t, y),
            lambda t, z, x, y: ew.neg(ew.mul(t, ew.div(z, y)))),
    "rem": (lambda t, z, x, y: t,
            lambda t, z, x, y: ew.mul(ew.neg(t), _trunc(ew.div(x, y)))),
    "max": (lambda t, z, x, y: ew.mul(t, _balanced_eq(x, z, y)),
            lambda t, z, x, y: ew.mul(t, _balanced_eq(y, z, x))),
    "min": (lambda t, z, x, y: ew.mul(t, _balanced_eq(x, z, y)),
            lambda t, z, x, y: ew.mul(t, _balanced_eq(y, z, x))),
    "pow": (_pow_lhs, lambda t, z, x, y: ew.mul(t, ew.mul(ew.log(_replace_zero(x)), z))),
    "atan2": (_atan2_lhs, _atan2_rhs),
    "complex": (lambda t, z, x, y: ew.complex(t, 0.0),
                lambda t, z, x, y: ew.complex(0.0, t)),
}


def _abs_jvp(t: Any, z: Any, x: Any) -> Any:
    if aval_of_value(x).dtype.kind != "c":
        return ew.select(ew.ge(x, 0), t, ew.neg(t))
    # d|x| = Re(conj(x) t) / |x|, with |x| = 0 replaced by 1 (JAX)
    re_conj_x_t = ew.add(ew.mul(ew.real(x), ew.real(t)), ew.mul(ew.imag(x), ew.imag(t)))
    return ew.div(re_conj_x_t, _replace_zero(z))


_UNARY_JVPS: dict[str, Rule] = {
    "abs": _abs_jvp,
    "neg": lambda t, z, x: ew.neg(t),
    "exp": lambda t, z, x: ew.mul(t, z),
    "expm1": lambda t, z, x: ew.mul(t, ew.add(z, 1)),
    "log": lambda t, z, x: ew.div(t, x),
    "log1p": lambda t, z, x: ew.div(t, ew.add(x, 1)),
    "logistic": lambda t, z, x: ew.mul(t, ew.mul(z, ew.sub(1, z))),
    "sin": lambda t, z, x: ew.mul(t, ew.cos(x)),
    "cos": lambda t, z, x: ew.neg(ew.mul(t, ew.sin(x))),
    "tan": lambda t, z, x: ew.mul(t, ew.add(1, ew.mul(z, z))),
    "tanh": lambda t, z, x: ew.mul(t, ew.sub(1, ew.mul(z, z))),
    "sqrt": lambda t, z, x: ew.div(t, ew.mul(z, 2)),
    "rsqrt": lambda t, z, x: ew.mul(t, ew.mul(ew.div(z, x), -0.5)),
    # z ** -2 / 3, as JAX: at 0 the second derivative is -inf (1 / (3 z z) gives NaN).
    "cbrt": lambda t, z, x: ew.mul(t, ew.mul(ew.pow(z, -2), 1 / 3)),
    "erf": lambda t, z, x: ew.mul(t, ew.mul(ew.exp(ew.neg(ew.mul(x, x))),
                                            2 / math.sqrt(math.pi))),
    "real": lambda t, z, x: ew.real(t),
    "imag": lambda t, z, x: ew.imag(t),
}

_ZERO_JVP = ("ceil", "floor", "round", "round_nearest_even", "bitwise_not", "sign",
             "is_finite", "clz", "population_count", "compare", "bitwise_and", "bitwise_or",
             "bitwise_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical")


def _select_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    pred, on_true, on_false = primals
    out = ew.select_p.bind(pred, on_true, on_false)
    aval = aval_of_value(out)
    cases = tangents[1:]
    if not _inexact(aval) or all(isinstance(t, Zero) for t in cases):
        return out, Zero(aval)
    return out, ew.select(pred, *map(instantiate, cases))


def _masked(cond: Any, t: Any, x: Any) -> Any:
    """t (broadcast to x's shape) where cond, else 0."""
    t = _expand(t, _shape(x), None)
    return ew.select(cond, t, _const(t, 0))


_CLAMP_JVPS: tuple[Rule, Rule, Rule] = (
    lambda t, z, lo, x, hi: _masked(ew.bitwise_and(ew.gt(lo, x), ew.lt(lo, hi)), t, x),
    lambda t, z, lo, x, hi: _masked(ew.bitwise_and(ew.gt(x, lo), ew.lt(x, hi)), t, x),
    # the result is hi where hi < max(lo, x), which covers lo > hi as well
    lambda t, z, lo, x, hi: _masked(ew.bitwise_or(ew.lt(hi, x), ew.lt(hi, lo)), t, x),
)


def _convert_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                 new_dtype: np.dtype, weak_type: bool = False) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = ew.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    aval = aval_of_value(out)
    if isinstance(t, Zero) or not (_inexact(aval) and _inexact(aval_of_value(x))):
        return out, Zero(aval)
    return out, ew.convert_element_type(t, new_dtype)


# ---------------------------------------------------------------- transposes

def _linear_transpose(fn: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """A transpose rule that gives Zero cotangents for a Zero output cotangent."""
    def rule(ct: Any, *args: Any, **params: Any) -> list[Any]:
        if isinstance(ct, Zero):
            return [Zero(a.aval) if isinstance(a, UndefinedPrimal) else None for a in args]
        return fn(ct, *args, **params)
    return rule


def _binary_transpose(lhs: Rule | None, rhs: Rule | None) -> Callable[..., list[Any]]:
    """Transpose of a binary op linear in its undefined operand(s): `lhs(ct, y)`
    / `rhs(ct, x)` give the output-shaped cotangent, then it is summed back."""
    def rule(ct: Any, x: Any, y: Any, *,
             broadcast_dimensions: tuple[int, ...] | None = None) -> list[Any]:
        dims, shape = broadcast_dimensions, _shape(ct)
        cts: list[Any] = [None, None]
        for i, (arg, other, part) in enumerate(((x, y, lhs), (y, x, rhs))):
            if isinstance(arg, UndefinedPrimal):
                if part is None:
                    raise TracerTypeError("transpose of an argument the op is not linear in")
                defined = None if isinstance(other, UndefinedPrimal) else \
                    _expand(other, shape, dims)
                cts[i] = _unbroadcast(part(ct, defined), arg.aval, dims)
        return cts
    return _linear_transpose(rule)


_BINARY_TRANSPOSES: dict[str, tuple[Rule | None, Rule | None]] = {
    "add": (lambda ct, _: ct, lambda ct, _: ct),
    "sub": (lambda ct, _: ct, lambda ct, _: ew.neg(ct)),
    "mul": (lambda ct, y: ew.mul(ct, y), lambda ct, x: ew.mul(x, ct)),
    "div": (lambda ct, y: ew.div(ct, y), None),
    "complex": (lambda ct, _: ew.real(ct), lambda ct, _: ew.neg(ew.imag(ct))),
}


def _real_transpose(ct: Any, x: UndefinedPrimal) -> list[Any]:
    return [ew.complex(ct, 0.0) if x.aval.dtype.kind == "c" else ct]


def _imag_transpose(ct: Any, x: UndefinedPrimal) -> list[Any]:
    return [ew.complex(0.0, ew.neg(ct)) if x.aval.dtype.kind == "c" else Zero(x.aval)]


def _convert_transpose(ct: Any, x: UndefinedPrimal, *, new_dtype: np.dtype,
                       weak_type: bool = False) -> list[Any]:
    if not (_inexact(x.aval) and _inexact(aval_of_value(ct))):
        return [Zero(x.aval)]
    return [ew.convert_element_type(ct, x.aval.dtype)]


def _select_transpose(ct: Any, pred: Any, on_true: Any, on_false: Any) -> list[Any]:
    if isinstance(pred, UndefinedPrimal):
        raise TracerTypeError("select is not linear in its predicate")
    zeros = zeros_like_aval(aval_of_value(ct))
    return [None,
            ew.select(pred, ct, zeros) if isinstance(on_true, UndefinedPrimal) else None,
            ew.select(pred, zeros, ct) if isinstance(on_false, UndefinedPrimal) else None]


# ---------------------------------------------------------------- batching

def _to_front(x: Any, d: int | None) -> Any:
    """x with batch dim d moved to position 0 (unbatched x as it is)."""
    if d is None:
        return x
    rank = len(_shape(x))
    d %= rank
    if d == 0:
        return x
    return transpose(x, (d, *(i for i in range(rank) if i != d)))


def _batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(_shape(a)[d] for a, d in zip(args, dims, strict=True) if d is not None)


def _unary_batch(op: Op) -> Rule:
    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        (x,), (d,) = args, dims
        return op.bind(x, **params), d % len(_shape(x))
    return rule


def _binary_batch(op: Op) -> Rule:
    def rule(args: Sequence[Any], dims: Sequence[int | None], *,
             broadcast_dimensions: tuple[int, ...] | None = None,
             **params: Any) -> tuple[Any, int]:
        ranks = [len(_shape(a)) - (d is not None) for a, d in zip(args, dims, strict=True)]
        axes = {d % (r + 1) for d, r in zip(dims, ranks, strict=True) if d is not None}
        # fast paths, the op applies as it is: operands of one rank batched at one
        # axis, or an unbatched scalar that broadcasts implicitly
        same = None not in dims and ranks[0] == ranks[1]
        scalar = None in dims and ranks[list(dims).index(None)] == 0
        if len(axes) == 1 and (same or scalar):
            return op.bind(*args, broadcast_dimensions=None, **params), axes.pop()
        x, y, bdims = _binary_front(args, dims, ranks, broadcast_dimensions)
        return op.bind(x, y, broadcast_dimensions=bdims, **params), 0
    return rule


def _binary_front(args: Sequence[Any], dims: Sequence[int | None], ranks: list[int],
                  bdims: tuple[int, ...] | None) -> tuple[Any, Any, tuple[int, ...] | None]:
    """Operands with the batch dim in front, and broadcast_dimensions placing the
    lower-rank one in the batched output (one more dim, in front)."""
    rank = max(ranks)
    xs = [_to_front(a, d) for a, d in zip(args, dims, strict=True)]
    places = []
    for r, d in zip(ranks, dims, strict=True):
        shifted = tuple(p + 1 for p in (range(rank) if r == rank else bdims or ()))
        places.append((0, *shifted) if d is not None else shifted)
    full = [len(_shape(x)) == rank + 1 for x in xs]
    if not any(full):
        # only the unbatched operand had the output's rank: the batched one gets
        # every dim of the batched output (size 1 where it broadcasts)
        i = 0 if dims[0] is not None else 1
        new = [1] * (rank + 1)
        for size, p in zip(_shape(xs[i]), places[i], strict=True):
            new[p] = size
        xs[i], full[i] = reshape(xs[i], tuple(new)), True
    if all(full):
        return xs[0], xs[1], None
    low = full.index(False)
    return xs[0], xs[1], (places[low] if _shape(xs[low]) else None)


def _full(x: Any, d: int | None, shape: tuple[int, ...]) -> Any:
    """x as an array of the batched `shape` (batch dim in front); x is unbatched
    with the unbatched shape or a scalar, or batched at d (possibly a batched scalar)."""
    if d is None:
        return broadcast_in_dim(x, shape, tuple(range(len(shape) - len(_shape(x)), len(shape))))
    x = _to_front(x, d)
    return x if _shape(x) == shape else broadcast_in_dim(x, shape, (0,))


def _unbatched_shape(x: Any, d: int | None) -> tuple[int, ...]:
    shape = list(_shape(x))
    if d is not None:
        del shape[d % len(shape)]
    return tuple(shape)


def _select_batch(args: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, int]:
    pred, on_true, on_false = args
    shape = (_batch_size(args, dims), *_unbatched_shape(on_true, dims[1]))
    # a scalar unbatched predicate still picks a whole (batched) branch
    keep = dims[0] is None and not _shape(pred)
    return ew.select_p.bind(pred if keep else _full(pred, dims[0], shape),
                            _full(on_true, dims[1], shape), _full(on_false, dims[2], shape)), 0


def _clamp_batch(args: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, int]:
    lo, x, hi = args
    shape = (_batch_size(args, dims), *_unbatched_shape(x, dims[1]))
    lo, hi = (b if d is None and not _shape(b) else _full(b, d, shape)
              for b, d in ((lo, dims[0]), (hi, dims[2])))
    return ew.clamp_p.bind(lo, _full(x, dims[1], shape), hi), 0


# ---------------------------------------------------------------- registration

def _register() -> None:
    for name, (lhs, rhs) in _BINARY_JVPS.items():
        _defjvp(getattr(ew, f"{name}_p"), _pow_lhs_rule if name == "pow" else _binary(lhs),
                _binary(rhs))
    for name, rule in _UNARY_JVPS.items():
        _defjvp(getattr(ew, f"{name}_p"), rule)
    for name in _ZERO_JVP:
        defjvp_zero(getattr(ew, f"{name}_p"))
    ew.select_p.jvp = _select_jvp
    _defjvp(ew.clamp_p, *_CLAMP_JVPS)
    ew.convert_element_type_p.jvp = _convert_jvp

    for name, (lhs_t, rhs_t) in _BINARY_TRANSPOSES.items():
        getattr(ew, f"{name}_p").transpose = _binary_transpose(lhs_t, rhs_t)
    ew.neg_p.transpose = _linear_transpose(lambda ct, x: [ew.neg(ct)])
    ew.real_p.transpose = _linear_transpose(_real_transpose)
    ew.imag_p.transpose = _linear_transpose(_imag_transpose)
    ew.convert_element_type_p.transpose = _linear_transpose(_convert_transpose)
    ew.select_p.transpose = _linear_transpose(_select_transpose)

    for op in ELEMENTWISE_OPS:
        if op.family in ("binary", "compare"):
            op.batch = _binary_batch(op)
        elif op.family == "unary":
            op.batch = _unary_batch(op)
    ew.select_p.batch = _select_batch
    ew.clamp_p.batch = _clamp_batch


ELEMENTWISE_OPS: tuple[Op, ...] = tuple(
    v for k, v in vars(ew).items() if k.endswith("_p") and isinstance(v, Op))

_register()
