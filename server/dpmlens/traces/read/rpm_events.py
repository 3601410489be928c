"""Runtime PM tracepoints (rpm_suspend, rpm_resume, rpm_idle, rpm_usage, rpm_return_int,
rpm_status) from ftrace text and Perfetto, paired into calls.

The kernel (include/trace/events/rpm.h, drivers/base/power/runtime.c) prints:
  rpm_suspend: 0000:00:14.0 flags-c cnt-0  dep-0  auto-1 p-0 irq-0 child-0
  rpm_return_int: rpm_suspend+0x2c0/0x6a0:0000:00:14.0 ret=0
  rpm_status: 0000:00:14.0 status=RPM_SUSPENDING          (newer kernels only)
`rpm_suspend/resume/idle` open a call of the PM core and `rpm_return_int` closes it, on the
same thread; a call can nest others (a child's rpm_resume resumes its parent first), so
calls pair through a stack per thread. The printed layout comes from the capture's own
`print fmt:` (a tracepoint `format` file, `trace-cmd report --events`) when present, else
from `rules/tables/runtime-pm.yaml` (the layout of rpm.h, the same in every generation that
has the event). Only devices' names are printed: the driver comes from other events.

The ftrace reader calls `TextHook.feed()` per block; a block without ": rpm_" costs one
substring search, so traces without runtime PM events pay nothing measurable.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dpmlens.core.paths import rules_dir
from dpmlens.traces.model.rpm_log import EVENTS, RpmLog, load_table, rpm_log, table
from dpmlens.traces.model.sample import Collector

_KIND = {"rpm_suspend": 0, "rpm_resume": 1, "rpm_idle": 2}
_INTERNAL = ("rpm_suspend", "rpm_resume", "rpm_idle", "rpm_usage")  # DEFINE_EVENT(rpm_internal)

_EVENT = re.compile(rb": (rpm_(?:suspend|resume|idle|usage|return_int|status)): +")
_FMT_BLOCK = re.compile(rb"name: (rpm_\w+)\n(?:.*\n)*?print fmt: (.*)")
_TS_BOUND = 1e15
_INT_BOUND = 1 << 31  # the printed fields are C ints
_MAX_PAYLOAD = 4096  # dev_name() is short; a longer "payload" is garbage


# -- print fmt -> a parser -----------------------------------------------------------------

_CONV = re.compile(r"%([-0-9.]*)(l{0,2}[dux]|pS|ps|pF|pf|s)")
_ARG_FIELD = re.compile(r"(?:REC->|__get_str\(\s*)(\w+)")


def _split_args(text: str) -> tuple[str, list[str]]:
    """`"fmt", a, f(b, c)` -> ("fmt", ["a", "f(b, c)"]); adjacent literals are joined."""
    fmt, i, n = [], 0, len(text)
    while i < n and text[i] in ' \t"':
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            fmt.append(text[i + 1 : j])
            i = j + 1
        else:
            i += 1
    args, depth, cur = [], 0, []
    for ch in text[i:]:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            if cur:
                args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        args.append("".join(cur).strip())
    return "".join(fmt).replace("\\n", ""), args


@dataclass(frozen=True)
class LineFormat:
    """A compiled `print fmt`: the payload regex and the field name of each group."""

    regex: re.Pattern[bytes]
    fields: tuple[str, ...]
    convs: tuple[str, ...]  # the conversion of each field: "s", "d", "x", "pS", ...
    symbolic: frozenset[str]  # fields printed through __print_symbolic (names, not numbers)

    def parse(self, payload: bytes) -> dict[str, Any] | None:
        m = self.regex.fullmatch(payload)
        if m is None:
            return None
        out: dict[str, Any] = {}
        for name, raw, conv in zip(self.fields, m.groups(), self.convs, strict=True):
            if conv == "s" or conv.startswith("p") or name in self.symbolic:
                out[name] = raw.decode("utf-8", "replace")
            else:
                v = int(raw, 16) if conv.endswith("x") else int(raw)
                if not -_INT_BOUND < v < _INT_BOUND:  # would not fit the log's columns
                    return None
                out[name] = v
        return out


def compile_format(print_fmt: str) -> LineFormat | None:
    """`"%s flags-%x cnt-%-2d ...", __get_str(name), REC->flags, ...` -> a LineFormat.

    Padding (`%-2d` prints "0 ") is absorbed: every space of the format matches any run of
    spaces, and a conversion may be followed by padding spaces."""
    fmt, args = _split_args(print_fmt)
    convs = list(_CONV.finditer(fmt))
    if not convs or len(args) < len(convs):
        return None
    pattern: list[str] = []
    fields: list[str] = []
    kinds: list[str] = []
    symbolic: set[str] = set()
    pos = 0
    for k, m in enumerate(convs):
        pattern.append(" *".join(re.escape(part) for part in fmt[pos : m.start()].split(" ")))
        conv = m.group(2)
        last = k == len(convs) - 1 and m.end() == len(fmt)
        if conv == "s":
            group = r"(.*)" if last else r"(.*?)"
        elif conv.startswith("p"):
            group = r"(\S*?)"  # a symbol (rpm_suspend+0x2c0/0x6a0) or 0xffff...: no ':' in it
        elif conv.endswith("x"):
            group = r"([0-9a-fA-F]+)"
        else:
            group = r"(-?\d+)"
        pattern.append(group + " *")
        fm = _ARG_FIELD.search(args[k])
        name = fm.group(1) if fm else f"arg{k}"
        if args[k].lstrip().startswith("__print_symbolic"):
            symbolic.add(name)
        fields.append(name)
        kinds.append(conv)
        pos = m.end()
    pattern.append(" *".join(re.escape(part) for part in fmt[pos:].split(" ")))
    return LineFormat(re.compile("".join(pattern).encode() + rb"\s*"), tuple(fields),
                      tuple(kinds), frozenset(symbolic))


def default_formats() -> dict[str, LineFormat]:
    """The layouts of rpm.h (a fresh dict: a capture's own formats replace entries)."""
    return dict(_default_formats(str(rules_dir() / "tables" / "runtime-pm.yaml")))


@lru_cache(maxsize=2)
def _default_formats(file: str) -> dict[str, LineFormat]:
    t = load_table(file).formats
    out: dict[str, LineFormat] = {}
    for ev in EVENTS:
        src = t.get("rpm_internal" if ev in _INTERNAL else ev)
        lf = compile_format(src) if src else None
        if lf is not None:
            out[ev] = lf
    return out


_STATUS_BY_NAME: dict[str, int] = {}


def _status_value(raw: Any) -> int | None:
    """RPM_SUSPENDED or 2 -> 2; anything that is not an enum rpm_status value -> None."""
    if not _STATUS_BY_NAME:
        _STATUS_BY_NAME.update(table().statuses)
    v = _STATUS_BY_NAME.get(raw) if isinstance(raw, str) else raw
    if isinstance(raw, str) and v is None:
        try:
            v = int(raw)
        except ValueError:
            return None
    return v if v in _STATUS_BY_NAME.values() else None


class Pairing:
    """Turns a time-ordered stream of rpm events of one file into RpmLog rows. Devices are
    RpmLog.dev_id() numbers; `func` of a return is the call kind its ip names, -1 unknown."""

    def __init__(self, coll: Collector, threads_known: bool = True) -> None:
        self.coll = coll
        # False (tp_printk in the kernel log: every event on one made-up thread): a return
        # closes its device's innermost call and leaves the calls above it open (other
        # threads' calls interleave); only a call on top of the stack credits nested time
        self.threads_known = threads_known
        log = self.log = rpm_log(coll.store)
        self.file = coll.file_id
        self.stacks: dict[int, list[int]] = {}
        self.events = 0
        # one call = 12 appends: bound once (the text reader runs this per event)
        self._columns = (log.dev.append, log.kinds.append, log.flags.append, log.usage.append,
                         log.child.append, log.depth.append, log.start.append,
                         log.end.append, log.ret.append, log.nested.append,
                         log.thread.append, log.file.append)

    def call(self, ts: float, kind: int, dev: int, flags: int, usage: int, child: int,
             depth: int, thread: int) -> None:
        self.events += 1
        i = len(self.log.dev)
        a = self._columns
        a[0](dev)
        a[1](kind)
        a[2](flags)
        a[3](usage)
        a[4](child)
        a[5](depth)
        a[6](ts)
        a[7](math.nan)
        a[8](0)
        a[9](0.0)
        a[10](thread)
        a[11](self.file)
        stack = self.stacks.get(thread)
        if stack is None:
            self.stacks[thread] = [i]
        else:
            stack.append(i)

    def ret(self, ts: float, d: int, func: int, ret: int, thread: int) -> None:
        """rpm_return_int: closes the innermost open call of device `d` on the thread (of
        the kind the ip names when it is a symbol)."""
        log = self.log
        self.events += 1
        stack = self.stacks.get(thread)
        if stack:
            for k in range(len(stack) - 1, -1, -1):
                i = stack[k]
                if log.dev[i] == d and (func < 0 or log.kinds[i] == func) \
                        and ts >= log.start[i]:
                    if not self.threads_known and k < len(stack) - 1:
                        del stack[k]
                        log.end[i] = ts
                        log.ret[i] = ret
                        # a call another thread opened since sits above it; the call it
                        # was opened in is below (a suspend that idled its parent: rpm_stats)
                        if k > 0 and log.kinds[i] == 2:
                            outer = stack[k - 1]
                            if log.kinds[outer] == 0 and log.dev[outer] != d:
                                log.idled_parent.add(outer)
                        return
                    log.unreturned += len(stack) - 1 - k  # opened inside it, never returned
                    del stack[k:]
                    log.end[i] = ts
                    log.ret[i] = ret
                    if stack:
                        outer = stack[-1]
                        log.nested[outer] += (ts - log.start[i]) * 1e6
                        if log.kinds[i] == 2 and log.kinds[outer] == 0 and log.dev[outer] != d:
                            log.idled_parent.add(outer)
                    return
        log.unmatched_returns += 1

    def status(self, ts: float, d: int, status: int) -> None:
        log = self.log
        self.events += 1
        log.st_dev.append(d)
        log.st_ts.append(ts)
        log.st_val.append(status)
        log.st_file.append(self.file)

    def usage(self) -> None:
        self.events += 1
        self.log.usage_events += 1

    def finish(self) -> None:
        for stack in self.stacks.values():
            self.log.unreturned += len(stack)
        self.stacks.clear()
        self.coll.report.rpm_events += self.events


_CODE = {"rpm_suspend": 0, "rpm_resume": 1, "rpm_idle": 2, "rpm_usage": 3,
         "rpm_return_int": 4, "rpm_status": 5}


def _named(parsed: dict[str, Any], ev: str) -> tuple | None:
    """A parsed payload -> (name, ...) with the fields the pairing needs (None: a field is
    missing): a call (name, flags, usage, child, depth), a return (name, ip, ret), a status
    (name, status)."""
    name = parsed.get("name")
    if name is None:
        return None
    if ev == "rpm_return_int":
        ret = parsed.get("ret")
        return None if ret is None else (name, str(parsed.get("ip", "")), ret)
    if ev == "rpm_status":
        st = _status_value(parsed.get("status"))
        return None if st is None else (name, st)
    return (name, parsed.get("flags", 0), parsed.get("usage_count", -1),
            parsed.get("child_count", -1), parsed.get("disable_depth", -1))


def _fields(parsed: dict[str, Any], ev: str, log: RpmLog) -> tuple | None:
    """_named() as the text reader caches it: (code, device id, ...); code 0-2 a call
    (CALL_KINDS), 3 rpm_usage, 4 rpm_return_int (device, call kind the ip names or -1, ret),
    5 rpm_status."""
    f = _named(parsed, ev)
    if f is None:
        return None
    code = _CODE[ev]
    if code == 4:
        return (4, log.dev_id(f[0]), _KIND.get(f[1].split("+", 1)[0], -1), f[2])
    return (code, log.dev_id(f[0]), *f[1:])


class TextHook:
    """ftrace text: fed the blocks the ftrace reader scans (whole lines up to `limit`)."""

    def __init__(self, coll: Collector, threads_known: bool = True) -> None:
        self.coll = coll
        self.threads_known = threads_known
        self.pairing: Pairing | None = None
        self.formats: dict[str, LineFormat] | None = None
        self.cache: dict[bytes, tuple | None] = {}  # "rpm_x: payload" -> _fields()
        self.tasks: dict[bytes, int] = {}
        self.first_done = False  # the first block was looked at (for `format` blocks)
        self.first: tuple[bytes, int] | None = None

    @property
    def events(self) -> int:
        return self.pairing.events if self.pairing is not None else 0

    def feed(self, buf: bytes, limit: int, seen: bool) -> None:
        """The first block (where a capture's own formats would be: kept, not searched, until
        an rpm_* event needs them) and the blocks in which the ftrace reader's scan met
        rpm_* events (`seen`)."""
        if not self.first_done:
            self.first_done = True
            self.first = (buf, limit)
        if not seen:
            return
        if self.pairing is None:
            self.pairing = Pairing(self.coll, self.threads_known)
            self.formats = default_formats()
            first, self.first = self.first, None
            if first is not None and first[0] is not buf and b"print fmt: " in first[0]:
                self._learn(*first)
        if b"print fmt: " in buf:
            self._learn(buf, limit)
        self._scan(buf, limit)

    def _learn(self, buf: bytes, limit: int) -> None:
        """Event formats the capture carries (`format` files): they win over the table."""
        if self.formats is None:
            self.formats = default_formats()
        for m in _FMT_BLOCK.finditer(buf, 0, limit):
            ev = m.group(1).decode()
            lf = compile_format(m.group(2).decode("utf-8", "replace"))
            if ev in EVENTS and lf is not None:
                self.formats[ev] = lf
                rpm_log(self.coll.store).formats_from_capture.add(ev)
                self.cache.clear()

    def _parse(self, key: bytes) -> tuple | None:
        if len(key) > _MAX_PAYLOAD:  # no rpm event is that long; the regex would crawl
            return None
        ev, _, payload = key.partition(b": ")
        name = ev.decode()
        lf = self.formats.get(name) if self.formats else None
        parsed = lf.parse(payload.lstrip(b" ")) if lf is not None else None
        return _fields(parsed, name, rpm_log(self.coll.store)) if parsed is not None else None

    def _scan(self, buf: bytes, limit: int) -> None:
        coll, pairing, cache, tasks = self.coll, self.pairing, self.cache, self.tasks
        assert pairing is not None
        log = pairing.log
        find, rfind = buf.find, buf.rfind
        task_thread = coll.store.task_thread
        ret, stacks, fid, nan = pairing.ret, pairing.stacks, pairing.file, math.nan
        # Pairing.call and .status inlined: this loop runs once per event (the budget is
        # 50 MB/s of rpm_* lines)
        (a_dev, a_kind, a_flags, a_usage, a_child, a_depth, a_start, a_end, a_ret, a_nested,
         a_thread, a_file) = pairing._columns
        s_dev, s_ts, s_val, s_file = (log.st_dev.append, log.st_ts.append, log.st_val.append,
                                      log.st_file.append)
        n = 0
        for m in _EVENT.finditer(buf, 0, limit):
            s = m.start()
            le = find(b"\n", s)
            if le < 0:
                le = limit
            if buf[le - 1] == 13:  # \r
                le -= 1
            key = buf[s + 2 : le]
            hit = cache.get(key, False)
            if hit is False:
                hit = cache[key] = self._parse(key)
            if hit is None:
                coll.skip(f"malformed {m.group(1).decode()}")
                continue
            p = rfind(b" ", 0, s)
            try:
                ts = float(buf[p + 1 : s])
            except ValueError:
                coll.skip("rpm event without a timestamp")
                continue
            if not -_TS_BOUND < ts < _TS_BOUND:
                coll.skip("impossible timestamp")
                continue
            code = hit[0]
            if code == 5:
                s_dev(hit[1])
                s_ts(ts)
                s_val(hit[2])
                s_file(fid)
                n += 1
                continue
            if code == 3:
                pairing.usage()
                continue
            tb = buf[rfind(b"\n", 0, p) + 1 : p]
            tid = tasks.get(tb)
            if tid is None:
                tid = tasks[tb] = task_thread(_task(tb))
            if code == 4:
                ret(ts, hit[1], hit[2], hit[3], tid)
                continue
            i = len(log.dev)
            a_dev(hit[1])
            a_kind(code)
            a_flags(hit[2])
            a_usage(hit[3])
            a_child(hit[4])
            a_depth(hit[5])
            a_start(ts)
            a_end(nan)
            a_ret(0)
            a_nested(0.0)
            a_thread(tid)
            a_file(fid)
            n += 1
            stack = stacks.get(tid)
            if stack is None:
                stacks[tid] = [i]
            else:
                stack.append(i)
        pairing.events += n

    def finish(self) -> None:
        self.first = None
        if self.pairing is not None:
            self.pairing.finish()


def _task(prefix: bytes) -> str:
    cut = prefix.rfind(b" [")
    return (prefix[:cut] if cut >= 0 else prefix).strip().decode("utf-8", "replace")


# -- Perfetto ------------------------------------------------------------------------------

def text(value: Any) -> str:
    """A Perfetto string field as str. protobuf hands a proto2 `string` holding invalid UTF-8
    back as bytes: decoded with replacement, as the text importers do."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


class PerfettoHook:
    """Perfetto: rpm_status is a typed FtraceEvent (field 489); the other rpm events have no
    proto of their own and arrive as GenericFtraceEvent (field 327: event_name + fields) or,
    in newer traced versions, as fields described by the bundle's generic_event_descriptors.
    Bundles are per CPU and a call may return on another CPU: events are sorted at the end."""

    def __init__(self, coll: Collector) -> None:
        self.coll = coll
        self.rows: list[tuple[int, int, str, tuple]] = []  # (ts ns, pid, event, fields)
        self.descriptors: dict[int, tuple[str, dict[int, str]]] = {}
        self.seen_ids: set[int] = set()

    def typed_status(self, ts: int, pid: int, e: Any) -> None:
        self._add(ts, pid, "rpm_status", {"name": text(e.name), "status": int(e.status)})

    def generic(self, ts: int, pid: int, g: Any) -> None:
        name = text(g.event_name)
        if name not in EVENTS:
            return
        vals: dict[str, Any] = {}
        for f in g.field:
            which = f.WhichOneof("value")
            v = getattr(f, which) if which else None
            vals[text(f.name)] = text(v) if isinstance(v, (bytes, bytearray)) else v
        self._add(ts, pid, name, vals)

    def descriptors_of(self, bundle: Any) -> None:
        """Newer traced: `generic_event_descriptors` name the FtraceEvent field ids of events
        without a proto; each holds a DescriptorProto of the event's fields."""
        if not bundle.generic_event_descriptors:
            return
        from google.protobuf import descriptor_pb2

        for d in bundle.generic_event_descriptors:
            if d.field_id in self.seen_ids:  # bundles repeat them: decode each once
                continue
            self.seen_ids.add(d.field_id)
            try:
                desc = descriptor_pb2.DescriptorProto.FromString(d.event_descriptor)
            except Exception:  # a broken descriptor: its events stay unread
                continue
            if desc.name in EVENTS:
                self.descriptors[d.field_id] = (desc.name, {f.number: f.name for f in desc.field})

    def unknown(self, ts: int, pid: int, ev: Any) -> None:
        """An FtraceEvent whose payload is a field described by a generic descriptor."""
        if not self.descriptors:
            return
        from google.protobuf.unknown_fields import UnknownFieldSet

        for uf in UnknownFieldSet(ev):
            spec = self.descriptors.get(uf.field_number)
            if spec is None or uf.wire_type != 2:
                continue
            self._add(ts, pid, spec[0], _decode_fields(bytes(uf.data), spec[1]))

    def _add(self, ts: int, pid: int, name: str, vals: dict[str, Any]) -> None:
        if name == "rpm_status":
            st = _status_value(vals.get("status"))
            if st is None or vals.get("name") is None:
                self.coll.skip("malformed rpm_status")
            else:
                self.rows.append((ts, pid, name, (vals["name"], st)))
            return
        if name == "rpm_return_int":
            vals = {**vals, "ip": ""}  # an address, not a symbol: pair by device only
        fields = _named(vals, name)
        if fields is None:
            self.coll.skip(f"malformed {name}")
            return
        self.rows.append((ts, pid, name, fields))

    def finish(self) -> int:
        if not self.rows:
            return 0
        pairing = Pairing(self.coll)
        threads: dict[int, int] = {}
        self.rows.sort(key=lambda r: r[0])
        dev_id = pairing.log.dev_id
        for ts_ns, pid, ev, f in self.rows:
            tid = threads.get(pid)
            if tid is None:
                tid = threads[pid] = self.coll.store.thread_id(f"pid {pid}")
            ts = ts_ns / 1e9
            if ev == "rpm_return_int":  # the ip is an address: pair by device only
                pairing.ret(ts, dev_id(f[0]), -1, _signed32(f[2]), tid)
            elif ev == "rpm_status":
                pairing.status(ts, dev_id(f[0]), _signed32(f[1]))
            elif ev == "rpm_usage":
                pairing.usage()
            else:
                pairing.call(ts, _KIND[ev], dev_id(f[0]), *(_signed32(x) for x in f[1:]), tid)
        pairing.finish()
        return pairing.events


def _signed32(v: Any) -> int:
    v = int(v) if v is not None else -1
    v &= 0xFFFFFFFF if v >= 0 and v >> 32 == 0 else 0xFFFFFFFFFFFFFFFF
    if v >= 1 << 63:
        v -= 1 << 64
    elif v >= 1 << 31 and v < 1 << 32:
        v -= 1 << 32
    return v


def _decode_fields(data: bytes, names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pos, n = 0, len(data)
    while pos < n:
        key, pos = _varint(data, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(data, pos)
        elif wt == 2:
            ln, pos = _varint(data, pos)
            val = data[pos : pos + ln].decode("utf-8", "replace")
            pos += ln
        elif wt == 1:
            val = int.from_bytes(data[pos : pos + 8], "little", signed=True)
            pos += 8
        elif wt == 5:
            val = int.from_bytes(data[pos : pos + 4], "little", signed=True)
            pos += 4
        else:
            break
        if num in names:
            out[names[num]] = val
    return out


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while pos < len(buf) and shift < 70:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    return result, len(buf)


__all__ = ["LineFormat", "PerfettoHook", "TextHook", "compile_format", "default_formats", "text"]
