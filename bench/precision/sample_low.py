"""Round 3: info/hint only, stratified by rule (up to N per rule), from 6.12 and 6.1-only.
usage: sample_low.py SEED OUT_DIR JSON_6.12 JSON_6.1 N"""
import json, random, sys
from collections import defaultdict
seed, out, j612, j61, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def load(p, root):
    fs = json.load(open(p))["findings"]
    for f in fs:
        f["rel"] = f["path"].split(root, 1)[1].lstrip("/")
    return fs
a = load(j612, "linux-source-6.12"); b = load(j61, "linux-source-6.1")
key = lambda f: (f["rel"], f["rule"], f["function"])  # noqa: E731
in612 = {key(f) for f in a}
rng = random.Random(seed)
low = defaultdict(list)
for tree, fs in (("6.12", a), ("6.1", [f for f in b if key(f) not in in612])):
    for f in fs:
        if f["severity"] in ("info", "hint"):
            f["tree"] = tree
            low[f["rule"]].append(f)
picked = []
for rule in sorted(low):
    fs = sorted(low[rule], key=lambda f: (f["tree"], f["rel"], f["line"]))
    picked += rng.sample(fs, min(n, len(fs)))
def packet(f, i):
    lines = [f"## {i}. [{f['severity']}] linux-source-{f['tree']}/{f['rel']}:{f['line']}",
             f"function: {f['function']}  phase: {f.get('phase')}", f"message: {f['message']}"]
    for s in f.get("chain") or []:
        lines.append(f"  chain: {s['path'].split('linux-source-', 1)[-1]}:{s['line']} {s['function']}: {s['note']}")
    return "\n".join(lines)
half = (len(picked) + 1) // 2
for k, part in enumerate((picked[:half], picked[half:])):
    with open(f"{out}/low-{k}.md", "w") as fh:
        fh.write("\n\n".join(packet(f, k * half + i + 1) for i, f in enumerate(part)) + "\n")
json.dump(picked, open(f"{out}/low.json", "w"), indent=1)
print(len(picked), {r: len(v) for r, v in low.items()})
