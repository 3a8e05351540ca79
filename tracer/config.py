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
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .errors import TracerValueError

BACKENDS = ("cpu", "interpreter", "cuda")  # the built-in backends an env variable can name


class ConfigWarning(UserWarning):
    """A TRACER_* environment variable holds a value its setting does not allow."""


def _bool(text: str) -> bool:
    if text.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if text.strip().lower() in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(text)


def _optional_path(text: str) -> str | None:
    return text or None


def _path(text: str) -> str:
    if not text.strip():  # an empty directory would mean the current one
        raise ValueError(text)
    return text


def _backend(text: str) -> str:
    if text not in BACKENDS:
        raise ValueError(text)
    return text


def _cache_size(text: str) -> int:
    size = int(text)
    if size < 1:
        raise ValueError(text)
    return size


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike)) and bool(os.fspath(value).strip())


def _is_optional_path(value: Any) -> bool:
    return value is None or _is_path(value)


def _is_backend(value: Any) -> bool:
    return isinstance(value, str) and bool(value)  # (tr.register_backend may add names)


def _is_cache_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tracer")


def _optional_threads(text: str) -> int | None:
    if not text.strip():
        return None
    if int(text) < 1:
        raise ValueError(text)
    return int(text)


def _is_optional_threads(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and
                             value >= 1)


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(text)
        return text
    return parse


def _seconds(text: str) -> float:
    if not float(text) > 0:
        raise ValueError(text)
    return float(text)


