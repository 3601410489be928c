"""Every finding that differs between two `dpmlens check -f json --all-costs` runs of a tree
(issue 31): removed, added, and changed in severity or message, keyed by (rule, path, line).

usage: changed.py TREE BEFORE.json AFTER.json > OUT.md   (prints Markdown; `--warnings`
first to list only findings that are or were warnings)
"""
import json
import sys
from pathlib import Path


def load(path):
    out = {}
    for f in json.loads(Path(path).read_text())["findings"]:
        out.setdefault((f["rule"], f["path"], f["line"]), []).append(f)
    return out


def main():
    args = sys.argv[1:]
    warnings_only = args[:1] == ["--warnings"]
    tree, before, after = args[1:] if warnings_only else args
    a, b = load(before), load(after)
    rows = []
    for k in sorted(set(a) | set(b)):
        fa = sorted((f["severity"], f["message"]) for f in a.get(k, []))
        fb = sorted((f["severity"], f["message"]) for f in b.get(k, []))
        if fa == fb:
            continue
        if warnings_only and not any(s == "warning" for s, _m in fa + fb):
            continue
        kind = "removed" if not fb else "added" if not fa else "changed"
        rows.append((kind, k, fa, fb))
    print(f"# linux-source-{tree}: {len(rows)} {'warnings' if warnings_only else 'findings'}"
          " changed\n")
    for kind, (rule, path, line), fa, fb in rows:
        sev = " -> ".join(x for x in (",".join(s for s, _ in fa), ",".join(s for s, _ in fb)) if x)
        print(f"- **{kind}** `{path}:{line}` [{rule}] {sev}")
        for s, m in fa:
            print(f"  - before ({s}): {m}")
        for s, m in fb:
            print(f"  - after ({s}): {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
