"""The longest fixed wait in helpers of *other* files of the same directory that a callback
calls (netxen's resume calls `netxen_pinit_from_rom()` of netxen_nic_init.c, which sleeps
`msleep(1000)`), for `msleep-under-20ms`'s "swamped" test: without a resolver (the CLI) the
call walker stays in one file, and a short sleep's rounding next to a long wait elsewhere is
not worth a patch.

A text search, run only for the few short sleeps that would otherwise be warnings: each
callee the callback's walk cannot resolve is looked up as `name(...) {` in the directory's
other `.c` files, and its body's literal delays (`msleep(1000)`, `mdelay(50)`,
`usleep_range(20000, ...)`, `ssleep(1)`) are read. Directories of more than 64 files are not
searched.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from functools import lru_cache

from dpmlens.model import ctext
from dpmlens.rules.context import Context

_MAX_FILES = 64
_MAX_BYTES = 1 << 20
_DELAY = re.compile(
    rb"\b(msleep|msleep_interruptible|mdelay|ssleep|usleep_range|fsleep)\s*\(\s*(\d+)\s*[,)]"
)
_SCALE = {b"msleep": 1.0, b"msleep_interruptible": 1.0, b"mdelay": 1.0, b"ssleep": 1000.0,
          b"usleep_range": 0.001, b"fsleep": 0.001}  # fmt: skip


def sibling_wait(ctx: Context, function: str) -> float:
    """The longest literal delay (ms) in the bodies of same-directory helpers of other files
    that `function`'s walk calls but cannot resolve; 0 when there are none."""
    key = f"sibling_wait:{function}"
    cached = ctx._cache.get(key)
    if cached is None:
        unresolved = {
            r.call.callee
            for r in ctx.reach(function)
            if r.call.callee not in ctx.model.functions and not r.call.via_pointer
        }
        directory = os.path.dirname(os.path.abspath(ctx.model.path))
        own = os.path.basename(ctx.model.path)
        cached = max((_waits(directory, own).get(name, 0.0) for name in unresolved), default=0.0)
        ctx._cache[key] = cached
    return float(cached)


@lru_cache(maxsize=32)
def _waits(directory: str, own: str) -> dict[str, float]:
    """function name -> longest literal delay in its body, over the directory's other files."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".c") and n != own)
    except OSError:
        return {}
    if len(names) > _MAX_FILES:
        return {}
    out: dict[str, float] = {}
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as fh:
                src = fh.read(_MAX_BYTES)
        except OSError:
            continue
        if not _DELAY.search(src):
            continue
        text = src.decode("latin-1")
        heads = [(m.start(), m.end(), m.group(1)) for m in _HEAD.finditer(text)]
        starts = [h[0] for h in heads]
        ends: dict[int, int] = {}  # head index -> end of its body
        for m in _DELAY.finditer(src):
            i = bisect_right(starts, m.start()) - 1
            if i < 0:
                continue
            if i not in ends:
                ends[i] = _body_end(text, heads[i][1])
            name = heads[i][2]
            ms = int(m.group(2)) * _SCALE[m.group(1)]
            if m.start() < ends[i] and ms > out.get(name, 0.0):
                out[name] = ms
    return out


_HEAD = re.compile(r"(?m)^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{")


def _body_end(text: str, head_end: int) -> int:
    """The end of the body whose `{` ends a function head (the head's match end)."""
    it = ctext.tokens(text, head_end - 1)
    brace = next(it, None)
    if brace is None or brace.text != "{":
        return -1
    body = ctext.balanced(it, brace)
    return body[-1].end if body else -1
