"""The normal distribution N(loc, scale**2)."""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as tnp
from ..special import log_ndtr, ndtr, ndtri

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _z(x: Any, loc: Any, scale: Any) -> Any:
    return tnp.divide(tnp.subtract(x, loc), scale)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = _z(x, loc, scale)
    return -0.5 * z * z - 0.5 * math.log(2 * math.pi) - tnp.log(tnp.asarray(scale, z.dtype))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ndtr(_z(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return log_ndtr(_z(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ndtr(-_z(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return log_ndtr(-_z(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.add(tnp.multiply(ndtri(q), scale), loc)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return ppf(tnp.subtract(1.0, q), loc, scale)
