"""`dpmlens check --traces` and the dead-driver facts (issue 20, parts 2 and 3).

The measured sites come from a real pm-graph 4.6 capture (../shared/traces, skipped when
absent); test-fixtures/traces-join/measured_sites.c names its functions, so the mechanism is
shown on a fixture; the real 6.12 tree (skipped when absent) shows the join on real code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from kernel_trees import K612

from dpmlens.core.findings import Severity
from dpmlens.engine import evidence

TOP = Path(__file__).resolve().parents[2]
CAPTURE = TOP.parent / "shared/traces/pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late"
FIXTURE = TOP / "test-fixtures/traces-join/measured_sites.c"
LINUX = K612


def _capture() -> Path:
    if not CAPTURE.is_dir():
        pytest.skip(f"no pm-graph capture at {CAPTURE} (../shared is not beside the checkout)")
    return CAPTURE


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    r = run_cli(capsys, "check", "--no-cache", "--fail-level", "none", "-f", "json", "--all-costs",
                *args)
    code, out, err = r.code, r.out, r.err
    assert code == 0, err
    return json.loads(out)


def test_sites_on_the_critical_path_warn_and_cheap_ones_stay_low(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, "--traces", str(_capture()), str(FIXTURE))
    by_line = {}
    for f in doc["findings"]:
        by_line.setdefault(f["line"], []).append(f)
    [link_down] = by_line[19]  # msleep(50): 54.6 ms on suspend's critical path
    assert link_down["severity"] == "warning"
    assert "measured 54.6 ms per cycle on the critical path of suspend" in link_down["message"]
    assert link_down["measured"]["on_critical_path_us"] == pytest.approx(54599.0)
    assert link_down["measured"]["phases"] == ["suspend"]
    [vdd_on] = by_line[25]
    assert vdd_on["severity"] == "warning" and vdd_on["measured"]["caller"] == "edp_panel_vdd_on"
    # mdelay(60) in a suspend callback is a warning by the table; measured at 0.3 ms, off
    # the critical path: capped at info
    busy = {f["rule"]: f for f in by_line[31]}
    assert busy["busy-wait-in-pm-callback"]["severity"] == "info"
    assert busy["busy-wait-in-pm-callback"]["measured"]["on_critical_path_calls"] == 0
    # one finding per wait: the busy-wait states its cost, delay-beyond-spec does not repeat
    # it (issue 31)
    assert "delay-beyond-spec" not in busy


def test_without_traces_nothing_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, str(FIXTURE))
    assert not any("measured" in f for f in doc["findings"])
    sev = {f["line"]: f["severity"] for f in doc["findings"] if f["rule"] != "delay-beyond-spec"}
    assert sev[31] == "warning"  # the table's own verdict


def test_sarif_carries_the_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "check", "--no-cache", "--fail-level", "none", "-f", "sarif",
                "--traces", str(_capture()), str(FIXTURE))  # fmt: skip
    code, out, err = r.code, r.out, r.err
    assert code == 0, err
    results = json.loads(out)["runs"][0]["results"]
    measured = [r["properties"]["measured"] for r in results if "measured" in r["properties"]]
    assert {m["caller"] for m in measured} == {
        "intel_dp_link_down",
        "edp_panel_vdd_on",
        "ehci_bus_suspend",
    }


def test_a_capture_that_cannot_be_read_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace\n")
    r = run_cli(capsys, "check", "--no-cache", "--fail-level", "none", "-f", "json",
                "--traces", str(bad), str(FIXTURE))  # fmt: skip
    code, out, err = r.code, r.out, r.err
    assert code == 0
    assert f"--traces: {bad}" in err and "Traceback" not in err
    assert json.loads(out)["findings"]  # the check itself still ran


def test_real_tree_sites_join_and_stay_low(capsys: pytest.CaptureFixture[str]) -> None:
    capture = _capture()
    if not LINUX.is_dir():
        pytest.skip(f"no kernel tree at {LINUX} (apt-get install linux-source-6.12)")
    doc = _json(capsys, "--traces", str(capture), str(LINUX / "drivers/usb/core/hub.c"),
                str(LINUX / "drivers/usb/host/ehci-hub.c"))  # fmt: skip
    joined = [f for f in doc["findings"] if "measured" in f]
    # hub_port_reset's msleep(50), usb_port_resume's msleep(40), ehci_bus_resume's msleep(40):
    # measured in resume, none on the critical path of this capture
    assert {f["measured"]["caller"] for f in joined} >= {"hub_port_reset", "ehci_bus_resume"}
    assert all(Severity.parse(f["severity"]) <= Severity.INFO for f in joined)


def test_dead_driver_findings_are_hints_and_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not LINUX.is_dir():
        pytest.skip(f"no kernel tree at {LINUX} (apt-get install linux-source-6.12)")
    path = str(LINUX / "drivers/usb/host/isp1362-hcd.c")
    doc = _json(capsys, "--cache-dir", str(tmp_path), path)
    busy = [f for f in doc["findings"] if f["rule"] == "busy-wait-in-pm-callback"]
    assert busy and all(f["severity"] == "hint" for f in busy)
    assert all(f["dead"] == "COMPILE_TEST only" for f in doc["findings"])
    assert all(f["message"].endswith("[dead driver: COMPILE_TEST only]") for f in busy)
    kept = _json(capsys, "--include-dead", path)
    # without the Kconfig fact: the table's verdict (35 ms once per system resume: quiet)
    assert [f["severity"] for f in kept["findings"] if f["rule"] == "busy-wait-in-pm-callback"] == [
        "hint"
    ]
    assert "dead driver" not in kept["findings"][0]["message"]
    assert not any("dead" in f for f in kept["findings"])


def test_bug_findings_in_dead_drivers_keep_their_severity() -> None:
    from dpmlens.core.findings import Finding, Span
    from dpmlens.rules import severity_policy

    f = Finding("get-sync-without-put-on-error", "PM_GET_SYNC", Severity.WARNING, "x.c",
                Span(1, 1, 1, 2), "msg")  # fmt: skip
    g = severity_policy.dead_driver(f, "depends on BROKEN")
    assert g.severity == Severity.WARNING and g.dead == "depends on BROKEN"
    assert "dead-driver" in g.tags and g.message.endswith("[dead driver: depends on BROKEN]")


def test_files_outside_a_kernel_tree_are_untouched() -> None:
    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import analyze_source

    findings = analyze_source(str(FIXTURE), FIXTURE.read_bytes(), Config())
    marked, n = evidence.mark_dead(findings, None)
    assert n == 0 and marked == findings
