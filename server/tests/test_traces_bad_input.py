"""Bad input never raises: each problem is one line naming the file."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from traces_helpers import FIXTURES

from dpmlens.traces import load_traces
from dpmlens.traces.read.detect import NO_TRACES


def _one_error(path: Path) -> str:
    t = load_traces([path])
    assert len(t.errors) == 1, t.errors
    assert t.errors[0].startswith(f"{path}: ")
    return t.errors[0]


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.txt"
    p.write_bytes(b"")
    assert _one_error(p).endswith("empty file")


def test_binary_garbage(tmp_path: Path) -> None:
    p = tmp_path / "garbage.bin"
    p.write_bytes(os.urandom(70000))
    msg = _one_error(p)
    assert "tried dmesg, ftrace, perfetto" in msg


def test_unknown_text_format_names_the_formats_tried(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("shopping list\neggs\nmilk\n")
    msg = _one_error(p)
    assert "unknown format" in msg and "tried dmesg, ftrace, perfetto" in msg


def test_gz_name_on_non_gzip_data(tmp_path: Path) -> None:
    p = tmp_path / "trace.txt.gz"
    p.write_text("# tracer: nop\n")
    assert "not gzip data" in _one_error(p)


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / "ftrace_basic.txt").read_bytes() * 50)
    p = tmp_path / "trace.txt.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    t = load_traces([p])
    assert len(t.errors) == 1 and "truncated or corrupt" in t.errors[0]
    assert t.sample_count > 0


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("x")
    t = load_traces([tmp_path / "nope.txt", empty])
    assert t.errors == [f"{tmp_path / 'nope.txt'}: no such file or directory",
                        f"{empty}: {NO_TRACES}"]


def test_directory_reads_trace_content_and_ignores_notes(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("suspend took long on tuesday\n")
    (tmp_path / "run1.log").write_bytes((FIXTURES / "dmesg_current.txt").read_bytes())
    (tmp_path / "Makefile").write_text("all:\n")
    t = load_traces([tmp_path])
    assert t.errors == [] and t.ignored == [str(tmp_path / "notes.txt")]
    assert [f.format for f in t.files] == ["dmesg"] and t.sample_count == 4
    # only notes: the directory holds no traces, which is an error
    (tmp_path / "run1.log").unlink()
    assert load_traces([tmp_path]).errors == [f"{tmp_path}: {NO_TRACES}"]


def test_trace_cmd_binary_dat(tmp_path: Path) -> None:
    p = tmp_path / "trace.dat"
    p.write_bytes(b"\x17\x08\x44tracing6\x00\x00" + bytes(200))
    assert "trace-cmd report -i trace.dat > trace.txt" in _one_error(p)


def test_perfetto_suffix_with_garbage(tmp_path: Path) -> None:
    p = tmp_path / "x.perfetto-trace"
    p.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + os.urandom(100))
    t = load_traces([p])
    assert len(t.errors) == 1 and t.sample_count == 0


def test_text_with_nul_bytes_in_dmesg(tmp_path: Path) -> None:
    p = tmp_path / "d.txt"
    good = (FIXTURES / "dmesg_old.txt").read_bytes()
    p.write_bytes(good.replace(b"[  100.211800] calling", b"[  100.211800] call\x00ing", 1))
    t = load_traces([p])
    assert t.errors == []
    assert t.skipped_lines == 1


def test_unreadable_file(tmp_path: Path) -> None:
    p = tmp_path / "secret.txt"
    p.write_text("# tracer: nop\n")
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):  # running as root: permissions do not apply
            return
        assert "ermission" in _one_error(p)
    finally:
        p.chmod(0o644)


def test_sleepgraph_directory_counts_each_test_once(tmp_path: Path) -> None:
    for name in ("suspend-221122-101500", "suspend-221122-101600"):
        d = tmp_path / "multi" / name
        d.mkdir(parents=True)
        (d / "host_mem_ftrace.txt").write_bytes((FIXTURES / "trace_cmd_report.txt").read_bytes())
        (d / "host_mem_dmesg.txt").write_bytes((FIXTURES / "dmesg_old.txt").read_bytes())
    t = load_traces([tmp_path / "multi"])
    assert t.errors == []
    assert t.cycles == 2 and t.sample_count == 4
    skipped = [f for f in t.files if f.notes and "same test as" in f.notes[0]]
    assert len(skipped) == 2
    assert sorted({s.cycle for s in t.samples()}) == [0, 1]


def test_small_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / "ftrace_basic.txt").read_bytes())
    p = tmp_path / "t.txt.gz"
    p.write_bytes(data[: len(data) - 30])
    t = load_traces([p])
    assert t.files[0].format == "ftrace"
    assert len(t.errors) == 1 and "truncated or corrupt" in t.errors[0]
    assert t.sample_count > 0


def test_log_starting_with_a_newline_is_not_protobuf(tmp_path: Path) -> None:
    p = tmp_path / "d.txt"
    p.write_bytes(b"\n" + (FIXTURES / "dmesg_old.txt").read_bytes())
    t = load_traces([p])
    assert t.files[0].format == "dmesg" and t.sample_count == 5


def test_mutated_captures_never_raise(tmp_path: Path) -> None:
    """Cut and corrupt every fixture at many places: each load ends with a report."""
    import random

    rng = random.Random(1234)
    sources = sorted(p for p in FIXTURES.iterdir() if p.is_file() and p.suffix != ".py")
    for i in range(120):
        data = bytearray(rng.choice(sources).read_bytes())
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(data) + 1)
            op = rng.random()
            if op < 0.4 and pos < len(data):
                data[pos] = rng.randrange(256)
            elif op < 0.7:
                del data[pos : pos + rng.randint(1, 40)]
            else:
                data[pos:pos] = rng.choice([b"\n", b", ", b"[", b"]", b"\x00", b": ", b" err="])
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data) + 1)]
        p = tmp_path / f"m{i}.txt"
        p.write_bytes(bytes(data))
        t = load_traces([p])
        assert len(t.files) == 1
        for s in t.samples():
            assert s.duration_us >= 0


def test_text_quoting_log_lines_in_a_directory_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "howto.txt").write_text("Boot shows:\n[    0.000000] Linux version 6.12\n")
    (tmp_path / "host_mem_ftrace.txt").write_bytes(
        (FIXTURES / "trace_cmd_report.txt").read_bytes())
    t = load_traces([tmp_path])
    assert t.ignored == [str(tmp_path / "howto.txt")]
    assert [Path(f.path).name for f in t.files] == ["host_mem_ftrace.txt"]


def test_binary_counts_control_bytes_as_before() -> None:
    """detect._binary counts the control bytes in C (bytes.translate): the same decision as
    counting them one by one, on random heads of every mix and at the 1-in-20 bound."""
    import random

    from dpmlens.traces.read.detect import _binary

    rng = random.Random(20)
    for _ in range(3000):
        n = rng.randint(0, 5000)
        weight = rng.random() * 0.15
        head = bytes(rng.randrange(32) if rng.random() < weight else rng.randrange(32, 256)
                     for _ in range(n))
        sample = head[:4096]
        want = sum(1 for b in sample if b < 9 or 13 < b < 32) > len(sample) // 20
        assert _binary(head) == want
