"""The numba code generator both numba backends share (it imports neither): the source
writer, the fusion plan, graph lowering, the codegen base, loop bodies, scalar emitters,
the reference fallback, and `lib/`, the njit helpers generated code imports."""
