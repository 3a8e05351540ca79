"""How the cpu backend compiles its generated functions, and when they use threads."""

PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
# numba options of every generated function: machine code cached on disk, IEEE division
# (x / 0 is inf, not an exception), and the GIL released while it runs.
NJIT_OPTIONS = 'cache=True, error_model="numpy", nogil=True'
