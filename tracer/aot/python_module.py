"""`NAME.py`: an exported program as a Python module that needs NumPy and numba only.

The module holds the cpu backend's generated code (`kernel.py`), the program's
constants, its sizes and a `run(*args)` that checks each argument's dtype
(`TypeError`) and shape (`ValueError`), allocates the results and calls the
kernel; the result has the function's own structure (tuples, lists, dicts).
"""

from __future__ import annotations

import ast
import base64
import keyword
import os

import numpy as np

from ..backend.cpu.generate import Module
from ..export import Exported
from ..export.trees import encode_tree
from .kernel import Kernel, dims_array

# What NAME.py runs at import and call time (it cannot import tracer).
_RUNTIME = '''
def _leaves(tree, value, out, where):
    """Flatten `value` along the exported argument structure `tree`."""
    if type(tree) is int:
        out.append(value)
        return
    if tree is None:
        return
    (kind, children), = tree.items()
    if kind == "dict":
        if not isinstance(value, dict) or sorted(value) != [k for k, _ in children]:
            raise TypeError(f"{NAME}.run: {where} must be a dict with keys "
                            f"{[k for k, _ in children]}")
        for k, child in children:
            _leaves(child, value[k], out, f"{where}[{k!r}]")
        return
    if not isinstance(value, (tuple, list)) or len(value) != len(children):
        raise TypeError(f"{NAME}.run: {where} must be a {kind} of {len(children)} items")
    for i, child in enumerate(children):
        _leaves(child, value[i], out, f"{where}[{i}]")


def _build(tree, leaves):
    """The result with the function's own structure."""
    if type(tree) is int:
        return leaves[tree]
    if tree is None:
        return None
    (kind, children), = tree.items()
    if kind == "dict":
        return {k: _build(c, leaves) for k, c in children}
    items = [_build(c, leaves) for c in children]
    return tuple(items) if kind == "tuple" else items


def _argument(x, k):
    """Argument k as the C-contiguous array the kernel reads (float16 as its bits)."""
    dtype, shape = IN_AVALS[k]
    if isinstance(x, (bool, int, float, complex)) and shape == ():
        x = np.asarray(x, dtype)
    a = np.asarray(x)
    if a.dtype != np.dtype(dtype):
        raise TypeError(f"{NAME}.run: argument {k} must be {dtype} {list(shape)}, "
                        f"got {a.dtype} {list(a.shape)}")
    if a.shape != shape:
        raise ValueError(f"{NAME}.run: argument {k} must have shape {list(shape)}, "
                         f"got {list(a.shape)} ({dtype})")
    a = np.ascontiguousarray(a)
    return a.view(np.uint16) if a.dtype == np.float16 else a


def run(*args):
    """Run the compiled program; arguments as the exported function takes them."""
    if len(args) != len(ARG_TREES):
        raise TypeError(f"{NAME}.run takes {len(ARG_TREES)} arguments, got {len(args)}")
    leaves = []
    for i, (tree, value) in enumerate(zip(ARG_TREES, args)):
        _leaves(tree, value, leaves, f"argument {i}")
    return _build(OUT_TREE, _call([_argument(x, k) for k, x in enumerate(leaves)]))
'''


def python_module_text(exp: Exported, kernel: Kernel, name: str) -> str:
    """The text of NAME.py."""
    fun = exp.fun_name.removeprefix("jit_")
    sig = ", ".join(map(str, exp.in_avals))
    outs = ", ".join(map(str, exp.out_avals))
    head = (f'"""{name}: `{fun}` compiled ahead of time by tracer.aot: ({sig}) -> ({outs}).\n\n'
            f"    import {name}\n    {name}.run(*args)\n\n"
            f"Needs NumPy and numba only (the helper libraries it imports are in {name}_lib/\n"
            f"beside this file); numba caches the machine code on disk (cache=True).\n" + '"""\n')
    body = _strip_docstring(kernel.source)
    if "import numpy as np" not in body:  # (the runtime below needs it)
        body = "import numpy as np\n" + body
    args_tree = encode_tree(exp.in_tree)["tuple"][0]["tuple"]
    lines = [head, body, "", f"NAME = {name!r}",
             f"IN_AVALS = {tuple((a.dtype.name, a.shape) for a in exp.in_avals)!r}",
             f"ARG_TREES = {tuple(args_tree)!r}", f"OUT_TREE = {encode_tree(exp.out_tree)!r}",
             f"_DIMS = np.array({dims_array(kernel.module).tolist()!r}, np.int64)",
             *_constants(kernel.module), _RUNTIME, _call_function(kernel.module)]
    text = "\n".join(lines) + "\n"
    if fun.isidentifier() and not keyword.iskeyword(fun) and fun not in _top_level_names(text):
        text += f"{fun} = run\n"
    return text


def _top_level_names(text: str) -> set[str]:
    """Names the module defines or imports at top level (the alias must not shadow one)."""
    names: set[str] = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _strip_docstring(source: str) -> str:
    if source.startswith('"""'):
        return source[source.index('"""', 3) + 3:].lstrip("\n")
    return source


def _constants(module: Module) -> list[str]:
    """Array constants, as base64 of their bytes (exact, and no NumPy repr limits)."""
    lines = []
    for p in module.params:
        if p.kind == "const":
            value = np.ascontiguousarray(p.value)
            bits = value.view(np.uint16) if value.dtype == np.float16 else value
            data = base64.b64encode(bits.tobytes()).decode()
            lines.append(f"{p.name} = np.frombuffer(__import__('base64').b64decode({data!r}), "
                         f"{bits.dtype.name!r}).reshape({value.shape!r})")
    return lines


def _call_function(module: Module) -> str:
    """`_call(inputs)`: allocate buffers and results, run the kernel, list the outputs."""
    body, names = [], []
    for p in module.params:
        if p.kind == "input":
            names.append(f"inputs[{p.index}]")
        elif p.kind == "const":
            names.append(p.name)
        else:
            dtype = p.value.dtype.name
            body.append(f"    {p.name} = np.empty({tuple(p.value.shape)!r}, {dtype!r})")
            names.append(f"{p.name}.view(np.uint16)" if dtype == "float16" else p.name)
    body.append(f"    {module.host}({', '.join(names + ['_DIMS'])})")
    outs = []
    for kind, payload in module.outputs:
        if kind == "param":
            outs.append(module.params[payload].name)
        elif kind == "input":
            outs.append(f"_input_copy(inputs[{payload}], {payload})")
        else:
            outs.append(f"np.array({payload.tolist()!r}, {payload.dtype.name!r})")
    body.append(f"    return [{', '.join(outs)}]")
    helper = ("def _input_copy(a, k):\n"
              "    a = a.copy()\n"
              "    return a.view(np.float16) if IN_AVALS[k][0] == 'float16' else a\n\n\n")
    return helper + "def _call(inputs):\n" + "\n".join(body) + "\n"


def write_python_module(exp: Exported, kernel: Kernel, name: str, out_dir: str) -> str:
    path = os.path.join(out_dir, f"{name}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(python_module_text(exp, kernel, name))
    return path

