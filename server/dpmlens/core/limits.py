"""Every input bound dpmlens enforces, in one place (README: "Limits").

Each limit has a default and an environment variable that overrides it (a number of bytes,
with an optional K/M/G suffix, or seconds), so the CLI, its worker processes and the language
server all see the same value. A limit that is hit is named in the message together with the
variable that raises it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


@dataclass(frozen=True)
class Limit:
    env: str
    default: float
    what: str  # "C source file", ...
    unit: str = "bytes"

    @property
    def value(self) -> float:
        raw = os.environ.get(self.env, "").strip().lower()
        if not raw:
            return self.default
        try:
            if self.unit == "bytes" and raw[-1] in _SUFFIX:
                return int(float(raw[:-1]) * _SUFFIX[raw[-1]])
            number = float(raw)
        except (ValueError, IndexError):
            return self.default  # a typo must not disable the bound
        return number if number > 0 else self.default

    def describe(self) -> str:
        v = self.value
        return human_bytes(int(v)) if self.unit == "bytes" else f"{v:g} {self.unit}"

    def exceeded(self, subject: str) -> str:
        """One line: which limit, its value, how to raise it."""
        return f"{subject} over the {self.describe()} limit for a {self.what} (set {self.env} " \
               "to raise it)"


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % (size // 16 or 1) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


# C sources: larger files are not parsed (memory is ~5-30x the source size for real
# drivers; the largest .c in drivers/ is ~1.5 MB, the largest generated headers ~24 MB).
SOURCE_BYTES = Limit("DPMLENS_MAX_SOURCE_BYTES", 32 << 20, "C source file")
# Traces: decompressed bytes of one .gz capture (plain files are streamed and need none).
TRACE_DECOMPRESSED_BYTES = Limit("DPMLENS_MAX_DECOMPRESSED_BYTES", 4 << 30,
                                 "decompressed trace")
# One line of a text trace (printk lines are < 1 KiB; ftrace lines a few hundred bytes).
LINE_BYTES = Limit("DPMLENS_MAX_LINE_BYTES", 1 << 20, "trace line")
# One JSON-RPC message to the language server (a didOpen of the largest source is ~2x it).
MESSAGE_BYTES = Limit("DPMLENS_MAX_MESSAGE_BYTES", 256 << 20, "JSON-RPC message")
# `check` (any --jobs; files are analyzed in worker processes): wall-clock time one file
# may take before it is skipped.
FILE_SECONDS = Limit("DPMLENS_FILE_TIMEOUT", 120.0, "file's analysis", unit="seconds")
# The language server: a document with PM code over this size gets one "not analysed"
# diagnostic instead of its findings (a 20 MB amalgamation of 637 drivers takes 17.5 s CPU; the
# largest .c in drivers/ is ~1.5 MB). Documents without PM code are not affected.
EDITOR_SOURCE_BYTES = Limit("DPMLENS_MAX_EDITOR_BYTES", 8 << 20,
                            "C document analysed in the editor")
# C sources at least this large are parsed and analysed in parts (syntax/parts.py), each with
# what it uses from the rest of the text: memory follows the largest part, not the file (the
# tree of a whole text is ~21x its size). No .c file in drivers/ or sound/ comes near.
WHOLE_SOURCE_BYTES = Limit("DPMLENS_WHOLE_SOURCE_BYTES", 4 << 20, "C source analysed whole")
# Brace/parenthesis nesting of a C file beyond which it is not analyzed (the deepest
# file in drivers/ of 6.1 and 6.12 nests 37; the rules' walks recurse per level).
NESTING_DEPTH = Limit("DPMLENS_MAX_NESTING", 500, "nesting depth", unit="levels")

ALL = (SOURCE_BYTES, EDITOR_SOURCE_BYTES, TRACE_DECOMPRESSED_BYTES, LINE_BYTES, MESSAGE_BYTES,
       FILE_SECONDS, WHOLE_SOURCE_BYTES, NESTING_DEPTH)
