"""ftrace text: /sys/kernel/tracing/trace, `trace-cmd report`, sleepgraph `*_ftrace.txt`.

Only three events matter, wherever they sit in a line:
  <task>-<pid> [cpu] <flags> <timestamp>: device_pm_callback_start: ...
The flags column differs (none in trace-cmd, 4 chars, 5 on PREEMPT_RT), so the parser
anchors on ": <event>: " and takes the timestamp as the word just before it. Everything else
(kprobe lines, function graph, `#` headers, other events) is never looked at per line: a
regex with a literal prefix scans each multi-megabyte block in C, which is what makes the
50 MB/s budget reachable in Python.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from dpmlens.traces.events import Assembler
from dpmlens.traces.sample import Collector

NAME = "ftrace"
CHUNK = 4 << 20
MAX_LINE = 1 << 20  # a "line" longer than this is binary garbage: dropped, counted

# trace-cmd report pads short event names ("suspend_resume:       dpm_suspend[2] begin"); the
# callback events are never padded, and their payload may start with a space (empty driver).
_EVENT = re.compile(rb": (?:device_pm_callback_(?:start|end): |suspend_resume: +)")
_STAMP = re.compile(rb"# (?:suspend|freeze|standby|mem|disk|hibernate)-\d{6}-\d{6} ")
_PARENT = b", parent: "
_ERR = b", err="
_S, _D, _CR, _RB = ord("s"), ord("d"), ord("\r"), ord("]")


def looks_like(head: bytes) -> bool:
    return (
        b"# tracer:" in head
        or _EVENT.search(head) is not None
        or (b"cpus=" in head[:64] and b"[0" in head)
    )


def parse(stream: BinaryIO, coll: Collector) -> None:
    asm = Assembler(coll)
    carry = b""
    for block in _blocks(stream):
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
            if len(carry) > MAX_LINE:
                coll.skip("line longer than 1 MiB (binary data?)")
                carry = b""
            continue
        carry = buf[cut + 1 :]
        _scan(buf, cut + 1, asm, coll)
    if carry:
        # The last line has no newline: the file was probably cut mid-line. A cut start or
        # end line fails to parse and is counted as skipped; a whole one still counts.
        _scan(carry + b"\n", len(carry) + 1, asm, coll)
    asm.finish()
    if asm.events == 0 and not coll.report.skipped_lines:
        coll.report.notes.append("no power:device_pm_callback_* or suspend_resume events")


def _blocks(stream: BinaryIO) -> Iterator[bytes]:
    """CHUNK-sized blocks. A truncated .gz raises at its end: the blocks decoded before that
    are still yielded (read1 hands out what each step decompressed), then the error."""
    read1 = getattr(stream, "read1", None) or stream.read
    while True:
        parts: list[bytes] = []
        size = 0
        failure: BaseException | None = None
        try:
            while size < CHUNK:
                piece = read1(CHUNK - size)
                if not piece:
                    break
                parts.append(piece)
                size += len(piece)
        except (EOFError, OSError, zlib.error) as exc:
            failure = exc
        if parts:
            yield b"".join(parts)
        if failure is not None:
            raise failure
        if size < CHUNK:
            return


def _stamps(buf: bytes, limit: int) -> list[int]:
    """Positions of sleepgraph stamp lines; a `^`-anchored regex would try every byte."""
    out: list[int] = []
    pos = 0
    if not buf.startswith(b"# "):
        pos = buf.find(b"\n# ", 0, limit) + 1
        if pos == 0:
            return out
    while True:
        if _STAMP.match(buf, pos):
            out.append(pos)
        nxt = buf.find(b"\n# ", pos, limit)
        if nxt < 0:
            return out
        pos = nxt + 1


def _scan(buf: bytes, limit: int, asm: Assembler, coll: Collector) -> None:
    # sleepgraph writes one "# suspend-MMDDYY-HHMMSS host mode kernel" stamp per test; with
    # several tests in one file each stamp starts a new cycle. Stamps are rare: collect them
    # first and interleave by position.
    stamps = _stamps(buf, limit)
    si = 0
    next_stamp = stamps[0] if stamps else limit + 1
    rfind = buf.rfind
    find = buf.find
    start = asm.start
    end = asm.end
    # Indices into `buf` instead of slicing a payload per line: this loop runs once per PM
    # event and is what the 50 MB/s budget is spent on.
    for m in _EVENT.finditer(buf, 0, limit):
        s, e = m.span()
        while s > next_stamp:
            asm.boundary()
            si += 1
            next_stamp = stamps[si] if si < len(stamps) else limit + 1
        le = find(b"\n", e)
        if buf[le - 1] == _CR:
            le -= 1
        try:
            ts = float(buf[rfind(b" ", 0, s) + 1 : s])
        except ValueError:
            coll.skip("no timestamp before the event name")
            continue
        d = buf[s + 2] == _D  # "device_pm_callback_..." (else "suspend_resume")
        if d and buf[s + 21] == _S:  # device_pm_callback_start
            j = find(_PARENT, e, le)
            k = find(b", ", j + 10, le)
            if j < 0 or k < 0 or buf[le - 1] != _RB:
                coll.skip("malformed device_pm_callback_start")
                continue
            start(ts, buf[e:j], buf[j + 10 : k], buf[k + 2 : le])
        elif d:  # device_pm_callback_end
            j = rfind(_ERR, e, le)
            try:
                err = int(buf[j + 6 : le])
            except ValueError:
                j = -1
            if j < 0:
                coll.skip("malformed device_pm_callback_end")
                continue
            end(ts, buf[e:j], err)
        else:  # suspend_resume: action[val] begin|end
            payload = buf[e:le]
            lb = payload.find(b"[")
            rb = payload.find(b"] ", lb)
            try:
                val = int(payload[lb + 1 : rb])
            except ValueError:
                coll.skip("malformed suspend_resume event")
                continue
            asm.marker(ts, payload[:lb].decode("ascii", "replace"), val,
                       payload.endswith(b"begin"))
    for _ in range(si, len(stamps)):
        asm.boundary()
