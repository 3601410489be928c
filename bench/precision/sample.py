"""Draw the blind precision sample: warnings per tree, info/hints stratified by rule.

usage: sample.py SEED OUT_DIR JSON_6.12 JSON_6.1
"""
import json
import random
import sys
from collections import defaultdict

seed, out, j612, j61 = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def load(p, root):
    fs = json.load(open(p))["findings"]
    for f in fs:
        f["rel"] = f["path"].split(root, 1)[1].lstrip("/")
    return fs


a = load(j612, "linux-source-6.12")
b = load(j61, "linux-source-6.1")
key = lambda f: (f["rel"], f["rule"], f["function"])  # noqa: E731
in612 = {key(f) for f in a}
b_only = [f for f in b if key(f) not in in612]
rng = random.Random(seed)


def pick(fs, n):
    fs = sorted(fs, key=lambda f: (f["rel"], f["line"], f["rule"]))
    return rng.sample(fs, min(n, len(fs)))


w612 = pick([f for f in a if f["severity"] in ("error", "warning")], 32)
w61 = pick([f for f in b if f["severity"] in ("error", "warning")], 32)
low = defaultdict(list)
for tree, fs in (("6.12", a), ("6.1", b_only)):
    for f in fs:
        if f["severity"] in ("info", "hint"):
            f["tree"] = tree
            low[f["rule"]].append(f)
lows = []
for rule in sorted(low):
    lows += pick(low[rule], 5)
for f in w612:
    f["tree"] = "6.12"
for f in w61:
    f["tree"] = "6.1"


def packet(f, i):
    lines = [f"## {i}. [{f['severity']}] linux-source-{f['tree']}/{f['rel']}:{f['line']}",
             f"function: {f['function']}  phase: {f.get('phase')}",
             f"message: {f['message']}"]
    for s in f.get("chain") or []:
        lines.append(f"  chain: {s['path'].split('linux-source-', 1)[-1]}:{s['line']} "
                     f"{s['function']}: {s['note']}")
    return "\n".join(lines)


groups = {"w612": w612, "w61": w61, "low": lows}
for name, fs in groups.items():
    # split into packets of at most 16 findings, one judge each
    for k in range(0, len(fs), 16):
        part = fs[k:k + 16]
        with open(f"{out}/{name}-{k // 16}.md", "w") as fh:
            fh.write("\n\n".join(packet(f, k + i + 1) for i, f in enumerate(part)) + "\n")
    json.dump(fs, open(f"{out}/{name}.json", "w"), indent=1)
print({n: len(v) for n, v in groups.items()}, "6.1-only:", len(b_only),
      "by rule low:", {r: len(v) for r, v in low.items()})
