"""Runtime PM statistics onto the source: each device's runtime_suspend/runtime_resume
callback (the system-sleep mapping of traces.mapping, with the runtime members), and runtime
PM errors onto the static rule that explains them.

The rpm_* events name only the device, so the driver comes from the capture's
device_pm_callback events (rpm_stats._drivers); without one there is nothing to look up and
the reason says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dpmlens.traces.analysis.aggregate import CallbackStats
from dpmlens.traces.analysis.rpm_stats import DeviceRpm, RpmReport
from dpmlens.traces.source.mapping import Mapping, SourceIndex, map_callback

MEMBERS = ("runtime_suspend", "runtime_resume")
NO_DRIVER = ("the rpm_* events name only the device, and no device_pm_callback event of the "
             "captures names its driver (record power:device_pm_callback_start too)")


@dataclass(frozen=True)
class RuleLink:
    """A static finding that explains a measured runtime PM error."""

    rule: str
    path: str
    line: int
    function: str | None
    phase: str | None
    message: str


def map_runtime(report: RpmReport, index: SourceIndex) -> dict[tuple[str, str], Mapping]:
    """(device, member) -> Mapping, for runtime_suspend and runtime_resume."""
    out: dict[tuple[str, str], Mapping] = {}
    for d in report.devices:
        for member in MEMBERS:
            out[(d.device, member)] = map_member(d, member, index)
    return out


def map_member(d: DeviceRpm, member: str, index: SourceIndex) -> Mapping:
    if not d.driver:
        return Mapping(None, NO_DRIVER)
    # the callback the PM core runs (RPM_GET_CALLBACK: pm domain, type, class, bus, then the
    # driver's .pm) is not in the trace: the layer is unknown
    probe = CallbackStats(d.driver, d.device, "", member, "", 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                          0, 0)
    return map_callback(probe, index)


def rule_links(report: RpmReport, index: SourceIndex) -> dict[tuple[str, str, int], RuleLink]:
    """(device, call, code) -> the static finding of the rule the error points at, found by
    running that rule on the files of the device's driver (the callback the error happened in
    first: a -EACCES inside foo's suspend_late is the finding in foo's suspend_late)."""
    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.model.build import build_model
    from dpmlens.rules.loader import load_rules

    wanted = [(d, e) for d in report.devices for e in d.errors if e.rule and d.driver]
    if not wanted:
        return {}
    rules = {r.id: r for r in load_rules()}
    findings: dict[tuple[str, str], list] = {}
    out: dict[tuple[str, str, int], RuleLink] = {}
    for d, e in wanted:
        rule = rules.get(e.rule or "")
        if rule is None:
            continue
        paths = sorted({m.path for m, _ in index.drivers.get(d.driver, [])})
        hits = []
        for path in paths:
            key = (path, rule.id)
            if key not in findings:
                try:
                    model = build_model(path, Path(path).read_bytes())
                    findings[key] = analyze_model(model, Config(), rules=[rule])
                except Exception:  # an unreadable file: no link, the error is still reported
                    findings[key] = []
            hits.extend(findings[key])
        if not hits:
            continue
        phases = set(e.callbacks)
        best = next((f for f in hits if f.phase in phases), hits[0])
        out[(d.device, e.call, e.code)] = RuleLink(rule.id, best.path, best.line, best.function,
                                                   best.phase, best.message)
    return out


__all__ = ["MEMBERS", "NO_DRIVER", "RuleLink", "map_member", "map_runtime", "rule_links"]
