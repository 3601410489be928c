"""Draw the blind precision sample (docs/precision.md) from `dpmlens check --format json` runs.

    dpmlens check -f json -j 2 --fail-level none -o 612.json /work/linux/linux-source-6.12/drivers
    dpmlens check -f json -j 2 --fail-level none -o 61.json  /work/linux/linux-source-6.1/drivers
    python server/tools/rules_precision.py sample --seed 20261122 612.json 61.json -o sample.jsonl
    python server/tools/rules_precision.py counts 612.json 61.json
    python server/tools/rules_precision.py tally sample.jsonl verdicts-*.jsonl   # markdown

`sample`: per tree and rule, up to `--warnings` warnings (all if fewer), up to `--info` info
findings and up to `--hints` hints (judged on whether what they state is true, not on whether
it is worth a patch), drawn with `random.Random(seed)` after sorting, so the same inputs and
seed give the
same sample. A 6.1 finding identical to one drawn from 6.12 (same file below drivers/, function
and message) is replaced by another, so every item is judged once. Each item carries what the
judge needs: where, message, chain, and the text of every quick fix offered (re-analysed from
the file, since the JSON contract has no fixes). `counts`: findings per rule and severity.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source


def _load(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        findings: list[dict[str, Any]] = json.load(fh)["findings"]
    return findings


def _rel(path: str) -> str:
    return path[path.find("drivers/") :] if "drivers/" in path else path


def _key(f: dict[str, Any]) -> tuple[str, str, str, str]:
    return (f["rule"], _rel(f["path"]), f.get("function") or "", f["message"])


def _fixes(f: dict[str, Any]) -> list[str]:
    """The quick fixes offered for this finding, as `title: line: old -> new` texts."""
    from dpmlens.rules.textpos import Positions

    path = Path(f["path"])
    source = path.read_bytes()
    pos = Positions(source)
    out = []
    for g in analyze_source(str(path), source, Config()):
        if g.rule != f["rule"] or g.line != f["line"] or g.column != f["column"]:
            continue
        for fix in g.fixes:
            edits = []
            for e in fix.edits:
                start, end = pos.range(e.span)  # the exact old text, also across lines
                old_text = source[start:end].decode("latin-1")
                edits.append(f"{_rel(e.path)}:{e.span.line}: {old_text!r} -> {e.new_text!r}")
            out.append(f"{fix.title}: " + "; ".join(edits))
    return out


def sample(
    runs: list[tuple[str, str]], seed: int, warnings: int, info: int, hints: int = 0
) -> list[dict]:
    rng = random.Random(seed)
    drawn: set[tuple[str, str, str, str]] = set()
    out: list[dict[str, Any]] = []
    for tree, path in runs:
        findings = sorted(_load(path), key=lambda f: (f["rule"], _rel(f["path"]), f["line"]))
        by_rule: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for f in findings:
            by_rule.setdefault((f["rule"], f["severity"]), []).append(f)
        for (rule, severity), items in sorted(by_rule.items()):
            want = {"warning": warnings, "info": info, "hint": hints}.get(severity, 0)
            pool = [f for f in items if _key(f) not in drawn]
            rng.shuffle(pool)
            for f in pool[:want]:
                drawn.add(_key(f))
                out.append(
                    {
                        "id": f"{tree}-{len(out) + 1:03d}",
                        "tree": tree,
                        "rule": rule,
                        "severity": severity,
                        "where": f"{f['path']}:{f['line']}:{f['column']}",
                        "function": f.get("function"),
                        "phase": f.get("phase"),
                        "message": f["message"],
                        "chain": [f"{_rel(c['path'])}:{c['line']} {c['note']}" for c in f["chain"]],
                        "fixes": _fixes(f),
                    }
                )
    return out


def counts(paths: list[str]) -> None:
    for path in paths:
        c = Counter((f["rule"], f["severity"]) for f in _load(path))
        print(path)
        for (rule, sev), n in sorted(c.items()):
            print(f"  {rule:42} {sev:8} {n}")


def tally(sample_path: str, verdict_paths: list[str]) -> str:
    """Markdown: accepted / debatable / wrong per rule and severity, then every verdict."""
    with open(sample_path, encoding="utf-8") as fh:
        items = {i["id"]: i for i in (json.loads(x) for x in fh)}
    verdicts = []
    for path in verdict_paths:
        with open(path, encoding="utf-8") as fh:
            verdicts += [json.loads(line) for line in fh if line.strip()]
    by: Counter[tuple[str, str, str]] = Counter()
    for v in verdicts:
        i = items[v["id"]]
        by[(i["rule"], i["severity"], v["verdict"])] += 1
    out = [
        "| rule | severity | judged | accepted | debatable | wrong |",
        "|---|---|---:|---:|---:|---:|",
    ]
    keys = sorted({(r, s) for r, s, _v in by}, key=lambda k: (k[1] != "warning", k[1], k[0]))
    for rule, sev in keys:
        a, d, w = (by[(rule, sev, x)] for x in ("accepted", "debatable", "wrong"))
        out.append(f"| {rule} | {sev} | {a + d + w} | {a} | {d} | {w} |")
    for sev in ("warning", "info", "hint"):
        a, d, w = (sum(n for (_r, s, x), n in by.items() if s == sev and x == k)
                   for k in ("accepted", "debatable", "wrong"))  # fmt: skip
        if a + d + w:
            out.append(
                f"| **all** | **{sev}** | {a + d + w} | {a} ({a / (a + d + w):.0%}) | {d} | {w} |"
            )
    out += [
        "",
        "| id | rule | sev | where | verdict | fix | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in sorted(verdicts, key=lambda v: v["id"]):
        i = items[v["id"]]
        where = _rel(i["where"].rsplit(":", 1)[0])
        reason = " ".join(str(v.get("reason", "")).split()).replace("|", "\\|")
        out.append(
            f"| {v['id']} | {i['rule']} | {i['severity']} | {where} | {v['verdict']} |"
            f" {v.get('fix', 'none')} | {reason} |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("runs", nargs="+", help="JSON of 6.12, then JSON of 6.1")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--warnings", type=int, default=10)
    s.add_argument("--info", type=int, default=4)
    s.add_argument("--hints", type=int, default=0)
    s.add_argument("-o", "--output", required=True)
    c = sub.add_parser("counts")
    c.add_argument("runs", nargs="+")
    t = sub.add_parser("tally")
    t.add_argument("sample")
    t.add_argument("verdicts", nargs="+")
    args = p.parse_args()
    if args.cmd == "tally":
        print(tally(args.sample, args.verdicts), end="")
        return 0
    if args.cmd == "counts":
        counts(args.runs)
        return 0
    names = ["6.12", "6.1", "other"]
    runs = list(zip(names, args.runs, strict=False))
    items = sample(runs, args.seed, args.warnings, args.info, args.hints)
    with open(args.output, "w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item) + "\n")
    print(f"{len(items)} items -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
