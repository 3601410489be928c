"""Say what was not read: a kernel tree without its top-level Kconfig (or with one that cannot
be read) turns the dead-driver facts off, and `dpmlens check` says so in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_cli
from kernel_trees import K61

from dpmlens.kbuild import dead

LINUX_61 = K61
TOSA = "drivers/video/backlight/tosa_lcd.c"


def _tree(root: Path, *parts: str) -> Path:
    (root / "drivers" / "foo").mkdir(parents=True)
    (root / "drivers" / "foo" / "foo.c").write_text("int x;\n")
    (root / "include" / "linux").mkdir(parents=True)
    for p in parts:
        if p.endswith("/"):
            (root / p).mkdir(parents=True)
        else:
            (root / p).write_text("")
    return root / "drivers" / "foo" / "foo.c"


def test_a_partial_tree_names_what_is_missing(tmp_path: Path) -> None:
    f = _tree(tmp_path / "t")
    note = dead.not_read(str(f))
    assert note == (f"{tmp_path / 't'}: a partial kernel tree (no top-level Kconfig, Makefile, "
                    "scripts/kconfig/): dead-driver facts are off")
    f = _tree(tmp_path / "u", "Makefile", "scripts/kconfig/")
    assert "(no top-level Kconfig)" in (dead.not_read(str(f)) or "")


def test_an_unreadable_kconfig_is_named(tmp_path: Path) -> None:
    f = _tree(tmp_path / "t", "Makefile", "scripts/kconfig/")
    (tmp_path / "t" / "Kconfig").symlink_to(tmp_path / "nowhere")
    assert "(no top-level readable Kconfig)" in (dead.not_read(str(f)) or "")
    (tmp_path / "t" / "Kconfig").unlink()
    (tmp_path / "t" / "Kconfig").mkdir()  # a name that is there but cannot be read as a file
    assert "Kconfig" in (dead.not_read(str(f)) or "")


def test_a_whole_tree_or_no_tree_says_nothing(tmp_path: Path) -> None:
    f = _tree(tmp_path / "t", "Kconfig", "Makefile", "scripts/kconfig/")
    assert dead.not_read(str(f)) is None
    loose = tmp_path / "loose" / "x.c"
    loose.parent.mkdir()
    loose.write_text("int x;\n")
    assert dead.not_read(str(loose)) is None
    assert dead.notes_for([str(f), str(loose)]) == []


def _linux() -> Path:
    if not (LINUX_61 / TOSA).is_file():
        pytest.skip(f"{LINUX_61} is absent (Debian's linux-source-6.1, unpacked)")
    return LINUX_61


def test_partial_copy_of_6_1_says_it_and_the_full_tree_is_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    linux = _linux()
    part = tmp_path / "linux-part"
    for d in ("include/linux", "sound", "arch"):
        (part / d).mkdir(parents=True)
    (part / TOSA).parent.mkdir(parents=True)
    shutil.copy(linux / TOSA, part / TOSA)
    res = run_cli(capsys, "check", "--no-cache", str(part / TOSA))
    notes = [ln for ln in res.err_lines if ln.startswith("dpmlens: note:")]
    assert notes == [f"dpmlens: note: {part}: a partial kernel tree (no top-level Kconfig, "
                     "Makefile, scripts/kconfig/): dead-driver facts are off"]
    assert res.out.count("warning: mdelay") == 5  # the board file's busy-waits, as warnings
    res = run_cli(capsys, "check", "--no-cache", "-f", "json", str(part / TOSA))
    assert json.loads(res.out)["summary"]["notes"] == [notes[0][len("dpmlens: note: "):]]
    # the whole tree: MACH_TOSA sits under UNUSED_BOARD_FILES, the costs are quiet, no note
    res = run_cli(capsys, "check", "--no-cache", "-f", "json", str(linux / TOSA))
    doc = json.loads(res.out)
    assert doc["summary"]["notes"] == [] and doc["findings"] == []
    # 5 busy-waits (quiet: a dead board) and the one delay-beyond-spec hint of a sleep; a
    # busy-wait is no longer repeated as a delay-beyond-spec hint (one finding per wait)
    assert doc["summary"]["quiet_hidden"] == 6
    assert not any(ln.startswith("dpmlens: note:") for ln in res.err_lines)
