#!/usr/bin/env python3
"""Benchmark the language server over stdio, as an editor would drive it.

On a large real driver (default drivers/usb/core/hub.c of a kernel tree) with the workspace
folder set to the tree's drivers/ (so the background index covers all of it):
  - didOpen -> first publishDiagnostics,
  - didChange -> publishDiagnostics for N single-character edits (debounceMs 0), measured
    while the workspace index is still running and again after it finished,
  - the time the workspace index takes, and the RSS of the server (and of its index workers).

Then the same edits on a larger file (default drivers/scsi/lpfc/lpfc_init.c, 15,860 lines) in
the same server, and the ratio between the two: an analysis whose cost follows the edit, not
the file, keeps it near 1.

Budgets (issue 4): p95 edit-to-diagnostics <= 30 ms, open-to-diagnostics <= 150 ms,
index of drivers/ <= 60 s in the background, RSS <= 400 MB with that index. Goals of issue 10:
p95 <= 10 ms on hub.c and <= 12 ms on lpfc_init.c, open <= 100 ms.
Prints a small report; `--json` for machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

DEFAULT_KERNEL = "/work/linux/linux-source-6.12"


class Client:
    """A minimal JSON-RPC client with a reader thread that timestamps every message."""

    def __init__(self, cmd: list[str], cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        self.next_id = 0
        self.responses: dict[int, Any] = {}
        self.diag_times: dict[tuple[str, int | None], float] = {}
        self.hows: dict[tuple[str, int], str] = {}  # (path, version) -> how it was analysed
        self.events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.lock = threading.Condition()
        self.index_done: float | None = None
        self.index_message = ""
        self.findings_done: float | None = None
        self.findings_message = ""
        threading.Thread(target=self._reader, daemon=True).start()

    def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _reader(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            self._handle(now, msg)

    def _handle(self, now: float, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if "id" in msg and method is not None:  # a request from the server: say yes
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            return
        with self.lock:
            if method == "textDocument/publishDiagnostics":
                p = msg["params"]
                self.diag_times.setdefault((p["uri"], p.get("version")), now)
            elif method == "window/logMessage":
                text = msg["params"].get("message", "")
                m = _ANALYSED.match(text)
                if m is not None:
                    self.hows[(m.group(1), int(m.group(2)))] = m.group(3)
                elif "computed the findings of" in text:  # (after the scan: for didOpen)
                    self.findings_done, self.findings_message = now, text
            elif method == "$/progress":
                v = msg["params"].get("value", {})
                if v.get("kind") == "end" and "indexed" in (v.get("message") or ""):
                    self.index_done = now
                    self.index_message = v["message"]
            elif "id" in msg:
                self.responses[msg["id"]] = msg
            self.lock.notify_all()

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.lock:
            if not self.lock.wait_for(lambda: rid in self.responses, timeout):
                raise TimeoutError(method)
            return self.responses.pop(rid)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_diag(self, uri: str, version: int | None, timeout: float = 30) -> float:
        with self.lock:
            if not self.lock.wait_for(
                lambda: (uri, version) in self.diag_times, timeout
            ):
                raise TimeoutError(f"no diagnostics for {uri} v{version}")
            return self.diag_times[(uri, version)]

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            self.proc.kill()


def rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of one process in MB, from /proc."""
    cur = peak = 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    return cur, peak


