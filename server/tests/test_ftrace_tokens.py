"""The ftrace reader's event scan in C (_ftrace_tokens.c) against its Python reference
(ftrace_tokens.python_tokens): the same tokens, and the same import, on every real capture the
tests hold (../shared/traces, the lab's captures, the fixtures) and on odd lines."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fgraph_corpus import dump
from hypothesis import example, given, settings
from hypothesis import strategies as st
from traces_helpers import FIXTURES, REPO, SHARED_TRACES

from dpmlens.traces import load_traces
from dpmlens.traces.read import ftrace, ftrace_tokens

C_TOKENS = ftrace_tokens.c_tokens(ftrace._PLAIN)
PY_TOKENS = ftrace_tokens.python_tokens(ftrace._EVENT)
needs_c = pytest.mark.skipif(C_TOKENS is None, reason="_ftrace_tokens not built (make builds "
                             "it: server/tools/build_ftrace_tokens.py)")


LAB = REPO / "test-fixtures" / "lab"


def captures(every: bool = False) -> list[Path]:
    """The fixtures, ../shared/traces and the lab's captures: all of them (413 MB unpacked,
    minutes) with `every`, else the smallest of each lab directory (its kernel and set-up)."""
    roots = [FIXTURES, LAB, SHARED_TRACES]
    found = sorted({p for r in roots if r.is_dir()
                    for pat in ("*trace*.txt", "*trace*.txt.gz", "*trace*.txt.xz")
                    for p in r.rglob(pat)})
    if every:
        return found
    smallest: dict[str, Path] = {}
    for p in found:
        if p.is_relative_to(LAB):
            top = p.relative_to(LAB).parts[0]
            if top not in smallest or p.stat().st_size < smallest[top].stat().st_size:
                smallest[top] = p
    return [p for p in found if not p.is_relative_to(LAB)] + sorted(smallest.values())


def every() -> bool:
    """The whole corpus in the marked slow suite (make test-slow)."""
    return bool(os.environ.get("DPMLENS_SLOW_TESTS"))


def read(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)
    return lzma.decompress(data) if path.suffix == ".xz" else data


def norm(tokens: object) -> list[tuple]:
    """The tokens, comparable (a nan timestamp is not equal to itself)."""
    return [t[:5] + ("nan" if t[5] is not None and t[5] != t[5] else t[5],)
            for t in tokens]  # type: ignore[attr-defined]


def blocks(data: bytes, chunk: int) -> list[tuple[bytes, int]]:
    """(buf, limit) as ftrace.parse hands them to the scan: whole lines of about `chunk`."""
    out, carry = [], b""
    for i in range(0, len(data), chunk):
        buf = carry + data[i : i + chunk]
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
            continue
        out.append((buf, cut + 1))
        carry = buf[cut + 1 :]
    if carry:
        out.append((carry + b"\n", len(carry) + 1))
    return out


def test_the_corpus_is_real() -> None:
    files = captures(every=True)
    assert len(files) >= 100, files  # the lab's captures and the fixtures, at least
    assert len(captures()) >= 20
    assert any(b"device_pm_callback_start" in read(p) for p in files)


@needs_c
@pytest.mark.parametrize("chunk", [1 << 22, 4093])
def test_same_tokens_on_real_captures(chunk: int) -> None:
    assert C_TOKENS is not None
    n = 0
    for path in captures(every()):
        for buf, limit in blocks(read(path), chunk):
            want = norm(PY_TOKENS(buf, limit))
            assert norm(C_TOKENS(buf, limit)) == want, path
            n += len(want)
    assert n > 100_000


_PIECES = [": ", ":", " ", "\n", "\r\n", "\r", "device_pm_callback_start", "device_pm_callback_end",
           "suspend_resume", "tracing_mark_write", " SUSPEND START", " RESUME COMPLETE",
           "msleep_cal", "msleep_interruptible_ret", "udelay_ret", "xudelay_ret", "udelay_re",
           "schedule_timeout_cal", "mutex_lock_slowpath_ret", "mutex_lock_slowpath_cal",
           "sched_switch", "sched_waking", "rpm_resume", "rpm_usage", "rp", "funcgraph_entry",
           "12.5", "1_0.5", "nan", "-3", "+4.25", "1e3", "1.2.3", ".", "inf", "0x10", "\x00",
           "kworker/u8:3-193", "[002]", "d..1.", "é", "7", "a"]


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.integers(0, 400))
def test_same_tokens_on_odd_text(pieces: list[str], cut: int) -> None:
    assert C_TOKENS is not None
    buf = "".join(pieces).encode()
    limit = min(cut, len(buf))
    if limit and buf[limit - 1] != 0x0A:  # the scan is given whole lines
        buf = buf[:limit] + b"\n" + buf[limit:]
        limit += 1
    assert norm(C_TOKENS(buf, limit)) == norm(PY_TOKENS(buf, limit))


@needs_c
def test_odd_lines_by_hand() -> None:
    assert C_TOKENS is not None
    buf = (b"x-1 [000] .... 12.5: suspend_resume: dpm_suspend[2] begin\r\n"
           b"nospace: msleep_cal: (msleep+0x0/0x40) time=10\n"
           b" t-2 [001] .... 1_0.5: udelay_ret: (a+0x1/0x2 <- __const_udelay) arg1=0x1\n"
           b" t-2 [001] .... nan: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n"
           b" t-2 [001] .... 3.0: suspend_resume:\n"
           b" t-2 [001] .... 3.0: tracing_mark_write: SUSPEND STAR\n"
           b" t-2 [001] .... 3.0: rpm_resume: 0000:00:14.0 flags=4 cnt=1\n"
           b" t-2 [001] .... 4.0: device_pm_callback_end: pci 0000:00:14.0, err=0\r\n")
    got = norm(C_TOKENS(buf, len(buf)))
    assert got == norm(PY_TOKENS(buf, len(buf)))
    # "suspend_resume:" with no space and "SUSPEND STAR" do not match; an rpm_* event has no
    # timestamp (read elsewhere); "nan" is one to float() (the reader drops it: impossible)
    assert [t[5] for t in got] == [12.5, None, 10.5, "nan", None, 4.0]
    assert got[0][2] == buf.index(b"\r")  # the line's end before its "\r"


_TS_EDGES = ["9007199254740992", "9007199254740993", "900719925474099.3", "90071992547409.93",
             "0.0000000000000000000001", "0.00000000000000000000001", "1" * 22 + ".5", ".5",
             "5.", "0", "00000000000000000000000000012.25", "123456.000001", "999999999999999.9",
             "4503599627370497.5", "0.1", "1.", "7205759403792794.1"]


def _ts_strings() -> st.SearchStrategy[str]:
    digits = st.text("0123456789", min_size=1, max_size=26)
    return st.one_of(st.sampled_from(_TS_EDGES), digits,
                     st.tuples(digits, st.text("0123456789", max_size=24)).map(".".join))


@needs_c
@settings(max_examples=3000, deadline=None)
@given(st.lists(_ts_strings(), min_size=1, max_size=30))
def test_timestamps_read_as_float_reads_them(stamps: list[str]) -> None:
    # the C scan reads most timestamps without strtod (exact_decimal): bit for bit float()'s
    assert C_TOKENS is not None
    buf = "".join(f" t-2 [001] .... {x}: suspend_resume: a[1] begin\n" for x in stamps).encode()
    got = [t[5] for t in C_TOKENS(buf, len(buf))]
    assert [x.hex() for x in got] == [float(x).hex() for x in stamps]


@needs_c
def test_dots_alone_are_no_timestamp() -> None:
    # "." and ".." made the C scan raise float()'s ValueError (main at 3a3c869): no number,
    # as in the Python scan (the reader skips the line: "no timestamp before the event name")
    assert C_TOKENS is not None
    for ts in (b".", b"..", b"...", b"1..2", b"", b".5", b"5."):
        buf = b" t-2 [001] .... " + ts + b": suspend_resume: a[1] begin\n"
        assert norm(C_TOKENS(buf, len(buf))) == norm(PY_TOKENS(buf, len(buf))), ts


def _load(path: Path, pure: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("DPMLENS_PURE_SCAN", "1" if pure else "0")
    return dump(load_traces([path]))


@needs_c
def test_same_import_on_real_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything an import leaves (fgraph_corpus.dump: every sample, delay, step, skipped
    line by reason) is the same with the C scan and with the Python one."""
    for path in captures(every()):
        assert _load(path, False, monkeypatch) == _load(path, True, monkeypatch), path


