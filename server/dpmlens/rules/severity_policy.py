"""How serious a latency finding is, from what it costs and where it runs (issue 20).

The table is data: `rules/tables/severity-policy.yaml` (rendered in docs/rules.md). Three
inputs lower or raise a finding the checker already judged on its own:

- `cap_delay(finding, facts)`: the delay rules' cap by phase kind x size (rules/delays.py
  calls it once, in `_report`), with the cost stated where the cap lowers the finding;
- `dead_driver(finding, reason)`: a driver no real build enables (kbuild/dead.py);
- `measured(finding, measurement)`: a delay site a capture measured (`--traces`);
- `fleet(finding, cost)`: a delay site or callback a fleet store measured (`--fleet`).

A row's severity may be `quiet`: the finding is a hint tagged QUIET_TAG, which CI faces leave
out unless asked (`dpmlens check --all-costs`): a true cost that is not worth a patch is
noise in a review (issue 20's blind round: such hints and infos were rejected as not useful).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from dpmlens.core.findings import Finding, FleetCost, Measured, Severity
from dpmlens.model.phases import PHASES
from dpmlens.rules.loader import load_table
from dpmlens.rules.sleep_slack import extra_jiffies, msleep_worst_ms

_HZ = 250  # the HZ the msleep sizes assume (kernel/Kconfig.hz default, as the rule's match.hz)
DEAD_TAG = "dead-driver"
LEGACY_TAG = "legacy-hardware"
MEASURED_TAG = "measured"
FLEET_TAG = "fleet"
QUIET_TAG = "quiet"  # below what a review acts on: listed only with --all-costs
QUIET = "quiet"


@dataclass(frozen=True)
class Row:
    phase: str
    min: float
    severity: Severity
    quiet: bool = False  # `severity: quiet`: a hint left out unless asked
    quiet_hints: bool = False  # the checker's own hints (no spec known, an inventory) quiet
    repeated: bool = False  # only for a delay a counted loop pays once per iteration


@dataclass(frozen=True)
class Subsystem:
    """A subsystem's documented patch policy for latency findings paid in `phases`."""

    name: str
    paths: tuple[str, ...]  # directory prefixes ("drivers/net/")
    excepted: tuple[str, ...]  # prefixes under them that another tree maintains
    rules: frozenset[str]
    phases: frozenset[str]  # phase kinds: runtime, system, hibernate, none
    severity: Severity
    quiet: bool
    doc: str
    why: str

    def covers(self, path: str) -> bool:
        where = "/" + path.replace("\\", "/")
        return any("/" + p in where for p in self.paths) and not any(
            "/" + p in where for p in self.excepted
        )


@dataclass(frozen=True)
class Policy:
    sizes: dict[str, str]  # rule -> what `min` measures
    rows: dict[str, tuple[Row, ...]]
    shared_op: Severity
    shared_op_quiet: bool
    latency_rules: frozenset[str]
    dead_driver: Severity
    dead_quiet: bool
    legacy: Severity  # cap of latency findings on hardware nobody can test
    legacy_quiet: bool
    quiet_rules: frozenset[str]  # rules whose hints are quiet
    legacy_symbols: dict[str, str]  # Kconfig symbol -> the hardware it names
    critical_ms: float
    critical: Severity
    cheap: Severity
    subsystems: tuple[Subsystem, ...] = ()
    cosmetic_rules: frozenset[str] = frozenset()  # capped like latency_rules when dead/legacy
    lifetime_rules: frozenset[str] = frozenset()  # probe/remove balance: capped the same way


@lru_cache(maxsize=1)
def policy() -> Policy:
    return _parse(load_table("severity-policy"))


def _severity(value: object) -> tuple[Severity, bool]:
    """A table severity: a Severity, or `quiet` (a hint left out unless asked)."""
    if str(value) == QUIET:
        return Severity.HINT, True
    return Severity.parse(str(value)), False


def is_quiet(finding: Finding) -> bool:
    """Left out of CI output unless asked: a cost the policy deems not worth a review."""
    return QUIET_TAG in finding.tags or (
        finding.rule in policy().quiet_rules and finding.severity <= Severity.HINT
    )


def quiet(finding: Finding) -> Finding:
    """The finding as a quiet hint (a rule's own judgement that it is not worth a review)."""
    return _quiet(finding)


def _quiet(finding: Finding) -> Finding:
    if QUIET_TAG in finding.tags:
        return finding
    return replace(finding, severity=min(finding.severity, Severity.HINT),
                   tags=(*finding.tags, QUIET_TAG))  # fmt: skip


