"""Bad input: each problem is one line naming the file; the other files are still checked;
exit code 2 only for usage and configuration errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import (
    NOIRQ_WAKE,
    NOIRQ_WAKE_LINE,
    REPO,
    run_cli,
    run_process,
    slow_driver,
    write_driver,
)

WAKE = "[wake-setup-in-noirq]"


def _skipped(err: str) -> dict[str, str]:
    """stderr's `dpmlens: skipped: PATH: why` lines as {file name: why}."""
    out = {}
    for line in err.splitlines():
        if line.startswith("dpmlens: skipped: "):
            path, why = line[len("dpmlens: skipped: ") :].split(": ", 1)
            out[Path(path).name] = why
    return out


def test_binary_file_named_and_others_checked(tmp_path: Path, capsys) -> None:
    good = write_driver(tmp_path / "good.c")
    (tmp_path / "blob.c").write_bytes(b"\x7fELF\x02\x01\x01\0\0\0" + bytes(range(256)) * 40)
    r = run_cli(capsys, "check", str(tmp_path))
    assert r.code == 1  # the finding in good.c decides, not the skipped file
    assert f"{good}:{NOIRQ_WAKE_LINE}:2: warning:" in r.out
    assert _skipped(r.err) == {"blob.c": "binary file (contains NUL bytes), skipped"}


def test_non_utf8_bytes_are_analyzed(tmp_path: Path, capsys) -> None:
    comment = "/* Gr\xfc\xdfe, \xa9 ACME */ "
    latin1 = NOIRQ_WAKE.replace("struct foo {", comment + "struct foo {")
    src = tmp_path / "latin1.c"
    src.write_bytes(latin1.encode("latin-1") + b"\n/* stray \xff\xfe bytes */\n")
    r = run_cli(capsys, "check", "-f", "checkpatch", str(src))
    assert r.code == 1 and WAKE.strip("[]").upper() not in r.err
    assert f"#{NOIRQ_WAKE_LINE}: FILE: {src}:{NOIRQ_WAKE_LINE}:" in r.out
    assert "dpmlens: skipped" not in r.err