def test_pure_scan_is_used_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPMLENS_PURE_SCAN", "1")
    tokens = ftrace_tokens.scanner(ftrace._EVENT, ftrace._PLAIN)
    assert tokens.__name__ == "tokens" and not hasattr(tokens, "__self__")
    monkeypatch.setenv("DPMLENS_PURE_SCAN", "0")
    assert (ftrace_tokens.scanner(ftrace._EVENT, ftrace._PLAIN) is C_TOKENS) or C_TOKENS is None


# The C scan writes four of _EVENT's forms into its code (the callback events to the line's
# end, "suspend_resume: +", the two trace_marker texts) and takes the "<name>: " ones from
# ftrace._PLAIN: a change to _EVENT must change _ftrace_tokens.c and _PLAIN alike.
EVENT_SHA256 = "2fe11acb71280b63"


def test_event_pattern_is_the_one_the_c_scan_mirrors() -> None:
    got = hashlib.sha256(ftrace._EVENT.pattern).hexdigest()[:16]
    assert got == EVENT_SHA256, ("ftrace._EVENT changed: make _ftrace_tokens.c and "
                                 "ftrace._PLAIN match it, then update EVENT_SHA256")


@needs_c
def test_every_plain_name_is_found_by_both() -> None:
    assert C_TOKENS is not None
    for name in ftrace._PLAIN:
        buf = b" t-1 [000] .... 1.5: " + name + b": x\n"
        want = norm(PY_TOKENS(buf, len(buf)))
        assert len(want) == 1, name  # _PLAIN holds only names _EVENT matches
        assert norm(C_TOKENS(buf, len(buf))) == want, name
        cut = buf.replace(b": x", b":x")  # no space after the colon: neither matches
        assert norm(C_TOKENS(cut, len(cut))) == norm(PY_TOKENS(cut, len(cut))) == [], name