def _parse(data: dict[str, Any]) -> Policy:
    sizes, rows = {}, {}
    for rule, spec in (data.get("rules") or {}).items():
        sizes[str(rule)] = str(spec.get("size", "ms"))
        rows[str(rule)] = tuple(
            Row(str(r["phase"]), float(r.get("min", 0)), *_severity(r["severity"]),
                bool(r.get("quiet_hints", False)), bool(r.get("repeated", False)))
            for r in spec.get("rows") or ()
        )
    measured = data.get("measured") or {}
    legacy = data.get("legacy_hardware") or {}
    return Policy(
        sizes=sizes,
        rows=rows,
        shared_op=_severity(data.get("shared_op", "info"))[0],
        shared_op_quiet=_severity(data.get("shared_op", "info"))[1],
        latency_rules=frozenset(str(r) for r in data.get("latency_rules") or ()),
        dead_driver=_severity(data.get("dead_driver", "hint"))[0],
        dead_quiet=_severity(data.get("dead_driver", "hint"))[1],
        legacy=_severity(legacy.get("severity", "info"))[0],
        legacy_quiet=_severity(legacy.get("severity", "info"))[1],
        quiet_rules=frozenset(str(r) for r in data.get("quiet_rules") or ()),
        legacy_symbols={str(k): str(v) for k, v in (legacy.get("symbols") or {}).items()},
        critical_ms=float(measured.get("critical_ms", 1.0)),
        critical=Severity.parse(str(measured.get("critical", "warning"))),
        cheap=Severity.parse(str(measured.get("cheap", "info"))),
        subsystems=tuple(_subsystem(s) for s in data.get("subsystem_policy") or ()),
        cosmetic_rules=frozenset(str(r) for r in data.get("cosmetic_rules") or ()),
        lifetime_rules=frozenset(str(r) for r in data.get("lifetime_rules") or ()),
    )


def _subsystem(row: dict[str, Any]) -> Subsystem:
    severity, quiet = _severity(row.get("severity", "info"))
    return Subsystem(
        name=str(row["name"]),
        paths=tuple(str(p).rstrip("/") + "/" for p in row.get("paths") or ()),
        excepted=tuple(str(p).rstrip("/") + "/" for p in row.get("except") or ()),
        rules=frozenset(str(r) for r in row.get("rules") or ()),
        phases=frozenset(str(k) for k in row.get("phases") or ()),
        severity=severity,
        quiet=quiet,
        doc=str(row.get("doc", "")),
        why=str(row.get("why", "")),
    )


def subsystem_for(rule: str, kind: str, path: str) -> Subsystem | None:
    """The subsystem policy row that caps `rule`'s finding paid in phase kind `kind`."""
    return next(
        (s for s in policy().subsystems
         if rule in s.rules and kind in s.phases and s.covers(path)),
        None,
    )  # fmt: skip


@dataclass(frozen=True)
class DelayFacts:
    """What the delay checker knows about one reported delay."""

    callee: str  # msleep, mdelay, ...
    ms: float  # what it asks, in ms
    path: str  # the file it is in (its kernel version decides msleep's extra jiffy)
    runtime: str | None = None  # "runtime_resume callback foo_runtime_resume()" reaching it
    shared_op: str | None = None  # "foo_set_par() is also struct fb_ops .fb_set_par"
    configs: tuple[str, ...] = ()  # CONFIG_ symbols an #ifdef around the delay's path needs
    error_path: str | None = None  # "returns -EBUSY": the delay runs only on a failure
    repeated: bool = False  # a counted loop pays it once per iteration (a loop over ports)
    # the path runs only when the callback resumes from hibernation's freeze (thaw/restore):
    # the condition that rules out a system suspend, as written
    hibernation_only: str | None = None


def phase_kind(phase: str | None, facts: DelayFacts) -> str:
    if facts.runtime is not None:
        return "runtime"
    if facts.hibernation_only is not None:
        return "hibernate"
    info = PHASES.get(phase or "")
    if phase is None:
        return "none"
    return info.kind if info is not None else "system"


def size(rule: str, facts: DelayFacts) -> float:
    if policy().sizes.get(rule) == "excess_ms" and facts.callee == "msleep" and facts.ms > 0:
        ms = int(facts.ms)
        return msleep_worst_ms(ms, _HZ, extra_jiffies(facts.path)) - ms
    return facts.ms


def cap_for(rule: str, phase: str | None, facts: DelayFacts) -> Severity | None:
    """The table's cap for the rule's finding, None when no row applies."""
    row = row_for(rule, phase, facts)
    return row.severity if row is not None else None


