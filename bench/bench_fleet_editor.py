#!/usr/bin/env python3
"""Benchmark the fleet figures in the editor (issue 22, item 4): does a fleet load block typing?

A synthetic fleet from a real capture (dpmlens.fleet.synthetic, skynet_mem_ftrace.txt of
../shared/traces: 3 kernels x 6 hosts x 100 cycles, ~614k callback rows), ingested once with
`dpmlens fleet ingest` under bench-data/fleet-editor/. The real server over stdio, a workspace
with test-fixtures/fleet-editor/gpu/i915_pm.c open:

  - floor: edit -> publishDiagnostics latency of N single-character edits, no store;
  - during: the same edits right after `fleetStore` is set, while the store is queried and
    mapped (in a thread); the time from the setting to workspace/codeLens/refresh;
  - refresh: a second ingest (one more kernel) lands; the time until the server refreshes the
    lenses (its poll is every DPMLENS_FLEET_POLL s, default 5) and the lens shows that kernel.

Prints a report; the ratio during/floor of the p95 is the figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "server"))

from bench_lsp import Client
from dpmlens.fleet import synthetic

DRIVER = REPO / "test-fixtures" / "fleet-editor" / "gpu" / "i915_pm.c"


class FleetClient(Client):
    def __init__(self, *args: Any, **kw: Any) -> None:
        self.refreshes: list[float] = []
        super().__init__(*args, **kw)

    def _handle(self, now: float, msg: dict[str, Any]) -> None:
        if msg.get("method") == "workspace/codeLens/refresh":
            self.refreshes.append(now)
        super()._handle(now, msg)


def dpmlens(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dpmlens.cli", *args], check=True,
                   cwd=REPO / "server", stdout=subprocess.DEVNULL)


def make_store(base: Path) -> Path:
    store = base / "store"
    if (store / "dpmlens-store.json").is_file():
        return store
    template = synthetic.shared_template()
    if template is None:
        sys.exit("../shared/traces is absent: the synthetic fleet is made from a real capture")
    caps = base / "captures"
    shutil.rmtree(caps, ignore_errors=True)
    synthetic.generate(template, synthetic.default_fleet(), caps)
    dpmlens("fleet", "ingest", "--store", str(store), "-j", "2", "-q", str(caps))
    shutil.rmtree(caps, ignore_errors=True)
    return store


def edits(c: Client, uri: str, text: str, version: int, n: int) -> tuple[list[float], int]:
    """n edits (a space inserted, then removed, on the `return 0;` lines): latency to
    diagnostics, in ms."""
    lines = [i for i, t in enumerate(text.split("\n")) if t.strip() == "return 0;"]
    lat = []
    for i in range(n):
        line = lines[i % len(lines)]
        insert = i % 2 == 0
        version += 1
        end = {"line": line, "character": 1 if insert else 2}
        t0 = time.perf_counter()
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": 1}, "end": end},
                                "text": " " if insert else ""}]})
        lat.append((c.wait_diag(uri, version) - t0) * 1000)
    return lat, version


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def lens_titles(c: Client, uri: str) -> list[str]:
    got = c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    return [x["command"]["title"] for x in got.get("result") or []]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO / "bench-data" / "fleet-editor"))
    ap.add_argument("--edits", type=int, default=60)
    args = ap.parse_args()
    base = Path(args.data)
    base.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    store = make_store(base)
    print(f"store {store}: ready in {time.perf_counter() - t0:.1f} s")
    work = Path(tempfile.mkdtemp(prefix="dpmlens-fleet-bench-"))
    live = work / "store"
    shutil.copytree(store, live)
    ws = work / "ws"
    (ws / "gpu").mkdir(parents=True)
    path = Path(shutil.copy(DRIVER, ws / "gpu" / "i915_pm.c"))
    uri, text = path.as_uri(), path.read_text()
    c = FleetClient([sys.executable, "-m", "dpmlens.lsp"], cwd=str(REPO / "server"))
    try:
        c.request("initialize", {
            "processId": os.getpid(), "rootUri": ws.as_uri(),
            "workspaceFolders": [{"uri": ws.as_uri(), "name": "ws"}],
            "capabilities": {"workspace": {"codeLens": {"refreshSupport": True}}},
            "initializationOptions": {"debounceMs": 0, "traceGlobs": []}})
        c.notify("initialized", {})
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "c", "version": 1, "text": text}})
        c.wait_diag(uri, 1)
        time.sleep(1.0)  # the workspace index of one file
        floor, version = edits(c, uri, text, 1, args.edits)

        before = len(c.refreshes)
        t_set = time.perf_counter()
        c.notify("workspace/didChangeConfiguration", {"settings": {"dpmlens": {
            "debounceMs": 0, "traceGlobs": [], "fleetStore": str(live)}}})
        during: list[float] = []
        while len(c.refreshes) == before and len(during) < 20 * args.edits:
            lat, version = edits(c, uri, text, version, 2)
            during += lat
        with c.lock:
            c.lock.wait_for(lambda: len(c.refreshes) > before, 120)
        loaded = c.refreshes[before] - t_set
        resume = [t for t in lens_titles(c, uri) if t.startswith("resume ")]

        # a new kernel lands: 1 host x 20 cycles of 6.12.0
        caps = work / "more"
        template = synthetic.shared_template()
        assert template is not None
        synthetic.generate(template, synthetic.default_fleet(
            kernels=["6.9.0", "6.10.0", "6.11.0", "6.12.0"], hosts=1, cycles=20), caps)
        newer = [p for p in caps.rglob("*_ftrace.txt") if "6.12.0" in str(p)]
        before = len(c.refreshes)
        dpmlens("fleet", "ingest", "--store", str(live), "-j", "1", "-q",
                *sorted({str(p.parent) for p in newer}))
        t_ingested = time.perf_counter()
        with c.lock:
            c.lock.wait_for(lambda: len(c.refreshes) > before, 120)
        refreshed = c.refreshes[before] - t_ingested
        after = [t for t in lens_titles(c, uri) if t.startswith("resume ")]
    finally:
        c.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"edits with no store:        n={len(floor)} p50 {statistics.median(floor):.1f} ms, "
          f"p95 {pct(floor, 0.95):.1f} ms")
    print(f"edits while the store loads: n={len(during)} p50 {statistics.median(during):.1f} "
          f"ms, p95 {pct(during, 0.95):.1f} ms (ratio of p95s "
          f"{pct(during, 0.95) / pct(floor, 0.95):.2f})")
    print(f"fleetStore set -> codeLens/refresh: {loaded:.2f} s; lens: {resume}")
    print(f"ingest of a new kernel landed -> codeLens/refresh: {refreshed:.2f} s "
          f"(poll every {os.environ.get('DPMLENS_FLEET_POLL', '5')} s); lens: {after}")


if __name__ == "__main__":
    main()
