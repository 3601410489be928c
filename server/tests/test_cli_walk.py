"""Walking the paths: suffixes, order, symlinks (loops, dangling), FIFOs, missing operands."""

from __future__ import annotations

import os
from pathlib import Path

from dpmlens.engine.walk import collect_files


def _touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_finds_c_and_h_keeps_given_form(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _touch(tmp_path / "drivers" / "b" / "x.c")
    _touch(tmp_path / "drivers" / "a.h")
    _touch(tmp_path / "drivers" / "a.c")
    _touch(tmp_path / "drivers" / "notes.txt")
    _touch(tmp_path / "drivers" / ".git" / "hidden.c")
    files, errors = collect_files(["drivers"])
    assert files == ["drivers/a.c", "drivers/a.h", "drivers/b/x.c"]
    assert errors == []
    files, _ = collect_files(["./drivers/"])
    assert files[0] == "./drivers/a.c"


def test_explicit_file_any_suffix_and_no_duplicates(tmp_path: Path) -> None:
    src = _touch(tmp_path / "a.c")
    other = _touch(tmp_path / "patch.inc")
    files, errors = collect_files([str(src), str(tmp_path), str(other)])
    assert files == [str(src), str(other)]
    assert errors == []


def test_missing_operand_is_a_usage_error(tmp_path: Path) -> None:
    files, errors = collect_files([str(tmp_path / "nope")])
    assert files == []
    assert [(e.message, e.usage) for e in errors] == [("no such file or directory", True)]


def test_symlink_loop_reported_once_and_walk_continues(tmp_path: Path) -> None:
    _touch(tmp_path / "d" / "a.c")
    os.symlink("..", tmp_path / "d" / "up")  # d/up -> tmp_path, which encloses d
    os.symlink("self.c", tmp_path / "d" / "self.c")  # ELOOP
    files, errors = collect_files([str(tmp_path / "d")])
    assert files == [str(tmp_path / "d" / "a.c")]
    messages = {Path(e.path).name: e.message for e in errors}
    assert messages == {
        "self.c": "symlink loop, not followed",
        "up": "symlink loop (points to an enclosing directory), not followed",
    }
    assert not any(e.usage for e in errors)


def test_symlinked_directory_followed_once(tmp_path: Path) -> None:
    _touch(tmp_path / "real" / "a.c")
    os.symlink("real", tmp_path / "alias")
    files, errors = collect_files([str(tmp_path)])
    assert len(files) == 1 and errors == []


def test_dangling_symlink_and_fifo_are_named(tmp_path: Path) -> None:
    _touch(tmp_path / "ok.c")
    os.symlink("gone.c", tmp_path / "dangling.c")
    os.mkfifo(tmp_path / "pipe.c")
    files, errors = collect_files([str(tmp_path)])
    assert files == [str(tmp_path / "ok.c")]
    messages = {Path(e.path).name: e.message for e in errors}
    assert messages == {
        "dangling.c": "dangling symlink (to 'gone.c'), skipped",
        "pipe.c": "a FIFO, not a source file; skipped",
    }
    # named explicitly, the FIFO is still not opened (that would block)
    files, errors = collect_files([str(tmp_path / "pipe.c")])
    assert files == [] and errors[0].message == "a FIFO, not a source file; skipped"
