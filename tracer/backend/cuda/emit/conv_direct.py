"""`conv_general_dilated` as direct convolution kernels (`conv.py` picks one per call).

One thread per output element (in the output's memory order) accumulates, over
the window taps (row-major) and then the input features of its group, lhs x
rhs; or one block per output, whose threads take the same terms in turn and add
their sums in a tree. Both work in the reference's working dtype: float16 in
float32 (rounded once on store), integers in their own width (wrapping after
every step, as the reference's matmul does), others in their dtype. The lhs is read at
`out * stride + tap * rhs_dilation - low` of its padded, lhs-dilated form;
where padding or a hole (lhs dilation) can put a tap off the operand, the code
checks it and uses zero instead, as the reference does (0 * w, so an inf or NaN
weight still poisons the sum). Feature groups pick a group's input features
(`feature_group_count`); batch groups a group's slice of the lhs batch. The
dimension numbers only decide which index goes where.
"""

from __future__ import annotations

from contextlib import ExitStack

from ....core import Eqn
from ...numba.codegen import Ref
from ...numba.loops import Index
from ...numba.scalar import cast, literal
from ..emitter import DeviceGraphEmitter, Kernel
from ..lib.arrays import register_dtype
from ..nests import advance_index, product, split_index, unflatten
from .common import block_sum
from .index import over_elements, read, write

_T, _NT = "cuda.threadIdx.x", "cuda.blockDim.x"


def _param(k: Kernel, eqn: Eqn, name: str, j: int, part: int = -1) -> str:
    value = eqn.params[name][j] if part < 0 else eqn.params[name][j][part]
    return k.size(("param", id(eqn), name, j, part), value, name.split("_")[0])


def _scaled(k: Kernel, eqn: Eqn, name: str, j: int, factor: str) -> str:
    return factor if eqn.params[name][j] == 1 else f"{factor} * {_param(k, eqn, name, j)}"