def row_for(rule: str, phase: str | None, facts: DelayFacts) -> Row | None:
    """The table's row for the rule's finding, None when none applies."""
    kind = phase_kind(phase, facts)
    amount = size(rule, facts)
    for row in policy().rows.get(rule, ()):
        if row.phase == kind and amount >= row.min and (facts.repeated or not row.repeated):
            return row
    return None


def _when(phase: str | None, facts: DelayFacts | None = None) -> str:
    info = PHASES.get(phase or "")
    if facts is not None and facts.hibernation_only is not None:
        return "resume from hibernation"
    if info is not None and info.kind == "hibernate":
        return "hibernation"
    return "system suspend" if info is None or info.direction == "down" else "system resume"


def _cost(rule: str, phase: str | None, facts: DelayFacts) -> str:
    if rule == "msleep-under-20ms":
        return f"at most {size(rule, facts):g} ms more than asked at HZ={_HZ}"
    each = " per iteration of its loop" if facts.repeated else ""
    if rule == "busy-wait-in-pm-callback":
        return f"{facts.ms:g} ms of one CPU{each}"
    return f"{facts.ms:g} ms{each}"


def cap_delay(finding: Finding, facts: DelayFacts) -> Finding:
    """`finding` (of a delay rule) under the table's cap; the cost said where it lowers it,
    and where a runtime callback, not the finding's phase, is what makes it repeat."""
    rule, phase = finding.rule, finding.phase
    severity = finding.severity
    notes: list[str] = []
    row = row_for(rule, phase, facts)
    cap = row.severity if row is not None else None
    quiet = row is not None and (
        row.quiet or (row.quiet_hints and finding.severity <= Severity.HINT)
    )
    if facts.hibernation_only is not None:
        notes.append(
            f"only when it resumes from hibernation (thaw/restore): `{facts.hibernation_only}`"
            " is false after a system suspend, whose suspend callback stored PMSG_SUSPEND"
        )
    if facts.runtime is not None and not (
        PHASES.get(phase or "") and PHASES[phase or ""].kind == "runtime"
    ):
        notes.append(f"also paid on every runtime transition: the {facts.runtime} reaches it")
    if cap is not None and severity > cap:
        severity = cap
        if phase_kind(phase, facts) in ("system", "hibernate"):
            notes.append(f"paid once per {_when(phase, facts)}: {_cost(rule, phase, facts)}")
    sub = subsystem_for(rule, phase_kind(phase, facts), facts.path)
    if sub is not None and (severity > sub.severity or (sub.quiet and not quiet)):
        severity = min(severity, sub.severity)
        quiet = quiet or sub.quiet
        notes.append(f"{sub.why} ({sub.doc})")
    legacy = next((c for c in facts.configs if c in policy().legacy_symbols), None)
    if legacy is not None and severity > policy().legacy:
        severity = policy().legacy
        quiet = quiet or policy().legacy_quiet
        notes.append(
            f"compiled only for {policy().legacy_symbols[legacy]} (#ifdef CONFIG_{legacy}):"
            " hardware few can test"
        )
    if facts.error_path is not None:
        severity, quiet = min(severity, Severity.HINT), True
        notes.append(f"only on an error path ({facts.error_path})")
    if facts.shared_op is not None and severity > policy().shared_op:
        severity = policy().shared_op
        quiet = quiet or policy().shared_op_quiet
        notes.append(f"{facts.shared_op}: the wait is that op's, which the callback reaches")
    if severity == finding.severity and not notes and not quiet:
        return finding
    message = finding.message + "".join(f"; {n}" for n in notes)
    found = replace(finding, severity=severity, message=message)
    return _quiet(found) if quiet else found


def dead_driver(finding: Finding, reason: str, legacy: bool = False) -> Finding:
    """A finding in a driver no real build enables (`legacy`: one only built for hardware
    nobody can test): a latency or balance finding is capped (a cosmetic one only when dead),
    any finding names the reason
    (message suffix, `dead` field, tag)."""
    severity = finding.severity
    p = policy()
    # a cosmetic change (the PM ops macros) needs a compile test, not the hardware: legacy
    # drivers take it (6.12 converted ucb1x00-core.c and ipaq-micro-ts.c, SA1100 boards)
    latency = (
        finding.rule in p.latency_rules
        or (finding.rule in p.cosmetic_rules and not legacy)
        or finding.rule in p.lifetime_rules
    )
    if latency:
        severity = min(severity, p.legacy if legacy else p.dead_driver)
    found = replace(
        finding,
        severity=severity,
        message=f"{finding.message} [{reason if legacy else 'dead driver: ' + reason}]",
        dead=reason,
        tags=(*finding.tags, LEGACY_TAG if legacy else DEAD_TAG),
    )
    return _quiet(found) if latency and (p.legacy_quiet if legacy else p.dead_quiet) else found


