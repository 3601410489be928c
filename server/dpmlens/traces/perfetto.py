"""Perfetto protobuf traces (.perfetto-trace, .pftrace, .pb) with the ftrace power events.

Decoding uses the generated classes of the `perfetto` PyPI package (FtraceEvent fields 504
device_pm_callback_start, 505 device_pm_callback_end, 113 suspend_resume). To stream, the
file is read one TracePacket at a time: a trace is the repeated field 1 of `Trace`, so each
packet is framed by the tag byte 0x0A and a varint length (the same framing the package's
own trace_processor/rpc.py reads); the packet itself is parsed by `TracePacket`.

Bundles are per CPU, so events are not in global time order across packets: the PM events
(a few per device and phase, not the whole trace) are collected and sorted before pairing.
"""

from __future__ import annotations

from typing import BinaryIO

from dpmlens.traces.events import Assembler
from dpmlens.traces.sample import Collector

NAME = "perfetto"
SUFFIXES = (".perfetto-trace", ".pftrace", ".pb", ".perfetto")
_MAX_PACKET = 256 << 20


class PerfettoUnavailable(Exception):
    pass


def _classes():  # noqa: ANN202 - generated protobuf module
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except Exception as exc:  # ImportError, or protobuf too old for the generated code
        raise PerfettoUnavailable(
            "reading Perfetto traces needs the 'perfetto' and 'protobuf>=6.31' packages "
            f"(pip install 'dpmlens[perfetto]'): {exc}"
        ) from None
    return perfetto_trace_pb2


def looks_like(head: bytes) -> bool:
    """A Trace starts with field 1 (tag 0x0A), a varint length, then a TracePacket."""
    if len(head) < 2 or head[0] != 0x0A:
        return False
    try:
        n, pos = _varint(head, 1)
    except ValueError:
        return False
    if n == 0 or n > _MAX_PACKET:
        return False
    if pos + n > len(head):
        return True  # a big first packet: plausible, the parser will tell
    try:
        _classes().TracePacket.FromString(head[pos : pos + n])
    except Exception:
        return False
    return True


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _packets(stream: BinaryIO, coll: Collector):  # noqa: ANN202 - generator of bytes
    buf = b""
    pos = 0
    while True:
        if len(buf) - pos < 16:
            more = stream.read(1 << 20)
            buf = buf[pos:] + more
            pos = 0
            if not buf:
                return
            if not more and len(buf) < 2:
                coll.report.error = "truncated packet header at end of file"
                return
        tag = buf[pos]
        try:
            n, p2 = _varint(buf, pos + 1)
        except ValueError:
            coll.report.error = "truncated packet header at end of file"
            return
        if n > _MAX_PACKET:
            coll.report.error = f"packet of {n} bytes at offset ~{pos}: not a Perfetto trace?"
            return
        while len(buf) < p2 + n:
            more = stream.read(max(1 << 20, p2 + n - len(buf)))
            if not more:
                coll.report.error = "file ends inside a packet (truncated trace)"
                return
            buf = buf[pos:] + more
            p2 -= pos
            pos = 0
        if tag == 0x0A:
            yield buf[p2 : p2 + n]
        # other top-level fields would be unusual; skip them whole
        pos = p2 + n


def parse(stream: BinaryIO, coll: Collector) -> None:
    pb = _classes()
    packet_cls = pb.TracePacket
    events: list[tuple] = []
    bad = 0
    for raw in _packets(stream, coll):
        try:
            packet = packet_cls.FromString(raw)
        except Exception:
            bad += 1
            continue
        if not packet.HasField("ftrace_events"):
            continue
        for ev in packet.ftrace_events.event:
            kind = ev.WhichOneof("event")
            if kind == "device_pm_callback_start":
                e = ev.device_pm_callback_start
                events.append((ev.timestamp, 1, e.driver, e.device, e.parent, e.pm_ops, e.event))
            elif kind == "device_pm_callback_end":
                e = ev.device_pm_callback_end
                events.append((ev.timestamp, 2, e.driver, e.device, e.error))
            elif kind == "suspend_resume":
                e = ev.suspend_resume
                events.append((ev.timestamp, 0, e.action, e.val, e.start))
    if bad:
        coll.report.skipped_lines += bad
        coll.report.skip_reasons["undecodable TracePacket"] += bad
    events.sort(key=lambda t: (t[0], t[1]))
    asm = Assembler(coll)
    from dpmlens.model.phases import PM_EVENT_VERBS

    for ev in events:
        ts = ev[0] / 1e9
        if ev[1] == 1:
            asm.start_fields(ts, ev[2], ev[3], ev[4], ev[5], PM_EVENT_VERBS.get(ev[6], str(ev[6])))
        elif ev[1] == 2:
            asm.end_fields(ts, ev[2], ev[3], ev[4])
        else:
            asm.marker(ts, ev[2], ev[3], bool(ev[4]))
    asm.finish()
    if not events:
        coll.report.notes.append(
            "no PM events (device_pm_callback_start/end, suspend_resume) in this Perfetto trace;"
            " record with ftrace_events: power/device_pm_callback_start, "
            "power/device_pm_callback_end, power/suspend_resume"
        )
