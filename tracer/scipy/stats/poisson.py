"""The Poisson distribution with rate `mu` (a discrete distribution: `logpmf`)."""

from __future__ import annotations

from typing import Any

from ... import numpy as tnp
from ..special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k = tnp.subtract(tnp.asarray(k, tnp.float64) if not tnp.issubdtype(tnp.asarray(k).dtype,
                     tnp.inexact) else k, loc)
    out = xlogy(k, mu) - gammaln(k + 1.0) - mu
    return tnp.where((k < 0) | (k != tnp.floor(k)), -tnp.inf, out)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return tnp.exp(logpmf(k, mu, loc))