def measured(finding: Finding, m: Measured) -> Finding:
    """A finding at a delay site a capture measured: on a phase's critical path and costly,
    a warning; measured off the path or cheap, capped low. The measurement is stated."""
    p = policy()
    per_cycle_ms = m.on_critical_path_us / 1000 / max(m.cycles, 1)
    if per_cycle_ms >= p.critical_ms:
        severity = max(finding.severity, p.critical)
        # measured on a critical path: worth a review whatever the table says
        finding = replace(finding, tags=tuple(t for t in finding.tags if t != QUIET_TAG))
        where = (
            f"measured {per_cycle_ms:.3g} ms per cycle on the critical path of"
            f" {', '.join(m.phases) or 'the phase'} ({m.calls} call{'s' if m.calls != 1 else ''}"
            f" in {m.cycles} cycle{'s' if m.cycles != 1 else ''})"
        )
    else:
        severity = min(finding.severity, p.cheap)
        total = m.measured_us / 1000 / max(m.cycles, 1)
        where = f"measured {total:.3g} ms per cycle, {per_cycle_ms:.3g} ms on a critical path"
    tags = finding.tags if MEASURED_TAG in finding.tags else (*finding.tags, MEASURED_TAG)
    return replace(
        finding, severity=severity, message=f"{finding.message}; {where}", measured=m, tags=tags
    )


def fleet(finding: Finding, cost: FleetCost, summary: str, lower: bool = True) -> Finding:
    """A finding at a delay site (or in a callback) a fleet store measured: its p50 per cycle
    on its phase's critical path at least `critical_ms`, a warning (and never quiet); less,
    capped at `cheap` when `lower` (a delay site: the cost is that call's own; a callback's
    time is not all the finding's, so it only raises). `summary`: the figures, in words."""
    p = policy()
    path_ms = cost.critical_path_p50_us / 1000
    severity = finding.severity
    if path_ms >= p.critical_ms:
        severity = max(severity, p.critical)
        finding = replace(finding, tags=tuple(t for t in finding.tags if t != QUIET_TAG))
        where = (f"fleet: {cost.what} p50 {path_ms:.3g} ms per cycle on the critical path of"
                 f" {cost.phase or 'its phase'} ({summary})")
    else:
        if lower:
            severity = min(severity, p.cheap)
        where = f"fleet: {cost.what} p50 {path_ms:.3g} ms per cycle on a critical path ({summary})"
    tags = finding.tags if FLEET_TAG in finding.tags else (*finding.tags, FLEET_TAG)
    return replace(finding, severity=severity, message=f"{finding.message}; {where}",
                   fleet=cost, tags=tags)


_SIZE_TEXT = {
    "excess_ms": "oversleep at HZ=250",
    "ms": "delay",
}
_PAID_TEXT = {"runtime": "runtime PM", "system": "system sleep", "hibernate": "hibernation",
              "none": "no callback"}  # fmt: skip
_KIND_TEXT = {
    "runtime": "runtime PM: every I/O, stream start",
    "system": "system sleep: once per cycle",
    "hibernate": "hibernation only",
    "none": "no callback of the file",
}


