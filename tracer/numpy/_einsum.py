"""`einsum` in full and `einsum_path`.

Subscripts (or NumPy's interleaved operand / sublist form) are parsed by
`_linalg`: any letters, `...`, repeated labels within an operand (diagonals),
implicit output. The contraction order follows `optimize`: False contracts left to
right; True / "greedy" / "optimal" ask NumPy's own `einsum_path` for the pairwise
order (it only needs the shapes, so it runs on zero-stride stand-ins of the
operands, traced or not); an explicit `["einsum_path", (i, j), ...]` list is used
as given. Each pairwise step is one `dot_general` (shared labels still needed later
become batch dims), after summing labels no other operand uses.
"""

from __future__ import annotations

import string
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes, ops
from ..ops.linalg import _precision as check_precision
from ..errors import ParamError, TracerTypeError
from ._linalg import (_contract_pair, _label_sizes, _parse_einsum, _prepare_term,
                      _sum_unneeded, as_operand, transpose)
from ._promotion import error, promote

__all__ = ["einsum", "einsum_path"]

_LETTERS = string.ascii_letters


def _sublist(labels: Sequence[Any]) -> str:
    out = []
    for s in labels:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, np.integer)) and 0 <= s < len(_LETTERS):
            out.append(_LETTERS[s])
        else:
            raise error(TracerTypeError, "einsum", f"subscript {s!r} in a sublist must be an "
                        f"int in [0, {len(_LETTERS)}) or Ellipsis")
    return "".join(out)


def _interleaved(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """einsum(op0, sub0, op1, sub1, ..., [sub_out]) -> ("ab,bc->ac", [op0, op1])."""
    operands, subs = list(args[0::2]), [_sublist(s) for s in args[1::2]]
    out = None
    if len(args) % 2:
        out = _sublist(operands.pop())
    spec = ",".join(subs)
    return (spec if out is None else f"{spec}->{out}"), operands


def _stand_in(shape: Sequence[int]) -> np.ndarray:
    """A zero-stride array of `shape` (no memory): all einsum_path looks at."""
    return as_strided(np.zeros(1, np.float64), tuple(shape), (0,) * len(shape))


def _path(subscripts: str, shapes: list[tuple[int, ...]], optimize: Any) -> list[tuple]:
    n = len(shapes)
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return [tuple(step) for step in optimize[1:]]
    if optimize is False or optimize is None or n <= 2:
        # Left to right: each result is appended last, so pair the next operand with it.
        return [(0, 1)] + [(0, n - k) for k in range(2, n)] if n > 1 else []
    strategy = "greedy" if optimize is True else optimize
    if strategy not in ("greedy", "optimal"):
        raise error(ParamError, "einsum", f"optimize must be False, True, 'greedy', "
                    f"'optimal' or an einsum_path list, got {optimize!r}")
    path, _ = np.einsum_path(subscripts, *(_stand_in(s) for s in shapes), optimize=strategy)
    return [tuple(step) for step in path[1:]]


def _contract(terms: list[tuple[Any, list[str]]], output: list[str],
              path: list[tuple]) -> Any:
    """Contract along `path` (NumPy's convention: each step removes its operands and
    appends the result)."""
    terms = list(terms)
    for step in path:
        picked = [terms[i] for i in step]
        for i in sorted(step, reverse=True):
            del terms[i]
        keep = set(output).union(*(lab for _, lab in terms))
        x, lab = picked[0]
        for k, (y, ylab) in enumerate(picked[1:], 2):
            rest = keep.union(*(lb for _, lb in picked[k:]))
            x, lab = _sum_unneeded(x, lab, rest | set(ylab))
            y, ylab = _sum_unneeded(y, ylab, rest | set(lab))
            x, lab = _contract_pair(x, lab, y, ylab, rest)
        terms.append(_sum_unneeded(x, lab, keep))
    (x, lab), = terms
    x, lab = _sum_unneeded(x, lab, set(output))
    return transpose(x, [lab.index(c) for c in output])


def einsum(subscripts: Any, *operands: Any, out: None = None, dtype: Any = None,
           order: str = "K", casting: str = "safe", optimize: Any = False,
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Einstein summation: `einsum("ij,jk->ik", a, b)` is `a @ b`.

    NumPy rule: NEP 50 promotion (dtype= overrides); implicit output is the ellipsis
    dims then the labels used once, sorted; a label repeated within an operand takes
    its diagonal; `...` broadcasts; the interleaved form einsum(a, [0, 1], b, [1, 2])
    works; `optimize` (False, True, "greedy", "optimal" or an einsum_path list) picks
    the pairwise contraction order. JAX's `precision=` is checked (every level computes at
    the operands' full precision) and `preferred_element_type=` acts as dtype=.

    einsum("ii", eye(3)) -> 3.0; einsum("ij,jk,kl->il", a, b, c, optimize="greedy")
    """
    check_precision("einsum", precision)
    dtype = preferred_element_type if dtype is None else dtype
    if out is not None:
        raise error(TracerTypeError, "einsum", "out= is not supported; use the result")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    arrays = [as_operand(x, "einsum") for x in promote(*operands, fname="einsum",
                                                       dtype=dtype)]
    inputs, output = _parse_einsum(subscripts, [x.ndim for x in arrays])
    sizes = _label_sizes(subscripts, inputs, arrays)
    is_bool = bool(arrays) and dtypes.is_bool(arrays[0].dtype)
    if is_bool:
        arrays = [ops.convert_element_type(x, dtypes.int64) for x in arrays]
    terms = [_prepare_term(x, labels, sizes) for x, labels in zip(arrays, inputs, strict=True)]
    path = _path(subscripts, [tuple(x.shape) for x in arrays], optimize)
    result = _contract(terms, output, path)
    return ops.ne(result, np.zeros((), dtypes.int64)) if is_bool else result


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "greedy",
                einsum_call: bool = False) -> tuple[list[Any], str]:
    """NumPy's contraction order for an einsum and its cost report (only the operand
    shapes matter, so traced operands work).

    einsum_path("ij,jk,kl->il", a, b, c)[0] -> ["einsum_path", (0, 1), (0, 1)]
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    shapes = [tuple(np.shape(as_operand(x, "einsum_path"))) for x in operands]
    return np.einsum_path(subscripts, *(_stand_in(s) for s in shapes), optimize=optimize,
                          einsum_call=einsum_call)
