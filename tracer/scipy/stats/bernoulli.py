"""The Bernoulli distribution with success probability `p`."""

from __future__ import annotations

from typing import Any

from ... import numpy as tnp
from ..special import xlog1py, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k = tnp.subtract(k, loc)
    p = tnp.asarray(p, tnp.float64) if not tnp.issubdtype(tnp.asarray(p).dtype,
                                                          tnp.inexact) else p
    out = xlogy(k, p) + xlog1py(1.0 - k, -p)
    return tnp.where((k != 0) & (k != 1), -tnp.inf, out)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return tnp.exp(logpmf(k, p, loc))
