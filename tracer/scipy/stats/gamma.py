"""The gamma distribution with shape `a` (density x**(a-1) exp(-x) / Gamma(a))."""

from __future__ import annotations

from typing import Any

from ... import numpy as tnp
from ..special import gammaln, xlogy

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    y = tnp.divide(tnp.subtract(x, loc), scale)
    a = tnp.asarray(a, y.dtype)
    out = xlogy(a - 1.0, y) - y - gammaln(a) - tnp.log(tnp.asarray(scale, y.dtype))
    return tnp.where(y < 0, -tnp.inf, out)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.exp(logpdf(x, a, loc, scale))
