"""Every tracer setting in one place: name, default, help text, TRACER_* variable.

    tr.config.default_backend                 # read
    tr.config.update("default_backend", "interpreter")
    with tr.config.override(explain_cache_misses=True): ...
    print(tr.config.help())

Environment variables are read once, at import; `update` and `override` win
over them.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .errors import TracerValueError


def _bool(text: str) -> bool:
    if text.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if text.strip().lower() in ("0", "false", "no", "off", ""):
        return False
    raise TracerValueError(f"expected a boolean (1/0/true/false), got {text!r}")


def _optional_path(text: str) -> str | None:
    return text or None


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tracer")


def _optional_int(text: str) -> int | None:
    return int(text) if text.strip() else None


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str
    env_name: str = ""
    choices: tuple = ()  # the values allowed, when there are few

    @property
    def env(self) -> str:
        return self.env_name or "TRACER_" + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("default_backend", "cpu",
            "Backend used by jit when none is given: 'interpreter' (NumPy reference), "
            "'cpu' (numba) or 'cuda' (numba.cuda), when installed.", str, "TRACER_BACKEND"),
    Setting("cache_dir", _default_cache_dir(),
            "Directory of the persistent compile cache (generated modules and numba's "
            "machine code)."),
    Setting("dump_dir", None,
            "If set, write the graph before/after each pass and the generated source "
            "of every compiled function into this directory.", _optional_path),
    Setting("explain_cache_misses", False,
            "Log (logger 'tracer.jit', level WARNING) why each jit cache miss happened: "
            "which argument's shape, dtype or static value changed.", _bool),
    Setting("log_compiles", False,
            "Log (logger 'tracer.jit', level WARNING) one line per jit compile: the "
            "function, the signature, why the cache missed, whether numba compiled or "
            "loaded machine code from the cache, and the seconds it took.", _bool),
    Setting("vmap_fallback", False,
            "Let vmap run an op without a batching rule by looping over the batch and "
            "stacking (slow; every op has a rule, so this only matters for new ops).", _bool),
    Setting("debug_print", True,
            "Whether tr.debug.print records a print in functions traced from now on "
            "(False: it adds nothing to the program, so costs nothing).", _bool),
    Setting("compile_mode", "async",
            "'async': a jit cache miss on the cpu backend answers at once with the NumPy "
            "reference interpreter while numba compiles in a worker process, and swaps the "
            "machine code in when it is ready (Jitted.wait_compiled() waits for it); "
            "'sync': compile before the first call returns.", str, choices=("async", "sync")),
    Setting("num_threads", None,
            "Threads for the cpu backend's parallel loops (None: the cores this process "
            "may run on, os.sched_getaffinity, at most numba's NUMBA_NUM_THREADS).",
            _optional_int),
    Setting("progress", True,
            "Show a compile that takes over a second: a status line on a terminal, a "
            "widget in a notebook (with ipywidgets), else one text line.", _bool),
    Setting("runtime_checks", False,
            "Typecheck the graph after every pass and check every reference result "
            "against its shape rule (slower; on in tests).", _bool),
    Setting("distributed_checks", True,
            "Before each collective across processes, compare a small signature (op, "
            "shapes, dtypes, params, position in the program) among the replicas, so a "
            "mismatch raises on every rank instead of hanging or corrupting data.", _bool),
    Setting("distributed_timeout", 300.0,
            "Seconds a replica waits in one collective for the others before it raises "
            "and aborts the job (a rank that is stuck or gone).", float),
)


class Config:
    """The settings object `tracer.config`; attributes are the current values."""

    # Values live in the instance __dict__, so reading `config.runtime_checks` on a
    # hot path is a plain attribute lookup.

    def __init__(self, settings: tuple[Setting, ...]):
        object.__setattr__(self, "_settings", {s.name: s for s in settings})
        self.reset()

    def reset(self) -> None:
        """Back to defaults, then the TRACER_* environment variables."""
        for s in self._settings.values():
            raw = os.environ.get(s.env)
            self.update(s.name, s.default if raw is None else s.parse(raw))

    def _setting(self, name: str) -> Setting:
        if name not in self._settings:
            raise TracerValueError(f"tracer.config has no setting {name!r}; settings: "
                                   f"{', '.join(self._settings)}")
        return self._settings[name]

    def __getattr__(self, name: str) -> Any:  # only called for names that are not settings
        raise AttributeError(f"tracer.config has no setting {name!r}; settings: "
                             f"{', '.join(self._settings)}")

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(name, value)

    def update(self, name: str, value: Any) -> None:
        setting = self._setting(name)
        if setting.choices and value not in setting.choices:
            raise TracerValueError(f"tracer.config.{name} must be one of "
                                   f"{', '.join(map(repr, setting.choices))}, got {value!r}")
        object.__setattr__(self, name, value)

    def values(self) -> dict[str, Any]:
        return {name: self.__dict__[name] for name in self._settings}

    @contextmanager
    def override(self, **changes: Any) -> Iterator[None]:
        """Temporarily change settings: `with tr.config.override(runtime_checks=True):`."""
        old = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            self.update(name, value)
        try:
            yield
        finally:
            for name, value in old.items():
                self.update(name, value)

    def help(self) -> str:
        lines = []
        for s in self._settings.values():
            lines.append(f"{s.name} = {self.__dict__[s.name]!r}  (default {s.default!r}, "
                         f"env {s.env})\n    {s.help}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return "tracer.config(" + ", ".join(f"{k}={v!r}" for k, v in self.values().items()) + ")"


config = Config(SETTINGS)
