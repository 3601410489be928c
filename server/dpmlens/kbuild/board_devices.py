"""Platform drivers that only ever bind to devices dead code declares.

A platform driver with no OF or ACPI match table binds only to a `platform_device` of its
name (or of a name in its `id_table`; `platform_match()` in drivers/base/platform.c), and
such a device exists only where code declares it by that name: a board file, an MFD cell,
another driver. When every file in the tree that spells one of the names is itself dead (no
real build compiles it), the driver can be built but never probes: 6.1's s3c_adc_battery.c,
whose devices only the S3C24XX board files h1940 and rx1950 declare (ARCH_S3C24XX depends
on UNUSED_BOARD_FILES), although the driver itself builds on an S3C64XX kernel without
ARCH_MULTIPLATFORM.

`name_only_names(text)`: the names such a driver binds to, or None when the file is not
one (a match table, another bus's driver, no name read). `spelled_in(top, dirs, names)`: the
`.c`/`.h` files under `dirs` that spell each name as a string literal (grep -F: one pass for
all names). A name nothing spells says nothing (it may be built at run time): only files
that spell it are read as evidence.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

_PLATFORM = re.compile(rb"struct\s+platform_driver\s+\w+(?:\s+__\w+)*\s*=\s*\{")
_OTHER_DRIVER = re.compile(rb"struct\s+(\w+)_driver\s+\w+(?:\s+__\w+)*\s*=\s*\{")
# a match table of any kind: of_match_table, of_match_ptr(), acpi_match_table (plain `in`
# tests: a regex without a literal prefix costs ~3 ms a file)
_MATCH_WORDS = (b"of_match", b"acpi_match")
_NAME = re.compile(rb"\.name\s*=\s*\"([^\"\\]+)\"")
_ID_TABLE = re.compile(rb"struct\s+platform_device_id\s+\w+\s*\[\s*\]\s*=\s*\{")
_STRING = re.compile(rb"\"([^\"\\]+)\"")


def _block(text: bytes, start: int) -> bytes:
    """The text of the brace block opening at or after `start`."""
    open_at = text.index(b"{", start)
    depth = 0
    for i in range(open_at, len(text)):
        ch = text[i]
        if ch == 0x7B:  # {
            depth += 1
        elif ch == 0x7D:  # }
            depth -= 1
            if depth == 0:
                return text[open_at : i + 1]
    return text[open_at:]


def name_only_names(text: bytes) -> list[str] | None:
    """The device names a platform driver matched by name only binds to."""
    if b"platform_driver" not in text or any(w in text for w in _MATCH_WORDS):
        return None
    drivers = list(_PLATFORM.finditer(text))
    if not drivers:
        return None
    if any(m.group(1) != b"platform" for m in _OTHER_DRIVER.finditer(text)):
        return None  # a file with another bus's driver too
    names: list[bytes] = []
    for m in drivers:
        found = _NAME.findall(_block(text, m.start()))
        if not found:
            return None  # a name from a macro or a variable: not read
        names += found
    for m in _ID_TABLE.finditer(text):
        names += _STRING.findall(_block(text, m.start()))
    return sorted({n.decode("utf-8", "replace") for n in names})


def spelled_in(top: Path, dirs: Iterable[str], names: Iterable[str]) -> dict[str, set[str]] | None:
    """{name: tree-relative files spelling `"name"`} under `dirs` of `top`; None when the
    search cannot run (no grep)."""
    wanted = sorted(set(names))
    roots = [d for d in dirs if (top / d).is_dir()]
    out: dict[str, set[str]] = {n: set() for n in wanted}
    if not wanted or not roots:
        return out
    grep = shutil.which("grep")
    if grep is None:
        return None
    args = [grep, "-rFoZ", "--include=*.c", "--include=*.h"]
    for n in wanted:
        args += ["-e", f'"{n}"']
    try:
        done = subprocess.run([*args, "--", *roots], cwd=top, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode not in (0, 1):
        return None
    for line in done.stdout.split(b"\n"):
        path, sep, match = line.partition(b"\0")
        if not sep:
            continue
        name = match.decode("utf-8", "replace").strip('"')
        if name in out:
            out[name].add(path.decode("utf-8", "replace").removeprefix("./"))
    return out
