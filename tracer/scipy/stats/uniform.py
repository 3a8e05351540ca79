"""The uniform distribution on [loc, loc + scale]."""

from __future__ import annotations

from typing import Any

from ... import numpy as tnp

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x = tnp.asarray(x, tnp.float64) if not tnp.issubdtype(tnp.asarray(x).dtype,
                                                          tnp.inexact) else x
    inside = (x >= loc) & (x <= tnp.add(loc, scale))
    return tnp.where(inside, -tnp.log(tnp.asarray(scale, x.dtype)), -tnp.inf)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.clip(tnp.divide(tnp.subtract(x, loc), scale), 0.0, 1.0)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.add(loc, tnp.multiply(q, scale))
