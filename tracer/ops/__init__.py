"""`tracer.ops`: one function per operation of the seeds' Operation Semantics.

Ops are strict (operands share a dtype; only the seeds' broadcasting), names are
the XLA names in snake_case, arrays positional, parameters keyword-able. Each
function binds an `Op` record from `tracer.ops.registry.OPS`.
"""

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
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv
from .window import *  # noqa: F401,F403
from .window import __all__ as _window
from .sort import *  # noqa: F401,F403
from .sort import __all__ as _sort
from .rng import *  # noqa: F401,F403
from .rng import __all__ as _rng
from .decomp import *  # noqa: F401,F403
from .decomp import __all__ as _decomp
from .fft import *  # noqa: F401,F403
from .fft import __all__ as _fft
from .batch_norm import *  # noqa: F401,F403
from .batch_norm import __all__ as _batch_norm
from .bits import *  # noqa: F401,F403
from .bits import __all__ as _bits
from .misc import *  # noqa: F401,F403
from .misc import __all__ as _misc
from .in_dim import *  # noqa: F401,F403
from .in_dim import __all__ as _in_dim
from .conv_transpose import *  # noqa: F401,F403
from .conv_transpose import __all__ as _conv_transpose
from .registry import OPS, Op
from .scatter import *  # noqa: F401,F403
from .scatter import __all__ as _scatter
from .shape import *  # noqa: F401,F403
from .shape import __all__ as _shape
from .tokens import *  # noqa: F401,F403
from .tokens import __all__ as _tokens
from . import callbacks as _callbacks  # noqa: F401  (the callback op records)

__all__ = ["OPS", "Op", *_elementwise, *_shape, *_linalg, *_reduce, *_control, *_indexing,
           *_scatter, *_collectives, *_conv, *_window, *_sort, *_rng, *_decomp, *_fft,
           *_batch_norm, *_bits, *_misc, *_tokens, *_in_dim, *_conv_transpose]
from . import elementwise_rules  # noqa: F401,E402
from . import control_batch_rules  # noqa: F401,E402
from . import shape_rules  # noqa: F401,E402
from . import indexing_rules  # noqa: F401,E402
from . import conv_rules  # noqa: F401,E402
from . import window_rules  # noqa: F401,E402
from . import sort_rules  # noqa: F401,E402
from . import rng_rules  # noqa: F401,E402
from . import decomp_rules  # noqa: F401,E402
from . import numerics_rules  # noqa: F401,E402
from . import misc_rules  # noqa: F401,E402
from . import callbacks_rules  # noqa: F401,E402
