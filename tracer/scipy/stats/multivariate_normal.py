"""The multivariate normal distribution N(mean, cov) (by its Cholesky factor)."""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as tnp
from ... import ops

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    x, mean, cov = (tnp.asarray(v, tnp.float64) if not tnp.issubdtype(tnp.asarray(v).dtype,
                    tnp.inexact) else tnp.asarray(v) for v in (x, mean, cov))
    n = cov.shape[-1]
    low = ops.cholesky(cov, lower=True)
    diff = tnp.subtract(x, mean)
    batch = tnp.broadcast_shapes(diff.shape[:-1], cov.shape[:-2])
    low = tnp.broadcast_to(low, batch + (n, n))
    y = ops.triangular_solve(low, tnp.broadcast_to(diff, batch + (n,))[..., None],
                             left_side=True, lower=True)[..., 0]
    log_det = tnp.sum(tnp.log(tnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * tnp.sum(y * y, axis=-1) - log_det - 0.5 * n * math.log(2 * math.pi)


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    return tnp.exp(logpdf(x, mean, cov))
