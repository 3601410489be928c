"""`dpmlens check --patch` / `--commits`: a series of real patches against a copy of a real
driver (drivers/rtc/rtc-brcmstb-waketimer.c of 6.12, test-fixtures/patches/base): one patch
introduces a finding, one is clean, one does not apply."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import NOIRQ_WAKE, REPO, run_cli, run_process

from dpmlens.patches.apply import ApplyError, apply_file
from dpmlens.patches.parse import parse_diff, parse_patches

FIX = REPO / "test-fixtures" / "patches"
BASE = FIX / "base"
DRIVER = "drivers/rtc/rtc-brcmstb-waketimer.c"
SERIES = [str(p) for p in sorted(FIX.glob("000*.patch"))]


def test_series_reports_only_what_each_patch_introduces(capsys):
    before = (BASE / DRIVER).read_bytes()
    r = run_cli(capsys, "check", "--patch", *SERIES, "--tree", str(BASE), "-f", "checkpatch")
    assert r.code == 2  # one patch does not apply
    assert (BASE / DRIVER).read_bytes() == before  # never written
    blocks = r.out.split("-" * 20)
    first = r.out.split("0002-reword-a-comment.patch\n")[0]
    assert "WARNING:PM_WAKE_SETUP_IN_NOIRQ: enable_irq_wake() in the suspend_noirq" in first
    # checkpatch's location line: the patch line of the `+` line, then the file line.
    assert f"#18: FILE: {DRIVER}:382:\n+\tenable_irq_wake(timer->wake_irq);\n" in first
    assert "total: 0 errors, 1 warnings, 0 checks, 25 lines checked" in first
    second = r.out.split("0002-reword-a-comment.patch\n")[1].split("0003-")[0]
    assert "total: 0 errors, 0 warnings, 0 checks" in second and "WARNING" not in second
    third = r.out.split("0003-does-not-apply.patch\n")[1]
    assert "hunk #1 (@@ -375,7 +375,7 @@" in third and "does not apply: line 378 differs" in third
    assert len(blocks) > 3
    assert "0003-does-not-apply.patch: hunk #1" in r.err


def test_mbox_on_stdin_and_json(tmp_path):
    mbox = b"".join(Path(p).read_bytes() for p in SERIES)
    done = subprocess.run(
        [sys.executable, "-m", "dpmlens.cli", "check", "--patch", "-", "--tree", str(BASE), "-f",
         "json", "--fail-level", "none"],
        input=mbox, capture_output=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    doc = json.loads(done.stdout)
    assert [(f["rule"], f["line"]) for f in doc["findings"]] == [("wake-setup-in-noirq", 382)]
    assert done.returncode == 2 and b"stdin [3/3]: hunk #1" in done.stderr


@pytest.mark.parametrize("fmt", ["gnu", "sarif", "github"])
def test_every_format(capsys, fmt):
    r = run_cli(capsys, "check", "--patch", SERIES[0], "--tree", str(BASE), "-f", fmt)
    assert r.code == 1 and "382" in r.out


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def test_commits_range_checks_each_commit(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(BASE, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    for patch in SERIES[:2]:
        _git(repo, "am", "-q", patch)
    (repo / DRIVER).write_text("uncommitted edits are not part of the range\n")
    r = run_process("check", "--commits", "HEAD~2..HEAD", "-f", "checkpatch", cwd=repo)
    assert r.code == 1, r.err
    assert "rtc: brcmstb-waketimer: arm the wake irq in suspend_noirq\n" in r.out
    assert r.out.count("WARNING:PM_WAKE_SETUP_IN_NOIRQ") == 1
    assert "reword a comment has no obvious PM problems" in r.out


def _one_file_patch(old: str, new: str, path: str = "drivers/foo.c") -> bytes:
    import difflib

    diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}",
                                f"b/{path}")  # fmt: skip
    return f"diff --git a/{path} b/{path}\n".encode() + "".join(diff).encode()


def test_moved_finding_is_not_introduced(tmp_path, capsys):
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "foo.c").write_text(NOIRQ_WAKE)
    moved = NOIRQ_WAKE.replace("struct foo {", "/* a comment */\n\nstruct foo {")
    patch = tmp_path / "move.patch"
    patch.write_bytes(_one_file_patch(NOIRQ_WAKE, moved))
    r = run_cli(capsys, "check", "--patch", str(patch), "--tree", str(tmp_path), "-f", "json")
    assert r.code == 0 and json.loads(r.out)["findings"] == []
    # Touching the finding's own line makes it the patch's only if it was not there before.
    edited = NOIRQ_WAKE.replace("enable_irq_wake(foo->irq);", "enable_irq_wake(foo->irq); ")
    patch.write_bytes(_one_file_patch(NOIRQ_WAKE, edited))
    r = run_cli(capsys, "check", "--patch", str(patch), "--tree", str(tmp_path), "-f", "json")
    assert json.loads(r.out)["findings"] == []
    # A new file that holds the bug is all new.
    patch.write_bytes(_one_file_patch("", NOIRQ_WAKE, "drivers/new.c").replace(
        b"--- a/drivers/new.c", b"--- /dev/null"))  # fmt: skip
    r = run_cli(capsys, "check", "--patch", str(patch), "--tree", str(tmp_path), "-f", "json")
    assert [f["path"] for f in json.loads(r.out)["findings"]] == ["drivers/new.c"]


def test_apply_offsets_and_errors():
    text = b"".join(b"line %d\n" % i for i in range(1, 21))
    diff = parse_diff(b"--- a/x.c\n+++ b/x.c\n@@ -3,2 +3,3 @@\n line 5\n+new\n line 6\n")[0]
    applied = apply_file(text, diff)  # found 2 lines lower than the header says
    assert applied.text is not None and b"line 5\nnew\nline 6\n" in applied.text
    assert applied.added == {6: 5}  # new line 6, patch line 5
    bad = parse_diff(b"--- a/x.c\n+++ b/x.c\n@@ -3,2 +3,2 @@\n line 99\n-line 4\n+x\n")[0]
    with pytest.raises(ApplyError, match=r"hunk #1 \(@@ -3,2 \+3,2 @@\) of x.c does not apply"):
        apply_file(text, bad)
    with pytest.raises(ApplyError, match="no such file"):
        apply_file(None, bad)


def test_parse_mbox_names_and_no_newline_marker():
    one = Path(SERIES[0]).read_bytes()
    patches = parse_patches(one + one, "series.mbox")
    assert [p.name for p in patches] == ["series.mbox [1/2]", "series.mbox [2/2]"]
    assert patches[0].subject.startswith("[PATCH 1/2] rtc: brcmstb-waketimer")
    diff = parse_diff(b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n")
    assert diff[0].hunks[0].lines == [(b"-", b"a", 4), (b"+", b"b\n", 6)]


def test_a_file_over_a_limit_is_named_and_the_series_goes_on(tmp_path, capsys):
    (tmp_path / "drivers").mkdir()
    deep = NOIRQ_WAKE + "int x = " + "(" * 600 + "1" + ")" * 600 + ";\n"  # PM code, too deep
    patch = tmp_path / "two.patch"
    patch.write_bytes(
        _one_file_patch("", deep, "drivers/deep.c").replace(b"--- a/drivers/deep.c",
                                                           b"--- /dev/null")
        + _one_file_patch("", NOIRQ_WAKE, "drivers/new.c").replace(b"--- a/drivers/new.c",
                                                                  b"--- /dev/null"))
    r = run_cli(capsys, "check", "--patch", str(patch), "--tree", str(tmp_path), "-f", "json")
    assert [f["path"] for f in json.loads(r.out)["findings"]] == ["drivers/new.c"]
    assert "drivers/deep.c: not analyzed: too deeply nested" in r.err, r.err
