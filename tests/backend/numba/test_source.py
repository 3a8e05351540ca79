"""Generated source text: `same_code_key` says when two generated functions compute the
same thing, so that one serves both."""

from __future__ import annotations

import pytest

from tracer.backend.numba.source import SourceWriter, same_code_key


def _layer(n: str, x: str, v: str, out: str, line: int = 3, fn: str = "exp_f64",
           scale: str = "2.0", read: str = "[i] * {scale}") -> tuple[list[str], SourceWriter]:
    """`for i in prange(n): out[i] = fn(x[i] * scale)` with these names."""
    w = SourceWriter()
    with w.block(f"for i in numba.prange({n})"):
        w.line(f"{v} = {x}{read.format(scale=scale)}  # model.py:{line}")
        w.line(f"{out}[i] = {fn}({v})")
    return [n, x, out], w


def test_functions_differing_only_in_names_and_comments_share_a_key():
    assert same_code_key(*_layer("n0", "arg0", "mul_1", "out0")) == \
        same_code_key(*_layer("n7", "buf_3", "mul_9", "buf_4", line=8))


@pytest.mark.parametrize("other", [
    dict(fn="log_f64"),      # another global
    dict(scale="3.0"),       # another constant
    dict(read=".real"),      # an attribute
])
def test_any_other_difference_gives_another_key(other):
    names = ("n0", "arg0", "mul_1", "out0")
    assert same_code_key(*_layer(*names, **other)) != same_code_key(*_layer(*names))


def test_parameters_in_another_order_give_another_key():
    params, body = _layer("n0", "arg0", "mul_1", "out0")
    assert same_code_key(params[::-1], body) != same_code_key(params, body)


def test_an_attribute_is_not_renamed_with_a_local_of_its_name():
    """`.real` and `.imag` stay apart even where a local is called `real` / `imag`."""
    def body(part: str) -> SourceWriter:
        w = SourceWriter()
        w.line(f"{part} = x.{part}")
        w.line(f"out[0] = {part}")
        return w
    assert same_code_key(["x", "out"], body("real")) != same_code_key(["x", "out"], body("imag"))
