"""cholesky, triangular_solve and the matrix decompositions tracer.numpy.linalg needs."""

from __future__ import annotations

__all__: list[str] = []
