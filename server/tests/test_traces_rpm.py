"""Runtime PM traces: rpm_* events of two kernel generations and Perfetto, the per-device
statistics, the mapping onto runtime callbacks and the link to the static rule.

The expected numbers are the scenario of test-fixtures/traces/make_rpm.py worked out by hand
(its docstring lists the latencies and suspended periods)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from traces_helpers import FIXTURES

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.rpm_stats import runtime_stats
from dpmlens.traces.model.rpm_log import errno_name
from dpmlens.traces.read.rpm_events import compile_format, default_formats

NEW = FIXTURES / "rpm_6.12_trace_cmd.txt"  # trace-cmd report, kernel 6.12: with rpm_status
OLD = FIXTURES / "rpm_6.1_trace.txt"  # raw trace, kernel 6.1: no rpm_status
OLDEST = FIXTURES / "rpm_4.19_trace.txt"  # raw trace, 4.19: no rpm_status, no rpm_usage
PERFETTO = FIXTURES / "rpm_6.12.perfetto-trace"
SRC = FIXTURES / "rpm_src"
C, P, X = "i2c_foo.0", "0000:00:15.0", "0000:00:14.0"


def _maker():  # noqa: ANN202 - the fixture generator module
    spec = importlib.util.spec_from_file_location("make_rpm", FIXTURES / "make_rpm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _devices(path: Path) -> dict:
    report = runtime_stats(load_traces([path]))
    assert report is not None
    return {d.device: d for d in report.devices}


def test_committed_fixtures_are_what_the_generator_writes(tmp_path: Path) -> None:
    mk = _maker()
    ev = mk.scenario()
    mk.write_text(ev, tmp_path / "a.txt", "trace-cmd", with_status=True)
    mk.write_text(ev, tmp_path / "b.txt", "raw", with_status=False)
    mk.write_text(ev, tmp_path / "d.txt", "raw4", with_status=False, with_usage=False)
    mk.write_perfetto(ev, tmp_path / "c.perfetto-trace")
    assert (tmp_path / "a.txt").read_bytes() == NEW.read_bytes()
    assert (tmp_path / "b.txt").read_bytes() == OLD.read_bytes()
    assert (tmp_path / "d.txt").read_bytes() == OLDEST.read_bytes()
    assert (tmp_path / "c.perfetto-trace").read_bytes() == PERFETTO.read_bytes()


@pytest.mark.parametrize(("path", "fmt", "events", "statuses"), [
    (NEW, "ftrace", 153, 50), (OLD, "ftrace", 103, 0), (OLDEST, "ftrace", 102, 0),
    (PERFETTO, "perfetto", 153, 50)])
def test_every_event_is_read_and_every_call_pairs(path: Path, fmt: str, events: int,
                                                  statuses: int) -> None:
    ts = load_traces([path])
    f = ts.files[0]
    assert (f.format, f.rpm_events, f.skipped_lines) == (fmt, events, 0)
    log = ts.store.rpm
    assert len(log) == 51 and len(log.st_dev) == statuses
    assert log.usage_events == (0 if path == OLDEST else 1)
    assert log.unmatched_returns == 0 and log.unreturned == 0
    # the child's resume holds its parent's (nested, same thread): 1.51 ms of its 3.0 ms
    first = next(i for i in range(len(log)) if log.devices[log.dev[i]] == C)
    assert round((log.end[first] - log.start[first]) * 1e6, 3) == 3000.0
    assert round(log.nested[first], 3) == 1510.0
    # the system sleep callbacks of the same capture are still read
    assert ts.sample_count == 7


def test_newer_kernel_states_from_rpm_status() -> None:
    devs = _devices(NEW)
    c = devs[C]
    assert c.exact and c.driver == "foo_i2c"
    assert (c.suspends, c.resumes) == (6, 6)
    # resumes 3.0 3.2 2.8 3.0 4.0 3.1 ms: median 3.05, p95 3.2 + 0.75 * 0.8
    assert (c.resume.median_us, c.resume.p95_us, c.resume.max_us) == (3050.0, 3800.0, 4000.0)
    # suspends 1.0 1.0 1.2 0.9 1.0 and the last one before the system suspend, 1.0
    assert (c.suspend.median_us, c.suspend.p95_us) == (1000.0, 1150.0)
    assert c.resume_nested_us == 1510.0
    assert c.periods == (2000.0, 3000.0, 50000.0, 500000.0, 2500.0)
    assert c.break_even_us == 4050.0
    assert (c.short_periods, c.short_share) == (3, 0.6)
    assert c.autosuspend.values == (50100.0,) * 5  # put -> the worker's suspend
    assert devs[X].autosuspend.values == (2000200.0,)  # the long autosuspend
    assert devs[P].resume.values == (1510.0,) * 6


def test_errors_with_codes_and_where_they_happened() -> None:
    devs = _devices(NEW)
    errs = {(e.call, e.name): e for e in devs[C].errors}
    eacces = errs[("rpm_resume", "-EACCES")]
    assert (eacces.count, eacces.in_system_sleep, eacces.in_disabled) == (1, 1, 1)
    assert dict(eacces.callbacks) == {"suspend_late": 1}
    assert eacces.meaning[0] == "error" and eacces.rule == "runtime-pm-while-disabled"
    eagain = errs[("rpm_idle", "-EAGAIN")]
    assert eagain.meaning[0] == "refusal" and eagain.rule is None
    (ebusy,) = devs[P].errors
    assert (ebusy.call, ebusy.name, ebusy.in_system_sleep) == ("rpm_suspend", "-EBUSY", 0)
    assert devs[X].errors == []


@pytest.mark.parametrize("path", [OLD, OLDEST])
def test_older_kernel_states_inferred_from_calls(path: Path) -> None:
    devs = _devices(path)
    c = devs[C]
    assert not c.exact
    # the same transitions: each autosuspend is proven by the nested rpm_idle of the parent,
    # the last one by the -EACCES of the next resume (disabled and not active)
    assert (c.suspends, c.resumes, c.unconfirmed) == (6, 6, 0)
    assert (c.resume.median_us, c.suspend.median_us, c.break_even_us) == (3050.0, 1000.0,
                                                                         4050.0)
    # without rpm_status a period runs from the suspend's return to the next resume event:
    # 1.53 ms (the parent's resume) + 0.1 ms shorter than the status periods
    assert c.periods == (370.0, 1370.0, 48370.0, 498370.0, 870.0)
    assert c.short_periods == 3
    # the xhci autosuspend has nothing after it that proves it happened: not counted
    assert (devs[X].suspends, devs[X].unconfirmed) == (0, 1)


def test_perfetto_gives_the_numbers_of_the_text_capture() -> None:
    a, b = _devices(NEW), _devices(PERFETTO)
    assert set(a) == set(b)
    for dev in a:
        x, y = a[dev], b[dev]
        assert (x.suspend, x.resume, x.periods, x.autosuspend, x.driver) == \
            (y.suspend, y.resume, y.periods, y.autosuspend, y.driver)
        assert [(e.call, e.code, e.count) for e in x.errors] == \
            [(e.call, e.code, e.count) for e in y.errors]


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def test_perfetto_events_described_by_generic_event_descriptors(tmp_path: Path) -> None:
    """Newer traced: an event without a proto is an FtraceEvent field whose number a
    bundle-level descriptor names."""
    from google.protobuf import descriptor_pb2
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    def desc(name: str, fields: list[tuple[str, int]]) -> bytes:
        d = descriptor_pb2.DescriptorProto(name=name)
        for n, (fname, ftype) in enumerate(fields, 1):
            d.field.add(name=fname, number=n, type=ftype)
        return d.SerializeToString()

    internal = [("name", 9), ("flags", 5), ("usage_count", 5), ("disable_depth", 5),
                ("runtime_auto", 5), ("request_pending", 5), ("irq_safe", 5),
                ("child_count", 5)]
    with open(tmp_path / "g.pftrace", "wb") as fh:
        builder = StreamingTraceProtoBuilder(fh)
        packet = builder.create_packet()
        bundle = packet.ftrace_events
        bundle.cpu = 0
        bundle.generic_event_descriptors.add(field_id=65000,
                                             event_descriptor=desc("rpm_resume", internal))
        bundle.generic_event_descriptors.add(
            field_id=65001, event_descriptor=desc("rpm_return_int",
                                                  [("name", 9), ("ip", 4), ("ret", 5)]))
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

        for ts, fid, payload in (
            (1_000_000, 65000, b"\x0a\x05dev.0" + b"\x10\x04\x18\x01"),
            (1_250_000, 65001, b"\x0a\x05dev.0" + b"\x18" + _varint(-13)),
        ):
            raw = pb.FtraceEvent(timestamp=ts, pid=7).SerializeToString()
            raw += _varint((fid << 3) | 2) + _varint(len(payload)) + payload
            bundle.event.add().MergeFromString(raw)
        builder.write_packet(packet)
    ts = load_traces([tmp_path / "g.pftrace"])
    log = ts.store.rpm
    assert ts.files[0].rpm_events == 2 and len(log) == 1
    assert (log.devices[log.dev[0]], log.kinds[0], log.flags[0], log.usage[0], log.ret[0]) == \
        ("dev.0", 1, 4, 1, -13)
    assert round((log.end[0] - log.start[0]) * 1e6) == 250


def test_default_formats_are_the_kernel_layouts() -> None:
    f = default_formats()
    p = f["rpm_suspend"].parse(b"Fixed MDIO bus.0 flags-c cnt-0  dep-0  auto-1 p-0 irq-0 child-12")
    assert p == {"name": "Fixed MDIO bus.0", "flags": 12, "usage_count": 0, "disable_depth": 0,
                 "runtime_auto": 1, "request_pending": 0, "irq_safe": 0, "child_count": 12}
    r = f["rpm_return_int"].parse(b"rpm_resume+0x1a4/0x6e0:0000:00:14.0 ret=-13")
    assert (r["ip"], r["name"], r["ret"]) == ("rpm_resume+0x1a4/0x6e0", "0000:00:14.0", -13)
    # trace-cmd without kallsyms prints the address
    r = f["rpm_return_int"].parse(b"0xffffffff81a0b2c0:1-1 ret=0")
    assert (r["ip"], r["name"]) == ("0xffffffff81a0b2c0", "1-1")
    s = f["rpm_status"].parse(b"i2c_foo.0 status=RPM_SUSPENDING")
    assert s == {"name": "i2c_foo.0", "status": "RPM_SUSPENDING"}
    assert f["rpm_suspend"].parse(b"garbage") is None
    assert errno_name(-13) == "-EACCES" and errno_name(-9999) == "-9999"


def test_the_captures_own_format_wins(tmp_path: Path) -> None:
    """A kernel that prints the fields differently: the `format` file in the capture (as
    `trace-cmd report --events` prints it) says how; without it the lines are malformed."""
    fmt = ('name: rpm_resume\nID: 1234\nformat:\n\tfield:__data_loc char[] name;\t'
           'offset:8;\tsize:4;\tsigned:0;\n\nprint fmt: "%s usage=%d flags=%x", '
           '__get_str(name), REC->usage_count, REC->flags\n\n')
    lines = ("cpus=1\n"
             "  kworker/0:1-20 [000] 10.000000: rpm_resume: dev.0 usage=2 flags=4\n"
             "  kworker/0:1-20 [000] 10.000500: rpm_return_int: rpm_resume+0x10:dev.0 ret=0\n")
    (tmp_path / "with.txt").write_text(fmt + lines)
    (tmp_path / "without.txt").write_text(lines)
    ts = load_traces([tmp_path / "with.txt"])
    log = ts.store.rpm
    assert ts.skipped_lines == 0 and (log.usage[0], log.flags[0]) == (2, 4)
    assert log.formats_from_capture == {"rpm_resume"}
    ts = load_traces([tmp_path / "without.txt"])
    assert ts.skip_reasons() == {"malformed rpm_resume": 1}
    assert compile_format('"%s flags-%x", __get_str(name), REC->flags').fields == ("name",
                                                                                  "flags")


def test_no_rpm_events_no_section(capsys: pytest.CaptureFixture[str]) -> None:
    ts = load_traces([FIXTURES / "ftrace_basic.txt"])
    assert ts.store.rpm is None and runtime_stats(ts) is None
    out = run_cli(capsys, "trace", "report", str(FIXTURES / "ftrace_basic.txt"), "--format",
                  "json")
    data = json.loads(out.out)
    assert data["version"] == 5 and data["runtime_pm"] is None
    text = run_cli(capsys, "trace", "report", str(FIXTURES / "ftrace_basic.txt")).out
    assert "Runtime PM" not in text


def test_report_json_maps_callbacks_and_links_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_cli(capsys, "trace", "report", str(NEW), "--source", str(SRC), "--format", "json")
    assert out.code == 0
    rt = json.loads(out.out)["runtime_pm"]
    assert rt["version"] == 1 and rt["calls"] == 51 and rt["status_events"] == 50
    devs = {d["device"]: d for d in rt["devices"]}
    c = devs[C]
    assert c["source"]["runtime_resume"]["function"] == "foo_i2c_runtime_resume"
    assert c["source"]["runtime_resume"]["line"] == 19
    assert c["source"]["runtime_suspend"]["function"] == "foo_i2c_runtime_suspend"
    assert c["resume"] == {"n": 6, "min_us": 2800.0, "median_us": 3050.0, "p95_us": 3800.0,
                           "max_us": 4000.0}
    assert c["short_share"] == 0.6 and c["break_even_us"] == 4050.0
    eacces = next(e for e in c["errors"] if e["name"] == "-EACCES")
    assert eacces["rule"] == "runtime-pm-while-disabled"
    assert eacces["finding"]["line"] == 31
    assert eacces["finding"]["function"] == "foo_i2c_suspend_late"
    assert eacces["finding"]["path"].endswith("foo_i2c.c")
    assert devs[X]["source"]["runtime_suspend"] is None
    assert devs[X]["unmapped_reason"]["runtime_suspend"] == "driver name not found in source"
    assert {d["driver"] for d in rt["drivers"]} == {"foo_i2c", "foo_lpss", "xhci_hcd"}


def test_report_table_section(capsys: pytest.CaptureFixture[str]) -> None:
    text = run_cli(capsys, "trace", "report", str(OLD), "--source", str(SRC)).out
    assert "Runtime PM (51 calls of 3 device(s); states inferred" in text
    assert "60% of 5 (< 4.05 ms)" in text
    assert "rpm_resume -EACCES x1" in text and "inside its suspend_late callback" in text
    assert "-> [runtime-pm-while-disabled]" in text and "foo_i2c.c:31" in text
    assert "i2c_foo.0 runtime_resume: " in text and "foo_i2c_runtime_resume()" in text
    assert "103 runtime PM events" in text


def test_device_without_a_driver_name_says_why(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    only_rpm = [ln for ln in OLD.read_text().splitlines()
                if "device_pm_callback" not in ln]
    (tmp_path / "rpm_only.txt").write_text("\n".join(only_rpm) + "\n")
    out = run_cli(capsys, "trace", "report", str(tmp_path / "rpm_only.txt"), "--source",
                  str(SRC), "--format", "json")
    assert out.code == 0
    rt = json.loads(out.out)["runtime_pm"]
    reasons = {d["unmapped_reason"]["runtime_resume"] for d in rt["devices"]}
    assert len(reasons) == 1 and "name only the device" in reasons.pop()


def test_diff_compares_runtime_transitions(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    mk = _maker()
    mk.RESUME_MS = [v - 1.0 for v in mk.RESUME_MS]  # the child resumes 1 ms faster
    mk.write_text(mk.scenario(), tmp_path / "after.txt", "trace-cmd", with_status=True)
    out = run_cli(capsys, "trace", "diff", str(NEW), "--vs", str(tmp_path / "after.txt"),
                  "--format", "json")
    data = json.loads(out.out)
    assert data["version"] == 2
    rows = {(r["device"], r["phase"]): r for r in data["runtime"]["transitions"]}
    res = rows[(C, "runtime_resume")]
    assert (res["median_before_us"], res["median_after_us"], res["change_us"]) == \
        (3050.0, 2050.0, -1000.0)
    assert res["verdict"] == "faster" and res["p"] < 0.05
    assert rows[(C, "runtime_suspend")]["verdict"] == "no significant change"
    dev = next(d for d in data["runtime"]["devices"] if d["device"] == C)
    # break-even 4.05 -> 3.05 ms: the 2, 2.5 and 3 ms periods are still under it
    assert (dev["short_share_before"], dev["short_share_after"]) == (0.6, 0.6)
    text = run_cli(capsys, "trace", "diff", str(NEW), "--vs", str(tmp_path / "after.txt")).out
    assert "Runtime PM transitions" in text and "60% -> 60%" in text
    plain = run_cli(capsys, "trace", "diff", str(FIXTURES / "ftrace_basic.txt"), "--vs",
                    str(FIXTURES / "ftrace_basic.txt"), "--format", "json").out
    assert json.loads(plain)["runtime"] is None


def test_bad_rpm_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    lines = [
        "cpus=1",
        "  t-1 [000] 10.000000: rpm_resume: dev.0 flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0",
        "  t-1 [000] nan: rpm_resume: dev.0 flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0",
        "  t-1 [000] 10.000100: rpm_resume: dev.0 flags-zz cnt-1",  # not the layout
        "  t-1 [000] 10.000200: rpm_status: dev.0 status=RPM_BOGUS",  # unknown status
        "  t-2 [000] 10.000300: rpm_return_int: rpm_resume+0x1a4:dev.1 ret=0",  # no open call
        "  t-1 [000] 10.000400: rpm_return_int: rpm_resume+0x1a4:dev.0 ret=0",
        "  t-1 [000] 10.000500: rpm_suspend: dev.0 flags-0 cnt-0  dep-0  auto-1 p-0 irq-0 child-0",
        "  t-1 [000] 10.000600: rpm_return_int: rpm_suspend+0x2c0:dev.0 ret=",  # cut short
        "  t-1 [000] 10.000700: rpm_idle: dev.0 flags-0 cnt-0  dep-0  auto-1 p-0 irq-0 child-0",
        "  t-1 [000] 10.000800: rpm_idle: dev.0 flags-0 cnt-99999999999999999999999  dep-0  "
        "auto-1 p-0 irq-0 child-0",  # no C int
    ]
    (tmp_path / "bad.txt").write_text("\n".join(lines))  # and no final newline
    ts = load_traces([tmp_path / "bad.txt"])
    assert ts.errors == []
    assert ts.skip_reasons() == {"impossible timestamp": 1, "malformed rpm_resume": 1,
                                 "malformed rpm_status": 1, "malformed rpm_return_int": 1,
                                 "malformed rpm_idle": 1}
    log = ts.store.rpm
    assert len(log) == 3 and log.unmatched_returns == 1 and log.unreturned == 2
    report = runtime_stats(ts)
    (dev,) = [d for d in report.devices if d.device == "dev.0"]
    assert dev.resumes == 1 and dev.suspends == 0  # the suspend never returned


def test_perfetto_rpm_numbers_out_of_range_do_not_break(tmp_path: Path) -> None:
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    with open(tmp_path / "x.pftrace", "wb") as fh:
        builder = StreamingTraceProtoBuilder(fh)
        packet = builder.create_packet()
        packet.ftrace_events.cpu = 0
        for ts, name, fields in ((5, "rpm_resume", {"name": "d", "flags": 2**40}),
                                 (6, "rpm_return_int", {"name": "d", "ret": -(2**40)}),
                                 (7, "rpm_idle", {"flags": 1})):  # no name: malformed
            ev = packet.ftrace_events.event.add()
            ev.timestamp, ev.pid = ts, 1
            ev.generic.event_name = name
            for k, v in fields.items():
                f = ev.generic.field.add()
                f.name = k
                if isinstance(v, str):
                    f.str_value = v
                else:
                    f.int_value = v
        ev = packet.ftrace_events.event.add()
        ev.timestamp, ev.pid = 8, 1
        ev.rpm_status.name, ev.rpm_status.status = "d", 77  # not an enum value
        builder.write_packet(packet)
    ts = load_traces([tmp_path / "x.pftrace"])
    assert ts.files[0].error is None
    assert ts.skip_reasons() == {"malformed rpm_idle": 1, "malformed rpm_status": 1}
    assert runtime_stats(ts) is not None


def test_format_block_in_an_earlier_block_than_the_events(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from dpmlens.traces.read import ftrace

    monkeypatch.setattr(ftrace, "CHUNK", 256)  # the format, the filler and the events apart
    fmt = ('name: rpm_resume\nID: 1\nformat:\n\nprint fmt: "%s usage=%d flags=%x", '
           '__get_str(name), REC->usage_count, REC->flags\n\n')
    filler = "".join(f"  bash-1 [000] 9.{i:06d}: irq_handler_entry: nothing\n" for i in range(40))
    events = ("  kworker/0:1-20 [000] 10.000000: rpm_resume: dev.0 usage=2 flags=4\n"
              "  kworker/0:1-20 [000] 10.000500: rpm_return_int: rpm_resume+0x10:dev.0 ret=0\n")
    (tmp_path / "t.txt").write_text("cpus=1\n" + fmt + filler + events)
    ts = load_traces([tmp_path / "t.txt"])
    log = ts.store.rpm
    assert ts.skipped_lines == 0 and (log.usage[0], log.flags[0], log.ret[0]) == (2, 4, 0)


def test_shapes_seen_in_the_wild(tmp_path: Path) -> None:
    """trace-cmd without a CPU column, device names with colons (SCSI "0:0:0:4"), a hard-irq
    context flag column, a return from rpm_idle whose refusal leaves nothing open."""
    lines = [
        "    kworker/u16:0-7     0.880061: rpm_idle:             0:0:0:4 flags-1 cnt-4  dep-0  "
        "auto-1 p-0 irq-0 child-0",
        "    kworker/u16:0-7     0.880062: rpm_return_int:       rpm_idle+0x16c:0:0:0:4 ret=-11",
        "    kworker/u16:2-142   0.880063: rpm_resume:           0:0:0:4 flags-4 cnt-5  dep-0  "
        "auto-1 p-0 irq-0 child-0",
        "    kworker/u16:2-142   0.880070: rpm_return_int:       rpm_resume+0x2a0:0:0:0:4 ret=1",
        "          <idle>-0     [000] d.h2   144.830155: rpm_resume: 5b130000.usb flags-5 cnt-1  "
        "dep-0  auto-1 p-0 irq-0 child-0",
        "          <idle>-0     [000] dNh2   144.830166: rpm_return_int: "
        "rpm_resume+0x114/0x758:5b130000.usb ret=0",
    ]
    (tmp_path / "wild.txt").write_text("\n".join(lines) + "\n")
    ts = load_traces([tmp_path / "wild.txt"])
    assert ts.files[0].format == "ftrace" and ts.skipped_lines == 0
    log = ts.store.rpm
    assert log.devices == ["0:0:0:4", "5b130000.usb"]
    assert list(log.ret) == [-11, 1, 0] and log.unmatched_returns == 0
    assert ts.store.threads[log.thread[0]] == "kworker/u16:0-7"
    devs = {d.device: d for d in runtime_stats(ts).devices}
    (err,) = devs["0:0:0:4"].errors
    assert (err.call, err.name, err.meaning[0]) == ("rpm_idle", "-EAGAIN", "refusal")
    assert devs["0:0:0:4"].resumes == 0  # ret=1: it was active
    assert devs["5b130000.usb"].resumes == 0  # RPM_ASYNC (flags-5): only queued


def test_a_huge_garbage_rpm_line_is_skipped_quickly(tmp_path: Path) -> None:
    import time

    junk = "x " * 400_000  # 800 KB after the event name: would make the layout regex crawl
    (tmp_path / "junk.txt").write_text(
        "cpus=1\n  t-1 [000] 1.000000: rpm_suspend: " + junk + "\n")
    t0 = time.process_time()
    ts = load_traces([tmp_path / "junk.txt"])
    assert time.process_time() - t0 < 5
    assert ts.skip_reasons() == {"malformed rpm_suspend": 1}


def test_rule_link_says_why_when_there_is_none(capsys: pytest.CaptureFixture[str]) -> None:
    without = run_cli(capsys, "trace", "report", str(NEW)).out
    assert "-> matches rule runtime-pm-while-disabled (give --source to find the call)" in without
    other = run_cli(capsys, "trace", "report", str(NEW), "--source",
                    str(FIXTURES / "src")).out  # foo_i2c is not in that tree
    assert ("-> matches rule runtime-pm-while-disabled; no finding of it in the source of the "
            "device's driver") in other


def test_per_driver_table_when_a_driver_has_several_devices(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NEW.read_text()
    # a second foo_i2c device: the same capture with i2c_foo.0 renamed, merged
    twin = text.replace("i2c_foo.0", "i2c_foo.1").split("\n", 1)[1]
    (tmp_path / "two.txt").write_text(text + twin)
    out = run_cli(capsys, "trace", "report", str(tmp_path / "two.txt"))
    table = out.out.split("Per driver (all its devices' transitions):\n", 1)[1]
    first = table.splitlines()[1].split()
    assert first[:4] == ["foo_i2c", "2", "12", "12"]
    assert "Per driver" not in run_cli(capsys, "trace", "report", str(NEW)).out