def _is_seconds(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


_BOOLEAN = "1/0, true/false, yes/no or on/off"
_COMPILE_MODES = ("async", "sync")


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str  # the value of an environment variable (ValueError)
    env_name: str = ""
    valid: Callable[[Any], bool] = lambda value: True  # whether a value set from Python is
    allowed: str = "any value"                          # allowed, and the allowed ones in words

    @property
    def env(self) -> str:
        return self.env_name or "TRACER_" + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("default_backend", "cpu",
            "Backend used by jit when none is given: 'interpreter' (NumPy reference), "
            "'cpu' (numba) or 'cuda' (numba.cuda), when installed.", _backend, "TRACER_BACKEND",
            _is_backend, "one of " + ", ".join(map(repr, BACKENDS))),
    Setting("cache_dir", _default_cache_dir(),
            "Directory of the persistent compile cache (generated modules and numba's "
            "machine code). When it cannot be written, compiled code is kept in memory.",
            _path, valid=_is_path, allowed="a non-empty directory path"),
    Setting("dump_dir", None,
            "If set, write the graph before/after each pass and the generated source "
            "of every compiled function into this directory.", _optional_path,
            valid=_is_optional_path, allowed="a directory path, or empty for none"),
    Setting("explain_cache_misses", False,
            "Log (logger 'tracer.jit', level WARNING) why each jit cache miss happened: "
            "which argument's shape, dtype or static value changed.", _bool, valid=_is_bool,
            allowed=_BOOLEAN),
    Setting("log_compiles", False,
            "Log (logger 'tracer.jit', level WARNING) one line per jit compile: the "
            "function, the signature, why the cache missed, whether numba compiled or "
            "loaded machine code from the cache, and the seconds it took.", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("vmap_fallback", False,
            "Let vmap run an op without a batching rule by looping over the batch and "
            "stacking (slow; every op has a rule, so this only matters for new ops).", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("debug_print", True,
            "Whether tr.debug.print records a print in functions traced from now on "
            "(False: it adds nothing to the program, so costs nothing).", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("compile_mode", "async",
            "'async': a jit cache miss on the cpu backend answers at once with the NumPy "
            "reference interpreter while numba compiles in a worker process, and swaps the "
            "machine code in when it is ready (Jitted.wait_compiled() waits for it); "
            "'sync': compile before the first call returns.", _one_of(*_COMPILE_MODES),
            valid=lambda value: value in _COMPILE_MODES, allowed="'async' or 'sync'"),
    Setting("num_threads", None,
            "Threads for the cpu backend's parallel loops (None: the cores this process "
            "may run on, os.sched_getaffinity, at most numba's NUMBA_NUM_THREADS). Applies "
            "to functions compiled from then on.",
            _optional_threads, valid=_is_optional_threads,
            allowed="an integer >= 1, or empty for every core the process may use"),
    Setting("use_mkl", True,
            "Let the cpu backend call Intel MKL where it has it (fft: MKL's DFTI; products "
            "and triangular solves: its BLAS) when the `mkl` wheel is installed (the `mkl` "
            "extra); False, or without it: DUCC0 (rocket-fft) and NumPy's OpenBLAS. Applies "
            "to functions compiled from then on.", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("progress", True,
            "Show a compile that takes over a second: a status line on a terminal, a "
            "widget in a notebook (with ipywidgets), else one text line.", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("runtime_checks", False,
            "Typecheck the graph after every pass and check every reference result "
            "against its shape rule (slower; on in tests).", _bool, valid=_is_bool,
            allowed=_BOOLEAN),
    Setting("jit_cache_size", 4096,
            "How many signatures each jitted function keeps compiled in memory; the least "
            "recently used one is dropped past it (it is traced again when called).",
            _cache_size, valid=_is_cache_size, allowed="an integer >= 1"),
    Setting("distributed_checks", True,
            "Before each collective across processes, compare a small signature (op, "
            "shapes, dtypes, params, position in the program) among the replicas, so a "
            "mismatch raises on every rank instead of hanging or corrupting data.", _bool,
            valid=_is_bool, allowed=_BOOLEAN),
    Setting("distributed_timeout", 300.0,
            "Seconds a replica waits in one collective for the others before it raises "
            "and aborts the job (a rank that is stuck or gone).", _seconds,
            valid=_is_seconds, allowed="a number of seconds > 0"),
)


class Config:
    """The settings object `tracer.config`; attributes are the current values."""

    # Values live in the instance __dict__, so reading `config.runtime_checks` on a
    # hot path is a plain attribute lookup.

    def __init__(self, settings: tuple[Setting, ...]):
        object.__setattr__(self, "_settings", {s.name: s for s in settings})
        object.__setattr__(self, "_watchers", {})
        self.reset()

    def reset(self) -> None:
        """Back to defaults, then the TRACER_* environment variables (a value a setting
        does not allow warns, naming the variable, and leaves the default)."""
        for s in self._settings.values():
            raw = os.environ.get(s.env)
            self.update(s.name, s.default if raw is None else _from_env(s, raw))

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
        if isinstance(value, str) and not setting.valid(value):
            value = _parsed(setting, value)  # ("true", "512": as the variable would say)
        if not setting.valid(value):
            raise TracerValueError(f"tracer.config.{name}: {value!r} is not allowed; "
                                   f"expected {setting.allowed}")
        object.__setattr__(self, name, value)
        for callback in self._watchers.get(name, ()):
            callback(value)

    def watch(self, name: str, callback: Callable[[Any], None]) -> None:
        """Call `callback(value)` now and whenever setting `name` changes: for a copy of
        it that code outside Python reads (compiled code's view of the MPI job)."""
        self._setting(name)
        self._watchers.setdefault(name, []).append(callback)
        callback(getattr(self, name))

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


def _parsed(setting: Setting, text: str) -> Any:
    try:
        return setting.parse(text)
    except ValueError:
        return text


def _from_env(setting: Setting, raw: str) -> Any:
    try:
        return setting.parse(raw)
    except ValueError:
        warnings.warn(f"{setting.env}={raw!r} is not allowed (expected {setting.allowed}); "
                      f"tracer uses the default {setting.default!r}", ConfigWarning,
                      stacklevel=2)
        return setting.default


config = Config(SETTINGS)