def cpu_s(pid: int) -> float:
    """user+sys CPU seconds of one process (the stable measure on a loaded machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(p.name))
    return out


def edit_positions(text: str, n: int) -> list[tuple[int, int]]:
    """Lines inside function bodies (tab-indented statements), spread over the file."""
    lines = text.split("\n")
    body = [
        i
        for i, ln in enumerate(lines)
        if ln.startswith("\t") and ln.rstrip().endswith(";")
    ]
    step = max(1, len(body) // n)
    return [(body[(i * step) % len(body)], 1) for i in range(n)]


def run_edits(
    c: Client, uri: str, text: str, version: int, n: int
) -> tuple[list[float], int]:
    """n single-character edits (insert a space, then delete it): latency to diagnostics."""
    lat = []
    for i, (line, col) in enumerate(edit_positions(text, n // 2 + 1)):
        for insert in (True, False):
            if len(lat) >= n:
                break
            version += 1
            end = {"line": line, "character": col if insert else col + 1}
            change = {
                "range": {"start": {"line": line, "character": col}, "end": end},
                "text": " " if insert else "",
            }
            t0 = time.perf_counter()
            c.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [change],
                },
            )
            lat.append((c.wait_diag(uri, version) - t0) * 1000)
        _ = i
    return lat, version


# the server's debug line per analysis: how it went (reused, judged again, the per-function
# checkers run again, or why in full)
_ANALYSED = re.compile(
    r"analysed (.+) v(\d+): .* \((reused|reused before parsing|judged .*|rerun .*|full: .*)\)$"
)


def outcomes(c: Client, path: Path, first: int, latencies: list[float]) -> str:
    """"reused 150 p50/p95 6.1/7.0 ms, judged 40 ..., full 10 ... (the rules read f() 6, ...)"
    for the edits of versions first.. with these latencies."""
    hows = [c.hows.get((str(path), first + i), "?") for i in range(len(latencies))]
    by_kind: dict[str, list[float]] = {}
    for how, ms in zip(hows, latencies, strict=True):
        kind = "early" if how == "reused before parsing" else how.split(" ")[0].rstrip(":")
        by_kind.setdefault(kind, []).append(ms)
    why = Counter(h[len("full: "):].split(" (")[0] for h in hows if h.startswith("full: "))
    text = ", ".join(
        f"{k} {len(t)} p50/p95 {statistics.median(t):.1f}/{pct(t, 0.95):.1f} ms"
        for k, t in sorted(by_kind.items(), key=lambda kv: -len(kv[1]))
    )
    if why:
        text += " (" + ", ".join(f"{w} {n}" for w, n in why.most_common(3)) + ")"
    return text


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default=os.environ.get("BENCH_KERNEL", DEFAULT_KERNEL))
    ap.add_argument("--file", default="drivers/usb/core/hub.c")
    ap.add_argument(
        "--large-file",
        default="drivers/scsi/lpfc/lpfc_init.c",
        help="a second, larger file: same edits, to show whether the cost follows the size "
        "of the file or of the edit ('' to skip)",
    )
    ap.add_argument(
        "--root", default="drivers", help="workspace folder, relative to --kernel"
    )
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--index-timeout", type=float, default=600)
    ap.add_argument("--wait-findings", type=float, default=0, metavar="S",
                    help="at the end, wait up to S s for the findings the index computes "
                    "after its scan (servers that do), and report when they were done and "
                    "the workers' RSS then")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", metavar="PATH", help="run the server under cProfile, write PATH")
    ap.add_argument(
        "--memory-edits", type=int, default=0, metavar="N",
        help="then N more edits of the first file, the server's RSS read every N/10 "
        "(issue 10: memory stays flat over 10,000 edits)",
    )
    args = ap.parse_args()

    kernel = Path(args.kernel)
    path = kernel / args.file
    root = kernel / args.root
    if not path.is_file() or not root.is_dir():
        print(
            f"bench_lsp: {path} or {root} not found (set --kernel or BENCH_KERNEL)",
            file=sys.stderr,
        )
        return 2
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    uri = path.as_uri()

    prof = ["-m", "cProfile", "-o", args.profile] if args.profile else []
    c = Client([sys.executable, *prof, "-m", "dpmlens.lsp"])
    t_start = time.perf_counter()
    c.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {
                "window": {"workDoneProgress": True},
                "textDocument": {"publishDiagnostics": {"versionSupport": True}},
            },
            # debug: one log line per analysis says whether it was reused (outcomes())
            "initializationOptions": {"debounceMs": 0, "traceGlobs": [], "logLevel": "debug"},
        },
    )
    c.notify("initialized", {})
    time.sleep(1.0)  # let the initialized work (index start) get going, as in an editor
    cpu_open = cpu_s(c.proc.pid)
    t0 = time.perf_counter()
    c.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}},
    )
    open_ms = (c.wait_diag(uri, 1) - t0) * 1000
    cpu_open = cpu_s(c.proc.pid) - cpu_open

    cpu0 = cpu_s(c.proc.pid)
    during, version = run_edits(c, uri, text, 1, args.edits)
    cpu_during = cpu_s(c.proc.pid) - cpu0
    indexing_when_edits_done = c.index_done is None

    with c.lock:
        c.lock.wait_for(lambda: c.index_done is not None, args.index_timeout)
    index_s = (c.index_done - t_start) if c.index_done else float("nan")
    _rss, server_peak = rss_mb(c.proc.pid)
    worker_rss = sum(rss_mb(p)[0] for p in children(c.proc.pid))

    cpu0 = cpu_s(c.proc.pid)
    first = version + 1
    after, version = run_edits(c, uri, text, version, args.edits)
    cpu_after = cpu_s(c.proc.pid) - cpu0
    after_how = outcomes(c, path, first, after)
    large: dict[str, object] = {}
    large_path = kernel / args.large_file if args.large_file else None
    if large_path is not None and large_path.is_file():
        ltext = large_path.read_text(encoding="utf-8", errors="surrogateescape")
        luri = large_path.as_uri()
        t0 = time.perf_counter()
        c.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": luri, "languageId": "c", "version": 1, "text": ltext}},
        )
        lopen_ms = (c.wait_diag(luri, 1) - t0) * 1000
        cpu0 = cpu_s(c.proc.pid)
        ledits, _v = run_edits(c, luri, ltext, 1, args.edits)
        lcpu = cpu_s(c.proc.pid) - cpu0
        large_how = outcomes(c, large_path, 2, ledits)
        large = {
            "large_file": str(large_path),
            "large_file_lines": ltext.count("\n"),
            "large_open_to_diagnostics_ms": round(lopen_ms, 1),
            "large_edit_p50_ms": round(statistics.median(ledits), 1),
            "large_edit_p95_ms": round(pct(ledits, 0.95), 1),
            "large_edit_max_ms": round(max(ledits), 1),
            "large_server_cpu_ms_per_edit": round(1000 * lcpu / len(ledits), 1),
            "large_edit_analyses": large_how,
            "ratio_p95_large_to_small": round(pct(ledits, 0.95) / pct(after, 0.95), 2),
            "ratio_cpu_large_to_small": round((lcpu / len(ledits)) / (cpu_after / len(after)), 2),
        }
    server_rss2, server_peak2 = rss_mb(c.proc.pid)
    memory: dict[str, object] = {}
    if args.memory_edits:
        step = max(1, args.memory_edits // 10)
        samples = [round(rss_mb(c.proc.pid)[0], 1)]
        done = 0
        while done < args.memory_edits:
            _lat, version = run_edits(c, uri, text, version, step)
            done += step
            samples.append(round(rss_mb(c.proc.pid)[0], 1))
        memory = {
            "memory_edits": done,
            "memory_rss_mb_every_tenth": samples,
            "memory_growth_mb_last_80pct": round(samples[-1] - samples[2], 1),
        }
    findings: dict[str, object] = {}
    if args.wait_findings:
        peak_workers = 0.0
        end = time.perf_counter() + args.wait_findings
        while c.findings_done is None and time.perf_counter() < end:
            peak_workers = max(peak_workers, sum(rss_mb(p)[0] for p in children(c.proc.pid)))
            time.sleep(0.5)
        if c.findings_done is not None:
            findings = {
                "index_findings_seconds_after_scan": round(c.findings_done - c.index_done, 1)
                if c.index_done else None,
                "index_findings": c.findings_message,
                "index_findings_workers_peak_rss_mb": round(peak_workers, 1),
            }
    c.close()

    result = {
        "load_average": os.getloadavg()[0],
        "file": str(path),
        "file_lines": text.count("\n"),
        "open_to_diagnostics_ms": round(open_ms, 1),
        "server_cpu_ms_open": round(1000 * cpu_open, 1),
        "edits": len(during),
        "edits_during_index": indexing_when_edits_done,
        "edit_p50_ms_during_index": round(statistics.median(during), 1),
        "edit_p95_ms_during_index": round(pct(during, 0.95), 1),
        "edit_p50_ms": round(statistics.median(after), 1),
        "edit_p95_ms": round(pct(after, 0.95), 1),
        "edit_max_ms": round(max(after), 1),
        "server_cpu_ms_per_edit_during_index": round(1000 * cpu_during / len(during), 1),
        "server_cpu_ms_per_edit": round(1000 * cpu_after / len(after), 1),
        "edit_analyses": after_how,
        "index_seconds": round(index_s, 1),
        "index_summary": c.index_message,
        **findings,
        "server_rss_mb": round(server_rss2, 1),
        "server_peak_rss_mb": round(max(server_peak, server_peak2), 1),
        "index_workers_rss_mb": round(worker_rss, 1),
        **memory,
        **large,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
