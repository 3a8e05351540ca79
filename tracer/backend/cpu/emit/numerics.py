"""cpu emitters for fft, batch_norm_*, reduce_precision, bitcast_convert_type.

- fft calls MKL's DFTI (`cpu.lib.fft_mkl`) where the `mkl` wheel is installed and
  `config.use_mkl` is on (not in ahead-of-time builds), else the DUCC0 kernels of
  `cpu.lib.fft` (rocket-fft), writing into the output buffer; without either it runs
  its NumPy reference instead.
- batch norm calls the `cpu.lib.batch_norm` kernels on (outer, F, inner) views of
  the operand (their `_parallel` versions from PARALLEL_MIN_ELEMENTS elements, where
  the module may run threads); float16 arrays are widened to float32 around the call.
- reduce_precision is a loop over the unsigned-integer view of the operand (16-bit
  float arrays are stored as their bits already) calling `numba.lib.bits` helpers.
- bitcast_convert_type is a `.view()` of the (C-contiguous) operand, flattened so
  numba can change the item size; rank-0 values go through a 1-element array.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, Sequence

import numpy as np

from ....core import Atom, Eqn
from ...numba.codegen import GraphEmitter, Ref, store_value
from ...numba.scalar import BF16 as _BF16
from ...numba.scalar import HALVES, literal, storage_dtype
from ..lib import mkl
from ..options import PARALLEL_MIN_ELEMENTS, thread_count
from .fallback import emit_fallback

HAVE_ROCKET_FFT = importlib.util.find_spec("rocket_fft") is not None
_FFT_KERNELS = {"FFT": "fft_forward", "IFFT": "fft_inverse", "RFFT": "fft_real_forward",
                "IRFFT": "fft_real_inverse"}


def _np_dtype(dtype: np.dtype) -> str:
    """`np.uint16` for float16 (its storage), `np.float32`, ..."""
    return f"np.{storage_dtype(dtype).name}"


def _product(ge: GraphEmitter, atom: Atom, dims: Sequence[int]) -> str:
    return " * ".join(ge.dim(atom, d) for d in dims) or "1"


def _flat(ge: GraphEmitter, ref: Ref, atom: Atom) -> str:
    """A 1-D view of an array value (C-contiguous)."""
    return f"{ref.name}.reshape(({_product(ge, atom, range(atom.aval.ndim))},))"


# ------------------------------------------------------------------ fft

def _fft(ge: GraphEmitter, eqn: Eqn) -> None:
    library = _fft_library(ge)
    if library is None:
        emit_fallback(ge, eqn)
        return
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    target = ge.alloc(out)
    kernel = ge.mod.use(_FFT_KERNELS[eqn.params["fft_type"]], library)
    args = [x.name, target, str(len(eqn.params["fft_length"]))]
    if library == "cpu.lib.fft_mkl":  # (MKL's threads: the nests' count, on one pool)
        args.append(ge.mod.size(("threads",), thread_count(), "threads")
                    if ge.mod.parallel_ok else "1")
    ge.w.line(f"{kernel}({', '.join(args)})")
    ge.bind(out, Ref(target, out.aval))


def _fft_library(ge: GraphEmitter) -> str | None:
    """MKL's DFTI if the module may call it, else DUCC0, else None (the reference)."""
    if getattr(ge.mod, "mkl_ok", False) and mkl.available():
        return "cpu.lib.fft_mkl"
    return "cpu.lib.fft" if HAVE_ROCKET_FFT else None


# ------------------------------------------------------------------ reduce_precision

def _reduce_precision(ge: GraphEmitter, eqn: Eqn) -> None:
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    dtype = out.aval.dtype
    bits = dtype.itemsize * 8
    e = ge.mod.size(("param", id(eqn), "exponent_bits"), eqn.params["exponent_bits"],
                    "exponent_bits")
    m = ge.mod.size(("param", id(eqn), "mantissa_bits"), eqn.params["mantissa_bits"],
                    "mantissa_bits")
    uint = f"np.uint{bits}"
    rounded = _bits_rounder(ge, dtype, e, m)
    if x.scalar:  # through a 1-element array, to reach the bits
        cell = ge.fresh("cell")
        ge.w.line(f"{cell} = np.empty(1, {_np_dtype(dtype)})")
        ge.w.line(f"{cell}[0] = {store_value(x.name, dtype, ge.mod)}")
        ge.w.line(f"{cell}.view({uint})[0] = {rounded(f'{cell}.view({uint})[0]')}")
        ge.bind(out, Ref(_scalar_of(ge, f"{cell}[0]", dtype), out.aval))
        return
    target = ge.alloc(out)
    src, dst, k = ge.fresh("bits"), ge.fresh("rounded"), ge.fresh("k")
    ge.w.line(f"{src} = {_flat(ge, x, eqn.inputs[0])}.view({uint})")
    ge.w.line(f"{dst} = {_flat(ge, Ref(target, out.aval), out)}.view({uint})")
    with ge.w.block(f"for {k} in range({src}.size)"):
        ge.w.line(f"{dst}[{k}] = {rounded(f'{src}[{k}]')}")
    ge.bind(out, Ref(target, out.aval))


