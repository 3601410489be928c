"""Kernel logs as people paste them (test-fixtures/traces/pasted/, each from a public report):
every prefix form reads with 0 skipped lines, and a runtime-PM-only log is a normal input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli
from traces_helpers import FIXTURES, by_key

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.rpm_stats import runtime_stats
from dpmlens.traces.model.rpm_log import explain, table

PASTED = FIXTURES / "pasted"
VCNL = PASTED / "vcnl4000_rpm_eio_5.19.txt"
ALL = sorted(PASTED.glob("*.txt"))


def test_the_readme_cites_a_source_for_every_fixture() -> None:
    readme = (PASTED / "README.md").read_text()
    assert len(ALL) >= 5
    for f in ALL:
        row = next((ln for ln in readme.splitlines() if f"`{f.name}`" in ln), "")
        assert "https://" in row, f"{f.name}: no source URL in README.md"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_pasted_log_reads_as_a_kernel_log_with_nothing_skipped(path: Path) -> None:
    t = load_traces([path])
    assert not t.errors
    assert t.files[0].format == "dmesg"
    assert t.files[0].skipped_lines == 0


def _vcnl_errors(path: Path) -> dict[str, object]:
    report = runtime_stats(load_traces([path]))
    assert report is not None
    dev = next(d for d in report.devices if d.device == "0-0009")
    assert dev.driver == "vcnl4000"  # from the module of its callback in the call trace
    return {e.name: e for e in dev.errors}


def test_the_mailing_list_report_explains_both_failed_resumes() -> None:
    errs = _vcnl_errors(VCNL)
    eio, einval = errs["-EIO"], errs["-EINVAL"]
    assert (eio.call, eio.count, einval.call, einval.count) == ("rpm_resume", 1, "rpm_resume", 1)
    cls, why = eio.meaning
    assert cls == "error" and "returned by the callback" in why and "I/O error" in why
    assert "-EINVAL" in why  # what the failure leaves behind: the next resume's error
    assert dict(eio.returned_by) == {"vcnl4000_runtime_resume() [vcnl4000]": 1}
    assert "never cleared" in einval.meaning[1]
    assert dict(einval.after) == {"rpm_resume -EIO": 1}


def test_the_report_prints_the_explanations(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "trace", "report", str(VCNL))
    assert res.code == 0, res.err
    assert "No system suspend/resume callbacks in the capture(s)." in res.out  # rpm only
    assert "(error: )" not in res.out
    assert "vcnl4000_runtime_resume() [vcnl4000]" in res.out
    assert "left by the earlier rpm_resume -EIO" in res.out
    res = run_cli(capsys, "trace", "report", str(VCNL), "--format", "json")
    errors = {e["name"]: e for d in json.loads(res.out)["runtime_pm"]["devices"]
              for e in d["errors"] if d["device"] == "0-0009"}
    assert errors["-EIO"]["returned_by"] == {"vcnl4000_runtime_resume() [vcnl4000]": 1}
    assert errors["-EINVAL"]["after"] == {"rpm_resume -EIO": 1}


def test_crlf_and_journal_stamps_read_the_same(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(VCNL.read_bytes().replace(b"\n", b"\r\n"))
    assert {k: (e.count, e.meaning) for k, e in _vcnl_errors(crlf).items()} == \
        {k: (e.count, e.meaning) for k, e in _vcnl_errors(VCNL).items()}
    # journalctl -o short-precise: the wall stamp's fraction is the time, no `[ ts]`
    journal = tmp_path / "journal.txt"
    lines = []
    for ln in VCNL.read_text().splitlines():
        m = re.match(r"\[(\d+)\.(\d+)\](.*)", ln)
        assert m
        secs = int(m.group(1)) % 86400
        stamp = f"Jun 20 {secs // 3600:02}:{secs // 60 % 60:02}:{secs % 60:02}.{m.group(2)}"
        lines.append(f"{stamp} host kernel: {m.group(3)}")
    journal.write_text("\n".join(lines) + "\n")
    t = load_traces([journal])
    assert t.files[0].skipped_lines == 0
    assert {k: e.count for k, e in _vcnl_errors(journal).items()} == {"-EIO": 1, "-EINVAL": 1}


def test_pm_print_times_without_timestamps(tmp_path: Path) -> None:
    """`dmesg -t`: the callbacks carry their own durations."""
    bare = tmp_path / "bare.txt"
    bare.write_text(re.sub(r"(?m)^\[ *\d+\.\d+\] ", "",
                           (PASTED / "sof_mtl_pci_pm_suspend.txt").read_text()))
    for path in (PASTED / "sof_mtl_pci_pm_suspend.txt", bare):
        t = load_traces([path])
        assert not t.errors and t.files[0].skipped_lines == 0
        assert by_key(t) == {
            ("sof-audio-pci-intel-mtl", "0000:00:1f.3", "suspend"): [572713.0],
            ("sof-audio-pci-intel-mtl", "0000:00:1f.3", "suspend_late"): [2.0],
            ("sof-audio-pci-intel-mtl", "0000:00:1f.3", "suspend_noirq"): [12201.0],
        }


def test_syslog_phase_lines() -> None:
    t = load_traces([PASTED / "syslog_checkbox_phases.txt"])
    assert {p.phase: p.wall_us for p in t.phase_times} == {
        "suspend": 1155793.0, "suspend_late": 20104.0, "suspend_noirq": 17105.0,
        "resume_noirq": 15017.0, "resume_early": 17481.0}


def test_user_space_lines_of_a_journal_are_not_kernel_messages() -> None:
    from dpmlens.traces.read.dmesg import strip_prefix
    lines = (PASTED / "journal_popos_suspend.txt").read_text().splitlines()
    kernel = [strip_prefix(ln)[1] for ln in lines if " kernel: " in ln]
    user = [strip_prefix(ln)[1] for ln in lines if re.search(r" \S+\[\d+\]: ", ln)]
    assert kernel[0] == "PM: suspend entry (deep)"
    assert user and all(m == "" for m in user)


@pytest.mark.parametrize("call", ["rpm_resume", "rpm_suspend", "rpm_idle"])
def test_every_error_code_of_every_call_is_explained(call: str) -> None:
    for num in [*table().errno, 9999]:
        cls, why = explain(call, -num)
        assert cls in ("error", "refusal") and why, (call, num)


@pytest.mark.parametrize(("head", "is_log"), [
    ("[110190.730000][   T27] rpm_resume: 0-0009 flags-4 cnt-1", True),  # caller id, no PM line
    ("[2022-03-20 22:59:10] [  256.243014] INFO: task", True),
    ("    [  451.555631] sof-audio-pci-intel-mtl 0000:00:1f.3: x", True),
    ("Aug 01 20:50:01 pop-os kernel: PM: suspend entry (deep)", True),
    ("rpm_resume: 0-0009 flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0", True),  # dmesg -t
    ("see the line [ 12.345678] in the log", False),  # notes beside captures are not a log
    ("just notes\nnothing about suspend", False),
])
def test_what_is_recognised_as_a_kernel_log(head: str, is_log: bool) -> None:
    from dpmlens.traces.read.dmesg import looks_like
    assert looks_like(head) is is_log


@pytest.mark.parametrize("form", ["dmesg -t", "journalctl"])
def test_runtime_pm_lines_without_a_time_keep_order_and_errors(tmp_path: Path,
                                                               form: str) -> None:
    """`dmesg -t` (caller ids, no timestamp) and journalctl's default whole-second stamps."""
    out = []
    for ln in VCNL.read_text().splitlines():
        rest = re.sub(r"^\[ *\d+\.\d+\]", "", ln)
        out.append(rest if form == "dmesg -t" else
                   "Jun 20 16:42:31 host kernel: " + re.sub(r"^\[ *T\d+\] ", "", rest))
    path = tmp_path / "untimed.txt"
    path.write_text("\n".join(out) + "\n")
    t = load_traces([path])
    assert t.files[0].format == "dmesg" and t.files[0].skipped_lines == 0
    assert any("latencies are not measured" in n for n in t.files[0].notes)
    errs = _vcnl_errors(path)
    assert {k: e.count for k, e in errs.items()} == {"-EIO": 1, "-EINVAL": 1}
    assert dict(errs["-EIO"].returned_by) == {"vcnl4000_runtime_resume() [vcnl4000]": 1}
    report = runtime_stats(t)
    assert report is not None
    assert all(d.resume is None and d.suspend is None for d in report.devices)
