"""Student's t distribution with `df` degrees of freedom."""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as tnp
from ..special import gammaln

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z = tnp.divide(tnp.subtract(x, loc), scale)
    df = tnp.asarray(df, z.dtype)
    half = 0.5 * (df + 1.0)
    return (gammaln(half) - gammaln(0.5 * df) - 0.5 * tnp.log(df * math.pi)
            - tnp.log(tnp.asarray(scale, z.dtype)) - half * tnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.exp(logpdf(x, df, loc, scale))
