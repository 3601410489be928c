"""The text printers: gnu, checkpatch and GitHub annotations, exactly as tools parse them."""

from __future__ import annotations

import re

from report_data import PATH, rules, sample_run

from dpmlens.engine.check import CheckRun
from dpmlens.report import FORMATS, checkpatch, github, gnu, renderer


def test_every_format_has_a_renderer() -> None:
    run = sample_run()
    for fmt in FORMATS:
        assert renderer(fmt)(run, rules())


def test_gnu_lines_are_file_line_col_severity_message_rule() -> None:
    out = gnu.render(sample_run(), rules()).splitlines()
    assert out[0] == (
        "drivers/misc/acme,als.c:37:3: warning: enable_irq_wake() in the suspend_noirq "
        "callback acme_suspend_noirq() [wake-setup-in-noirq]"
    )
    # The call chain follows as gcc-style notes, one per hop.
    assert out[1] == f"{PATH}:70:2: note: suspend_noirq callback"
    assert out[2] == f"{PATH}:74:2: note: calls acme_arm_wake()"
    assert out[3].endswith("msleep(2) can sleep 20 ms: use fsleep(2000) [msleep-under-20ms]")
    assert out[4] == (
        "drivers/misc/other.c:5:1: info: platform driver 'other' never enables async suspend "
        "[async-suspend-not-enabled]"
    )
    gnu_line = re.compile(r"^[^:]+:\d+:\d+: (error|warning|info|hint|note): .+")
    assert all(gnu_line.match(line) for line in out)


def test_gnu_prints_nothing_without_findings() -> None:
    assert gnu.render(CheckRun(findings=[], errors=[]), []) == ""


def test_checkpatch_blocks_and_total() -> None:
    out = checkpatch.render(sample_run(), rules())
    blocks = out.split("\n\n")
    assert blocks[0].splitlines() == [
        "WARNING:PM_WAKE_SETUP_IN_NOIRQ: enable_irq_wake() in the suspend_noirq callback "
        "acme_suspend_noirq()",
        f"#37: FILE: {PATH}:37:",
        "+\t\tenable_irq_wake(als->irq);",
    ]
    assert blocks[1].splitlines()[1:] == [f"#80: FILE: {PATH}:80:", "+\tmsleep(2);"]
    # info findings are checkpatch CHECKs; no quoted line when the source line is unknown
    assert blocks[2].splitlines() == [
        "CHECK:PM_ASYNC_SUSPEND: platform driver 'other' never enables async suspend",
        "#5: FILE: drivers/misc/other.c:5:",
    ]
    assert out.splitlines()[-1] == "total: 0 errors, 2 warnings, 1 checks, 120 lines checked"


def test_github_annotations_escape_properties_and_data() -> None:
    out = github.render(sample_run(), rules()).splitlines()
    assert out[0].startswith(
        "::warning file=drivers/misc/acme%2Cals.c,line=37,col=3,endLine=37,endColumn=28,"
        "title=wake-setup-in-noirq (PM_WAKE_SETUP_IN_NOIRQ)::enable_irq_wake() in the"
    )
    # the chain goes on a second line of the message, escaped as %0A
    assert out[0].endswith("%0Acall chain: acme_suspend_noirq() -> acme_arm_wake()")
    assert out[2].startswith("::notice file=drivers/misc/other.c,line=5,col=1,")
    assert out[3] == (
        "::error file=drivers/misc/blob.c,title=dpmlens::binary file (contains NUL bytes), skipped"
    )
    assert all("\n" not in line for line in out)


def test_html_is_escaped_and_grouped_by_file() -> None:
    from dataclasses import replace

    from dpmlens.report import html

    run = sample_run()
    run.findings[0] = replace(run.findings[0], message="a <b> & c")
    out = html.render(run, rules())
    assert out.startswith("<!DOCTYPE html>")
    assert "a &lt;b&gt; &amp; c" in out and "<b>" not in out
    assert out.count("<h2>") == 3  # skipped files, then one heading per file with findings
    assert '<a href="https://docs.kernel.org/power/suspend-and-interrupts.html">' in out
    assert "<pre>37: \t\tenable_irq_wake(als-&gt;irq);</pre>" in out
    assert (
        "<li>calls acme_arm_wake() <span class=muted>drivers/misc/acme,als.c:74</span></li>" in out
    )
