"""Programs from JAX's `examples/` and documentation (jax-ml/jax, Apache-2.0), each
written once as a function of the library namespace `L` (`L.jax`, `L.jnp`, `L.norm`,
`L.logsumexp`, `L.nn`): the port is the rename alone. The tests run each with JAX
(x64) and with tracer and compare. Stand-ins only for what is not array code
(datasets: synthetic arrays; `example_libraries.optimizers`: the momentum update,
written out; plotting: dropped).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import numpy as np
import numpy.random as npr


def namespace(kind: str) -> types.SimpleNamespace:
    """The rename: JAX's modules or tracer's, under the same names."""
    if kind == "jax":
        import jax
        import jax.numpy as jnp
        import jax.scipy.special as special
        import jax.scipy.stats.norm as norm
        return types.SimpleNamespace(jax=jax, jnp=jnp, norm=norm, logsumexp=special.logsumexp,
                                     nn=jax.nn, lax=jax.lax, random=jax.random)
    import tracer as jax
    import tracer.numpy as jnp
    import tracer.scipy.special as special
    import tracer.scipy.stats.norm as norm
    return types.SimpleNamespace(jax=jax, jnp=jnp, norm=norm, logsumexp=special.logsumexp,
                                 nn=jax.nn, lax=jax.ops, random=jax.random)


# ------------------------------------------------------- examples/mnist_classifier_fromscratch
def mnist_fromscratch(L: Any, layer_sizes=(64, 32, 10), steps: int = 3) -> Any:
    jnp, jit, grad, logsumexp = L.jnp, L.jax.jit, L.jax.grad, L.logsumexp

    def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
        return [(scale * rng.randn(m, n), scale * rng.randn(n))
                for m, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

    def predict(params, inputs):
        activations = inputs
        for w, b in params[:-1]:
            outputs = jnp.dot(activations, w) + b
            activations = jnp.tanh(outputs)
        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    step_size = 0.001
    data = npr.RandomState(1)
    images = data.randn(40, layer_sizes[0])
    labels = np.eye(layer_sizes[-1])[data.randint(0, layer_sizes[-1], 40)]

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(0.1, list(layer_sizes))
    for i in range(steps):
        params = update(params, (images[i * 8:(i + 1) * 8], labels[i * 8:(i + 1) * 8]))
    return params, loss(params, (images, labels)), accuracy(params, (images, labels))


# ------------------------------------------------------------------------ examples/advi
def advi(L: Any, steps: int = 5) -> Any:
    jnp, jit, grad, vmap, random, norm = (L.jnp, L.jax.jit, L.jax.grad, L.jax.vmap,
                                          L.random, L.norm)

    def diag_gaussian_sample(rng, mean, log_std):
        return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

    def diag_gaussian_logpdf(x, mean, log_std):
        return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))

    def elbo(logprob, rng, mean, log_std):
        sample = diag_gaussian_sample(rng, mean, log_std)
        return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

    def batch_elbo(logprob, rng, params, num_samples):
        rngs = random.split(rng, num_samples)
        vectorized_elbo = vmap(functools.partial(elbo, logprob), in_axes=(0, None, None))
        return jnp.mean(vectorized_elbo(rngs, *params))

    def funnel_log_density(params):
        return norm.logpdf(params[0], 0, jnp.exp(params[1])) + \
            norm.logpdf(params[1], 0, 1.35)

    num_samples = 40

    @jit
    def objective(params, t):
        rng = random.PRNGKey(t)
        return -batch_elbo(funnel_log_density, rng, params, num_samples)

    # optimizers.momentum(step_size=0.1, mass=0.9), written out
    params, velocity = (jnp.zeros(2), jnp.zeros(2)), (jnp.zeros(2), jnp.zeros(2))
    values = []
    for t in range(steps):
        g = grad(objective)(params, t)
        velocity = tuple(0.9 * v + gi for v, gi in zip(velocity, g))
        params = tuple(p - 0.1 * v for p, v in zip(params, velocity))
        values.append(objective(params, t))
    return params, values


# ------------------------------------- autodiff cookbook: Newton's method with hessian
def newton_logistic_regression(L: Any, steps: int = 4) -> Any:
    jnp, grad, hessian, jit = L.jnp, L.jax.grad, L.jax.hessian, L.jax.jit
    rng = npr.RandomState(0)
    inputs = rng.randn(20, 3)
    targets = (inputs @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.randn(20) > 0).astype(float)

    def loss(w):
        z = inputs @ w
        # softplus written as logaddexp: zero-initialised weights sit on its tie point
        return jnp.mean(jnp.logaddexp(0.0, z) - targets * z) + 1e-3 * jnp.sum(w ** 2)

    @jit
    def newton_step(w):
        return w - jnp.linalg.solve(hessian(loss)(w), grad(loss)(w))

    w = jnp.zeros(3)
    for _ in range(steps):
        w = newton_step(w)
    return w, loss(w), hessian(loss)(jnp.zeros(3))


# -------------------------------------------- GP regression (the softplus tie in its grad)
def gp_marginal_likelihood(L: Any) -> Any:
    jnp, value_and_grad = L.jnp, L.jax.value_and_grad
    x = np.linspace(-3, 3, 15)[:, None]
    y = np.sin(x[:, 0]) + 0.1 * np.cos(3 * x[:, 0])

    def softplus(v):
        return jnp.logaddexp(v, 0.0)

    def neg_log_marginal(params):
        amp, length = softplus(params["amp"]), softplus(params["ls"])
        noise = softplus(params["noise"])
        d = (x - x.T) / length
        cov = amp * jnp.exp(-0.5 * d ** 2) + (noise + 1e-6) * jnp.eye(x.shape[0])
        chol = jnp.linalg.cholesky(cov)
        alpha = jnp.linalg.solve(cov, y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diagonal(chol)))

    params = {"amp": 0.0, "ls": 0.0, "noise": 0.0}  # zero-initialised: the tie point
    value, g = value_and_grad(neg_log_marginal)(params)
    return value, g


EXAMPLES: dict[str, Callable[[Any], Any]] = {
    "mnist_classifier_fromscratch": mnist_fromscratch,
    "advi": advi,
    "newton_logistic_regression": newton_logistic_regression,
    "gp_marginal_likelihood": gp_marginal_likelihood,
}
FULL_EXAMPLES: dict[str, Callable[[Any], Any]] = {
    "mnist_classifier_fromscratch_full": functools.partial(
        mnist_fromscratch, layer_sizes=(784, 128, 128, 10), steps=5),
    "advi_100_steps": functools.partial(advi, steps=100),
}
