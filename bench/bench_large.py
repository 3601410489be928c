#!/usr/bin/env python3
"""The 20 MB document (issue 29): the same driver code as separate files and as one file.

Builds the document from a kernel tree: the first N (default 637) `.c` files of `drivers/`, in
the CLI's walk order, whose text names `dev_pm_ops`, concatenated into one file under
bench-data/ (each file preceded by a `/* ---- path ---- */` line). Then, one job each, no
result cache:
  - `dpmlens check --format json` over the N files, and over the one file: wall, CPU, peak RSS
    (of the child, from wait4), and the ratio (issue 29: <= 2x in time and memory);
  - the language server over stdio: didOpen of the one file -> its first publishDiagnostics
    (issue 29: <= 10 s, diagnostics or one clear "too large" message), peak RSS.
Without the tree it says so and exits 0 (nothing to measure).

    .venv/bin/python bench/bench_large.py --kernel /work/linux/linux-source-6.12
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench_lsp import Client, rss_mb  # same folder
from dpmlens.engine.walk import collect_files

ROOT = Path(__file__).resolve().parent.parent


def build_document(kernel: Path, count: int, out: Path) -> list[str]:
    """Write the concatenation to `out`; return the files it holds (relative to kernel)."""
    files, _errors = collect_files([str(kernel / "drivers")])
    chosen: list[str] = []
    parts: list[bytes] = []
    for f in files:
        if not f.endswith(".c"):
            continue
        data = Path(f).read_bytes()
        if b"dev_pm_ops" not in data:
            continue
        rel = os.path.relpath(f, kernel)
        chosen.append(rel)
        parts.append(b"/* ---- %s ---- */\n" % rel.encode() + data)
        if len(chosen) == count:
            break
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(b"\n".join(parts))
    tmp.replace(out)
    return chosen


def timed(cmd: list[str], cwd: Path, out_path: Path) -> dict[str, float]:
    """Wall, CPU and peak RSS of one child process (wait4's rusage: this child only)."""
    t0 = time.perf_counter()
    with out_path.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        _pid, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
            "exit": os.waitstatus_to_exitcode(status)}


def findings(path: Path, strip_prefix: str = "") -> int:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return -1
    items = data.get("findings", data) if isinstance(data, dict) else data
    return len(items)


def editor_open(doc: Path, timeout: float) -> dict[str, object]:
    """didOpen of the document -> first publishDiagnostics, over stdio, no workspace index."""
    c = Client([sys.executable, "-m", "dpmlens.lsp"])
    root = doc.parent
    c.request("initialize", {
        "processId": os.getpid(), "rootUri": root.as_uri(), "workspaceFolders": None,
        "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
        "initializationOptions": {"debounceMs": 0, "traceGlobs": []},
    })
    c.notify("initialized", {})
    text = doc.read_text(encoding="utf-8", errors="surrogateescape")
    uri = doc.as_uri()
    t0 = time.perf_counter()
    c.notify("textDocument/didOpen",
             {"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}})
    result: dict[str, object] = {}
    try:
        t = c.wait_diag(uri, 1, timeout)
        result["open_to_diagnostics_s"] = round(t - t0, 2)
    except TimeoutError:
        result["open_to_diagnostics_s"] = f"none within {timeout:g} s"
    result["server_peak_rss_mb"] = round(rss_mb(c.proc.pid)[1], 1)
    c.close()
    return result


def profile(kernel: Path, files: list[str]) -> int:
    import cProfile
    import pstats

    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.model.build import build_model

    text = b"\n".join(b"/* ---- %s ---- */\n" % f.encode() + (kernel / f).read_bytes()
                      for f in files)
    config = Config()
    analyze_model(build_model("warm-up.c", b"int x;"), config)  # rules loaded, queries compiled
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    model = build_model(str(kernel / "drivers" / "concatenated.c"), text)
    found = analyze_model(model, config)
    prof.disable()
    print(f"{len(files)} files, {len(text) / 1e6:.1f} MB: {time.perf_counter() - t0:.1f} s under "
          f"cProfile, {len(found)} findings, load {os.getloadavg()[0]:.1f}")
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default=os.environ.get("BENCH_KERNEL",
                                                       "/work/linux/linux-source-6.12"))
    ap.add_argument("--count", type=int, default=637)
    ap.add_argument("--out", default=str(ROOT / "bench-data" / "large"))
    ap.add_argument("--editor-timeout", type=float, default=60.0)
    ap.add_argument("--skip-editor", action="store_true")
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--profile", type=int, metavar="N",
                    help="instead: build_model + analyze_model of the first N files as one text, "
                    "in this process under cProfile; print the top lines")
    args = ap.parse_args()
    kernel = Path(args.kernel)
    if not (kernel / "drivers").is_dir():
        print(f"bench_large: skipped: no kernel tree at {kernel} (set --kernel or BENCH_KERNEL)",
              file=sys.stderr)
        return 0
    out = Path(args.out)
    doc = out / "pm-drivers-concatenated.c"
    files = build_document(kernel, args.count, doc)
    if args.profile:
        return profile(kernel, files[: args.profile])
    size = doc.stat().st_size
    result: dict[str, object] = {"load_average": os.getloadavg()[0], "files": len(files),
                                 "document": str(doc), "document_mb": round(size / 1e6, 1),
                                 "document_lines": doc.read_bytes().count(b"\n")}
    if not args.skip_cli:
        dpmlens = [sys.executable, "-m", "dpmlens.cli"]
        base = [*dpmlens, "check", "--no-cache", "-j", "1", "--format", "json",
                "--fail-level", "none"]
        sep = timed([*base, *files], kernel, out / "separate.json")
        one = timed([*base, str(doc)], kernel, out / "one.json")
        result["cli_separate"] = sep
        result["cli_one_file"] = one
        result["findings_separate"] = findings(out / "separate.json")
        result["findings_one_file"] = findings(out / "one.json")
        result["ratio_wall"] = round(one["wall_s"] / sep["wall_s"], 2)
        result["ratio_cpu"] = round(one["cpu_s"] / sep["cpu_s"], 2)
        result["ratio_peak_rss"] = round(one["peak_rss_mb"] / sep["peak_rss_mb"], 2)
    if not args.skip_editor:
        result["editor"] = editor_open(doc, args.editor_timeout)
    for k, v in result.items():
        print(f"{k:20} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
