"""Is a driver file only ever built in? Read from its directory alone: each Makefile line that
builds the object (`obj-$(CONFIG_X) += foo.o`, `obj-y`) and the type of X in the directory's
Kconfig (`bool` / `def_bool`, not `tristate`). Anything not read there (a composite object, a
symbol defined elsewhere, no Makefile) answers None: unknown, never "built in".

6.1's timer-stm32-lp.c: `obj-$(CONFIG_CLKSRC_STM32_LP) += timer-stm32-lp.o`, and
`config CLKSRC_STM32_LP bool "Low power clocksource for STM32 SoCs"`, whatever
module_platform_driver() the file names.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_OBJ = re.compile(r"^obj-(\$\(CONFIG_(\w+)\)|y|m)\s*[:+]?=\s*(.*)$")
_TYPE = re.compile(r"^\s*(bool|def_bool|tristate|def_tristate)\b")


@lru_cache(maxsize=256)
def _kconfig_types(directory: str) -> dict[str, str]:
    """{symbol: type} of the `config` entries of the directory's Kconfig."""
    try:
        text = (Path(directory) / "Kconfig").read_text("utf-8", "replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    sym: str | None = None
    for line in text.split("\n"):
        words = line.split()
        if words[:1] in (["config"], ["menuconfig"]) and len(words) > 1:
            sym = words[1]
            continue
        m = _TYPE.match(line)
        if sym is not None and m is not None:
            out.setdefault(sym, m.group(1).removeprefix("def_"))
            sym = None
    return out


@lru_cache(maxsize=256)
def _makefile(directory: str) -> str:
    try:
        return (Path(directory) / "Makefile").read_text("utf-8", "replace")
    except OSError:
        return ""


def built_in_only(path: str) -> bool | None:
    """True when every Makefile line of the file's directory that builds it is `obj-y` or
    `obj-$(CONFIG_X)` with X a bool of the directory's Kconfig; None when not read."""
    file = Path(path)
    directory, obj = str(file.parent), file.stem + ".o"
    types = None
    seen = False
    for line in _makefile(directory).replace("\\\n", " ").split("\n"):
        m = _OBJ.match(line.split("#", 1)[0].strip())
        if m is None or obj not in m.group(3).split():
            continue
        seen = True
        if m.group(1) == "m":
            return False
        if m.group(2) is None:
            continue  # obj-y
        if types is None:
            types = _kconfig_types(directory)
        kind = types.get(m.group(2))
        if kind != "bool":
            return None if kind is None else False
    return True if seen else None
