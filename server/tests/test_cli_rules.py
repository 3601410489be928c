"""`dpmlens rules list` and `dpmlens rules explain`."""

from __future__ import annotations

import json

from cli_helpers import run_cli

from dpmlens.rules.loader import load_rules


def test_list_has_every_rule(capsys) -> None:
    r = run_cli(capsys, "rules", "list")
    assert r.code == 0
    ids = [line.split()[0] for line in r.out.splitlines()]
    assert ids == [rule.id for rule in load_rules()]
    assert "wake-setup-in-noirq" in ids
    line = next(x for x in r.out.splitlines() if x.startswith("wake-setup-in-noirq"))
    assert line.split()[1:3] == ["warning", "PM_WAKE_SETUP_IN_NOIRQ"]


def test_list_json(capsys) -> None:
    payload = json.loads(run_cli(capsys, "rules", "list", "--format", "json").out)
    assert {"id", "kernel_type", "severity", "message", "url"} <= set(payload[0])


def test_explain_by_id_and_by_kernel_type(capsys) -> None:
    r = run_cli(capsys, "rules", "explain", "wake-setup-in-noirq")
    assert r.code == 0
    assert r.out.startswith("wake-setup-in-noirq  (PM_WAKE_SETUP_IN_NOIRQ, warning)")
    assert "suspend_device_irqs()" in r.out
    assert "Documentation: https://docs.kernel.org/power/suspend-and-interrupts.html" in r.out
    assert run_cli(capsys, "rules", "explain", "pm_wake_setup_in_noirq").out == r.out


def test_explain_unknown_suggests(capsys) -> None:
    r = run_cli(capsys, "rules", "explain", "wake-setup-in-noiq")
    assert r.code == 2
    assert r.err_lines == [
        "dpmlens: error: unknown rule 'wake-setup-in-noiq'; did you mean wake-setup-in-noirq?"
    ]
