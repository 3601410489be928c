"""Object-like `#define`s of the local headers a file includes (`#include "foo.h"`).
(Part of the model builder: `HeadersMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

import os
import re
from collections import OrderedDict

from dpmlens.model import ctext

_LOCAL_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*"([^"\n]+\.h)"')
_HEADER_DEFINE = re.compile(rb"#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]*[^\\\n])$", re.M)
_MAX_HEADER = 1 << 20


class HeadersMixin:
    path: str
    source: bytes
    _header_defs: dict[str, str] | None

    def header_defines(self) -> dict[str, str]:
        """Object-like #defines of the `#include "local.h"` headers next to this file.

        Only read when a driver name is not resolved in the file itself (DRV_NAME is often
        defined in the driver's own header); headers are looked up relative to the file's
        directory, one level deep, and silently skipped when absent or unreadable.
        """
        if self._header_defs is not None:
            return self._header_defs
        defs: dict[str, str] = {}
        self._header_defs = defs
        base = os.path.dirname(self.path)
        for m in _LOCAL_INCLUDE.finditer(self.source):
            found = defines_of(os.path.join(base, m.group(1).decode("latin-1")))
            for name, value in found.items():
                defs.setdefault(name, value)
        return defs

    def header_files(self) -> dict[str, object]:
        """Each local header's path -> its #defines as read now (the same object while the
        header is unchanged: `defines_of` keeps it), once `header_defines` has read them (by
        the build or a rule); {} before: nothing depends on them yet."""
        if self._header_defs is None:
            return {}
        base = os.path.dirname(self.path)
        out: dict[str, object] = {}
        for m in _LOCAL_INCLUDE.finditer(self.source):
            hpath = os.path.join(base, m.group(1).decode("latin-1"))
            out[hpath] = defines_of(hpath)
        return out


# header path -> (mtime_ns, size, its #defines): every build of a file (each keystroke in the
# editor; each file of a driver directory in the CLI) would read and scan the same headers
# again (lpfc_init.c: 14 headers, 14 ms of a 24 ms build)
_CACHE: OrderedDict[str, tuple[int, int, dict[str, str]]] = OrderedDict()
_CACHE_SIZE = 256


def defines_of(hpath: str) -> dict[str, str]:
    try:
        st = os.stat(hpath)
    except (OSError, ValueError):  # ValueError: a NUL byte in the #include's name
        return {}
    hit = _CACHE.get(hpath)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit[2]
    try:
        with open(hpath, "rb") as fh:
            text = fh.read(_MAX_HEADER)
    except (OSError, ValueError):
        return {}
    defs: dict[str, str] = {}
    for d in _HEADER_DEFINE.finditer(text):
        name = d.group(1).decode("latin-1")
        defs.setdefault(name, ctext.strip_comments(d.group(2).decode("latin-1")))
    _CACHE[hpath] = (st.st_mtime_ns, st.st_size, defs)
    _CACHE.move_to_end(hpath)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return defs
