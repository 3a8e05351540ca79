"""`tracer.export`: save a traced program as HLO text and call it in another process.

    from tracer import export
    exp = export.export(tr.jit(f))(tr.ShapedArray((2, 3), np.float32))
    data = exp.serialize()
    export.deserialize(data).call(x)
"""

from .exported import FORMAT_VERSION, Exported, deserialize, export
from .hlo_parser import parse_hlo
from .hlo_values import HloSyntaxError

__all__ = ["FORMAT_VERSION", "Exported", "HloSyntaxError", "deserialize", "export", "parse_hlo"]
