"""`--diff REV`: changed lines from a real git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from report_data import wake_finding

from dpmlens.core.errors import UsageError
from dpmlens.core.findings import ChainStep, Span
from dpmlens.engine.vcs import ChangedLines, parse_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


def test_parse_diff_hunks() -> None:
    text = (
        "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n"
        "@@ -3 +3 @@\n-a\n+b\n@@ -10,0 +11,2 @@\n+c\n+d\n@@ -20,2 +22,0 @@\n-e\n-f\n"
        "diff --git a/gone.c b/gone.c\n--- a/gone.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert parse_diff(text) == {"x.c": {3, 11, 12}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "drv").mkdir()
    (tmp_path / "drv" / "a.c").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    (tmp_path / "drv" / "b.c").write_text("b\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def test_changed_lines_since_revision(repo: Path, monkeypatch) -> None:
    lines = (repo / "drv" / "a.c").read_text().splitlines(keepends=True)
    lines[4] = "changed 5\n"
    lines.insert(10, "added\n")
    (repo / "drv" / "a.c").write_text("".join(lines))
    (repo / "drv" / "new.c").write_text("one\ntwo\n")  # untracked: all lines new
    monkeypatch.chdir(repo)
    changed = ChangedLines.since("HEAD", "drv")
    assert changed.touches_file("drv/a.c") and changed.touches_file("drv/new.c")
    assert not changed.touches_file("drv/b.c")

    def at(line: int, path: str = "drv/a.c"):
        f = wake_finding()
        return f.__class__(**{**f.__dict__, "path": path, "span": Span(line, 1, line, 5),
                              "chain": ()})  # fmt: skip

    assert changed.keep(at(5)) and changed.keep(at(11)) and changed.keep(at(2, "drv/new.c"))
    assert not changed.keep(at(6)) and not changed.keep(at(1, "drv/b.c"))
    # an unchanged call reached through a chain that starts on a changed line is kept
    chained = at(1, "drv/b.c")
    chained = chained.__class__(
        **{**chained.__dict__, "chain": (ChainStep("cb", "drv/a.c", Span(11, 1, 11, 3)),)}
    )
    assert changed.keep(chained)


def test_unknown_revision_and_no_repository(repo: Path, tmp_path_factory) -> None:
    with pytest.raises(UsageError, match="unknown git revision"):
        ChangedLines.since("no-such-branch", str(repo))
    outside = tmp_path_factory.mktemp("plain")
    with pytest.raises(UsageError, match="not inside a git repository"):
        ChangedLines.since("HEAD", str(outside))
