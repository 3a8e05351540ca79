"""Op-table cases for control flow: while, conditional, scan, call
(XLA's Call, While, Conditional)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

V10 = np.arange(10, dtype=np.float32)
X3 = np.array([1.5, -2.0, 0.25], np.float32)
XS = np.arange(12, dtype=np.float64).reshape(4, 3)


def _seed_while(v):
    """The seeds' While example: add a constant vector 1000 times."""
    init = (np.int32(0), np.zeros(10, np.float32))
    return ops.while_loop(lambda c: ops.lt(c[0], 1000),
                          lambda c: (ops.add(c[0], 1), ops.add(c[1], v)), init)


def _halve_until_small(x):
    return ops.while_loop(lambda c: ops.gt(ops.reduce(c, 0.0, ops.max, [0]), 1.0),
                          lambda c: ops.mul(c, 0.5), x)


def _branches3():
    return [lambda v: ops.neg(v), lambda v: ops.add(v, 1.0), lambda v: ops.mul(v, 10.0)]


def _switch_at(i):
    return lambda x: ops.switch(np.int32(i), _branches3(), x)


def _cond_closure(p, x, y):
    # the branches close over the caller's x and y (consts of the conditional)
    return ops.cond(p, lambda: ops.mul(x, y), lambda: ops.sub(x, y))


def _fori_sum_of_i_times(x):
    return ops.fori_loop(2, 6, lambda i, acc: ops.add(acc, ops.mul(
        ops.convert_element_type(i, np.float32), x)), ops.mul(x, 0.0))


def _cumsum_scan(xs):
    return ops.scan(lambda c, x: (ops.add(c, x), c), np.zeros(3), xs)


def _pytree_scan(a, ws):
    def f(carry, x):
        s, n = carry
        return (ops.add(s, ops.mul(x["a"], x["w"])), ops.add(n, 1)), {"prev": s}
    return ops.scan(f, (np.float64(0), np.int64(0)), {"a": a, "w": ws}, reverse=True)


def _nested(p, xs):
    """A while inside a scan inside a cond."""
    def count_up(c, x):
        k = ops.while_loop(lambda k: ops.lt(ops.convert_element_type(k, np.float64), x),
                           lambda k: ops.add(k, 1), np.int64(0))
        return ops.add(c, k), k
    return ops.cond(p, lambda: ops.scan(count_up, np.int64(0), xs),
                    lambda: (np.int64(-1), ops.convert_element_type(xs, np.int64)))


CASES: list[OpCase] = [
    # Golden: the seeds' While example (counter to 1000, accumulating a vector).
    OpCase("while:seed_counter_1000", _seed_while, (V10,),
           expected=(np.int32(1000), 1000 * V10), ops=("while", "compare", "add")),
    OpCase("while:false_at_once", lambda x: ops.while_loop(lambda c: ops.lt(c, 0.0),
                                                           lambda c: ops.add(c, 1.0), x),
           (np.float32(3),), expected=np.float32(3)),
    OpCase("while:halving", _halve_until_small, (np.array([3., 9., -4.]),),
           expected=np.array([3., 9., -4.]) / 16),
    OpCase("while:fori_loop", _fori_sum_of_i_times, (X3,), expected=X3 * 14,
           ops=("while", "convert_element_type")),
    OpCase("while:fori_loop_empty_range", lambda x: ops.fori_loop(5, 2, lambda i, v: ops.neg(v),
                                                                  x), (X3,), expected=X3),
    # Golden: Conditional index rule (seed 001): index 2, -1 and 7 all run f2.
    OpCase("conditional:switch_2", _switch_at(2), (X3,), expected=X3 * 10),
    OpCase("conditional:switch_minus_1", _switch_at(-1), (X3,), expected=X3 * 10),
    OpCase("conditional:switch_7", _switch_at(7), (X3,), expected=X3 * 10),
    OpCase("conditional:switch_0", _switch_at(0), (X3,), expected=-X3),
    OpCase("conditional:switch_1_traced_index",
           lambda i, x: ops.switch(i, _branches3(), x), (np.int32(1), X3), expected=X3 + 1),
    OpCase("conditional:cond_true", lambda p, x, y: _cond_closure(p, x, y),
           (np.bool_(True), X3, np.float32(2)), expected=X3 * 2),
    OpCase("conditional:cond_false", lambda p, x, y: _cond_closure(p, x, y),
           (np.bool_(False), X3, np.float32(2)), expected=X3 - 2),
    OpCase("conditional:cond_operands_pytree",
           lambda p, x: ops.cond(p, lambda d: {"y": d["a"]}, lambda d: {"y": ops.neg(d["a"])},
                                 {"a": x}),
           (np.bool_(False), X3), expected={"y": -X3}),
    OpCase("scan:cumsum", _cumsum_scan, (XS,),
           expected=(XS.sum(0), np.concatenate([np.zeros((1, 3)), XS.cumsum(0)[:-1]]))),
    OpCase("scan:pytree_reverse", _pytree_scan, (XS[:, 0], np.array([1., -1., 2., 0.5]))),
    OpCase("scan:length_zero", _cumsum_scan, (np.zeros((0, 3)),),
           expected=(np.zeros(3), np.zeros((0, 3)))),
    OpCase("scan:no_xs", lambda c: ops.scan(lambda c, _: (ops.mul(c, 2.0), c), c, None,
                                            length=3),
           (np.float32(1.5),), expected=(np.float32(12), np.array([1.5, 3, 6], np.float32))),
    OpCase("scan:nested_while_in_scan_in_cond", _nested, (np.bool_(True), np.array([2., 0.5, 3.])),
           expected=(np.int64(6), np.array([2, 1, 3])), ops=("scan", "while", "conditional")),
    OpCase("conditional:nested_false_branch", _nested, (np.bool_(False), np.array([2., 0.5])),
           expected=(np.int64(-1), np.array([2, 0]))),
    OpCase("call:pytree", lambda x, y: ops.call(lambda a, b: {"s": ops.add(a, b["k"])},
                                                x, {"k": y}),
           (X3, X3), expected={"s": 2 * X3}),
    OpCase("call:zero_args", lambda: ops.call(lambda: np.float32(4)), (),
           expected=np.float32(4)),
    OpCase("call:closure", lambda x: ops.call(lambda: ops.mul(x, x)), (X3,), expected=X3 * X3),
]
