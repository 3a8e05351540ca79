"""tracer: a JAX-style trace-and-compile DSL for NumPy-like Python.

    import tracer as tr, tracer.numpy as tnp

    @tr.jit
    def predict(w, b, x):
        return tnp.tanh(x @ w + b)
"""

import importlib as _importlib

# (numpy installs the Tracer's methods)
from . import debug, numpy, ops, profiler, transforms, tree, tree_util
from . import ad_checkpoint
from .callbacks import io_callback, pure_callback
from .api import (Jitted, block_until_ready, clear_caches, device_put, devices, eval_shape, jit,
                  make_hlo, make_jaxpr)
from .config import config
from . import distributed
from .distributed import pmap, process_count, process_index
from .core import ShapedArray
from .errors import (CacheError, ConcretizationError, DTypeError, EscapedTracerError, ParamError,
                     ShapeError, TracerError, TracerIndexError, TracerMemoryError,
                     TracerOverflowError, TracerTypeError, TracerValueError,
                     UnsupportedOpError)
from .hlo import HloModule
from .ops.feeds import transfer_from_outfeed, transfer_to_infeed
from .ops.misc import register_custom_call
from .stages import Compiled, Lowered
from .transforms import (checkpoint, checkpoint_name, checkpoint_policies, custom_jvp, custom_vjp,
                         grad, hessian, jacfwd, jacobian, jacrev, jvp, linearize,
                         print_saved_residuals, stop_gradient, value_and_grad, vjp, vmap)
from .tree_util import register_pytree_node_class

from ._version import __version__ as __version__

import numpy as _np
from .tracing import Tracer as _Tracer

# Namespaces imported on first use (`tr.random.key(0)`, `import tracer.nn`): they are
# composites of tracer.numpy that `import tracer` need not pay for.
_LAZY = frozenset({"nn", "random", "scipy", "test_util"})


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tracer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

# JAX's `jax.Array`, for isinstance checks and annotations: eager results are NumPy
# arrays, traced values are Tracers.
Array = _np.ndarray | _Tracer

__all__ = [
    "CacheError", "ConcretizationError", "Compiled", "DTypeError", "EscapedTracerError",
    "HloModule", "Jitted", "Lowered", "ParamError", "ShapeError", "ShapedArray", "TracerError",
    "TracerIndexError", "TracerMemoryError", "TracerOverflowError", "TracerTypeError",
    "TracerValueError",
    "UnsupportedOpError",
    "clear_caches", "config", "device_put", "devices", "distributed", "eval_shape", "jit",
    "make_hlo", "numpy", "pmap", "process_count", "process_index",
    "ops", "profiler", "random", "register_custom_call", "tree_util",
    "checkpoint", "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacrev", "jvp",
    "linearize", "stop_gradient", "value_and_grad", "vjp", "vmap", "transforms",
    "debug", "io_callback", "pure_callback", "transfer_from_outfeed", "transfer_to_infeed",
    "Array", "ad_checkpoint", "block_until_ready", "checkpoint_name", "checkpoint_policies",
    "jacobian", "make_jaxpr", "nn", "print_saved_residuals", "register_pytree_node_class",
    "scipy", "test_util", "tree",
]
