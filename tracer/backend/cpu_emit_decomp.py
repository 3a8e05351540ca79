"""cpu emitters for cholesky, triangular_solve and the matrix decompositions tracer.numpy.linalg needs."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}
