"""The JSON contract (version 1) and SARIF 2.1.0."""

from __future__ import annotations

import json
from dataclasses import replace

from report_data import PATH, rules, sample_run

from dpmlens.core.findings import Span
from dpmlens.report import json as json_report
from dpmlens.report import sarif

FINDING_KEYS = {
    "rule", "kernel_type", "severity", "path", "line", "column", "end_line", "end_column",
    "message", "function", "phase", "chain",
}  # fmt: skip


def test_json_contract_shape() -> None:
    doc = json.loads(json_report.render(sample_run(), rules()))
    assert set(doc) == {"version", "findings", "summary"}
    assert doc["version"] == 1
    first = doc["findings"][0]
    assert set(first) == FINDING_KEYS
    assert first == {
        "rule": "wake-setup-in-noirq",
        "kernel_type": "PM_WAKE_SETUP_IN_NOIRQ",
        "severity": "warning",
        "path": PATH,
        "line": 37,
        "column": 3,
        "end_line": 37,
        "end_column": 28,
        "message": "enable_irq_wake() in the suspend_noirq callback acme_suspend_noirq()",
        "function": "acme_arm_wake",
        "phase": "suspend_noirq",
        "chain": [
            {"function": "acme_suspend_noirq", "path": PATH, "line": 70, "column": 2,
             "end_line": 70, "end_column": 25, "note": "suspend_noirq callback"},
            {"function": "acme_suspend_noirq", "path": PATH, "line": 74, "column": 2,
             "end_line": 74, "end_column": 20, "note": "calls acme_arm_wake()"},
            {"function": "acme_arm_wake", "path": PATH, "line": 37, "column": 3,
             "end_line": 37, "end_column": 28, "note": "calls enable_irq_wake()"},
        ],
    }  # fmt: skip
    info = doc["findings"][2]
    assert info["function"] is None and info["phase"] is None and info["chain"] == []


def test_json_summary_counts() -> None:
    summary = json.loads(json_report.render(sample_run(), rules()))["summary"]
    assert summary["files_checked"] == 3
    assert summary["findings"] == 3
    assert summary["by_severity"] == {"error": 0, "warning": 2, "info": 1, "hint": 0}
    assert summary["by_rule"] == {
        "async-suspend-not-enabled": 1,
        "msleep-under-20ms": 1,
        "wake-setup-in-noirq": 1,
    }
    assert summary["errors"] == [
        {"path": "drivers/misc/blob.c", "message": "binary file (contains NUL bytes), skipped"}
    ]


def test_sarif_rules_results_and_flows() -> None:
    doc = json.loads(sarif.render(sample_run(), rules()))
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "dpmlens"
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(ids) and "wake-setup-in-noirq" in ids
    for descriptor in driver["rules"]:
        assert descriptor["helpUri"].startswith("https://")
        assert descriptor["help"]["markdown"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    wake = by_rule["wake-setup-in-noirq"]
    assert driver["rules"][wake["ruleIndex"]]["id"] == "wake-setup-in-noirq"
    assert wake["level"] == "warning"
    loc = wake["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "drivers/misc/acme,als.c"
    assert loc["region"] == {
        "startLine": 37,
        "startColumn": 3,
        "endLine": 37,
        "endColumn": 28,
        "snippet": {"text": "\t\tenable_irq_wake(als->irq);"},
    }
    flow = wake["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["message"]["text"] for s in flow] == [
        "suspend_noirq callback",
        "calls acme_arm_wake()",
        "calls enable_irq_wake()",
    ]
    assert len(wake["partialFingerprints"]["dpmlens/v1"]) == 32
    assert by_rule["async-suspend-not-enabled"]["level"] == "note"
    fix = by_rule["msleep-under-20ms"]["fixes"][0]
    replacement = fix["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "fsleep(2000)"
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "blob.c"
    )


def test_sarif_uri_is_relative_and_percent_encoded() -> None:
    run = sample_run()
    run.findings = [f.__class__(**{**f.__dict__, "path": "./drivers/a b.c"}) for f in run.findings]
    doc = json.loads(sarif.render(run, rules()))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    }
    assert uris == {"drivers/a%20b.c"}


def test_sarif_columns_count_code_points() -> None:
    run = sample_run()
    # "Grüße" is 5 code points but 7 bytes: the call starts at byte column 16, code point 14.
    line = "\t/* Grüße */ msleep(2);"
    run.source_lines[(PATH, 80)] = line
    byte_col = line.encode().index(b"msleep") + 1
    msleep = next(f for f in run.findings if f.rule == "msleep-under-20ms")
    run.findings = [replace(msleep, span=Span(80, byte_col, 80, byte_col + 9))]
    region = json.loads(sarif.render(run, rules()))["runs"][0]["results"][0]["locations"][0][
        "physicalLocation"
    ]["region"]
    assert (byte_col, region["startColumn"], region["endColumn"]) == (16, 14, 23)
