"""The configuration a compile line implies: object-like macros from `-include`/`-imacros`
files (kbuild's `-include include/linux/kconfig.h`, which includes `generated/autoconf.h`)
and from -D/-U, in command-line order as the compiler applies them.

Kconfig writes `#define CONFIG_FOO 1` for `=y`, `#define CONFIG_FOO_MODULE 1` for `=m` and
nothing for `=n` (include/linux/kconfig.h's IS_ENABLED() is built on that), so once a
configuration is given an absent CONFIG_ symbol is known to be off ("closed world"). Any other
undefined name stays unknown: it may come from a header dpmlens does not read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from dpmlens.kbuild.flags import CompileFlags

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*?)[ \t]*$", re.M)
_UNDEF = re.compile(rb"^[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)", re.M)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
_MAX_DEPTH = 4
_MAX_BYTES = 4 << 20


@dataclass
class Kconfig:
    macros: dict[str, str] = field(default_factory=dict)  # name -> replacement text
    closed: bool = False  # CONFIG_* absent from `macros` is off

    def is_set(self, name: str) -> bool | None:
        if name in self.macros:
            return True
        if self.closed and name.startswith("CONFIG_"):
            return False
        return None

    def enabled(self, symbol: str) -> int | None:
        """IS_ENABLED(symbol): 1 for =y or =m, 0 for =n, None when unknown."""
        value = self.is_set(symbol)
        module = self.is_set(symbol + "_MODULE")
        if value or module:
            return 1
        if value is False and module is False:
            return 0
        return None

    def builtin(self, symbol: str) -> int | None:
        value = self.is_set(symbol)
        return None if value is None else int(value and self.macros[symbol].strip() == "1")

    def module(self, symbol: str) -> int | None:
        value = self.is_set(symbol + "_MODULE")
        return None if value is None else int(value)


def from_flags(flags: CompileFlags) -> Kconfig:
    """The configuration of one compile line; a CONFIG_ macro anywhere closes the world."""
    config = Kconfig()
    for path in flags.includes:
        _read_header(path, flags.include_dirs, config, 0, set())
    for kind, text in flags.macros:
        name, _, value = text.partition("=")
        if kind == "D":
            config.macros[name] = value if "=" in text else "1"
        else:
            config.macros.pop(name, None)
    config.closed = any(name.startswith("CONFIG_") for name in config.macros)
    return config


def _resolve(name: str, here: str, include_dirs: list[str]) -> str | None:
    for directory in (here, *include_dirs):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


# (real path, mtime, size) -> its directives: a process that checks many files of one build
# (the `dpmlens cc` worker, kbuild/worker.py) reads the build's autoconf.h once
_parsed: dict[tuple[str, int, int], list[tuple[str, str, str]]] = {}


def _directives(path: str, real: str) -> list[tuple[str, str, str]] | None:
    """The header's #define/#undef/#include directives in file order (an #undef after a
    #define wins as it does in cpp): (kind, name, replacement text) or ("I", file, "")."""
    try:
        st = os.stat(real)
        key = (real, st.st_mtime_ns, st.st_size)
        hit = _parsed.get(key)
        if hit is not None:
            return hit
        with open(path, "rb") as fh:
            text = fh.read(_MAX_BYTES)
    except OSError:
        return None
    events = sorted(
        [(m.start(), "D", m) for m in _DEFINE.finditer(text)]
        + [(m.start(), "U", m) for m in _UNDEF.finditer(text)]
        + [(m.start(), "I", m) for m in _INCLUDE.finditer(text)]
    )
    out = [(kind, m.group(1).decode("latin-1"),
            m.group(2).decode("latin-1") if kind == "D" else "") for _, kind, m in events]
    if len(_parsed) > 64:
        _parsed.clear()
    _parsed[key] = out
    return out


def _read_header(path: str, dirs: list[str], config: Kconfig, depth: int, seen: set[str]) -> None:
    real = os.path.realpath(path)
    if depth > _MAX_DEPTH or real in seen:
        return
    seen.add(real)
    directives = _directives(path, real)
    if directives is None:
        return
    for kind, name, value in directives:
        if kind == "D":
            config.macros[name] = value
        elif kind == "U":
            config.macros.pop(name, None)
        else:
            found = _resolve(name, os.path.dirname(path), dirs)
            if found is not None:
                _read_header(found, dirs, config, depth + 1, seen)