# -- the delay kprobes paired in C (ftrace_tokens.pairing, _ftrace_tokens.c pairing_step) --

C_PAIRING = ftrace_tokens.pairing(ftrace._PLAIN, ftrace._DELAY_NAMES, ftrace._OTHER_RETS) \
    if os.environ.get("DPMLENS_PURE_SCAN") != "1" else None
needs_pairing = pytest.mark.skipif(C_PAIRING is None, reason="_ftrace_tokens not built")
MULTITEST = REPO / "bench-data" / "pm-graph-multitest"  # `make bench-multitest` unpacks it


def everything(traces: object) -> dict:
    """fgraph_corpus.dump, plus what it leaves out and the pairing writes: the delay columns
    in their order, the thread activity spans in theirs, the kprobe threads."""
    store = traces.store  # type: ignore[attr-defined]
    dl = store.delays
    return {**dump(traces),
            "delay_rows": [[dl.names[dl.funcs[i]], dl.names[dl.callers[i]], dl.threads[i],
                            dl.cycles[i], dl.samples[i], dl.calls[i], dl.totals[i],
                            dl.firsts[i], dl.lasts[i]] for i in range(len(dl))],
            "names": list(dl.names),
            "activity": list(store.activity.spans.items()),
            "kprobe_threads": sorted(store.activity.kprobe_threads)}