def _bits_rounder(ge: GraphEmitter, dtype: np.dtype, e: str, m: str) -> Callable[[str], str]:
    """Source text of the reduced bits of the stored bits `value` (a float's uint view).
    bfloat16 bits are the top half of float32 bits with the same exponent field, so
    they go through the float32 helper and come back exactly (the low half stays 0)."""
    if dtype == _BF16:
        helper = ge.mod.use("reduce_precision_32", "numba.lib.bits")
        return lambda value: (f"np.uint16({helper}(np.uint32({value}) << np.uint32(16), "
                              f"{e}, {m}) >> np.uint32(16))")
    helper = ge.mod.use(f"reduce_precision_{dtype.itemsize * 8}", "numba.lib.bits")
    return lambda value: f"{helper}({value}, {e}, {m})"


def _scalar_of(ge: GraphEmitter, stored: str, dtype: np.dtype) -> str:
    """A scalar variable holding the stored element `stored` (16-bit floats: f32 value)."""
    name = ge.fresh("value")
    ge.w.line(f"{name} = {ge.mod.use(HALVES[dtype].load)}({stored})" if dtype in HALVES
              else f"{name} = {stored}")
    return name


# ------------------------------------------------------------------ bitcast_convert_type

def _bitcast_convert_type(ge: GraphEmitter, eqn: Eqn) -> None:
    atom, out = eqn.inputs[0], eqn.outputs[0]
    x, old, new = ge.ref(atom), atom.aval.dtype, out.aval.dtype
    if x.scalar:  # through a 1-element array of the old type
        source = ge.fresh("cell")
        ge.w.line(f"{source} = np.empty(1, {_np_dtype(old)})")
        ge.w.line(f"{source}[0] = {store_value(x.name, old, ge.mod)}")
    else:
        source = _flat(ge, x, atom)
    view = f"{source}.view({_np_dtype(new)})"
    if not out.aval.ndim:
        ge.bind(out, Ref(_scalar_of(ge, f"{view}[0]", new), out.aval))
        return
    name = ge.fresh("bitcast")
    ge.w.line(f"{name} = {view}.reshape({ge.shape_tuple(out)})")
    ge.bind(out, Ref(name, out.aval))


# ------------------------------------------------------------------ batch norm

def _as_3d(ge: GraphEmitter, name: str, atom: Atom, fi: int) -> str:
    """`name` viewed as (outer, F, inner) around the feature dim `fi`."""
    ndim = atom.aval.ndim
    return (f"{name}.reshape(({_product(ge, atom, range(fi))}, {ge.dim(atom, fi)}, "
            f"{_product(ge, atom, range(fi + 1, ndim))}))")


def _widened(ge: GraphEmitter, atom: Atom) -> str:
    """The array of `atom` as the kernel reads it (float16 widened to float32)."""
    ref = ge.ref(atom)
    if atom.aval.dtype not in HALVES:
        return ref.name
    name = ge.fresh("wide")
    ge.w.line(f"{name} = {ge.mod.use(HALVES[atom.aval.dtype].widen)}({ref.name})")
    return name


def _emit_batch_norm(kernel: str, kinds: str) -> Callable[[GraphEmitter, Eqn], None]:
    """An emitter calling `kernel(*inputs, epsilon, *outputs)`; `kinds` marks each input
    and output as operand-shaped ("o", passed as a 3-D view) or a feature vector ("v")."""
    def emit(ge: GraphEmitter, eqn: Eqn) -> None:
        fi, n_in = eqn.params["feature_index"], len(eqn.inputs)
        args = [_as_3d(ge, _widened(ge, a), a, fi) if kind == "o" else _widened(ge, a)
                for a, kind in zip(eqn.inputs, kinds[:n_in], strict=True)]
        args.append(literal(eqn.params["epsilon"], np.dtype(np.float64)))
        finish: list[tuple[str, str]] = []
        for var, kind in zip(eqn.outputs, kinds[n_in:], strict=True):
            buffer = written = ge.alloc(var)
            ge.bind(var, Ref(buffer, var.aval))
            if var.aval.dtype in HALVES:  # the kernel writes float32, rounded afterwards
                written = ge.fresh("wide")
                ge.w.line(f"{written} = np.empty({ge.shape_tuple(var)}, np.float32)")
                finish.append((written, buffer))
            args.append(_as_3d(ge, written, var, fi) if kind == "o" else written)
        threads = ge.mod.parallel_ok and eqn.inputs[0].aval.size >= PARALLEL_MIN_ELEMENTS
        name = f"{kernel}_parallel" if threads else kernel
        ge.w.line(f"{ge.mod.use(name, 'cpu.lib.batch_norm')}({', '.join(args)})")
        for wide, target in finish:
            narrow = ge.mod.use(HALVES[eqn.outputs[0].aval.dtype].narrow)
            ge.w.line(f"{narrow}({wide}, {target})")
    return emit


EMITTERS: dict[str, Any] = {
    "fft": _fft,
    "reduce_precision": _reduce_precision,
    "bitcast_convert_type": _bitcast_convert_type,
    "batch_norm_training": _emit_batch_norm("batch_norm_training", "ovv" + "ovv"),
    "batch_norm_inference": _emit_batch_norm("batch_norm_inference", "ovvvv" + "o"),
    "batch_norm_grad": _emit_batch_norm("batch_norm_grad", "ovvvo" + "ovv"),
}
