"""Names as the kernel registers them: string literals, `#define`s (also from local headers),
`static const char name[]` arrays and KBUILD_MODNAME.
(Part of the model builder: `NamesMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from dpmlens.model import ctext
from dpmlens.model.tables import strip_pointer

# A string literal as an "unrolled loop" (`[^"\\\n]*(?:\\.[^"\\\n]*)*`): the regex engine keeps a
# backtracking frame per escape, not per character (`(?:[^"\\\n]|\\.)*` took 3.4 GB on a
# 20 MB literal).
_STRING = rb'"([^"\\\n]*(?:\\.[^"\\\n]*)*)"'
_STRING_ARRAY = re.compile(rb"char\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*((?:" + _STRING + rb"\s*)+)")
_STRING_PART = re.compile(_STRING)


def kbuild_modname(path: str) -> str:
    """KBUILD_MODNAME as kbuild derives it for a single-file module: the file stem, '-' -> '_'."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem.replace("-", "_")


class NamesMixin:
    path: str
    source: bytes
    defs: dict[str, str]
    strings: dict[str, str]

    if TYPE_CHECKING:  # provided by the builder or another mixin

        def header_defines(self) -> dict[str, str]:  # provided by HeadersMixin
            ...

        def caller_at(self, offset: int) -> str | None:  # provided by CallsMixin
            ...

    def string_arrays(self) -> None:
        """`char NAME[] = "..."` at file scope (a driver struct's `.name = NAME` can only
        name one of those; a local array of the same name must not shadow it)."""
        for m in _STRING_ARRAY.finditer(self.source):
            if self.caller_at(m.start()) is not None:
                continue
            name = m.group(1).decode("latin-1")
            parts = _STRING_PART.findall(m.group(2))
            self.strings.setdefault(name, b"".join(parts).decode("latin-1"))

    def resolve_string(self, e: ctext.Expr) -> str | None:
        """The string an expression denotes: literals, #defines, char arrays, KBUILD_MODNAME."""
        return self._string_toks(list(e.toks), set())

    def _string_toks(self, toks: list[ctext.Tok], seen: set[str]) -> str | None:
        toks = strip_pointer(toks)
        if not toks:
            return None
        parts: list[str] = []
        for tok in toks:
            if tok.kind == "str":
                parts.append(_unquote(tok.text))
            elif tok.kind == "ident":
                if tok.text == "KBUILD_MODNAME":
                    parts.append(kbuild_modname(self.path))
                elif tok.text in self.strings:
                    parts.append(self.strings[tok.text])
                elif tok.text not in seen and (
                    tok.text in self.defs or tok.text in self.header_defines()
                ):
                    value = self.defs.get(tok.text) or self.header_defines()[tok.text]
                    sub = self._string_toks(list(ctext.tokens(value)), seen | {tok.text})
                    if sub is None:
                        return None
                    parts.append(sub)
                else:
                    return None
            else:
                return None
        return "".join(parts)


def _unquote(lit: str) -> str:
    if lit.startswith("L"):
        lit = lit[1:]
    body = lit[1:-1] if lit.endswith('"') and len(lit) >= 2 else lit[1:]
    return body.replace('\\"', '"').replace("\\\\", "\\")
