"""The beta distribution on [0, 1] with shapes `a`, `b`."""

from __future__ import annotations

from typing import Any

from ... import numpy as tnp
from ..special import betaln, xlog1py, xlogy

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    y = tnp.divide(tnp.subtract(x, loc), scale)
    a, b = tnp.asarray(a, y.dtype), tnp.asarray(b, y.dtype)
    out = xlogy(a - 1.0, y) + xlog1py(b - 1.0, -y) - betaln(a, b) \
        - tnp.log(tnp.asarray(scale, y.dtype))
    return tnp.where((y < 0) | (y > 1), -tnp.inf, out)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return tnp.exp(logpdf(x, a, b, loc, scale))
