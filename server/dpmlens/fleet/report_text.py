"""Report stage, table printer: the report document as text a terminal shows."""

from __future__ import annotations

from typing import Any, TextIO


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.1f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _table(out: TextIO, head: list[str], rows: list[list[str]]) -> None:
    w = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    out.write("  ".join(h.ljust(x) for h, x in zip(head, w, strict=True)).rstrip() + "\n")
    for r in rows:
        out.write("  ".join(c.ljust(x) for c, x in zip(r, w, strict=True)).rstrip() + "\n")
    out.write("\n")


def _not_tested(out: TextIO, reg: dict[str, Any], by: str) -> None:
    """Every callback the tests left out and why, and the groups in no pair."""
    for g in reg["not_compared"]:
        out.write(f"not compared: {by} {g['group']}: {g['reason']}\n")
    skipped = reg["not_tested"]
    out.write(f"not tested ({len(skipped)} callbacks of the pairs)\n")
    if not skipped:
        out.write("none\n\n")
        return
    _table(out, ["driver", "device", "phase", "from", "to", "runs", "why"],
           [[s["driver"], s["device"], s["phase"], s["before"], s["after"],
             f"{s['n_before']} -> {s['n_after']}", s["reason"]] for s in skipped])


def write(doc: dict[str, Any], out: TextIO, top: int = 25) -> None:
    by = doc["by"]
    out.write(f"fleet report by {by}: {', '.join(doc['groups']) or '(empty store)'}\n\n")
    out.write("health\n")
    _table(out, [by, "cycles", "hosts", "pass", "fail", "suspend p50/p95 ms",
                 "resume p50/p95 ms", "status"],
           [[h["grp"], str(h["cycles"]), str(h["hosts"]), _pct(h["pass_rate"]),
             _pct(h["fail_rate"]), f"{_ms(h['suspend_p50_us'])}/{_ms(h['suspend_p95_us'])}",
             f"{_ms(h['resume_p50_us'])}/{_ms(h['resume_p95_us'])}", h["status"]]
            for h in doc["health"]])
    reg = doc["regressions"]
    methods = ", ".join(f"{n} {m}" for m, n in reg["methods"].items()) or "none"
    out.write(f"regressions ({reg['tested']} callbacks tested per pair in total, "
              f"FDR {reg['alpha']}, min effect {reg['min_effect_ms']} ms, at least "
              f"{reg['min_runs']} runs a side; U tests: {methods})\n")
    if reg["changes"]:
        _table(out, ["change", "driver", "device", "phase", "from", "to", "median ms",
                     "change ms [95% CI]", "ms/cycle", "fail rate", "p (test)", "q",
                     "changed from", "note"],
               [[c["kind"], c["driver"], c["device"], c["phase"], c["before"], c["after"],
                 f"{_ms(c['median_before_us'])} -> {_ms(c['median_after_us'])}",
                 f"{c['change_ms']:+.2f}" + (f" [{c['ci_ms'][0]:+.2f}, {c['ci_ms'][1]:+.2f}]"
                                              if c["ci_ms"] else ""),
                 f"{c['effect_ms_per_cycle']:+.2f}",
                 f"{_pct(c['fail_rate_before'])} -> {_pct(c['fail_rate_after'])}",
                 f"{c['p']:.2g} ({c['method']})", f"{c['q']:.2g}", c["changed_from"] or "",
                 "; ".join(n for n in (c.get("wait_note"), c["phase_note"]) if n)]
                for c in reg["changes"]])
    else:
        out.write("none\n\n")
    _not_tested(out, reg, by)
    out.write(f"slowest drivers per phase (p95; top {top})\n")
    drivers = sorted(doc["drivers"], key=lambda r: -(r["p95_us"] or 0))[:top]
    _table(out, [by, "driver", "phase", "runs", "p50 ms", "p95 ms", "p99 ms", "fail",
                 "on crit. path", "crit. ms/run"],
           [[r["grp"], r["driver"], r["phase"], str(r["n"]), _ms(r["p50_us"]),
             _ms(r["p95_us"]), _ms(r["p99_us"]), _pct(r["failure_rate"]),
             _pct(r["critical_share"]), _ms(r["critical_us_per_run"])] for r in drivers])
    out.write("worst device per phase (cycles it was the slowest)\n")
    _table(out, ["phase", by, "device", "cycles"],
           [[w["phase"], w["grp"], w["device"], str(w["cycles"])]
            for w in doc["worst_devices"][:top]])
    if doc["issues"]:
        out.write("dmesg issues (lines alike but for numbers)\n")
        _table(out, ["captures", "hosts", "lines", "pattern"],
               [[str(i["captures"]), str(i["hosts"]), str(i["lines"]), i["pattern"][:90]]
                for i in doc["issues"]])
