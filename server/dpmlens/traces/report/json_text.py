"""`json.dumps(finite(obj), indent=2, allow_nan=False)`, twice as fast: the report of a
100-cycle capture is 3.4 MB of JSON, and the standard library indents with a generator per
container (json.encoder._make_iterencode). Same text, byte for byte (the strings through the
same C escaper, the numbers through float/int repr); a non-finite float becomes null as in
dpmlens.core.jsonsafe. Anything else than str/int/float/bool/None/list/tuple/dict with str keys
is left to jsonsafe.dumps.

_json_text.c writes the same text in one C call (about ten times faster on a report); this
Python code is the reference, used when the module was not built or DPMLENS_PY_JSON=1
(tests/test_traces_json_text.py holds the two equal)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from dpmlens.core import jsonsafe

_isfinite = math.isfinite
_frepr = float.__repr__
_irepr = int.__repr__
_str: Callable[[str], str] = encode_basestring_ascii


class _Other(Exception):
    """A value this encoder does not write itself."""


def _compiled() -> Callable[[Any], str | None] | None:
    if os.environ.get("DPMLENS_PY_JSON") == "1":
        return None
    try:
        from dpmlens.traces.report import _json_text  # type: ignore[attr-defined]
    except ImportError:
        return None
    c_dumps: Callable[[Any], str | None] = _json_text.dumps
    return c_dumps


def dumps(obj: Any) -> str:
    c_dumps = _compiled()
    if c_dumps is not None:
        try:
            text = c_dumps(obj)
        except RecursionError:
            text = None
        return jsonsafe.dumps(obj, indent=2) if text is None else text
    return py_dumps(obj)


def py_dumps(obj: Any) -> str:
    """The Python writer (the reference)."""
    parts: list[str] = []
    try:
        _encode(obj, "\n", parts.append)
    except (_Other, RecursionError):
        return jsonsafe.dumps(obj, indent=2)
    return "".join(parts)


def _scalar(v: Any) -> str | None:
    """The text of a str/float/int/bool/None value, None for a container or anything else."""
    t = type(v)
    if t is str:
        return _str(v)
    if t is float:
        return _frepr(v) if _isfinite(v) else "null"
    if t is int:
        return _irepr(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    return None


def _encode(o: Any, nl: str, out: Callable[[str], None]) -> None:
    text = _scalar(o)
    if text is not None:
        out(text)
        return
    t = type(o)
    # a container's scalar members are written with their separator in one piece (most of a
    # report's 100,000 values): a call of _encode per container, not per value
    if t is dict:
        if not o:
            out("{}")
            return
        inner = nl + "  "
        first = "{" + inner
        sep = "," + inner
        for k, v in o.items():
            if type(k) is not str:
                raise _Other
            t = type(v)  # the common scalars inline (_scalar)
            if t is str:
                out(first + _str(k) + ": " + _str(v))
            elif t is float and _isfinite(v):
                out(first + _str(k) + ": " + _frepr(v))
            elif t is int:
                out(first + _str(k) + ": " + _irepr(v))
            elif (text := _scalar(v)) is not None:
                out(first + _str(k) + ": " + text)
            else:
                out(first + _str(k) + ": ")
                _encode(v, inner, out)
            first = sep
        out(nl + "}")
    elif t is list or t is tuple:
        if not o:
            out("[]")
            return
        inner = nl + "  "
        first = "[" + inner
        sep = "," + inner
        for v in o:
            t = type(v)
            if t is str:
                out(first + _str(v))
            elif t is float and _isfinite(v):
                out(first + _frepr(v))
            elif t is int:
                out(first + _irepr(v))
            elif (text := _scalar(v)) is not None:
                out(first + text)
            else:
                out(first)
                _encode(v, inner, out)
            first = sep
        out(nl + "]")
    else:
        raise _Other
