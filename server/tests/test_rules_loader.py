"""The rule loader: the shipped rules load, and every kind of broken rule file gives one
line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmlens.core.findings import Severity
from dpmlens.rules.loader import RuleError, load_rules, parse_rule

GOOD = """\
id: {id}
kernel_type: PM_TEST
severity: warning
title: "Firmware loaded in a noirq callback"
message: "{{callee}}() in {{phase}}"
note: why
url: https://docs.kernel.org/power/
match:
  kind: call-in-phase
  phases: [noirq]
  calls: [enable_irq_wake]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_rules_load_with_unique_ids_and_types() -> None:
    rules = load_rules()
    ids = [r.id for r in rules]
    assert len(ids) == 16 and len(set(ids)) == 16
    assert len({r.kernel_type for r in rules}) == 16
    for r in rules:
        assert r.url.startswith("https://docs.kernel.org/"), r.id
        assert r.note and r.message


def test_a_common_rule_needs_no_python(tmp_path: Path) -> None:
    _write(tmp_path, "my-rule", GOOD.format(id="my-rule"))
    (rule,) = load_rules(tmp_path)
    assert rule.severity == Severity.WARNING
    assert rule.kind == "call-in-phase"
    assert rule.format_message(callee="enable_irq_wake", phase="suspend_noirq") == (
        "enable_irq_wake() in suspend_noirq"
    )


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad-yaml", "id: [unclosed\n", "invalid YAML"),
        ("not-a-map", "- a\n- b\n", "must be a YAML mapping"),
        ("wrong-name", GOOD.format(id="other-name"), "must equal the file name"),
        ("missing", "id: missing\n", "missing field(s)"),
        ("bad-sev", GOOD.format(id="bad-sev").replace("warning", "loud"), "unknown severity"),
        (
            "bad-type",
            GOOD.format(id="bad-type").replace("PM_TEST", "pm-test"),
            "not UPPER_SNAKE",
        ),
        (
            "bad-phase",
            GOOD.format(id="bad-phase").replace("[noirq]", "[sleepy]"),
            "unknown phase 'sleepy'",
        ),
        (
            "bad-kind",
            GOOD.format(id="bad-kind").replace("call-in-phase", "call-anywhere"),
            "unknown match kind",
        ),
        (
            "bad-checker",
            GOOD.format(id="bad-checker").replace(
                "  kind: call-in-phase\n  phases: [noirq]\n  calls: [enable_irq_wake]\n",
                "  checker: nope\n",
            ),
            "unknown checker 'nope'",
        ),
        (
            "bad-key",
            GOOD.format(id="bad-key") + "  calss: [x]\n",
            "match: unknown key 'calss' (known: allow, calls,",
        ),
        (  # a typo in a checker's option value is an error, not a rule that finds nothing
            "bad-report",
            GOOD.format(id="bad-report").replace(
                "  kind: call-in-phase\n  phases: [noirq]\n  calls: [enable_irq_wake]\n",
                "  checker: delays\n  report: busywait\n",
            ).replace("{callee}() in {phase}", "{value} ms"),
            "match: report: 'busywait' is not one of 'beyond-spec', 'msleep-under-20ms',",
        ),
        (
            "bad-option-type",
            GOOD.format(id="bad-option-type") + "  once_per_callback: sometimes\n",
            "match: once_per_callback: expected true or false",
        ),
        (
            "bad-list",
            GOOD.format(id="bad-list").replace("[enable_irq_wake]", "enable_irq_wake"),
            "match: calls: expected a list, got str",
        ),
        (
            "bad-condition",
            GOOD.format(id="bad-condition") + "  unless: [pinned]\n",
            "match: unless: 'pinned' is not one of 'pinned-active'",
        ),
        (
            "bad-placeholder",
            GOOD.format(id="bad-placeholder").replace("{phase}", "{phsae}"),
            "message placeholder(s) {phsae} are not filled by checker 'call-in-phase'",
        ),
        (
            "missing-option",
            GOOD.format(id="missing-option").replace("  calls: [enable_irq_wake]\n", ""),
            "match: missing key 'calls'",
        ),
    ],
)
def test_broken_rule_files_name_the_file(tmp_path: Path, name: str, text: str, expected: str):
    path = _write(tmp_path, name, text)
    with pytest.raises(RuleError) as err:
        load_rules(tmp_path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken", "id: broken\nmatch: {kind: [\n")
    with pytest.raises(RuleError, match=rf"^{path}:\d+: invalid YAML"):
        load_rules(tmp_path)


def test_missing_rules_directory(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="rules directory not found"):
        load_rules(tmp_path / "nowhere")


def test_parse_rule_rejects_bad_fix(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(GOOD.format(id="fixy"))
    data["fix"] = "just do it"
    with pytest.raises(RuleError, match="fix must be a mapping"):
        parse_rule(tmp_path / "fixy.yaml", data)


def test_a_malformed_spec_table_is_one_error_naming_the_file(tmp_path: Path, monkeypatch) -> None:
    import shutil

    from dpmlens.config.settings import Config
    from dpmlens.core.paths import rules_dir
    from dpmlens.engine.analyze import analyze_source
    from dpmlens.rules import delays

    data = tmp_path / "data"
    shutil.copytree(rules_dir(), data / "rules")
    table = data / "rules" / "tables" / "spec-delays.yaml"
    table.write_text(table.read_text().replace("unit: us}", "unit: fortnights}"), encoding="utf-8")
    monkeypatch.setenv("DPMLENS_DATA_DIR", str(data))
    delays._spec.cache_clear()
    try:
        with pytest.raises(RuleError, match=r"spec-delays.yaml: malformed spec table.*fortnights"):
            analyze_source("x.c", b"static int f(void) { msleep(1); return 0; }\n", Config())
    finally:
        monkeypatch.delenv("DPMLENS_DATA_DIR")
        delays._spec.cache_clear()
