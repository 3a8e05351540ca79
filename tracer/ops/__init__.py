"""`tracer.ops`: one function per operation of the seeds' Operation Semantics.

Ops are strict (operands share a dtype; only the seeds' broadcasting), names are
the XLA names in snake_case, arrays positional, parameters keyword-able. Each
function binds an `Op` record from `tracer.ops.registry.OPS`.
"""

import importlib as _importlib
from typing import Any as _Any

from .collectives import *  # noqa: F401,F403
from .collectives import __all__ as _collectives
from .control import *  # noqa: F401,F403
from .control import __all__ as _control
from .elementwise import *  # noqa: F401,F403
from .elementwise import __all__ as _elementwise
from .indexing import *  # noqa: F401,F403
from .indexing import __all__ as _indexing
from .linalg import *  # noqa: F401,F403
from .linalg import __all__ as _linalg
from .reduce import *  # noqa: F401,F403
from .reduce import __all__ as _reduce
from .sort import *  # noqa: F401,F403
from .sort import __all__ as _sort
from .misc import *  # noqa: F401,F403
from .misc import __all__ as _misc
from .registry import Op as Op
from .scatter import *  # noqa: F401,F403
from .scatter import __all__ as _scatter
from .shape import *  # noqa: F401,F403
from .shape import __all__ as _shape
from .tokens import *  # noqa: F401,F403
from .tokens import __all__ as _tokens
from . import callbacks as _callbacks  # noqa: F401  (the callback op records)

from . import elementwise_rules  # noqa: F401,E402
from . import control_batch_rules  # noqa: F401,E402
from . import shape_rules  # noqa: F401,E402
from . import reduce_rules  # noqa: F401,E402
from . import indexing_rules  # noqa: F401,E402
from . import sort_rules  # noqa: F401,E402
from . import misc_rules  # noqa: F401,E402
from . import callbacks_rules  # noqa: F401,E402

# Op families a traced model seldom uses (decompositions, fft and batch norm, convolution
# and windows, random bits), imported with their rules on first use of any name not found
# above: `import tracer` does not compile them. `OPS` and `__all__` are complete once read.
_LAZY = ("conv", "conv_transpose", "in_dim", "window", "rng", "decomp", "fft", "batch_norm",
         "bits")
_EAGER_ALL = ["Op", *_elementwise, *_shape, *_linalg, *_reduce, *_control, *_indexing,
              *_scatter, *_collectives, *_sort, *_misc, *_tokens]


def _load_lazy() -> dict[str, _Any]:
    """Import every family of `_LAZY` and put its names here (`__all__` and `OPS` too)."""
    if "OPS" in globals():
        return globals()
    names = list(_EAGER_ALL)
    for module in [_importlib.import_module(f".{name}", __name__) for name in _LAZY]:
        globals().update((name, getattr(module, name)) for name in module.__all__)
        names += module.__all__
    globals()["__all__"] = ["OPS", *names]
    globals()["OPS"] = _importlib.import_module(".registry", __name__).OPS
    return globals()


def __getattr__(name: str) -> _Any:
    namespace = _load_lazy()
    if name not in namespace:
        raise AttributeError(f"module 'tracer.ops' has no attribute {name!r}")
    return namespace[name]


def __dir__() -> list[str]:
    return sorted(_load_lazy())
