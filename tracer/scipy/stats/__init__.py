"""`tracer.scipy.stats`: the distributions JAX has, as modules with SciPy's function
names and parameters (`norm.logpdf(x, loc=0, scale=1)`, ...)."""

from . import bernoulli, beta, gamma, multivariate_normal, norm, poisson, t, uniform

__all__ = ["bernoulli", "beta", "gamma", "multivariate_normal", "norm", "poisson", "t",
           "uniform"]
