"""`python -m dpmlens.model.dump FILE...`: print what the model sees in C files (for debugging).

Text by default; `--json` for a machine-readable dump. Exit 2 with a one-line error when a
file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from dpmlens.model.build import build_model
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.phases import PHASES
from dpmlens.model.types import FileModel


def model_summary(model: FileModel) -> dict[str, Any]:
    """A JSON-able summary: tables, drivers, callbacks with phases, function count."""
    return {
        "path": model.path,
        "functions": len(model.functions),
        "pm_tables": [
            {
                "name": t.name,
                "macro": t.macro,
                "line": t.span.line,
                "maybe_unused": t.maybe_unused,
                "under_config_ifdef": t.under_config_ifdef,
                "exported": t.exported,
                "members": {m.member: m.function for m in t.members},
            }
            for t in model.pm_tables.values()
        ],
        "drivers": [
            {k: v for k, v in asdict(d).items() if k not in ("name_span", "span", "legacy_spans")}
            | {"line": d.span.line if d.span else None}
            for d in model.drivers
        ],
        "callbacks": {
            fn: sorted({r.member for r in roles}, key=lambda m: PHASES[m].order)
            for fn, roles in pm_callbacks(model).items()
        },
    }


def _text(s: dict[str, Any]) -> str:
    out = [f"{s['path']}: {s['functions']} functions"]
    for t in s["pm_tables"]:
        flags = [k for k in ("maybe_unused", "under_config_ifdef", "exported") if t[k]]
        out.append(f"  table {t['name']} (line {t['line']}, {t['macro'] or 'struct initializer'})"
                   + (f" [{', '.join(flags)}]" if flags else ""))  # fmt: skip
        for member, fn in t["members"].items():
            out.append(f"    .{member} = {fn}")
    for d in s["drivers"]:
        out.append(
            f"  driver {d['var_name']} ({d['struct_type']}, bus {d['bus'] or '?'},"
            f" line {d['line']}): name {d['name']!r}, probe {d['probe']}, pm {d['pm']},"
            f" registered by {d['registration']}"
            + (f", legacy {d['legacy']}" if d["legacy"] else "")
        )
    for fn, members in s["callbacks"].items():
        out.append(f"  callback {fn}: {', '.join(members)}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpmlens.model.dump", description=__doc__)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    summaries = []
    for path in args.files:
        try:
            with open(path, "rb") as fh:
                source = fh.read()
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            return 2
        summaries.append(model_summary(build_model(path, source)))
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        print("\n".join(_text(s) for s in summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
