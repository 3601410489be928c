"""Object-like `#define`s of the local headers a file includes (`#include "foo.h"`).
(Part of the model builder: `HeadersMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

import os
import re

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
            hpath = os.path.join(base, m.group(1).decode("latin-1"))
            try:
                with open(hpath, "rb") as fh:
                    text = fh.read(_MAX_HEADER)
            except OSError:
                continue
            for d in _HEADER_DEFINE.finditer(text):
                name = d.group(1).decode("latin-1")
                defs.setdefault(name, ctext.strip_comments(d.group(2).decode("latin-1")))
        return defs
