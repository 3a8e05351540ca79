"""Kernels of batch_norm_training / _inference / _grad.

The operand is viewed as (outer, F, inner): the dims before the feature dim, the
features, the dims after it (a view of the C-contiguous array). Training and
grad run one block per feature (grid-stride over the features): the block's
threads sum the feature's elements in float64, combine the sums by a tree in
shared memory, and then write the feature's normalized elements (or gradient),
all in one kernel with no trip through memory for the statistics. Training
takes two passes over the feature (the mean, then the squared deviations from
it), as the reference does. Inference is element-wise. The formulas and their
order are the references' (`tracer.ops.batch_norm`), in float64, rounded once
to the output dtype; an empty feature (N = 0) gives NaN statistics (0 / 0).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from ....core import Eqn
from ...numba.codegen import Ref
from ..emitter import DeviceGraphEmitter, Kernel
from ..nests import product
from .common import block_sum
from .index import launch_over, over_elements, read, write

_T, _NT = "cuda.threadIdx.x", "cuda.blockDim.x"


class _Features:
    """The (outer, F, inner) split of an operand: host sizes and 3-D views."""

    def __init__(self, ge: DeviceGraphEmitter, eqn: Eqn):
        x, fi = eqn.inputs[0], eqn.params["feature_index"]
        self.ge, self.eqn, self.x, self.fi = ge, eqn, x, fi
        self.shape = (product([ge.dim(x, d) for d in range(fi)]), ge.dim(x, fi),
                      product([ge.dim(x, d) for d in range(fi + 1, x.aval.ndim)]))

    def view(self, ref: Ref) -> Ref:
        """A (outer, F, inner) view of an operand-shaped array."""
        return self.ge.view(f"{self.ge.array_of(ref)}.reshape(({', '.join(self.shape)}))",
                            ref.aval.update(shape=(1, 1, 1)), "by_feature")

    def kernel_sizes(self, k: Kernel) -> tuple[str, str, str]:
        x, fi = self.x, self.fi
        return (product([k.dim(x, d) for d in range(fi)]), k.dim(x, fi),
                product([k.dim(x, d) for d in range(fi + 1, x.aval.ndim)]))


def _f64(k: Kernel, ref: Ref, index: list[str]) -> str:
    return f"f64({read(k, ref, index)})"


@dataclass
class _Block:
    """Kernel names of a per-feature block: the sizes, the feature, a float64 shared array
    of REDUCE_BLOCK partial sums, and the element count of a feature."""

    sizes: tuple[str, str, str]
    f: str
    shared: str
    count: str


@contextmanager
def _elements(k: Kernel, b: _Block) -> Iterator[list[str]]:
    """A loop of the block's threads over the elements of its feature; yields their
    (outer, feature, inner) index."""
    inner, f = b.sizes[2], b.f
    j, o, i = k.fresh("j"), k.fresh("o"), k.fresh("i")
    with k.w.block(f"for {j} in range({_T}, {b.count}, {_NT})"):
        k.w.line(f"{o}, {i} = {j} // {inner}, {j} % {inner}")
        yield [o, f, i]


def _per_feature_kernel(ge: DeviceGraphEmitter, feats: _Features, hint: str,
                        body: Callable[[Kernel, _Block], None], comment: str) -> None:
    """A kernel with one block per feature running `body` for it."""
    k = Kernel(ge, hint)
    outer, features, inner = feats.kernel_sizes(k)
    sizes = (k.fresh("outer"), features, k.fresh("inner"))
    block = _Block(sizes, k.fresh("f"), k.fresh("partial"), k.fresh("count"))
    k.w.line(f"{sizes[0]}, {sizes[2]} = {outer}, {inner}")
    k.w.line(f"{block.shared} = cuda.shared.array(REDUCE_BLOCK, np.float64)")
    k.w.line(f"{block.count} = {sizes[0]} * {sizes[2]}")
    with k.w.block(f"for {block.f} in range(cuda.blockIdx.x, {features}, cuda.gridDim.x)"):
        body(k, block)
    outer, features, inner = feats.shape
    k.launch(f"launch.grid({features}, 1)", f"launch.row_block({outer} * {inner})", comment)


# ------------------------------------------------------------------ training

def _training(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    feats = _Features(ge, eqn)
    x, scale, offset = (ge.ref(a) for a in eqn.inputs)
    x3 = feats.view(x)
    y, mean_out, var_out = (ge.new_ref(v) for v in eqn.outputs)
    y3 = feats.view(y)
    eps = repr(float(eqn.params["epsilon"]))

    def body(k: Kernel, b: _Block) -> None:
        s1, s2, dev, mean, var, factor = (k.fresh(n) for n in (
            "s1", "s2", "dev", "mean", "var", "factor"))
        k.w.line(f"{s1}, {s2} = f64(0.0), f64(0.0)")
        with _elements(k, b) as at:
            k.w.line(f"{s1} += {_f64(k, x3, at)}")
        k.w.line(f"{mean} = {block_sum(k, b.shared, s1)} / {b.count}")
        with _elements(k, b) as at:
            k.w.line(f"{dev} = {_f64(k, x3, at)} - {mean}")
            k.w.line(f"{s2} += {dev} * {dev}")
        k.w.line(f"{var} = {block_sum(k, b.shared, s2)} / {b.count}")
        k.w.line(f"{factor} = {_f64(k, scale, [b.f])} / "
                 f"{k.mod.use('sqrt_f64')}({var} + {eps})")
        with _elements(k, b) as at:
            write(k, y3, at, f"({_f64(k, x3, at)} - {mean}) * {factor} + "
                             f"{_f64(k, offset, [b.f])}")
        with k.w.block(f"if {_T} == 0"):
            write(k, mean_out, [b.f], mean)
            write(k, var_out, [b.f], var)
    _per_feature_kernel(ge, feats, "batch_norm", body,
                        "batch_norm_training: per feature, mean, variance, normalize")


# ------------------------------------------------------------------ inference

def _inference(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    x, scale, offset, mean, var = (ge.ref(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    y = ge.new_ref(out)
    k = Kernel(ge, "batch_norm")
    sqrt = k.mod.use("sqrt_f64")
    eps = repr(float(eqn.params["epsilon"]))
    with over_elements(k, out) as (index, _):
        f = [index[eqn.params["feature_index"]]]
        factor = k.fresh("factor")
        k.w.line(f"{factor} = {_f64(k, scale, f)} / {sqrt}({_f64(k, var, f)} + {eps})")
        write(k, y, index, f"({_f64(k, x, index)} - {_f64(k, mean, f)}) * {factor} + "
                           f"{_f64(k, offset, f)}")
    launch_over(k, out, "batch_norm_inference: normalize each element")


# ------------------------------------------------------------------ grad

def _grad(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    feats = _Features(ge, eqn)
    x, scale, mean, var, dy = (ge.ref(a) for a in eqn.inputs)
    x3, dy3 = feats.view(x), feats.view(dy)
    gx, g_scale, g_offset = (ge.new_ref(v) for v in eqn.outputs)
    gx3 = feats.view(gx)
    eps = repr(float(eqn.params["epsilon"]))

    def body(k: Kernel, b: _Block) -> None:
        m, rstd, s_dy, s_dyc, sum_dy, sum_dyc, d, c, a = (k.fresh(n) for n in (
            "m", "rstd", "s_dy", "s_dyc", "sum_dy", "sum_dyc", "d", "c", "a"))
        k.w.line(f"{m} = {_f64(k, mean, [b.f])}")
        k.w.line(f"{rstd} = 1.0 / {k.mod.use('sqrt_f64')}({_f64(k, var, [b.f])} + {eps})")
        k.w.line(f"{s_dy}, {s_dyc} = f64(0.0), f64(0.0)")
        with _elements(k, b) as at:
            k.w.line(f"{s_dy} += {_f64(k, dy3, at)}")
            k.w.line(f"{s_dyc} += {_f64(k, dy3, at)} * ({_f64(k, x3, at)} - {m})")
        k.w.line(f"{sum_dy} = {block_sum(k, b.shared, s_dy)}")
        k.w.line(f"{sum_dyc} = {block_sum(k, b.shared, s_dyc)}")
        k.w.line(f"{d}, {c} = {sum_dy} / {b.count}, {sum_dyc} / {b.count} * {rstd} * {rstd}")
        k.w.line(f"{a} = {_f64(k, scale, [b.f])} * {rstd}")
        with _elements(k, b) as at:
            write(k, gx3, at, f"{a} * ({_f64(k, dy3, at)} - {d} - {c} * "
                              f"({_f64(k, x3, at)} - {m}))")
        with k.w.block(f"if {_T} == 0"):
            write(k, g_scale, [b.f], f"{sum_dyc} * {rstd}")
            write(k, g_offset, [b.f], sum_dy)
    _per_feature_kernel(ge, feats, "batch_norm_grad", body,
                        "batch_norm_grad: per feature, the two sums, then the gradient")


EMITTERS = {"batch_norm_training": _training, "batch_norm_inference": _inference,
            "batch_norm_grad": _grad}

