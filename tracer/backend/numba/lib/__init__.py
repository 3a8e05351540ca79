"""njit helpers that generated modules of both backends import at run time: scalar
math, complex math with NumPy's special values, the RNG blocks, bit-level helpers."""
