"""Join measured delay sites to their call sites in the source (with `--source DIR`).

A measured site is (calling function, delay function, requested value). The function's
definition is found by a byte search over the tree's .c files, the file is modelled, and the
delay rules' analysis of that file (rules/delays.py: the evaluated value, the spec quantity a
constant or comment names) gives the call site: same function, same delay function, same
evaluated value. sleepgraph's `udelay` probe is `__const_udelay`, which udelay() and mdelay()
both reach.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dpmlens.traces.analysis.delays import DelaySite

_SAME_PROBE = {"udelay": {"udelay", "mdelay", "ndelay"}, "msleep": {"msleep"},
               "usleep_range": {"usleep_range", "usleep_range_state", "fsleep"}}


def _c_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for f in sorted(files):
            if f.endswith(".c"):
                yield Path(d) / f


def _defining_files(root: Path, names: Iterable[str]) -> dict[str, list[Path]]:
    """function name -> .c files that define it (a definition: `name(...)` then `{`)."""
    names = sorted(set(names))
    if not names:
        return {}
    pat = re.compile(rb"^[A-Za-z_][^\n;=]*?\b(" + b"|".join(re.escape(n.encode()) for n in names)
                     + rb")\s*\([^;{]*\)\s*\{", re.M)
    quick = [n.encode() for n in names]
    out: dict[str, list[Path]] = {}
    for path in _c_files(root):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if not any(q in data for q in quick):
            continue
        for m in pat.finditer(data):
            out.setdefault(m.group(1).decode(), []).append(path)
    return out


def join_sites(sites: list[DelaySite], source: str | os.PathLike[str]) -> int:
    """Fill `site.static` where the call site is found; returns how many were joined."""
    from dpmlens.config.settings import Config
    from dpmlens.model.build import build_model
    from dpmlens.rules.context import Context
    from dpmlens.rules.delays import analysis

    root = Path(source)
    files = _defining_files(root, {s.caller for s in sites})
    joined = 0
    analysed: dict[Path, object] = {}
    for site in sites:
        for path in files.get(site.caller, []):
            a = analysed.get(path)
            if a is None:
                try:
                    model = build_model(str(path), path.read_bytes())
                except (OSError, ValueError):
                    continue
                a = analysed[path] = analysis(Context(model, Config()))
            static = _match(site, a, path, root)
            if static is not None:
                site.static = static
                joined += 1
                break
    return joined


def match_in_file(site: DelaySite | Any, a: object, path: Path, root: Path) -> dict | None:
    """The call site in one analysed file (rules/delays.py `analysis`) that measured `site`
    (anything with `func`, `caller` and `requested_ms`) ran: a dict for the outputs, or None."""
    return _match(site, a, path, root)


def _match(site: DelaySite | Any, a: object, path: Path, root: Path) -> dict | None:
    fd = a.local  # type: ignore[attr-defined]
    callees = _SAME_PROBE.get(site.func, {site.func})
    rel = str(path.relative_to(root)) if root.is_dir() else str(path)
    evaluated = [d for d in fd.delays.values()
                 if d.call.caller == site.caller and d.call.callee in callees]
    req = site.requested_ms
    same = [d for d in evaluated if req == req and abs(d.ms - req) < 1e-9]
    if not same and req != req and len(evaluated) == 1:
        same = evaluated  # udelay: the probe has no value in ms; one candidate only
    if same:
        d = same[0]
        link = fd.spec_link(d, fd.comments(d))
        out = {"path": rel, "line": d.call.span.line, "function": site.caller,
               "call": f"{d.call.callee}({', '.join(d.call.args)})", "value_ms": d.ms,
               "spec": None, "min_ms": None, "padding_ms": None}
        if link is not None:
            q = link[0]
            out.update(spec=q.id, min_ms=q.min_ms, padding_ms=round(d.ms - q.min_ms, 3))
        return out
    calls = [c for c in fd.model.calls_to(*callees) if c.caller == site.caller]
    if calls:  # the call is there but its value is not a constant we can evaluate
        c = calls[0]
        return {"path": rel, "line": c.span.line, "function": site.caller,
                "call": f"{c.callee}({', '.join(c.args)})", "value_ms": None, "spec": None,
                "min_ms": None, "padding_ms": None}
    return None


def spec_minimums(sites: list[DelaySite]) -> dict[tuple[str, str, float], float]:
    """(caller, func, requested ms or -1) -> the spec minimum, for sites joined to a spec."""
    out = {}
    for s in sites:
        st = s.static
        if st and st.get("min_ms") is not None and st["min_ms"] < (st.get("value_ms") or 0):
            req = s.requested_ms if s.requested_ms == s.requested_ms else -1.0
            out[(s.caller, s.func, req)] = float(st["min_ms"])
    return out
