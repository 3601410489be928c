"""Run every rule over a kernel tree and write the findings for a precision review.

    nice python server/tools/rules_precision.py /work/linux/linux-source-6.12/drivers out.jsonl
    python server/tools/rules_precision.py --sample out.jsonl RULE [N]   # print N warnings

Findings go to a JSON-lines file (one per finding: rule, severity, path, line, message,
chain); a summary per rule and severity is printed. The review itself (reading the code
around each sampled warning) is recorded in docs/precision.md.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

from dpmlens.config import Config
from dpmlens.engine import analyze_source
from dpmlens.syntax.prefilter import keywords_for, may_contain_pm

_WORDS = keywords_for(["USB_RESUME_TIMEOUT", "TDRST", "TATTDB", "D3cold", "PCI_PM_D3"])


def _one(path: str) -> list[dict]:
    try:
        source = Path(path).read_bytes()
    except OSError:
        return []
    if not may_contain_pm(source, _WORDS):
        return []
    try:
        findings = analyze_source(path, source, Config())
    except RecursionError:
        return [{"rule": "!error", "severity": "error", "path": path, "line": 0, "message": "deep"}]
    return [
        {
            "rule": f.rule,
            "severity": str(f.severity),
            "path": f.path,
            "line": f.line,
            "message": f.message,
            "chain": [f"{c.function}:{c.span.line}" for c in f.chain],
        }
        for f in findings
    ]


def run(tree: str, out: str, jobs: int = 2) -> None:
    files = sorted(str(p) for p in Path(tree).rglob("*.c"))
    counts: Counter[tuple[str, str]] = Counter()
    with open(out, "w", encoding="utf-8") as fh, Pool(jobs) as pool:
        for found in pool.imap_unordered(_one, files, chunksize=32):
            for item in found:
                fh.write(json.dumps(item) + "\n")
                counts[(item["rule"], item["severity"])] += 1
    print(f"{len(files)} files")
    for (rule, sev), n in sorted(counts.items()):
        print(f"{rule:42} {sev:8} {n}")


def sample(out: str, rule: str, n: int = 20, seed: int = 1) -> None:
    with open(out, encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh]
    items = [i for i in items if i["rule"] == rule and i["severity"] == "warning"]
    random.Random(seed).shuffle(items)
    for i in items[:n]:
        print(f"{i['path']}:{i['line']}: {i['message']}  {i.get('chain', '')}")


if __name__ == "__main__":
    if sys.argv[1] == "--sample":
        sample(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 20)
    else:
        run(sys.argv[1], sys.argv[2])
