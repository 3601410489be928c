#!/usr/bin/env python3
"""The editor's costliest reused edits alone: hub.c's edits in hub_activate(), which both resume
callbacks' walks enter, so the per-function checkers run again (`IncrementalAnalyzer._rerun`).

A space is inserted and deleted in turn at the start of one statement line of hub_activate();
each edit is applied, parsed and analysed as the server does (lsp/documents.py, then
analyze_early / analyze). Prints the median and p90 CPU time per edit (the document's reparse
included) and how the edits were decided. Pair it with main's code by PYTHONPATH:

    PYTHONPATH=server .venv/bin/python bench/bench_rerun.py --kernel /work/linux/linux-source-6.12
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.engine.incremental import IncrementalAnalyzer
from dpmlens.lsp.documents import UTF8, Document
from lsprotocol import types


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="/work/linux/linux-source-6.12")
    ap.add_argument("--edits", type=int, default=60)
    args = ap.parse_args()
    path = Path(args.kernel) / "drivers/usb/core/hub.c"
    if not path.is_file():
        print(f"bench_rerun: {path} not found (--kernel)", file=sys.stderr)
        return 2
    source = path.read_bytes()
    fn = source.find(b"\nstatic void hub_activate(")
    at = source.find(b"\n\tif (type == HUB_INIT2", fn)
    if fn < 0 or at < 0:
        print(f"bench_rerun: no hub_activate() as 6.12 has it in {path}", file=sys.stderr)
        return 2
    line = source.count(b"\n", 0, at) + 1
    doc = Document(uri=path.as_uri(), path=str(path), version=0, source=source)
    config = Config()
    analyzer = IncrementalAnalyzer()
    analyzer.analyze(str(path), source, doc.ensure_tree(), config)
    times: list[float] = []
    hows: set[str] = set()
    for i in range(args.edits):
        insert = i % 2 == 0
        start = types.Position(line=line, character=1)
        end = types.Position(line=line, character=1 if insert else 2)
        doc.apply_change(types.TextDocumentContentChangePartial(
            range=types.Range(start=start, end=end), text=" " if insert else ""), UTF8)
        t0 = time.process_time()
        res = analyzer.analyze_early(str(path), doc.source, config) or analyzer.analyze(
            str(path), doc.source, doc.ensure_tree(), config)
        times.append((time.process_time() - t0) * 1000)
        hows.add(res.how)
    s = sorted(times)
    print(f"hub.c, {len(times)} edits in hub_activate() (CPU): median "
          f"{statistics.median(times):.2f} ms, p90 {s[int(0.9 * len(s))]:.2f} ms; "
          + ", ".join(sorted(hows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