def _load_as(paths: list[Path], how: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    """`how`: "pure" (the Python scan and pairing: the reference), "scan" (the C scan, the
    pairing in Python), "c" (both in C)."""
    monkeypatch.setenv("DPMLENS_PURE_SCAN", "1" if how == "pure" else "0")
    monkeypatch.setenv("DPMLENS_PY_PAIRING", "1" if how == "scan" else "0")
    return everything(load_traces(paths))


def _with_delays() -> list[Path]:
    return [p for p in captures(every()) if b"_cal: (" in read(p)]


@needs_pairing
def test_the_pairing_takes_the_delay_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a real capture with delay kprobes most delay lines never reach the Python loop, and
    what the import leaves is the same as with the pairing in Python."""
    path = SHARED_TRACES / "pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late" \
        / "ivybridge_mem_ftrace.txt"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    handed: list[int] = []
    real = ftrace_tokens.pairing

    def counting(plain: object, delays: object, others: object = ()) -> object:
        inner = real(plain, delays, others)  # type: ignore[arg-type]
        assert inner is not None

        def pairing(*args: object) -> Iterator[object]:
            # lazily, as the reader pulls them: the pairing reads the caches the loop fills
            handed.append(0)
            for tok in inner(*args):  # type: ignore[arg-type]
                handed[-1] += 1
                yield tok
        return pairing

    monkeypatch.setattr(ftrace_tokens, "pairing", counting)
    got = _load_as([path], "c", monkeypatch)
    monkeypatch.setattr(ftrace_tokens, "pairing", real)
    assert got == _load_as([path], "scan", monkeypatch)
    assert got["delay_calls"] > 100
    data = read(path)
    assert C_TOKENS is not None
    every_token = len(C_TOKENS(data, len(data)))
    delay_lines = sum(data.count(b": " + n + b": ") for n in ftrace._DELAY_NAMES)
    assert sum(handed) <= every_token - delay_lines // 2, (sum(handed), every_token, delay_lines)


@needs_pairing
def test_same_import_three_ways_on_captures_with_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _with_delays()
    assert paths, "no capture with delay kprobes"
    for path in paths:
        want = _load_as([path], "pure", monkeypatch)
        assert _load_as([path], "scan", monkeypatch) == want, path
        assert _load_as([path], "c", monkeypatch) == want, path


@needs_pairing
@pytest.mark.skipif(not MULTITEST.is_dir(), reason="bench-data/pm-graph-multitest absent "
                    "(make bench-multitest unpacks it)")
def test_same_import_on_the_multitest(monkeypatch: pytest.MonkeyPatch) -> None:
    """pm-graph's 100-run multitest (~950,000 delay kprobe lines): its first tests as one
    load (the caches shared across files), and all 100 in the slow suite."""
    paths = sorted(MULTITEST.glob("*/*_ftrace.txt"))[: None if every() else 4]
    assert _load_as(paths, "c", monkeypatch) == _load_as(paths, "pure", monkeypatch)


_TASKS = ("kworker/0:1-10", "<...>-159", "a b-7", "irq/9-acpi-88")


def _kprobe_text(steps: list[tuple[int, int, int, int]]) -> str:
    """A sleepgraph-like capture from (what, task, cpu, dt) steps: delay calls and returns
    (nested, lost, returning before their call), callbacks around them, -dev probes, the
    stamp, phase markers, trace markers and broken lines."""
    lines, t = [], 100.0
    for what, task, cpu, dt in steps:
        t += dt * 1e-6 - (3e-6 if dt == 7 else 0.0)
        head = f"{_TASKS[task]:>20} [{cpu:03d}] d... {t:.6f}: "
        f = ("msleep", "udelay", "schedule_timeout", "usleep_range")[(task + cpu) % 4]
        lines.append({
            0: head + f"{f}_cal: ({f}+0x0/0x40) time=10",
            1: head + f"{f}_ret: (caller{cpu}+0x3ab/0x6c0 [mod] <- {f}) arg1=0x{dt:x}",
            2: head + f"msleep_cal: (msleep+0x0/0x40) time={dt}",
            3: head + "msleep_ret: (hub_port_reset+0x1/0x2 <- msleep) arg1=0x0",
            4: head + f"device_pm_callback_start: drv dev{cpu}, parent: none, bus [suspend]",
            5: head + f"device_pm_callback_end: drv dev{cpu}, err=0",
            6: head + "suspend_resume: dpm_suspend[2] begin",
            7: head + "suspend_resume: dpm_suspend[2] end",
            8: "# suspend-112233-445566 host mem 6.1.0",
            9: head + "tracing_mark_write: SUSPEND START",
            10: head + "mutex_lock_slowpath_cal: (mutex_lock_slowpath+0x0/0x10)",
            11: head + "mutex_lock_slowpath_ret: (foo+0x1/0x2 <- mutex_lock_slowpath) arg1=0x0",
            12: head.replace(f"{t:.6f}", "nan") + f"{f}_ret: (x+0x1/0x2 <- {f}) arg1=0x0",
            13: head + f"{f}_ret: (no caller here) arg1=0x0",
            14: head + f"udelay_cal: (__const_udelay+0x0/0x50) loops={dt}\r",
            15: head + "ksys_sync_cal: (ksys_sync+0x0/0x10)",
            16: head + "ksys_sync_ret: (x+0x1/0x2 <- ksys_sync) arg1=0x0",
            # callbacks off the common path: an error, another phase and its markers, an
            # empty info (defers to the marker's stage), a carriage return
            17: head + f"device_pm_callback_end: drv dev{cpu}, err=-16",
            18: head + f"device_pm_callback_start: drv dev{cpu}, parent: none, bus [resume]",
            19: head + "suspend_resume: dpm_resume[16] " + ("begin" if dt % 2 else "end"),
            20: head + f"device_pm_callback_start: drv2 dev{dt}, parent: dev{cpu}, [suspend]",
            21: head + f"device_pm_callback_end: drv2 dev{dt}, err=0",
            22: head + f"device_pm_callback_end: drv dev{cpu}, err=0\r",
        }[what])
    return "\n".join(lines) + "\n"


@needs_pairing
@settings(max_examples=150, deadline=None)
# a delay inside another of its thread (on another cpu); a lost call; a stamp between a call
# and its return; a return before its call
@example([(0, 1, 0, 3), (0, 1, 1, 3), (1, 1, 1, 3), (1, 1, 0, 3)], 1 << 22)
@example([(0, 2, 0, 3), (0, 2, 0, 3), (1, 2, 0, 3), (0, 0, 1, 1), (8, 0, 0, 0), (1, 0, 1, 7)],
         64)
# callbacks: nested starts of one device, an end in another phase, ends with errors, a
# start whose payload was first seen under another marker stage
@example([(6, 0, 0, 1), (4, 0, 0, 1), (4, 0, 0, 1), (5, 0, 0, 1), (19, 1, 1, 1), (18, 1, 0, 1),
          (20, 2, 1, 3), (5, 1, 0, 1), (17, 1, 1, 1), (21, 2, 1, 3), (22, 0, 0, 1), (7, 0, 0, 1)],
         300)
@given(st.lists(st.tuples(st.integers(0, 22), st.integers(0, 3), st.integers(0, 2),
                          st.integers(0, 9)), max_size=60),
       st.sampled_from([64, 300, 1 << 22]))
def test_same_import_on_odd_kprobe_text(tmp_path_factory: pytest.TempPathFactory,
                                        steps: list[tuple[int, int, int, int]],
                                        chunk: int) -> None:
    """Made-up kprobe and callback lines in every order (small blocks: calls and returns in
    different blocks, a stamp between them): the same import with the pairing in C and in
    Python."""
    path = tmp_path_factory.mktemp("odd") / "odd_ftrace.txt"
    # first every task's calls and returns once, in order: the caches the pairing reads
    # (a thread, a payload is the Python loop's the first time it comes) are then warm
    warm = [(w, task, cpu, 1) for task in range(4) for cpu in range(3) for w in (0, 1)]
    # and each callback's start and end (with the -dev probe's call and return) once, in and
    # out of its phase's markers
    each = [(task, cpu) for task in range(4) for cpu in range(3)]
    warm += [(6, 0, 0, 1), *((w, t, c, 1) for t, c in each for w in (4, 5, 20, 21, 10, 11)),
             (7, 0, 0, 1), (19, 0, 0, 1), *((w, t, c, 1) for t, c in each for w in (18, 17)),
             (19, 0, 0, 2)]
    path.write_text("# tracer: nop\n" + _kprobe_text(warm + steps))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ftrace, "CHUNK", chunk)
        assert _load_as([path], "c", mp) == _load_as([path], "pure", mp)


_OD_OPS = st.lists(st.tuples(st.booleans(), st.integers(-3, 40), st.integers(0, 5)), max_size=300)


@needs_pairing
@settings(max_examples=300, deadline=None)
@given(_OD_OPS)
def test_open_delays_table_is_a_dict(ops: list[tuple[bool, int, int]]) -> None:
    # the C pairing's table of open delay calls (linear probing, entries moved back on a
    # removal, grown past half full) against the dict it stands for in ftrace._scan
    table, ref = ftrace_tokens.delay_tables()[0], {}
    for i, (put, tid, func) in enumerate(ops):
        key = (tid, func)
        if put:
            value = (float(i), float("nan") if i % 3 else 1.5, bool(i % 2))
            table[key] = ref[key] = value
        else:
            got, want = table.pop(key, None), ref.pop(key, None)
            assert (got is None) == (want is None)
            if got is not None:
                assert got[0] == want[0] and got[1] is want[1] and got[2] is want[2]
        assert len(table) == len(ref)
    for key in list(ref):
        assert table.pop(key, None) is not None
    assert len(table) == 0


@needs_pairing
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-3, 40)), max_size=300))
def test_thread_set_is_a_set(ops: list[tuple[int, int]]) -> None:
    # the threads inside a delay, in C while the C pairing runs, against the set it stands for
    table, ref = ftrace_tokens.delay_tables()[1], set()
    for op, tid in ops:
        if op == 0:
            table.add(tid)
            ref.add(tid)
        elif op == 1:
            table.discard(tid)
            ref.discard(tid)
        assert (tid in table) == (tid in ref)
        assert len(table) == len(ref)
    assert [t for t in range(-3, 41) if t in table] == sorted(ref)



@needs_pairing
def test_callback_columns_of_other_types_get_the_same_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the C pairing adds a callback end's values with `+=` of a 1-item array when the column
    # is an array of the same type code, else with append: a column of another type code or
    # type (here 'q' and 'f' arrays, a list) gets what the Python loop gives it
    from array import array

    from dpmlens.traces.model import sample

    path = SHARED_TRACES / "pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late" \
        / "ivybridge_mem_ftrace.txt"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    real = sample.Group.__init__

    def odd(self: sample.Group, key: object) -> None:
        real(self, key)  # type: ignore[arg-type]
        self.cycles = array("q")
        self.starts = array("f")
        self.threads = []  # type: ignore[assignment]

    monkeypatch.setattr(sample.Group, "__init__", odd)
    got = _load_as([path], "c", monkeypatch)
    assert got == _load_as([path], "scan", monkeypatch)
    store = load_traces([path]).store
    groups = [g for g in store.groups.values() if len(g.durations)]
    assert groups and all(isinstance(g.threads, list) and g.cycles.typecode == "q"
                          and len(g.starts) == len(g.durations) for g in groups)
