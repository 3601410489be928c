"""`dpmlens check` end to end: formats, options, exit codes, over real C files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import DEMO, NOIRQ_WAKE, NOIRQ_WAKE_LINE, REPO, run_cli, run_process, write_driver


def test_demo_reports_real_findings(capsys) -> None:
    r = run_cli(capsys, "check", str(DEMO))
    assert r.code == 1
    lines = r.out.splitlines()
    hits = [line for line in lines if ": warning: " in line]
    assert hits, r.out
    # the wake IRQ armed from suspend_noirq through acme_als_arm_wake()
    assert any(
        line.startswith(f"{DEMO}/acme_als.c:37:") and line.endswith("[wake-setup-in-noirq]")
        for line in hits
    ), r.out
    assert r.err_lines[-1].startswith("dpmlens: 1 file checked (1 with PM code)")


def test_paths_as_given_and_json_contract(tmp_path: Path, capsys, monkeypatch) -> None:
    write_driver(tmp_path / "drivers" / "foo.c")
    monkeypatch.chdir(tmp_path)
    r = run_cli(capsys, "check", "--format", "json", "./drivers")
    doc = json.loads(r.out)
    assert doc["version"] == 1
    finding = next(f for f in doc["findings"] if f["rule"] == "wake-setup-in-noirq")
    assert finding["path"] == "./drivers/foo.c"
    assert finding["line"] == NOIRQ_WAKE_LINE and finding["column"] == 2
    assert finding["phase"] == "suspend_noirq"
    assert finding["function"] == "foo_suspend_noirq"
    assert doc["summary"]["files_checked"] == 1
    assert r.code == 1


@pytest.mark.parametrize("fmt", ["gnu", "checkpatch", "json", "sarif", "github", "html"])
def test_every_format_runs(tmp_path: Path, capsys, fmt: str) -> None:
    src = write_driver(tmp_path / "foo.c")
    r = run_cli(capsys, "check", "-q", "--format", fmt, str(src))
    assert r.code == 1 and r.err == ""
    assert "enable_irq_wake" in r.out


def test_output_file(tmp_path: Path, capsys) -> None:
    src = write_driver(tmp_path / "foo.c")
    out = tmp_path / "report.sarif"
    r = run_cli(capsys, "check", "-q", "-f", "sarif", "-o", str(out), str(src))
    assert r.code == 1 and r.out == ""
    results = json.loads(out.read_text())["runs"][0]["results"]
    assert any(res["ruleId"] == "wake-setup-in-noirq" for res in results)


def test_fail_level_and_rule_selection(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "foo.c"))
    assert run_cli(capsys, "check", "-q", "--fail-level", "error", src).code == 0
    assert run_cli(capsys, "check", "-q", "--fail-level", "none", src).code == 0
    assert run_cli(capsys, "check", "-q", "--fail-level", "info", src).code == 1
    ignored = run_cli(capsys, "check", "-q", "--ignore", "wake-setup-in-noirq", src)
    assert "wake-setup-in-noirq" not in ignored.out
    by_type = run_cli(capsys, "check", "-q", "--ignore", "pm_wake_setup_in_noirq", src)
    assert "wake-setup-in-noirq" not in by_type.out
    only = run_cli(capsys, "check", "-q", "--rule", "msleep-under-20ms", src)
    assert only.out == "" and only.code == 0


def test_unknown_rule_is_a_usage_error(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "foo.c"))
    r = run_cli(capsys, "check", "--rule", "no-such-rule", src)
    assert r.code == 2
    assert r.err_lines == [
        "dpmlens: error: --rule no-such-rule: unknown rule (see `dpmlens rules list`)"
    ]


def test_config_file_disables_and_reweights(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "drivers" / "foo.c"))
    config = tmp_path / ".dpmlens.toml"
    config.write_text('[rules]\nwake-setup-in-noirq = "error"\n')
    r = run_cli(capsys, "check", "-q", src)
    assert f"{src}:{NOIRQ_WAKE_LINE}:2: error: " in r.out
    config.write_text("[rules]\nwake-setup-in-noirq = false\n")
    assert "wake-setup-in-noirq" not in run_cli(capsys, "check", "-q", src).out
    assert "wake-setup-in-noirq" in run_cli(capsys, "check", "-q", "--no-config", src).out


def test_broken_config_is_exit_2_with_file_and_line(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "foo.c"))
    (tmp_path / ".dpmlens.toml").write_text("[rules]\nwake-setup-in-noirq = \n")
    r = run_cli(capsys, "check", src)
    assert r.code == 2 and r.out == ""
    (line,) = r.err_lines
    assert line.startswith(f"dpmlens: error: {tmp_path / '.dpmlens.toml'}:2:")
    r = run_cli(capsys, "check", "--config", str(tmp_path), src)  # a directory, not a file
    assert r.code == 2 and len(r.err_lines) == 1 and "--config" in r.err


def test_baseline_hides_known_findings_across_line_shifts(tmp_path: Path, capsys) -> None:
    src = write_driver(tmp_path / "foo.c")
    baseline = tmp_path / "baseline.json"
    r = run_cli(capsys, "check", "--write-baseline", str(baseline), str(src))
    assert r.code == 0 and "wrote" in r.err
    src.write_text("/* a new comment\n * shifts every line\n */\n" + NOIRQ_WAKE)
    r = run_cli(capsys, "check", "--baseline", str(baseline), str(src))
    assert r.code == 0 and r.out == ""
    assert "in baseline" in r.err_lines[-1]
    # a new problem in another callback is reported
    added = "disable_irq_wake(foo->irq);\n\tpm_runtime_resume(dev);"
    src.write_text(NOIRQ_WAKE.replace("disable_irq_wake(foo->irq);", added))
    r = run_cli(capsys, "check", "--baseline", str(baseline), str(src))
    assert r.code == 1
    assert r.out.splitlines()[0].endswith("[runtime-pm-while-disabled]")
    assert "wake-setup-in-noirq" not in r.out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_diff_reports_only_changed_lines(tmp_path: Path, capsys, monkeypatch) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                       cwd=tmp_path, check=True, capture_output=True)  # fmt: skip

    git("init", "-q")
    old = NOIRQ_WAKE.replace("\tenable_irq_wake(foo->irq);\n", "")
    write_driver(tmp_path / "foo.c", old)
    write_driver(tmp_path / "untouched.c")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    write_driver(tmp_path / "foo.c")  # the patch adds enable_irq_wake() in suspend_noirq
    monkeypatch.chdir(tmp_path)
    full = run_cli(capsys, "check", "-q", ".")
    assert "untouched.c" in full.out
    r = run_cli(capsys, "check", "-q", "--diff", "HEAD", ".")
    assert r.code == 1
    lines = [line for line in r.out.splitlines() if "[wake-setup-in-noirq]" in line]
    assert len(lines) == 1 and "enable_irq_wake" in lines[0], r.out
    assert "untouched.c" not in r.out
    bad = run_cli(capsys, "check", "--diff", "nope", ".")
    assert bad.code == 2 and bad.err_lines == ["dpmlens: error: --diff nope: unknown git revision"]


def test_parallel_jobs_give_the_same_findings(tmp_path: Path, capsys) -> None:
    for n in range(24):  # enough files for the process pool
        write_driver(tmp_path / f"d{n:02}" / "foo.c")
    one = run_cli(capsys, "check", "-q", "-f", "json", "--jobs", "1", str(tmp_path))
    two = run_cli(capsys, "check", "-q", "-f", "json", "--jobs", "2", str(tmp_path))
    assert json.loads(one.out)["findings"] == json.loads(two.out)["findings"]
    assert json.loads(two.out)["summary"]["files_checked"] == 24


def test_console_script_and_usage_errors() -> None:
    r = run_process("check", "--format", "xml", str(DEMO))
    assert r.code == 2 and "invalid choice: 'xml'" in r.err
    r = run_process("check", "--jobs", "-1", str(DEMO))
    assert r.code == 2
    r = run_process("--version")
    assert r.code == 0 and r.out.startswith("dpmlens ")
    r = run_process("check", "-q", str(DEMO), cwd=REPO)
    assert r.code == 1 and "[wake-setup-in-noirq]" in r.out


def test_machine_formats_keep_stdout_clean(tmp_path: Path, capsys) -> None:
    write_driver(tmp_path / "good.c")
    (tmp_path / "blob.c").write_bytes(b"\0\1\2binary")
    r = run_cli(capsys, "check", "-f", "json", str(tmp_path))
    doc = json.loads(r.out)  # stdout is only the document; messages go to stderr
    assert doc["summary"]["errors"] == [
        {"path": str(tmp_path / "blob.c"), "message": "binary file (contains NUL bytes), skipped"}
    ]
    assert (
        r.err_lines[0]
        == f"dpmlens: skipped: {tmp_path / 'blob.c'}: binary file (contains NUL bytes), skipped"
    )


def test_usage_mistakes_exit_2(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "foo.c"))
    r = run_cli(capsys, "check", "-o", str(tmp_path), src)  # a directory as output file
    assert r.code == 2
    assert f"dpmlens: error: --output {tmp_path}: cannot write: Is a directory" in r.err_lines
    r = run_cli(capsys, "check", "--baseline", "a.json", "--write-baseline", "b.json", src)
    assert r.code == 2 and "cannot be used together" in r.err
    assert run_cli(capsys).code == 2  # no command: help on stderr
    assert run_cli(capsys, "rules").code == 2


def test_prefilter_uses_the_engines_words(tmp_path: Path, capsys) -> None:
    from dpmlens.config.settings import Config, RuleSetting
    from dpmlens.engine.analyze import prefilter

    # the words come from the enabled rules' checkers: off with its rules, on with them
    assert b"D3cold" in prefilter().gated
    delay_rules = ("delay-beyond-spec", "msleep-under-20ms", "busy-wait-in-pm-callback")
    no_delays = Config(rules={r: RuleSetting(enabled=False) for r in delay_rules})
    assert b"D3cold" not in prefilter(no_delays).gated
    assert b"pm_runtime_get_sync" in prefilter(no_delays).words
    # a spec-padded delay with no PM construct in the file: only a spec word lets it through
    src = write_driver(
        tmp_path / "d3.c",
        "static void wake_up_dev(struct pci_dev *pdev)\n{\n"
        "\t/* D3cold exit: TRhfa plus extra */\n\tmsleep(200);\n}\n",
    )
    r = run_cli(capsys, "check", "-q", "--all-costs", str(src))
    assert r.out.startswith(f"{src}:4:2: hint: msleep(200)") and "[delay-beyond-spec]" in r.out
    # no callback reaches it: a cost too small to act on, left out unless --all-costs
    r = run_cli(capsys, "check", "-q", "-f", "json", str(src))
    report = json.loads(r.out)
    assert report["findings"] == [] and report["summary"]["quiet_hidden"] == 1


def test_checkpatch_counts_the_lines_checked(tmp_path: Path, capsys) -> None:
    src = write_driver(tmp_path / "foo.c")
    write_driver(tmp_path / "nopm.c", "int answer(void)\n{\n\treturn 42;\n}\n")  # prefiltered
    r = run_cli(capsys, "check", "-q", "-f", "checkpatch", str(tmp_path))
    total = NOIRQ_WAKE.count("\n") + 4
    assert r.out.splitlines()[-1].endswith(f", {total} lines checked")
    assert f"#{NOIRQ_WAKE_LINE}: FILE: {src}:{NOIRQ_WAKE_LINE}:" in r.out


HUB_RESET = """\
static void port_reset(struct usb_hub *hub)
{
\tint reset_recovery_time;

\t/* TRSTRCY = 10 ms; plus some extra */
\treset_recovery_time = 10 + 40;
\tmsleep(reset_recovery_time);
}
"""


def test_spec_override_from_config(tmp_path: Path, capsys) -> None:
    src = str(write_driver(tmp_path / "hub.c", HUB_RESET))
    r = run_cli(capsys, "check", "-q", "--all-costs", src)
    assert "40 ms beyond the 10 ms TRSTRCY minimum" in r.out and r.code == 0  # quiet hint
    config = tmp_path / ".dpmlens.toml"
    config.write_text("[spec]\nTRSTRCY = 50\n")  # this hub needs 50 ms: no padding left
    r = run_cli(capsys, "check", "-q", "--all-costs", src)
    assert (r.code, r.out) == (0, "")
    config.write_text("[spec]\nTRSTRCX = 50\n")
    r = run_cli(capsys, "check", "-q", src)
    assert r.code == 2
    assert r.err_lines[0].startswith(f"dpmlens: error: {config}:2: unknown spec quantity 'TRSTRCX'")
