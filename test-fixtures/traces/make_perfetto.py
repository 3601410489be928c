"""Regenerate the Perfetto fixtures with the `perfetto` package's own trace builder.

    ../../.venv/bin/python make_perfetto.py

perfetto_basic.perfetto-trace holds cycle 0 of ftrace_basic.txt (prepare .. resume) as
FtraceEventBundles, one per CPU, written CPU 1 first so that events are NOT in global time
order in the file (as real traces are). perfetto_no_pm.pftrace holds only a print event.
"""

from __future__ import annotations

from pathlib import Path

from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

HERE = Path(__file__).resolve().parent
S = 1_000_000_000  # ns per second

# (cpu, ts_ns, kind, fields)
EVENTS = [
    (0, 100 * S, "sr", ("dpm_prepare", 2, 1)),
    (0, 100 * S + 10_000, "start", ("foo", "0-0055", "i2c-0", "", 2)),
    (0, 100 * S + 30_000, "end", ("foo", "0-0055", 0)),
    (0, 100 * S + 100_000, "sr", ("dpm_prepare", 2, 0)),
    (0, 100 * S + 100_000, "sr", ("dpm_suspend", 2, 1)),
    (1, 100 * S + 1_000_000, "start", ("foo", "0-0055", "i2c-0", "driver ", 2)),
    (1, 100 * S + 1_500_000, "start", ("bar", "0000:00:1f.0", "pci0000:00", "bus ", 2)),
    (1, 100 * S + 3_000_000, "end", ("foo", "0-0055", 0)),
    (1, 100 * S + 11_500_000, "end", ("bar", "0000:00:1f.0", -16)),
    (0, 100 * S + 20_000_000, "sr", ("dpm_suspend", 2, 0)),
    (0, 100 * S + 20_001_000, "sr", ("dpm_suspend_noirq", 2, 1)),
    (0, 100 * S + 20_100_000, "start", ("bar", "0000:00:1f.0", "pci0000:00", "noirq bus ", 2)),
    (0, 100 * S + 20_600_000, "end", ("bar", "0000:00:1f.0", 0)),
    (0, 100 * S + 21_001_000, "sr", ("dpm_suspend_noirq", 2, 0)),
    (0, 101 * S + 1_000_000, "sr", ("dpm_resume", 16, 1)),
    (0, 101 * S + 1_100_000, "start", ("foo", "0-0055", "i2c-0", "driver ", 16)),
    (0, 101 * S + 5_100_000, "end", ("foo", "0-0055", 0)),
    (0, 101 * S + 6_000_000, "sr", ("dpm_resume", 16, 0)),
]


def write(path: Path, events: list) -> None:
    with open(path, "wb") as f:
        builder = StreamingTraceProtoBuilder(f)
        for cpu in sorted({e[0] for e in events}, reverse=True):
            packet = builder.create_packet()
            bundle = packet.ftrace_events
            bundle.cpu = cpu
            for c, ts, kind, fields in events:
                if c != cpu:
                    continue
                ev = bundle.event.add()
                ev.timestamp = ts
                ev.pid = 100
                if kind == "sr":
                    ev.suspend_resume.action, ev.suspend_resume.val, ev.suspend_resume.start = fields
                elif kind == "start":
                    e = ev.device_pm_callback_start
                    e.driver, e.device, e.parent, e.pm_ops, e.event = fields
                else:
                    e = ev.device_pm_callback_end
                    e.driver, e.device, e.error = fields
            builder.write_packet(packet)


def write_no_pm(path: Path) -> None:
    with open(path, "wb") as f:
        builder = StreamingTraceProtoBuilder(f)
        packet = builder.create_packet()
        packet.ftrace_events.cpu = 0
        ev = packet.ftrace_events.event.add()
        ev.timestamp = 5 * S
        ev.print.buf = "hello\n"
        builder.write_packet(packet)


if __name__ == "__main__":
    write(HERE / "perfetto_basic.perfetto-trace", EVENTS)
    write_no_pm(HERE / "perfetto_no_pm.pftrace")
