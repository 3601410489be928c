"""Rows as an aligned table, JSON or CSV (`dpmlens fleet sql`)."""

from __future__ import annotations

import csv
import json
from datetime import date, datetime
from typing import Any, TextIO


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".")
    return str(v)


def _plain(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return str(v)


def write_rows(cols: list[str], rows: list[tuple[Any, ...]], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        json.dump([{c: _plain(v) for c, v in zip(cols, r, strict=True)} for r in rows], out,
                  indent=1)
        out.write("\n")
    elif fmt == "csv":
        w = csv.writer(out)
        w.writerow(cols)
        w.writerows([[_cell(v) for v in r] for r in rows])
    else:
        text = [[_cell(v) for v in r] for r in rows]
        widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(cols)]
        out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip() + "\n")
        for r in text:
            out.write("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() + "\n")
        out.write(f"({len(rows)} rows)\n")