def _groups(k: Kernel, eqn: Eqn, b: str, oz: str) -> tuple[str, str, str]:
    """(lhs batch index, first input feature, input features per group) of output
    (b, oz)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    lspec, rspec = p["dimension_numbers"].lhs_spec, p["dimension_numbers"].rhs_spec
    features = k.dim(lhs, lspec[1])
    groups = max(p["feature_group_count"], p["batch_group_count"])
    if groups == 1:
        return b, "0", features
    count = k.size(("param", id(eqn), "groups"), groups, "groups")
    g = k.fresh("group")
    k.w.line(f"{g} = {oz} // ({k.dim(rhs, rspec[0])} // {count})")
    if p["batch_group_count"] > 1:
        batch = k.fresh("batch")
        k.w.line(f"{batch} = {b} + {g} * ({k.dim(lhs, lspec[0])} // {count})")
        return batch, "0", features
    per = k.fresh("per_group")
    k.w.line(f"{per} = {features} // {count}")
    return b, f"{g} * {per}", per


def tap_position(k: Kernel, eqn: Eqn, j: int, out: str, tap: str) -> tuple[str, list[str]]:
    """The lhs index along spatial dim j of window tap `tap` at output position `out`,
    and the checks that it is a real element (not padding, not a hole)."""
    p = eqn.params
    lhs = eqn.inputs[0]
    d = p["dimension_numbers"].lhs_spec[2 + j]
    low, high = p["padding"][j]
    dil = p["lhs_dilation"][j]
    position = (f"{_scaled(k, eqn, 'window_strides', j, out)} + "
                f"{_scaled(k, eqn, 'rhs_dilation', j, tap)}")
    if low:
        position = f"{position} - {_param(k, eqn, 'padding', j, 0)}"
    if low <= 0 and high <= 0 and dil == 1:
        return position, []
    q = k.fresh(f"q{j}")
    k.w.line(f"{q} = {position}")
    size = k.dim(lhs, d)
    if dil == 1:
        return q, [f"{q} >= 0"] * (low > 0) + [f"{q} < {size}"] * (high > 0)
    step = _param(k, eqn, "lhs_dilation", j)
    return f"{q} // {step}", [f"{q} >= 0", f"{q} % {step} == 0", f"{q} // {step} < {size}"]


def _operand_index(k: Kernel, eqn: Eqn, index: Index, ci: str) -> tuple[list[str], list[str],
                                                                         str]:
    """The lhs and rhs index of output `index`'s term at input feature `ci` (the taps'
    places left blank, for `_taps`), and the input features per group."""
    dn = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    b, oz = index[dn.out_spec[0]], index[dn.out_spec[1]]
    batch, first, per_group = _groups(k, eqn, b, oz)
    x_at, w_at = [""] * lhs.aval.ndim, [""] * rhs.aval.ndim
    x_at[dn.lhs_spec[0]], w_at[dn.rhs_spec[0]] = batch, oz
    x_at[dn.lhs_spec[1]] = ci if first == "0" else f"{first} + {ci}"
    w_at[dn.rhs_spec[1]] = ci
    return x_at, w_at, per_group


def _tap(k: Kernel, eqn: Eqn, index: Index, j: int, tap: str, x_at: list[str],
         w_at: list[str]) -> list[str]:
    """Fill in spatial dim j's place of the operand indices for window tap `tap`; the
    checks that the lhs element is real (not padding, not a hole)."""
    dn = eqn.params["dimension_numbers"]
    x_at[dn.lhs_spec[2 + j]], checks = tap_position(k, eqn, j, index[dn.out_spec[2 + j]], tap)
    w_at[dn.rhs_spec[2 + j]] = tap
    return checks


def _add_term(k: Kernel, eqn: Eqn, acc: str, x_at: list[str], w_at: list[str],
              checks: list[str]) -> None:
    """acc += lhs x rhs at the indices (padding and holes read as zeros; integers wrap)."""
    ge, dtype = k.ge, eqn.outputs[0].aval.dtype
    lhs, rhs = eqn.inputs
    x = read(k, ge.ref(lhs), x_at)
    if checks:
        x = f"{x} if {' and '.join(checks)} else {literal(0, dtype)}"
    step = f"{acc} + ({x}) * {read(k, ge.ref(rhs), w_at)}"
    k.w.line(f"{acc} = {cast(k.mod, step, dtype) if dtype.kind in 'iu' else step}")


def thread_kernel(ge: DeviceGraphEmitter, eqn: Eqn, result: Ref) -> Kernel:
    """Each thread sums its outputs' terms in the reference's order: taps row-major, then
    the input features."""
    dn = eqn.params["dimension_numbers"]
    rhs, out = eqn.inputs[1], eqn.outputs[0]
    k = Kernel(ge, "conv")
    acc, ci = k.fresh("acc"), k.fresh("ci")
    with over_elements(k, out) as (index, _):
        x_at, w_at, per_group = _operand_index(k, eqn, index, ci)
        k.w.line(f"{acc} = {literal(0, out.aval.dtype)}")
        checks: list[str] = []
        with ExitStack() as stack:
            for j in range(len(dn.out_spec) - 2):
                tap = k.fresh(f"t{j}")
                stack.enter_context(k.w.block(f"for {tap} in range("
                                              f"{k.dim(rhs, dn.rhs_spec[2 + j])})"))
                checks += _tap(k, eqn, index, j, tap, x_at, w_at)
            with k.w.block(f"for {ci} in range({per_group})"):
                _add_term(k, eqn, acc, x_at, w_at, checks)
        write(k, result, index, acc)
    return k


def block_kernel(ge: DeviceGraphEmitter, eqn: Eqn, result: Ref) -> Kernel:
    """A block per output: its threads take the terms (taps row-major, then the input
    features) in turn, stepping a mixed-radix index (no division per term), and a tree
    in shared memory adds their sums."""
    dn = eqn.params["dimension_numbers"]
    rhs, out = eqn.inputs[1], eqn.outputs[0]
    k = Kernel(ge, "conv")
    acc, partial, term, flat = (k.fresh(n) for n in ("acc", "partial", "term", "flat"))
    k.w.line(f"{partial} = cuda.shared.array(REDUCE_BLOCK, "
             f"np.{register_dtype(out.aval.dtype).name})")
    sizes = [k.dim(out, d) for d in range(out.aval.ndim)]
    index = tuple(f"i{d}" for d in range(out.aval.ndim))
    with k.w.block(f"for {flat} in range(cuda.blockIdx.x, {product(sizes)}, cuda.gridDim.x)"):
        unflatten(k.w, flat, sizes, index, k.fresh("rest"))
        taps = [k.fresh(f"t{j}") for j in range(len(dn.out_spec) - 2)]
        ci = k.fresh("ci")
        x_at, w_at, per_group = _operand_index(k, eqn, index, ci)
        radix = [k.dim(rhs, d) for d in dn.rhs_spec[2:]] + [per_group]
        steps = split_index(k, (_T, product(radix), _NT), radix, [*taps, ci])
        k.w.line(f"{acc} = {literal(0, out.aval.dtype)}")
        with k.w.block(f"for {term} in range({_T}, {product(radix)}, {_NT})"):
            checks = [c for j, tap in enumerate(taps)
                      for c in _tap(k, eqn, index, j, tap, x_at, w_at)]
            _add_term(k, eqn, acc, x_at, w_at, checks)
            advance_index(k, [*taps, ci], steps, radix)
        total = block_sum(k, partial, acc)
        with k.w.block(f"if {_T} == 0"):
            write(k, result, index, total)
    return k
