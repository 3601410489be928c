#!/usr/bin/env python3
"""didOpen -> diagnostics over stdio, for a file the workspace index has reached and for one
it has not, and whether the first answer is the one the server settles on.

Per file and run, a fresh server (`python -m dpmlens.lsp`, whatever PYTHONPATH says):
  - indexed: the workspace is the file's directory; the file is opened once the index has
    finished, and the findings it computes after its scan (the usual case: the editor opens
    files of a workspace indexed in the background);
  - cold: the workspace is the tree's drivers/ and the file is opened 1 s after `initialized`
    (bench_lsp.py's open: the index has not reached it);
  - restart (`--restart`): as cold, but an earlier server on the same drivers/ has run its
    findings pass to the end and stored its findings (lsp/findings_store.py, in a private
    $XDG_CACHE_HOME filled once, before the runs): the editor opened again the next day;
  - `--pass-twice`: the findings pass over drivers/ to its end, first start and restarted.
For each: wall time to the first publishDiagnostics of version 1, the server's CPU over that
time, and, indexed, whether the first published diagnostics equal the last ones for version 1
once the server's own analysis ran after the directory's index job (exit 1 if not).

    PYTHONPATH=server .venv/bin/python bench/bench_open.py --kernel /work/linux/linux-source-6.12
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lsp import Client, cpu_s

_ANALYSED = re.compile(r"analysed (.+) v(\d+): .* in [^(]*(?:\((.*)\))?$")
# does the server under test compute findings in its index (a branch before: no)
_FINDINGS = importlib.util.find_spec("dpmlens.lsp.index_findings") is not None
FILES = ["drivers/usb/core/hub.c", "drivers/scsi/lpfc/lpfc_init.c"]


class Recorder(Client):
    """bench_lsp's client, keeping every publishDiagnostics' content too."""

    def __init__(self, cmd: list[str]) -> None:
        self.published: list[tuple[float, str, int | None, list[Any]]] = []
        self.first_how: dict[tuple[str, int], str] = {}
        # the server's log line: the index's findings are stored for the next run (those
        # computed: bench_lsp.Client's findings_done / findings_message)
        self.stored = ""
        super().__init__(cmd)

    def _handle(self, now: float, msg: dict[str, Any]) -> None:
        if msg.get("method") == "textDocument/publishDiagnostics":
            p = msg["params"]
            self.published.append((now, p["uri"], p.get("version"), p["diagnostics"]))
        elif msg.get("method") == "window/logMessage":
            text = msg["params"].get("message", "")
            m = _ANALYSED.match(text)
            if m is not None:
                self.first_how.setdefault((m.group(1), int(m.group(2))), m.group(3))
            if "stored the findings of" in text:
                self.stored = text
        super()._handle(now, msg)

    def of(self, uri: str, version: int) -> list[list[Any]]:
        with self.lock:
            return [d for _t, u, v, d in self.published if u == uri and v == version]


_VERSIONED = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}


def started(root: Path, capabilities: dict[str, Any], **options: Any) -> Recorder:
    """A fresh server (`python -m dpmlens.lsp`, whatever PYTHONPATH says) on the workspace
    `root`, initialized with these client capabilities and initialization options."""
    c = Recorder([sys.executable, "-m", "dpmlens.lsp"])
    try:
        c.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": capabilities,
            "initializationOptions": {"debounceMs": 0, "traceGlobs": [], **options},
        })
        c.notify("initialized", {})
    except BaseException:
        c.close()
        raise
    return c


def one(path: Path, root: Path, indexed: bool, settle: float, check: bool) -> dict[str, Any]:
    c = started(root, {"window": {"workDoneProgress": True}, **_VERSIONED}, logLevel="debug")
    try:
        if indexed:
            with c.lock:
                c.lock.wait_for(lambda: c.index_done is not None, 300)
                if _FINDINGS:  # (a server that computes them after the scan)
                    c.lock.wait_for(lambda: bool(c.findings_done), 300)
            time.sleep(0.5)
        else:
            time.sleep(1.0)
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        cpu0 = cpu_s(c.proc.pid)
        t0 = time.perf_counter()
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "c", "version": 1, "text": text}})
        wall = (c.wait_diag(uri, 1, timeout=60) - t0) * 1000
        cpu = (cpu_s(c.proc.pid) - cpu0) * 1000
        out = {"wall_ms": wall, "cpu_ms": cpu, "how": c.first_how.get((str(path), 1), "?")}
        if check:
            time.sleep(settle)  # the directory's job and the server's own analysis
            answers = c.of(uri, 1)
            out["publishes"] = len(answers)
            out["same"] = all(a == answers[-1] for a in answers)
            out["diagnostics"] = len(answers[-1])
        return out
    finally:
        c.close()


def fill_store(root: Path) -> str:
    """A server on `root` runs its scan and findings pass to the end and stores the findings
    (in $XDG_CACHE_HOME); its log line saying so."""
    c = started(root, {})
    try:
        with c.lock:
            c.lock.wait_for(lambda: bool(c.stored), 1800)
        return f"{c.findings_message} / {c.stored}"
    finally:
        c.close()


def every_file(directory: Path, settle: float) -> int:
    """`--dir`: one server on `directory`; once its findings are computed, open each .c file
    there and check that the first answer is the one settled after (exit 1 if one is not)."""
    bad: list[str] = []
    fast = 0
    files = sorted(directory.glob("*.c"))
    c = started(directory, _VERSIONED, logLevel="debug")
    try:
        with c.lock:
            c.lock.wait_for(lambda: bool(c.findings_done), 600)
        for path in files:
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": path.as_uri(), "languageId": "c", "version": 1,
                "text": path.read_text(encoding="utf-8", errors="surrogateescape")}})
        time.sleep(settle)
        for path in files:
            answers = c.of(path.as_uri(), 1)
            fast += c.first_how.get((str(path), 1)) == "computed by the workspace index"
            if not answers or any(a != answers[-1] for a in answers):
                bad.append(path.name)
    finally:
        c.close()
    print(f"{directory}: {len(files)} .c files opened, {fast} answered by the index; first "
          f"answer = settled answer: {'yes, all' if not bad else 'NO: ' + ', '.join(bad)}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="/work/linux/linux-source-6.12")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--settle", type=float, default=4.0,
                    help="seconds to wait after the open for the server's own analysis")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--restart", action="store_true",
                    help="also open each file in a server restarted on a drivers/ whose "
                    "findings an earlier server stored (fills a private cache first: minutes)")
    ap.add_argument("--pass-twice", action="store_true",
                    help="instead: a server on --kernel's drivers/ runs its findings pass to the "
                    "end in a fresh cache, then a restarted one (what the store saves the pass)")
    ap.add_argument("--restart-cache", metavar="DIR",
                    help="--restart with this $XDG_CACHE_HOME (filled first if it holds no store)")
    ap.add_argument("--dir", action="append", default=[], metavar="REL",
                    help="instead: open every .c file of this directory of --kernel (indexed) "
                    "and check each first answer against the settled one")
    args = ap.parse_args()
    kernel = Path(args.kernel)
    if args.dir:  # (with no findings an earlier run stored)
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench-open-empty-")
        return max(every_file(kernel / d, args.settle * 3) for d in args.dir)
    if args.pass_twice:
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench-open-pass-")
        for label in ("first start", "restart"):
            t0 = time.perf_counter()
            said = fill_store(kernel / "drivers")
            print(f"{label}: {time.perf_counter() - t0:.0f} s to the store; {said}; load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        return 0
    status = 0
    report: dict[str, Any] = {}
    # (mode, opened once indexed, workspace (None: the file's directory), $XDG_CACHE_HOME):
    # indexed and cold start with no stored findings
    empty = tempfile.mkdtemp(prefix="bench-open-empty-")
    modes: list[tuple[str, bool, Path | None, str]] = [
        ("indexed", True, None, empty), ("cold", False, kernel / "drivers", empty)]
    if args.restart or args.restart_cache:
        cache = args.restart_cache or tempfile.mkdtemp(prefix="bench-open-cache-")
        if list(Path(cache).glob("dpmlens/editor/*.json")):
            print(f"store kept in {cache} (not filled again)", flush=True)
        else:
            os.environ["XDG_CACHE_HOME"] = cache
            t0 = time.perf_counter()
            said = fill_store(kernel / "drivers")
            print(f"store filled in {time.perf_counter() - t0:.0f} s in {cache}: {said}",
                  flush=True)
        modes.append(("restart", False, kernel / "drivers", cache))
    for rel in FILES:
        path = kernel / rel
        if not path.is_file():
            print(f"bench_open: {path} not found (--kernel)", file=sys.stderr)
            return 2
        for mode, indexed, where, xdg in modes:
            root = where or path.parent
            os.environ["XDG_CACHE_HOME"] = xdg
            check = mode != "cold"  # (a first answer from the index: is it the settled one?)
            runs = []
            for _ in range(args.runs):
                if mode != "restart":  # (what a run stored is not for the next one)
                    shutil.rmtree(os.path.join(xdg, "dpmlens"), ignore_errors=True)
                runs.append(one(path, root, indexed, args.settle, check))
            report[f"{rel} {mode}"] = runs
            walls = [r["wall_ms"] for r in runs]
            cpus = [r["cpu_ms"] for r in runs]
            line = (f"{rel} {mode:8s} open wall p50 {statistics.median(walls):6.1f} ms "
                    f"(runs {', '.join(f'{w:.1f}' for w in walls)}), server CPU p50 "
                    f"{statistics.median(cpus):5.0f} ms; {runs[0]['how']}")
            if check:
                same = all(r["same"] for r in runs)
                status |= 0 if same else 1
                line += (f"; first answer = settled answer: {'yes' if same else 'NO'} "
                         f"({runs[0]['diagnostics']} diagnostics, "
                         f"{'/'.join(str(r['publishes']) for r in runs)} publishes)")
            print(line, flush=True)
    if args.json:
        print(json.dumps(report, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
