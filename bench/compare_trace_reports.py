#!/usr/bin/env python3
"""`dpmlens trace report --format json` of another tree and of this one on every real capture
the tests hold, compared byte for byte (the JSON and stderr).

The reports: each capture under test-fixtures/lab/ (the lab's ftrace captures) and
../shared/traces/ (pm-graph's), and each fixture under test-fixtures/traces/ (ftrace,
trace-cmd, Perfetto, runtime PM), one file at a time; then each lab directory and
../shared/traces/ whole, default and `--per-cycle --timeline`; then pm-graph's 100-run
multitest (bench-data/pm-graph-multitest/, `make bench-multitest` unpacks it) both ways when
it is there. With --pure, this tree runs a second time with DPMLENS_PURE_SCAN=1,
DPMLENS_PY_TIMELINE=1, DPMLENS_PY_WALK=1 and DPMLENS_PY_JSON=1 (the Python event scan and
pairing, timeline, critical-path walk and JSON writer instead of the C modules) and that is
compared too.

    python bench/compare_trace_reports.py --base /tmp/base/server [--pure] [-j 2] [--only files|dirs]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "test-fixtures" / "lab"
FIXTURES = REPO / "test-fixtures" / "traces"
SHARED = Path(os.environ.get("DPMLENS_SHARED") or REPO.parent / "shared") / "traces"
MULTITEST = REPO / "bench-data" / "pm-graph-multitest"
MAIN = "import sys; from dpmlens.cli import main; sys.exit(main())"


def jobs() -> list[tuple[str, list[str]]]:
    """(name, arguments after `trace report --format json`)."""
    files = sorted(p for p in LAB.rglob("*ftrace*.txt*") if p.is_file())
    files += sorted(SHARED.rglob("*_ftrace.txt")) if SHARED.is_dir() else []
    files += sorted(p for p in FIXTURES.iterdir() if p.is_file() and not p.name.startswith(
        "dmesg_") and p.suffix not in (".json", ".py"))
    out = [(str(p.relative_to(p.anchor)), [str(p)]) for p in files]
    dirs = sorted(d for d in LAB.iterdir() if d.is_dir())
    dirs += [SHARED] if SHARED.is_dir() else []
    dirs += [MULTITEST] if MULTITEST.is_dir() else []
    for d in dirs:
        out.append((f"dir {d}", [str(d)]))
        out.append((f"dir {d} --per-cycle --timeline", ["--per-cycle", "--timeline", str(d)]))
    return out


def run(server: Path, args: list[str], out: Path, pure: bool) -> bytes:
    flag = "1" if pure else "0"
    env = dict(os.environ, PYTHONPATH=str(server), DPMLENS_PURE_SCAN=flag,
               DPMLENS_PY_TIMELINE=flag, DPMLENS_PY_WALK=flag, DPMLENS_PY_JSON=flag)
    cmd = ["nice", "-n", "10", sys.executable, "-c", MAIN, "trace", "report", "--format",
           "json", "-o", str(out), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, check=False)
    err = proc.stderr.replace(str(out).encode(), b"OUT")
    return b"rc=%d\n" % proc.returncode + err + b"\n" + (out.read_bytes() if out.exists() else b"")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="the other tree's server/")
    ap.add_argument("--pure", action="store_true", help="also this tree with the Python scan")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", choices=("files", "dirs"), help="one half (two runs side by side)")
    ap.add_argument("--reverse", action="store_true", help="last report first")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="compare-reports-"))
    variants = [("base", args.base, False), ("new", REPO / "server", False)]
    if args.pure:
        variants.append(("pure", REPO / "server", True))
    todo = [j for j in jobs() if args.only is None
            or (args.only == "dirs") == j[0].startswith("dir ")]
    if args.reverse:
        todo.reverse()

    def one(i: int) -> tuple[str, list[str]]:
        name, a = todo[i]
        outs = [run(srv, a, tmp / f"{i}-{v}.json", pure) for v, srv, pure in variants]
        for v, _, _ in variants:
            (tmp / f"{i}-{v}.json").unlink(missing_ok=True)
        return name, [v for (v, _, _), o in zip(variants[1:], outs[1:], strict=True)
                      if o != outs[0]]

    differ = 0
    with ThreadPoolExecutor(args.j) as pool:
        for name, bad in pool.map(one, range(len(todo))):
            differ += bool(bad)
            print(f"DIFFERS ({', '.join(bad)}): {name}" if bad else f"same: {name}", flush=True)
    print(f"{len(todo)} reports ({sum(1 for n, _ in todo if not n.startswith('dir '))} files, "
          f"{sum(1 for n, _ in todo if n.startswith('dir '))} directories), "
          f"{' / '.join(v for v, _, _ in variants)}: {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
