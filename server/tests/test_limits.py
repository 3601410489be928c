"""issue 11, classes 2 and 3: unbounded input is bounded, and says which limit it hit.

Real CLI runs (in-process or as a child process with the limit lowered through its
environment variable), real files: FIFOs, a symlink to /dev/zero, gzip bombs, one-line files.
"""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import pytest
from cli_helpers import NOIRQ_WAKE_LINE, run_cli, run_process, write_driver
from traces_helpers import FIXTURES

from dpmlens.core import limits
from dpmlens.core.nesting import max_depth
from dpmlens.traces.read.load import load_traces

BASIC = FIXTURES / "ftrace_basic.txt"
DEEP = ("static int foo_suspend(struct device *d)\n" + "{" * 50_000 + "msleep(5);"
        + "}" * 50_000 + "\nstatic SIMPLE_DEV_PM_OPS(p, foo_suspend, NULL);\n")


def _skips(err: str) -> dict[str, str]:
    out = {}
    for line in err.splitlines():
        if line.startswith("dpmlens: skipped: "):
            path, why = line[len("dpmlens: skipped: "):].split(": ", 1)
            out[Path(path).name] = why
    return out


def test_limit_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert limits.SOURCE_BYTES.value == 32 << 20
    monkeypatch.setenv("DPMLENS_MAX_SOURCE_BYTES", "2M")
    assert limits.SOURCE_BYTES.value == 2 << 20
    assert limits.SOURCE_BYTES.describe() == "2 MiB"
    monkeypatch.setenv("DPMLENS_MAX_SOURCE_BYTES", "lots")  # a typo keeps the bound
    assert limits.SOURCE_BYTES.value == 32 << 20
    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "2.5")
    assert limits.FILE_SECONDS.describe() == "2.5 seconds"


def test_check_skips_a_file_over_the_size_limit(tmp_path: Path) -> None:
    good = write_driver(tmp_path / "good.c")
    big = tmp_path / "big.c"
    big.write_bytes(b'static const char s[] = "' + b"a" * 300_000 + b'";\n')
    r = run_process("check", str(tmp_path), env={"DPMLENS_MAX_SOURCE_BYTES": "100K"})
    assert r.code == 1 and f"{good}:{NOIRQ_WAKE_LINE}:2: warning:" in r.out
    why = _skips(r.err)["big.c"]
    assert "over the 100 KiB limit for a C source file" in why
    assert "set DPMLENS_MAX_SOURCE_BYTES to raise it" in why


def test_check_skips_pathological_nesting_quickly(tmp_path: Path, capsys) -> None:
    good = write_driver(tmp_path / "good.c")
    (tmp_path / "deep.c").write_text(DEEP)
    t0 = time.monotonic()
    r = run_cli(capsys, "check", str(tmp_path))
    assert time.monotonic() - t0 < 10  # was over 30 s
    assert r.code == 1 and f"{good}:{NOIRQ_WAKE_LINE}:2: warning:" in r.out
    assert _skips(r.err)["deep.c"].startswith("too deeply nested to analyze (500")


def test_nesting_depth_counts_brackets() -> None:
    assert max_depth(b"int f(void) { if (a[1]) { g(); } }") == 3
    assert max_depth(b"}}} {") == 0  # stray closers never make it negative
    assert max_depth(b"{" * 10 + b"}" * 10, at_least=100) == 0  # too few: not computed


def test_trace_report_skips_fifo_and_dev_zero(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "pipe_ftrace.txt"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.perfetto-trace"
    zero.symlink_to("/dev/zero")
    t0 = time.monotonic()
    code = __import__("dpmlens.cli", fromlist=["main"]).main(
        ["trace", "report", str(BASIC), str(fifo), str(zero)])
    out, err = capsys.readouterr()
    assert time.monotonic() - t0 < 10  # a FIFO used to block for ever
    assert code == 0 and "11 samples" in out
    assert f"{fifo}: a FIFO, not a trace file; skipped" in err
    assert f"{zero}: a device, not a trace file; skipped" in err


def test_gzip_bomb_stops_at_the_decompressed_limit(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.pb.gz"
    with gzip.open(bomb, "wb") as f:
        for _ in range(64):
            f.write(bytes(1 << 20))  # 64 MiB of zeros
    monkeypatch.setenv("DPMLENS_MAX_DECOMPRESSED_BYTES", "8M")
    t0 = time.monotonic()
    ts = load_traces([str(BASIC), str(bomb)])
    assert time.monotonic() - t0 < 10
    assert ts.sample_count == 11  # the good file beside it
    (err,) = ts.errors
    assert str(bomb) in err


def test_perfetto_zeros_are_refused_at_once(tmp_path: Path) -> None:
    """A Trace holds only field 1 (packets): zeros are no trace, not 500M empty fields."""
    bomb = tmp_path / "zeros.pb.gz"
    with gzip.open(bomb, "wb") as f:
        for _ in range(256):
            f.write(bytes(1 << 20))
    t0 = time.monotonic()
    ts = load_traces([str(bomb)])
    assert time.monotonic() - t0 < 10
    assert ts.sample_count == 0 and len(ts.errors) == 1


def test_gzip_text_over_the_limit_names_it(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big_ftrace.txt.gz"
    with gzip.open(big, "wb") as f:
        f.write(BASIC.read_bytes())
        f.write(b"# filler\n" * 400_000)
    monkeypatch.setenv("DPMLENS_MAX_DECOMPRESSED_BYTES", "1M")
    ts = load_traces([str(big)])
    assert ts.sample_count == 11  # what was read before the limit
    (err,) = ts.errors
    assert "over the 1 MiB limit for a decompressed trace" in err
    assert "DPMLENS_MAX_DECOMPRESSED_BYTES" in err and "kept what was read" in err


def test_one_huge_dmesg_line_is_skipped_not_held(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    good = (FIXTURES / "dmesg_current.txt").read_bytes()
    path = tmp_path / "long_dmesg.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write(good)
        f.write(b"[  1.000000] x" + b"y" * (3 << 20) + b"\n")
        f.write(good)
    monkeypatch.setenv("DPMLENS_MAX_LINE_BYTES", "64K")
    one = load_traces([str(FIXTURES / "dmesg_current.txt")]).sample_count
    ts = load_traces([str(path)])
    assert ts.sample_count == 2 * one > 0
    reasons = ts.skip_reasons()
    assert reasons["line longer than the 64 KiB limit (set DPMLENS_MAX_LINE_BYTES to raise "
                   "it)"] == 1


def test_the_nesting_bound_carried_over_edits_refuses_what_a_count_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    from dpmlens.core import nesting

    monkeypatch.setenv("DPMLENS_MAX_NESTING", "12")
    counted = 0
    count = nesting.depth_bound

    def counting(source: bytes, limit: int) -> int:
        nonlocal counted
        counted += 1
        return count(source, limit)

    rng = random.Random(7)
    text = b"int f(void) { if (a[1]) { g(); } }\n" * 3
    carried = nesting.EditedNesting()
    for _ in range(3000):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.6:
            text = text[:at] + rng.choice([b"{", b"(", b"[", b"}", b"x", b"{{"]) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 3) :]
        with monkeypatch.context() as m:
            m.setattr(nesting, "depth_bound", counting)
            got = carried.too_deep(text)
        assert (got is None) == (nesting.too_deep(text) is None)
    assert 0 < counted < 3000  # the carried bound decided some edits without a count
