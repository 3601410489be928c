"""Perfetto protobuf traces (.perfetto-trace, .pftrace, .pb) with the ftrace power events.

Decoding uses the generated classes of the `perfetto` PyPI package (FtraceEvent fields 504
device_pm_callback_start, 505 device_pm_callback_end, 113 suspend_resume). To stream, the
file is read one TracePacket at a time: a trace is the repeated field 1 of `Trace`, so each
packet is framed by the tag byte 0x0A and a varint length (the same framing the package's
own trace_processor/rpc.py reads); the packet itself is parsed by `TracePacket`.

Bundles are per CPU, so events are not in global time order across packets: the PM events
(a few per device and phase, not the whole trace) are kept column-wise per CPU and merged
by timestamp before pairing.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from dpmlens.model.phases import PM_EVENT_VERBS
from dpmlens.traces.model.sample import Collector
from dpmlens.traces.read import rpm_events
from dpmlens.traces.read.events import Assembler
from dpmlens.traces.read.rpm_events import text

NAME = "perfetto"
SUFFIXES = (".perfetto-trace", ".pftrace", ".pb", ".perfetto")
_MAX_PACKET = 256 << 20


class PerfettoUnavailable(Exception):
    pass


def _classes():  # noqa: ANN202 - generated protobuf module
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except Exception as exc:  # ImportError, or protobuf too old for the generated code
        # one line: protobuf's version errors span several
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise PerfettoUnavailable(
            "reading Perfetto traces needs the 'perfetto' and 'protobuf>=6.31' packages "
            f"(the traces extra: pip install 'dpmlens[traces]'): {why}"
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
        cls = _classes().TracePacket
    except PerfettoUnavailable:
        return True  # plausible; parse() then says what to install
    try:
        cls.FromString(head[pos : pos + n])
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
        if tag >> 3 == 0 or tag & 7 != 2:
            # A Trace holds only length-delimited fields; field 0 does not exist. Zeros (or
            # other non-protobuf data) would otherwise be walked two bytes at a time.
            coll.report.error = (f"not a Perfetto trace from offset ~{pos} (field tag "
                                 f"0x{tag:02x}); kept what was read")
            return
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


_TS_LIMIT = 1 << 63  # array("q")
_L_LIMIT = 1 << 31  # array("l") is at least 32 bits


class _CpuEvents:
    """One CPU's PM events, column-wise (17 bytes an event instead of a tuple of objects)."""

    __slots__ = ("ts", "kind", "ref", "num", "pid", "ordered")

    def __init__(self) -> None:
        self.ts = array("q")
        self.kind = array("b")  # 0 suspend_resume, 1 callback start, 2 callback end
        self.ref = array("l")  # index into the string table
        self.num = array("l")  # suspend_resume val*2+start | start event | end error
        self.pid = array("l")
        self.ordered = True

    def add(self, ts: int, kind: int, ref: int, num: int, pid: int) -> bool:
        """Store one event; False (nothing stored) for a number out of the arrays' range
        (a timestamp of 2**64 - 1, an absurd pid): the caller counts it as a skipped event."""
        if not (0 <= ts < _TS_LIMIT and -_L_LIMIT < num < _L_LIMIT and -_L_LIMIT < pid < _L_LIMIT):
            return False
        if self.ts and ts < self.ts[-1]:
            self.ordered = False
        self.ts.append(ts)
        self.kind.append(kind)
        self.ref.append(ref)
        self.num.append(num)
        self.pid.append(pid)
        return True

    def order(self) -> Iterator[tuple[int, int, int]]:
        """(ts, kind, i) in time order; kind sorts markers before starts before ends."""
        idx: Iterable[int] = range(len(self.ts))
        if not self.ordered:
            idx = sorted(idx, key=lambda i: (self.ts[i], self.kind[i]))
        return ((self.ts[i], self.kind[i], i) for i in idx)


# sched_switch prev_state: 0 is TASK_RUNNING; a preemption is reported as TASK_REPORT_MAX
# (0x100 or above, by kernel version); else one state bit (S 1, D 2, ..., I 0x80): blocked.
# sched_waking's common_flags: TRACE_FLAG_HARDIRQ 0x08, _SOFTIRQ 0x10, _NMI 0x40.
_PREEMPTED_FROM = 0x100
_IRQ_FLAGS = 0x08 | 0x10 | 0x40


def _runnable(prev_state: int) -> bool:
    return prev_state == 0 or prev_state >= _PREEMPTED_FROM


