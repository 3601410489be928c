"""rules/tables/severity-policy.yaml: the table the delay rules' severities follow."""

from __future__ import annotations

from dpmlens.core.findings import Finding, Measured, Severity, Span
from dpmlens.rules import severity_policy as sp
from dpmlens.rules.loader import load_rules

KINDS = {"runtime", "system", "hibernate", "none"}


def test_the_table_names_real_rules_and_kinds() -> None:
    p = sp.policy()
    ids = {r.id for r in load_rules()}
    assert set(p.rows) <= ids and p.latency_rules <= ids
    for rule, rows in p.rows.items():
        assert rows and {r.phase for r in rows} <= KINDS, rule
        # every kind has a row that applies from size 0: no delay falls through the table
        assert {r.phase for r in rows if r.min == 0} == KINDS, rule


def _finding(rule: str, phase: str | None, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(rule, "T", severity, "x.c", Span(1, 1, 1, 2), "msg", phase=phase)


def test_caps_by_phase_kind_and_size() -> None:
    busy = sp.DelayFacts("mdelay", 20, "x.c")
    long_busy = sp.DelayFacts("mdelay", 60, "x.c")
    small = sp.cap_delay(_finding("busy-wait-in-pm-callback", "resume"), busy)
    assert small.severity == Severity.HINT and sp.is_quiet(small)  # left out of CI output
    assert sp.cap_delay(_finding("busy-wait-in-pm-callback", "resume"), long_busy).severity == (
        Severity.WARNING
    )
    assert sp.cap_delay(_finding("busy-wait-in-pm-callback", "freeze"), busy).severity == (
        Severity.HINT
    )
    assert not sp.is_quiet(
        sp.cap_delay(_finding("busy-wait-in-pm-callback", "resume"), long_busy)
    )
    runtime = sp.DelayFacts("mdelay", 20, "x.c", runtime="runtime_resume callback f()")
    f = sp.cap_delay(_finding("busy-wait-in-pm-callback", "resume"), runtime)
    assert f.severity == Severity.WARNING and "runtime_resume callback f()" in f.message
    # a cap never raises: a checker's hint stays a hint
    hint = _finding("msleep-under-20ms", "runtime_resume", Severity.HINT)
    assert sp.cap_delay(hint, sp.DelayFacts("msleep", 1, "x.c")).severity == Severity.HINT


def test_the_lowered_message_states_the_cost() -> None:
    f = sp.cap_delay(_finding("msleep-under-20ms", "suspend"), sp.DelayFacts("msleep", 1, "x.c"))
    assert f.severity == Severity.HINT and sp.is_quiet(f)
    assert f.message.endswith(
        "paid once per system suspend: at most 7 ms more than asked at HZ=250"
    )


def _measured(on_path_us: float) -> Measured:
    return Measured("msleep", "f", 50.0, 1, 1, 54599.0, 54599.0, int(on_path_us > 0),
                    on_path_us, ("suspend",), "cap")  # fmt: skip


def test_measured_on_the_critical_path_warns_and_cheap_is_capped() -> None:
    hint = _finding("delay-beyond-spec", "suspend", Severity.HINT)
    hot = sp.measured(hint, _measured(54599.0))
    assert hot.severity == Severity.WARNING and hot.measured is not None
    assert "measured 54.6 ms per cycle on the critical path of suspend" in hot.message
    cold = sp.measured(_finding("busy-wait-in-pm-callback", "suspend"), _measured(0.0))
    assert cold.severity == Severity.INFO and "0 ms on a critical path" in cold.message


def test_error_paths_and_quiet_rules_are_quiet() -> None:
    err = sp.DelayFacts("msleep", 10, "x.c", runtime="runtime_resume callback f()",
                        error_path="returns -EBUSY")  # fmt: skip
    f = sp.cap_delay(_finding("msleep-under-20ms", "resume"), err)
    assert sp.is_quiet(f) and f.message.endswith("only on an error path (returns -EBUSY)")
    assert sp.is_quiet(_finding("async-suspend-not-enabled", None, Severity.HINT))
    assert not sp.is_quiet(_finding("get-sync-without-put-on-error", None))


def test_a_measured_critical_cost_is_never_quiet() -> None:
    small = sp.DelayFacts("msleep", 1, "x.c")
    quiet = sp.cap_delay(_finding("msleep-under-20ms", "suspend"), small)
    assert sp.is_quiet(quiet)
    raised = sp.measured(quiet, _measured(54599.0))
    assert raised.severity == Severity.WARNING and not sp.is_quiet(raised)


def test_a_cosmetic_finding_stays_shown_in_a_legacy_driver_and_quiet_in_a_dead_one() -> None:
    """r9: the PM ops macro conversion needs a compile test, not the hardware; 6.12 made it
    in SA1100 drivers (ucb1x00-core.c, ipaq-micro-ts.c). A dead driver cannot be built."""
    macro = _finding("deprecated-pm-ops-macro", None, Severity.INFO)
    legacy = sp.dead_driver(macro, "legacy hardware: an SA1100 board", legacy=True)
    assert legacy.severity == Severity.INFO and not sp.is_quiet(legacy)
    assert "[legacy hardware: an SA1100 board]" in legacy.message
    dead = sp.dead_driver(macro, "depends on BROKEN")
    assert sp.is_quiet(dead)
    # a latency finding in a legacy driver is still capped
    busy = sp.dead_driver(_finding("busy-wait-in-pm-callback", "resume"), "x", legacy=True)
    assert busy.severity < Severity.WARNING


def test_hibernation_only_delays_are_priced_per_resume_from_hibernation() -> None:
    facts = sp.DelayFacts("mdelay", 35, "x.c", hibernation_only="s.event != PM_EVENT_SUSPEND")
    found = sp.cap_delay(_finding("busy-wait-in-pm-callback", "resume"), facts)
    assert "only when it resumes from hibernation" in found.message
    assert sp.phase_kind("resume", facts) == "hibernate"
