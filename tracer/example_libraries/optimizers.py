"""`tracer.example_libraries.optimizers`: JAX's first-order optimizers
(`jax.example_libraries.optimizers`) on `tracer.numpy`.

An optimizer is an `(init_fun, update_fun, get_params)` triple: `init_fun(params)` gives
the state, `update_fun(step, grads, state)` the next state, `get_params(state)` the
parameters. `@optimizer` lifts a triple written for one array to pytrees of them; the
state (`OptimizerState`) is a pytree whose tree structures are static, so it passes
through `jit`.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from .. import tree_util
from ..errors import TracerTypeError, TracerValueError

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay", "piecewise_constant",
           "make_schedule", "l2_norm", "clip_grads", "JoinPoint", "unpack_optimizer_state",
           "pack_optimizer_state"]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Schedule = Callable[[Any], Any]


class Optimizer(NamedTuple):
    init_fn: Callable[[Any], Any]
    update_fn: Callable[[Any, Any, Any], Any]
    params_fn: Callable[[Any], Any]


def _flatten_states(states: list[Any]) -> tuple[list[Any], list[Any]]:
    pairs = [tree_util.tree_flatten(s) for s in states]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _unflatten_states(subtrees: Any, states_flat: Any) -> list[Any]:
    return [tree_util.tree_unflatten(t, s) for t, s in zip(subtrees, states_flat, strict=True)]


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
    """Lift an optimizer written for single arrays to pytrees of arrays."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree: Any) -> OptimizerState:
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        def tree_update(i: Any, grad_tree: Any, opt_state: OptimizerState) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TracerTypeError(
                    f"optimizer update: the gradient tree {grad_tree_def} does not match the "
                    f"parameter tree {tree} the optimizer was initialized with")
            states = _unflatten_states(subtrees, states_flat)
            new = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
            new_flat, new_subtrees = _flatten_states(new)
            if list(new_subtrees) != list(subtrees):
                raise TracerTypeError(
                    f"optimizer update produced the state structure {new_subtrees}, not its "
                    f"input's {subtrees}")
            return OptimizerState(new_flat, tree, subtrees)

        def tree_get_params(opt_state: OptimizerState) -> Any:
            states_flat, tree, subtrees = opt_state
            params = [get_params(s) for s in _unflatten_states(subtrees, states_flat)]
            return tree_util.tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _first(state: Any) -> Any:
    return state[0]


@optimizer
def sgd(step_size: Any) -> Optimizer:
    """x - step_size(i) * g."""
    step_size = make_schedule(step_size)
    return Optimizer(lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)


@optimizer
def momentum(step_size: Any, mass: float) -> tuple[Callable[..., Any], ...]:
    """Heavy-ball momentum: v = mass * v + g; x -= step_size(i) * v."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


@optimizer
def nesterov(step_size: Any, mass: float) -> tuple[Callable[..., Any], ...]:
    """Nesterov momentum: the step looks ahead along the new velocity."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


@optimizer
def adagrad(step_size: Any, momentum: float = 0.9) -> tuple[Callable[..., Any], ...]:
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def rmsprop(step_size: Any, gamma: float = 0.9,
            eps: float = 1e-8) -> tuple[Callable[..., Any], ...]:
    """RMSProp: divide by the root of a running mean of squared gradients."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


@optimizer
def rmsprop_momentum(step_size: Any, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple[Callable[..., Any], ...]:
    """RMSProp with momentum on the scaled step."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def adam(step_size: Any, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> tuple[Callable[..., Any], ...]:
    """Adam (Kingma & Ba 2015) with bias-corrected moments."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def adamax(step_size: Any, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> tuple[Callable[..., Any], ...]:
    """AdaMax: Adam with an exponentially weighted infinity norm."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: Any) -> Any:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


def _broadcast_along(ndim: int, v: Any, axis: int) -> Any:
    """A 1-d `v` as a rank-`ndim` array varying along `axis` only (a scalar's one
    accumulator as it is)."""
    idx: list[Any] = [None] * ndim
    idx[axis:axis + 1] = [slice(None)]
    return v[tuple(idx)]


@optimizer
def sm3(step_size: Any, momentum: float = 0.9) -> tuple[Callable[..., Any], ...]:
    """SM3 (Anil et al. 2019): one accumulator per dim, the min of them per element."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        x_shape = jnp.shape(x0)
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], x_shape

    def update(i: Any, g: Any, state: Any) -> Any:
        x, m, vs, x_shape = state
        vs = [_broadcast_along(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        others = [tuple(a for a in range(x.ndim) if a != j) for j in range(x.ndim)]
        return x, m, [accum.max(axes) for axes in others], x_shape
    return init, update, lambda state: state[0].reshape(state[3])


def constant(step_size: Any) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    def schedule(step_num: Any) -> Any:
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """values[k] for steps past k boundaries."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise TracerValueError("piecewise_constant: boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise TracerValueError("piecewise_constant: boundaries must be one shorter than values "
                               f"(got {boundaries.shape[0]} and {values.shape[0]})")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    """A callable as it is; a scalar as a constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TracerTypeError(f"optimizers: a step size is a scalar or a schedule, got "
                          f"{type(scalar_or_schedule).__name__} of shape "
                          f"{jnp.shape(scalar_or_schedule)}")


def l2_norm(tree: Any) -> Any:
    """The l2 norm of all the leaves of a pytree together."""
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_util.tree_leaves(tree)))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """The gradients scaled down so that their joint l2 norm is at most `max_norm`."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(
        lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf of the outer tree in an unpacked optimizer state: holds a leaf's state."""

    def __init__(self, subtree: Any):
        self.subtree = subtree

    def __iter__(self) -> Any:
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as the parameter tree with a JoinPoint per leaf (for serializing)."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = _unflatten_states(subtree_defs, states_flat)
    return tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of `unpack_optimizer_state`."""
    sentinels, tree_def = tree_util.tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TracerTypeError("pack_optimizer_state: every leaf must be a JoinPoint")
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