class _Sched:
    """The scheduler's events into the store's SchedLog, threads named as the PM events'
    ("pid N"). The compact_sched encoding leaves out what follows from the CPU's order: a
    switch's prev is the CPU's previous next, a wake-up's waker the task on the CPU."""

    def __init__(self, coll: Collector) -> None:
        self.coll = coll
        self.threads: dict[int, int] = {}
        self.current: dict[int, int] = {}  # cpu -> pid on it (compact_sched), -1 unknown

    def compact(self, cpu: int, cs: Any) -> None:
        log, file = self.coll.store.sched_log(), self.coll.file_id
        events: list[tuple[int, int, int]] = []  # (ts ns, 0 switch / 1 waking, index)
        ts = 0
        for i, delta in enumerate(cs.switch_timestamp):  # delta-encoded in the bundle
            ts += delta
            events.append((ts, 0, i))
        ts = 0
        for i, delta in enumerate(cs.waking_timestamp):
            ts += delta
            events.append((ts, 1, i))
        events.sort()
        n_switch, n_wake = len(cs.switch_prev_state), len(cs.waking_pid)
        for t, kind, i in events:
            if kind == 0:
                if i >= n_switch or i >= len(cs.switch_next_pid):
                    continue
                nxt = cs.switch_next_pid[i]
                log.switch(file, t / 1e9, self._tracked(self.current.get(cpu, -1)),
                           _runnable(cs.switch_prev_state[i]), self._tracked(nxt))
                self.current[cpu] = nxt
            elif i < n_wake and cs.waking_pid[i] > 0:
                flags = cs.waking_common_flags[i] if i < len(cs.waking_common_flags) else 0
                waker = -1 if flags & _IRQ_FLAGS else self._tracked(self.current.get(cpu, -1))
                log.woken(file, t / 1e9, self.thread(cs.waking_pid[i]), waker)

    def thread(self, pid: int) -> int:
        t = self.threads.get(pid)
        if t is None:
            t = self.threads[pid] = self.coll.store.thread_id(f"pid {pid}")
        return t

    def _tracked(self, pid: int) -> int:
        """The thread of a pid, -1 for the idle task (0) or none known (-1)."""
        return self.thread(pid) if pid > 0 else -1

    def event(self, ev: Any, kind: str) -> None:
        log, file = self.coll.store.sched_log(), self.coll.file_id
        ts = ev.timestamp / 1e9
        if kind == "sched_switch":
            e = ev.sched_switch
            log.switch(file, ts, self._tracked(e.prev_pid), _runnable(e.prev_state),
                       self._tracked(e.next_pid))
        elif ev.sched_waking.pid > 0:
            waker = -1 if ev.common_flags & _IRQ_FLAGS else self._tracked(ev.pid)
            log.woken(file, ts, self.thread(ev.sched_waking.pid), waker)


def _tagged(
    events: Iterator[tuple[int, int, int]], cpu: int
) -> Iterator[tuple[int, int, int, int]]:
    for ts, kind, i in events:
        yield ts, kind, i, cpu


def parse(stream: BinaryIO, coll: Collector) -> None:
    """Stream packets; keep only the PM events (column-wise, per CPU); merge them by time.

    Each CPU's bundles come in time order, so a k-way merge orders the whole trace without a
    global sort and memory stays proportional to the PM events, not to the file.
    """
    pb = _classes()
    packet_cls = pb.TracePacket
    cpus: dict[int, _CpuEvents] = {}
    strings: dict[tuple, int] = {}
    table: list[tuple] = []

    def ref(key: tuple) -> int:
        r = strings.get(key)
        if r is None:
            r = strings[key] = len(table)
            table.append(key)
        return r

    bad = 0
    n_events = 0
    rpm = rpm_events.PerfettoHook(coll)
    sched = _Sched(coll)
    for raw in _packets(stream, coll):
        try:
            packet = packet_cls.FromString(raw)
        except Exception:
            bad += 1
            continue
        if not packet.HasField("ftrace_events"):
            continue
        bundle = packet.ftrace_events
        cpu = cpus.get(bundle.cpu)
        if cpu is None:
            cpu = cpus[bundle.cpu] = _CpuEvents()
        rpm.descriptors_of(bundle)
        if bundle.HasField("compact_sched"):
            sched.compact(bundle.cpu, bundle.compact_sched)
        for ev in bundle.event:
            kind = ev.WhichOneof("event")
            if kind == "device_pm_callback_start":
                e = ev.device_pm_callback_start
                ok = cpu.add(ev.timestamp, 1,
                             ref((text(e.driver), text(e.device), text(e.parent), text(e.pm_ops))),
                             e.event, ev.pid)  # fmt: skip
            elif kind == "device_pm_callback_end":
                e = ev.device_pm_callback_end
                ok = cpu.add(ev.timestamp, 2, ref((text(e.driver), text(e.device))), e.error,
                             ev.pid)
            elif kind == "suspend_resume":
                e = ev.suspend_resume
                ok = cpu.add(ev.timestamp, 0, ref((text(e.action),)),
                             e.val * 2 + (1 if e.start else 0), ev.pid)  # fmt: skip
            elif kind == "rpm_status":
                rpm.typed_status(ev.timestamp, ev.pid, ev.rpm_status)
                continue
            elif kind == "generic":
                rpm.generic(ev.timestamp, ev.pid, ev.generic)
                continue
            elif kind == "sched_switch" or kind == "sched_waking":
                sched.event(ev, kind)
                continue
            else:
                if kind is None:
                    rpm.unknown(ev.timestamp, ev.pid, ev)
                continue
            if not ok:
                coll.skip("impossible number (timestamp, pid or value out of range)")
            n_events += 1
    if bad:
        coll.report.skipped_lines += bad
        coll.report.skip_reasons["undecodable TracePacket"] += bad
    asm = Assembler(coll)
    # Perfetto has driver and device as separate fields: no split to guess.
    heads = [(k[0], k[1]) if len(k) > 1 else ("", "") for k in table]
    thread = sched.thread

    verbs = PM_EVENT_VERBS
    streams = [_tagged(ce.order(), c) for c, ce in cpus.items()]
    for ts_ns, kind, i, c in heapq.merge(*streams):
        ce = cpus[c]
        key = table[ce.ref[i]]
        num = ce.num[i]
        ts = ts_ns / 1e9
        if kind == 1:
            asm.start(
                ts,
                heads[ce.ref[i]],
                key[2],
                f"{key[3]}[{verbs.get(num, str(num))}]",
                thread(ce.pid[i]),
            )
        elif kind == 2:
            asm.end(ts, heads[ce.ref[i]], num)
        else:
            asm.marker(ts, key[0], num >> 1, bool(num & 1), thread(ce.pid[i]))
    asm.finish()
    n_events += rpm.finish()
    if not n_events:
        coll.report.notes.append(
            "no PM events (device_pm_callback_start/end, suspend_resume) in this Perfetto trace;"
            " record with ftrace_events: power/device_pm_callback_start, "
            "power/device_pm_callback_end, power/suspend_resume"
        )
