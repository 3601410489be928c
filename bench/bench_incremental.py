#!/usr/bin/env python3
"""The server's per-edit analysis in one process: full analysis vs incremental.py, same edits.

The edits are bench_lsp.py's (insert a space at the start of a statement line inside a
function body, then delete it, spread over the file); each is applied to the document as the
server applies it (lsp/documents.py), then analysed both ways: in full after an incremental
reparse, and as the server does (decided before parsing when it can be, else on the new
tree). Prints per file p50/p95/mean of reparse + analysis, the share of edits whose findings
were reused, and why the others ran in full; and checks that the findings after every edit
are those of the full analysis of the same text (exit 1 if not). No workspace index (no resolver): this isolates
the analysis itself.

    .venv/bin/python bench/bench_incremental.py --kernel /work/linux/linux-source-6.12
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.engine.analyze import analyze_model
from dpmlens.engine.incremental import IncrementalAnalyzer
from dpmlens.lsp.documents import UTF8, Document
from dpmlens.model.build import build_model
from lsprotocol import types

FILES = ["drivers/usb/core/hub.c", "drivers/scsi/lpfc/lpfc_init.c"]


def positions(text: str, pairs: int) -> list[int]:
    lines = text.split("\n")
    body = [i for i, ln in enumerate(lines) if ln.startswith("\t") and ln.rstrip().endswith(";")]
    step = max(1, len(body) // pairs)
    return [body[(i * step) % len(body)] for i in range(pairs)]


def change(line: int, insert: bool) -> types.TextDocumentContentChangePartial:
    start = types.Position(line=line, character=1)
    end = types.Position(line=line, character=1 if insert else 2)
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=start, end=end), text=" " if insert else "")


def run(
    path: Path, edits: int, incremental: bool, found: list[list[Finding]] | None = None,
    clock: Callable[[], float] = time.perf_counter, kept: Counter[str] | None = None,
) -> tuple[list[float], Counter[str], dict[str, list[float]]]:
    """Per edit: its time (`clock`), why it ran in full, its kind; each edit's findings into
    `found`; into `kept`, what the reruns did not do again (functions whose delay findings
    were kept, callbacks not walked again)."""
    source = path.read_bytes()
    doc = Document(uri=path.as_uri(), path=str(path), version=0, source=source)
    config = Config()
    analyzer = IncrementalAnalyzer()
    analyzer.analyze(str(path), source, doc.ensure_tree(), config)
    times: list[float] = []
    why: Counter[str] = Counter()
    # reused before the document is parsed again / reused on the new tree / reused after
    # judging the edited function again / after running the per-function checkers again /
    # after running the balance rules again (incremental._rerun_balance) / full analysis
    kinds: dict[str, list[float]] = {
        "early": [], "reused": [], "judged": [], "rerun": [], "balance": [], "full": []}  # fmt: skip
    for line in positions(source.decode("latin-1"), edits // 2):
        for insert in (True, False):
            doc.apply_change(change(line, insert), UTF8)
            t0 = clock()
            kind = "full"
            if incremental:  # as the server does (lsp/diagnostics.analyze_document)
                res = analyzer.analyze_early(str(path), doc.source, config, **stale(doc)) or (
                    analyzer.analyze(str(path), doc.source, doc.ensure_tree(), config)
                )
                why["reused" if res.reused else res.why.split("(")[0].split(" read ")[0]] += 1
                if res.how == "reused before parsing":
                    kind = "early"
                elif res.reused:
                    kind = res.how.split(" ")[0]  # reused, judged f(), rerun f()
                findings = res.findings
            else:
                findings = analyze_model(
                    build_model(str(path), doc.source, doc.ensure_tree()), config)
            times.append((clock() - t0) * 1000)
            if found is not None:
                found.append(findings)
            kinds[kind].append(times[-1])
    if kept is not None:  # (getattr: main's analyzer before these counters)
        kept["functions kept"] += getattr(analyzer, "kept", 0)
        kept["walks not made"] += getattr(analyzer, "unwalked", 0)
        kept["judged without parsing"] += getattr(analyzer, "spliced", 0)
    return times, why, kinds


def stale(doc: Document) -> dict[str, object]:
    """The document's last tree as edited, as the server passes it (Document.stale: not in
    main before it)."""
    return {"stale": doc.stale()} if hasattr(doc, "stale") else {}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="/work/linux/linux-source-6.12")
    ap.add_argument("--edits", type=int, default=400)
    ap.add_argument("--cpu", action="store_true",
                    help="time each edit in CPU time of this process (time.process_time), not "
                    "wall time: on a shared machine, what the edit cost rather than its waits")
    ap.add_argument("--profile", action="store_true",
                    help="instead: the incremental pass of the first file under cProfile")
    args = ap.parse_args()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        _t, why, kinds = run(Path(args.kernel) / FILES[0], args.edits, incremental=True)
        prof.disable()
        print(FILES[0], {k: len(v) for k, v in kinds.items()})
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return 0
    status = False
    for rel in FILES:
        path = Path(args.kernel) / rel
        if not path.is_file():
            print(f"bench_incremental: {path} not found (--kernel)", file=sys.stderr)
            return 2
        want: list[list[Finding]] = []
        got: list[list[Finding]] = []
        clock = time.process_time if args.cpu else time.perf_counter
        full, _, _ = run(path, args.edits, incremental=False, found=want, clock=clock)
        kept: Counter[str] = Counter()
        inc, why, kinds = run(path, args.edits, incremental=True, found=got, clock=clock,
                              kept=kept)
        differ = [i for i, (a, b) in enumerate(zip(want, got, strict=True)) if a != b]
        print(f"{rel} ({len(full)} edits, {'CPU' if args.cpu else 'wall'} time)")
        print("  findings after every edit equal to a full analysis of the same text: "
              + (f"NO, {len(differ)} differ (first: edit {differ[0]})" if differ else "yes"))
        status = status or bool(differ)
        for name, t in (("full analysis", full), ("incremental", inc)):
            print(f"  {name:14s} p50 {statistics.median(t):6.2f}  p95 {pct(t, 0.95):6.2f}  "
                  f"mean {statistics.mean(t):6.2f} ms")
        print(f"  ratio full/incremental: p50 {statistics.median(full) / statistics.median(inc):.2f}"
              f", mean {statistics.mean(full) / statistics.mean(inc):.2f}")
        for kind, t in kinds.items():
            if t:
                print(f"    {kind:12s} {len(t):4d} edits  p50 {statistics.median(t):6.2f}  "
                      f"p95 {pct(t, 0.95):6.2f} ms")
        if kept["judged without parsing"]:
            print(f"    judged without parsing the document: {kept['judged without parsing']}")
        if kinds["rerun"]:
            print(f"    the reruns: {kept['functions kept']} functions' delay findings kept, "
                  f"{kept['walks not made']} callbacks' walks not made again")
        for reason, n in why.most_common(6):
            print(f"  {n:5d}  {reason}")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
