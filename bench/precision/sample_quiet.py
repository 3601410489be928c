"""Draw a blind sample of the quiet hints (issue 31), stratified by rule and by why each is quiet.

usage: sample_quiet.py SEED OUT_DIR ALL_6.12 DEFAULT_6.12 ALL_6.1 DEFAULT_6.1 [N]

ALL_*: `dpmlens check --no-config --no-cache --fail-level none --all-costs -f json drivers`
run inside each tree; DEFAULT_*: the same without --all-costs. A quiet hint is a finding of
ALL that DEFAULT leaves out. N (default 20) per tree. Strata are (rule, reason); each stratum
gets one item (strata drawn in a seeded order while N lasts), the rest go by stratum size
(largest remainder). 6.1 items whose (path, rule, function) is also a 6.12 quiet hint are left
out, so each distinct finding is judged once. Writes quiet-<tree>.md (the packet the judges
read: location, rule, message, chain) and quiet.json (the sample, with strata).
"""
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

_REASONS = (  # message text -> why the finding is quiet (the first that matches)
    ("[dead driver:", "dead driver"),
    ("[legacy hardware:", "legacy hardware"),
    ("compiled only for", "legacy hardware (#ifdef)"),
    ("only on an error path", "error path"),
    ("netdev does not take", "netdev policy"),
    ("the wait is that op's", "shared subsystem op"),
    ("paid once per system", "once per system sleep, small"),
    ("paid once per hibernation", "hibernation only"),
)


def reason(f):
    for text, why in _REASONS:
        if text in f["message"]:
            return why
    if f["rule"] in ("delay-beyond-spec", "msleep-under-20ms"):
        return "the rule's hints are quiet (severity policy)"
    if f["rule"] in ("async-suspend-not-enabled", "asymmetric-pm-callbacks"):
        return "quiet rule"
    return "the checker's own hint (poll, first time only, ...)"


def key(f):
    return (f["path"], f["rule"], f["function"], f["line"], f["message"])


def quiet(all_path, default_path):
    shown = Counter(key(f) for f in json.loads(Path(default_path).read_text())["findings"])
    out = []
    for f in json.loads(Path(all_path).read_text())["findings"]:
        if shown[key(f)]:
            shown[key(f)] -= 1
        else:
            f["reason"] = reason(f)
            out.append(f)
    return out


def draw(rng, fs, n):
    strata = defaultdict(list)
    for f in sorted(fs, key=lambda f: (f["path"], f["line"], f["rule"])):
        strata[(f["rule"], f["reason"])].append(f)
    order = sorted(strata)
    rng.shuffle(order)
    take = {s: 0 for s in order}
    for s in order[:n]:
        take[s] = 1
    left = n - sum(take.values())
    if left > 0:
        total = sum(len(strata[s]) - take[s] for s in order)
        shares = {s: left * (len(strata[s]) - take[s]) / total for s in order} if total else {}
        for s in order:
            take[s] += int(shares.get(s, 0))
        rest = n - sum(take.values())
        for s in sorted(order, key=lambda s: -(shares.get(s, 0) % 1))[:rest]:
            take[s] += 1
    picked = []
    for s in order:
        picked += rng.sample(strata[s], min(take[s], len(strata[s])))
    return picked, {f"{r} / {w}": len(v) for (r, w), v in sorted(strata.items())}


def packet(tree, fs):
    lines = [f"# Quiet hints, linux-source-{tree}: {len(fs)} items", ""]
    for i, f in enumerate(fs, 1):
        lines += [f"## {i}. linux-source-{tree}/{f['path']}:{f['line']}",
                  f"rule: {f['rule']}  function: {f['function']}  phase: {f.get('phase')}",
                  f"message: {f['message']}"]
        for s in f.get("chain") or []:
            lines.append(f"  chain: {s['path']}:{s['line']} {s['function']}: {s['note']}")
        lines.append("")
    return "\n".join(lines)


def main():
    seed, out = int(sys.argv[1]), sys.argv[2]
    a612, d612, a61, d61 = sys.argv[3:7]
    n = int(sys.argv[7]) if len(sys.argv) > 7 else 20
    rng = random.Random(seed)
    q612 = quiet(a612, d612)
    seen = {(f["path"], f["rule"], f["function"]) for f in q612}
    q61 = [f for f in quiet(a61, d61) if (f["path"], f["rule"], f["function"]) not in seen]
    sample = {}
    for tree, fs in (("6.12", q612), ("6.1", q61)):
        picked, strata = draw(rng, fs, n)
        for f in picked:
            f["tree"] = tree
        sample[tree] = {"population": len(fs), "strata": strata, "items": picked}
        with open(f"{out}/quiet-{tree}.md", "w") as fh:
            fh.write(packet(tree, picked))
    with open(f"{out}/quiet.json", "w") as fh:
        json.dump({"seed": seed, **sample}, fh, indent=1)
    for tree in sample:
        print(tree, sample[tree]["population"], "quiet;", len(sample[tree]["items"]), "drawn")
        for s, k in sample[tree]["strata"].items():
            print(f"   {k:4d}  {s}")


if __name__ == "__main__":
    main()