def table_markdown() -> list[str]:
    """The policy as docs/rules.md shows it (rules/docgen.py)."""
    p = policy()
    out = [
        "## Severity policy of the latency rules (rules/tables/severity-policy.yaml)",
        "",
        "The checkers first judge a delay on its own (a polling loop's wait, slack swamped by",
        "longer waits, a tuned workaround: hints); this table then caps the severity by who",
        "pays the cost and how large it is. First matching row wins; where it lowers a finding",
        "the message states the cost (`paid once per system resume: 20 ms of one CPU`).",
        "",
        "| rule | phase kind | size | highest severity |",
        "|---|---|---|---|",
    ]
    for rule, rows in p.rows.items():
        size_text = _SIZE_TEXT.get(p.sizes.get(rule, "ms"), p.sizes.get(rule, "ms"))
        for row in rows:
            bound = f">= {row.min:g} ms" if row.min else "any"
            if row.repeated:
                bound += " per iteration of a counted loop"
            shown = "quiet (hint, only with `--all-costs`)" if row.quiet else str(row.severity)
            if row.quiet_hints:
                shown += " (its own hints: quiet)"
            out.append(
                f"| {rule} | {_KIND_TEXT.get(row.phase, row.phase)} | {bound} ({size_text})"
                f" | {shown} |"
            )
    latency = ", ".join(f"`{r}`" for r in sorted(p.latency_rules))
    cosmetic = ", ".join(f"`{r}`" for r in sorted(p.cosmetic_rules)) or "none"
    lifetime = ", ".join(f"`{r}`" for r in sorted(p.lifetime_rules)) or "none"
    legacy = ", ".join(f"`{k}` ({v})" for k, v in sorted(p.legacy_symbols.items()))
    out += [
        "",
        f"- **Shared op**: a delay in a function that a non-PM ops struct of the file also"
        f" names (`.fb_set_par = foo_set_par`), reached from a callback: at most"
        f" **{'quiet' if p.shared_op_quiet else p.shared_op}**.",
        f"- **Dead drivers** (`dpmlens check`, Kconfig and Makefiles of the tree; see"
        f" `kbuild/dead.py`): every symbol that builds the file depends on `BROKEN`, is"
        f" `COMPILE_TEST`-only or sits under `UNUSED_BOARD_FILES`, or the file is in"
        f" `drivers/staging/**/deprecated`, or it is a platform driver matched by name only"
        f" whose devices only such dead board files declare (`kbuild/board_devices.py`):"
        f" latency findings ({latency}) and cosmetic ones"
        f" ({cosmetic}) and probe/remove balance ones ({lifetime}) become"
        f" **{'quiet' if p.dead_quiet else p.dead_driver}**, the others keep their severity;"
        f" all name the reason"
        f" (`[dead driver: ...]`, JSON `dead`). `--include-dead` turns this off.",
        f"- **Legacy hardware** (hardware nobody can test: {legacy}): a driver that only"
        f" these buses or platforms build (Kconfig), or a delay compiled only under"
        f" `#ifdef CONFIG_<one of them>`: latency and balance findings at most"
        f" **{'quiet' if p.legacy_quiet else p.legacy}**, the"
        f" others keep their severity and name it (`[legacy hardware: ...]`, JSON `dead`);"
        f" cosmetic ones need only a compile test, and maintainers of such drivers take them.",
        *(
            f"- **Subsystem policy `{sub.name}`** ({sub.doc}): {sub.why}. In"
            f" {', '.join(f'`{x}`' for x in sub.paths)}"
            + (f" (not {', '.join(f'`{x}`' for x in sub.excepted)})" if sub.excepted else "")
            + f", findings of {', '.join(f'`{r}`' for r in sorted(sub.rules))} paid in"
            f" {' or '.join(_PAID_TEXT.get(k, k) for k in sorted(sub.phases, reverse=True))}"
            f" (once per cycle) are at most"
            f" **{'quiet' if sub.quiet else sub.severity}**; runtime PM keeps the rows above."
            for sub in p.subsystems
        ),
        "- **Error paths**: a delay followed, in its block, by a `return -E...` (a poll"
        " that timed out, a failed step) runs only when something failed: **quiet**.",
        f"- **Quiet rules** ({', '.join(f'`{r}`' for r in sorted(p.quiet_rules)) or 'none'}):"
        f" their hints are quiet (warnings stay).",
        "- **Quiet** findings are hints that `dpmlens check`, `dpmlens cc` and the Action"
        " leave out unless `--all-costs`; the"
        " editor shows them as hints. A measured cost on a critical path (`--traces`) is"
        " never quiet.",
        f"- **Measured** (`dpmlens check --traces CAPTURE`): a delay site measured on a"
        f" phase's critical path for at least {p.critical_ms:g} ms per cycle becomes"
        f" **{p.critical}**, with the measured cost in the message; one measured off the"
        f" critical path or cheaper is capped at **{p.cheap}**. JSON and SARIF carry a"
        f" `measured` object.",
        f"- **Fleet** (`dpmlens check --fleet STORE`, a `dpmlens fleet` store): the same"
        f" with the fleet's figures of the newest kernel that ran the site: its p50 per cycle"
        f" on the critical path at least {p.critical_ms:g} ms, **{p.critical}**; less, capped"
        f" at **{p.cheap}**. A latency finding inside a callback the fleet measured (driver"
        f" -> `.pm` table -> the member for the phase) is raised the same way by the"
        f" callback's figures, never lowered. JSON and SARIF carry a `fleet` object.",
    ]
    return out