def test_empty_file_is_fine(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.c").write_bytes(b"")
    (tmp_path / "empty.h").write_text("\n\n")
    r = run_cli(capsys, "check", str(tmp_path))
    assert (r.code, r.out) == (0, "")
    assert r.err_lines == [r.err_lines[-1]]  # only the summary
    assert "2 files checked" in r.err


def test_large_generated_file(tmp_path: Path, capsys) -> None:
    # ~5 MB of generated helpers with a PM table at the end: parsed, analyzed, reported.
    body = "".join(
        f"static int gen_helper_{n}(int x)\n{{\n\treturn x * {n} + ({n} << 2);\n}}\n\n"
        for n in range(72000)
    )
    text = body + NOIRQ_WAKE
    assert len(text) > 5_000_000
    src = tmp_path / "generated.c"
    src.write_text(text)
    r = run_cli(capsys, "check", "-f", "json", str(src))
    doc = json.loads(r.out)
    lines = [f["line"] for f in doc["findings"] if f["rule"] == "wake-setup-in-noirq"]
    base = body.count("\n")
    assert lines == [base + NOIRQ_WAKE_LINE]  # the enable (the resume-side disable is fine)
    assert doc["summary"]["bytes_checked"] == len(text)


def test_unreadable_paths_named_others_checked(tmp_path: Path, capsys) -> None:
    write_driver(tmp_path / "good.c")
    os.mkfifo(tmp_path / "fifo.c")  # opening it would block: must not be read
    os.symlink("nowhere/missing.c", tmp_path / "dangling.c")
    (tmp_path / "dir.c").mkdir()  # a directory where a file is expected: walked, not read
    write_driver(tmp_path / "dir.c" / "inner.c")
    r = run_cli(capsys, "check", str(tmp_path))
    assert r.code == 1
    assert r.out.count(WAKE) == 2  # one each in good.c and dir.c/inner.c
    assert _skipped(r.err) == {
        "fifo.c": "a FIFO, not a source file; skipped",
        "dangling.c": "dangling symlink (to 'nowhere/missing.c'), skipped",
    }


def test_symlink_loop_named_once(tmp_path: Path, capsys) -> None:
    write_driver(tmp_path / "drivers" / "good.c")
    os.symlink("..", tmp_path / "drivers" / "loop")
    r = run_cli(capsys, "check", str(tmp_path / "drivers"))
    assert r.code == 1 and r.out.count(WAKE) == 1
    loop = "symlink loop (points to an enclosing directory), not followed"
    assert _skipped(r.err) == {"loop": loop}


def test_missing_operand_is_exit_2_but_the_rest_is_checked(tmp_path: Path, capsys) -> None:
    good = write_driver(tmp_path / "good.c")
    r = run_cli(capsys, "check", str(tmp_path / "typo.c"), str(good))
    assert r.code == 2
    assert WAKE in r.out
    assert f"dpmlens: error: {tmp_path / 'typo.c'}: no such file or directory" in r.err_lines


def test_baseline_that_is_a_directory(tmp_path: Path, capsys) -> None:
    good = write_driver(tmp_path / "good.c")
    r = run_cli(capsys, "check", "--baseline", str(tmp_path), str(good))
    assert r.code == 2
    assert r.err_lines == [f"dpmlens: error: {tmp_path}: cannot read baseline: Is a directory"]


def _data_copy(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(REPO / "rules", data / "rules")
    if (REPO / "grammars").is_dir():
        shutil.copytree(REPO / "grammars", data / "grammars")
    return data


def test_broken_rule_yaml_is_one_line_exit_2_other_rules_run(tmp_path: Path) -> None:
    data = _data_copy(tmp_path)
    broken = data / "rules" / "msleep-under-20ms.yaml"
    broken.write_text("id: msleep-under-20ms\nmessage: [unclosed\n")
    src = write_driver(tmp_path / "good.c")
    env = {"DPMLENS_DATA_DIR": str(data)}
    r = run_process("check", str(src), env=env)
    assert r.code == 2
    assert "Traceback" not in r.err
    errors = [line for line in r.err_lines if line.startswith("dpmlens: error: ")]
    import yaml

    # libyaml's parser (rules/loader.py uses it where PyYAML has it) words it its own way
    problem = ("did not find expected ',' or ']'" if yaml.__with_libyaml__
               else "expected ',' or ']', but got '<stream end>'")  # fmt: skip
    assert errors == [f"dpmlens: error: {broken}:3: invalid YAML: {problem}"]
    assert WAKE in r.out  # the rules that loaded still ran
    listed = run_process("rules", "list", env=env)
    assert listed.code == 2 and "wake-setup-in-noirq" in listed.out
    assert "msleep-under-20ms" not in listed.out


def test_broken_table_is_fatal(tmp_path: Path) -> None:
    data = _data_copy(tmp_path)
    table = data / "rules" / "tables" / "spec-delays.yaml"
    table.write_text("usb: {trstrcy: [\n")
    r = run_process(
        "check", str(write_driver(tmp_path / "good.c")), env={"DPMLENS_DATA_DIR": str(data)}
    )
    assert r.code == 2 and r.out == ""
    assert r.err_lines == [line for line in r.err_lines if str(table) in line]
    assert len(r.err_lines) == 1 and "invalid YAML" in r.err


def test_worker_crash_names_the_file_and_the_run_goes_on(tmp_path: Path, capsys, monkeypatch):
    # A crash in native code (tree-sitter) kills the worker process without a Python
    # exception. Simulate one: the forked workers inherit this patched engine function.
    import signal

    import dpmlens.engine.analyze

    real = dpmlens.engine.analyze.analyze_model

    def crashing(model, *args, **kwargs):
        if model.path.endswith("crash.c"):
            os.kill(os.getpid(), signal.SIGKILL)  # like a segfault or the OOM killer
        return real(model, *args, **kwargs)

    monkeypatch.setattr(dpmlens.engine.analyze, "analyze_model", crashing)
    for n in range(40):
        write_driver(tmp_path / f"d{n:02}.c")
    write_driver(tmp_path / "crash.c")
    r = run_cli(capsys, "check", "--jobs", "2", str(tmp_path))
    assert r.code == 1
    assert r.out.count(WAKE) == 40  # one in each of the 40 good files
    assert _skipped(r.err) == {"crash.c": "the analysis crashed its worker process; file skipped"}


def test_stopped_worker_names_the_file_and_the_run_finishes(tmp_path: Path, capsys,
                                                            monkeypatch):
    """issue 11, class 7: a worker that stops (SIGSTOP, or a file that never finishes) used
    to hang `check --jobs 2` for ever; now the file gets DPMLENS_FILE_TIMEOUT seconds."""
    import signal
    import time

    import dpmlens.engine.analyze

    real = dpmlens.engine.analyze.analyze_model

    def stopping(model, *args, **kwargs):
        if model.path.endswith("stop.c"):
            os.kill(os.getpid(), signal.SIGSTOP)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(dpmlens.engine.analyze, "analyze_model", stopping)
    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "3")
    for n in range(40):
        write_driver(tmp_path / f"d{n:02}.c")
    write_driver(tmp_path / "stop.c")
    t0 = time.monotonic()
    r = run_cli(capsys, "check", "--jobs", "2", str(tmp_path))
    assert time.monotonic() - t0 < 60
    assert r.code == 1
    assert r.out.count(WAKE) == 40  # one in each of the 40 good files
    assert _skipped(r.err) == {"stop.c": "no result in time: over the 3 seconds limit for a "
                               "file's analysis (set DPMLENS_FILE_TIMEOUT to raise it); skipped"}




@pytest.mark.parametrize("how", ["-j 1", "one file"])
def test_file_over_the_time_budget_is_skipped_without_a_pool(tmp_path: Path, capsys,
                                                            monkeypatch, how: str) -> None:
    """issue 11: `check -j 1`, and a run of fewer files than fill a pool, analyzed in the
    CLI's own process with no time budget: one slow file held the run for as long as it
    took. They now get DPMLENS_FILE_TIMEOUT per file like `--jobs 2`, and the same line."""
    import time

    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "1.5")
    for n in range(3):
        write_driver(tmp_path / f"d{n}.c")
    slow = slow_driver(tmp_path / "slow.c")
    args = ["--jobs", "1", str(tmp_path)] if how == "-j 1" else ["--jobs", "2", str(slow)]
    t0 = time.monotonic()
    r = run_cli(capsys, "check", *args)
    elapsed = time.monotonic() - t0
    assert _skipped(r.err) == {"slow.c": "no result in time: over the 1.5 seconds limit for a "
                               "file's analysis (set DPMLENS_FILE_TIMEOUT to raise it); skipped"}
    assert r.out.count(WAKE) == (3 if how == "-j 1" else 0)
    assert elapsed < 30, elapsed
