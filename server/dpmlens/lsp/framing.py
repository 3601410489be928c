"""The transport under pygls' reader loop (stdin, or the TCP connection of `serve --tcp`):
only well-formed frames get through.

pygls 2.1.1 (`pygls.io_.run_async`) trusts the stream: a frame whose Content-Length is too
short, too long or missing leaves it reading bodies as headers for the rest of the session,
and a length of 10^12 makes it allocate and exit. `FrameReader` replaces the stdin object
pygls reads (`readline()` / `read(n)`, called from its thread) and hands it canonical frames
only:

- a frame starts at a `Content-Length: N` header line found anywhere in the stream; bytes
  before it are dropped (and logged);
- a body never runs into the next header: raw `Content-Length: N\\r\\n` cannot occur inside
  JSON (strings hold no raw CR/LF), so a header inside the announced body cuts the body there;
- a length over `limits.MESSAGE_BYTES` is logged and its body skipped, never buffered whole;
- a length longer than what the client sent before it stopped sending (it is waiting for our
  answer) is cut where the JSON value is complete.

The JSON itself is parsed by pygls; a body that is no JSON is answered with ParseError by the
server (server.py).
"""

from __future__ import annotations

import json
import os
import re
import select
from collections import deque
from collections.abc import Callable

from dpmlens.core import limits

_HEADER = re.compile(rb"Content-Length[ \t]*:[ \t]*(\d{1,20})[ \t]*\r\n", re.IGNORECASE)
_KEEP = 64  # bytes kept from a dropped stretch: the start of a header split across reads
_MAX_HEADERS = 4096  # bytes of header lines after Content-Length before the blank line
_STALL_SECONDS = 0.5  # no more bytes for this long: the client waits for us


class FrameReader:
    """A blocking `readline()` / `read(n)` pair over a file descriptor (a pipe or a
    connected socket) for pygls' loop."""

    def __init__(self, fd: int, log: Callable[[str], None]) -> None:
        self.fd, self.log = fd, log
        self.buf = bytearray()
        self.eof = False
        self.out: deque[bytes] = deque()  # header line, blank line, body of the next frame

    # -- what pygls calls ------------------------------------------------------------------

    def readline(self) -> bytes:
        if not self.out:
            self._next_frame()
        return self.out.popleft() if self.out else b""  # b"": end of the stream

    def read(self, n: int) -> bytes:
        return self.out.popleft() if self.out else b""

    # -- framing -----------------------------------------------------------------------------

    def _next_frame(self) -> None:
        while True:
            m = _HEADER.search(self.buf)
            if m is None:
                if self.eof:
                    self._drop(len(self.buf), "at the end of the stream")
                    return
                self._drop(len(self.buf) - _KEEP, "with no Content-Length header")
                self._fill()
                continue
            if m.start():
                self._drop(m.start(), "before a Content-Length header")
                continue
            blank = self.buf.find(b"\r\n\r\n", m.end() - 2)
            # (+ 2: the CR LF that ends the last header line is the first half of the blank)
            again = _HEADER.search(self.buf, m.end(), blank + 2 if blank >= 0 else len(self.buf))
            if again is not None:  # a header with no blank line and body: a new frame starts
                self._drop(again.start(), "(a header without a body)")
                continue
            if blank < 0:
                if self.eof or len(self.buf) - m.end() > _MAX_HEADERS:
                    self._drop(m.end(), "(a header not ended by a blank line)")
                    continue
                self._fill()
                continue
            size, start = int(m.group(1)), blank + 4
            if size > limits.MESSAGE_BYTES.value:
                self.log(f"dpmlens: dropped a message of {size} bytes: "
                         + limits.MESSAGE_BYTES.exceeded("it is") + "; resynchronizing on "
                         "the next header")
                del self.buf[:start]
                continue
            body = self._body(start, size)
            if body:
                self.out.extend((b"Content-Length: %d\r\n" % len(body), b"\r\n", body))
                return
            if self.eof and not self.buf:
                return

    def _body(self, start: int, size: int) -> bytes:
        """The body of `size` bytes at `start`, or less when the length lied; consumed."""
        searched, end = start, start + size
        while True:
            nxt = _HEADER.search(self.buf, max(start, searched - _KEEP))
            if nxt is not None and nxt.start() < end:
                self.log(f"dpmlens: a message announced {size} bytes but the next header "
                         f"came after {nxt.start() - start}: cut there")
                return self._take(start, nxt.start())
            searched = len(self.buf)
            if len(self.buf) >= end:
                if not _cut_header(self.buf[max(start, end - 16):end]) or not self._fill(
                        _STALL_SECONDS):
                    return self._take(start, end)
                continue  # the body ends in what may be the start of the next header
            if self.eof:
                self.log(f"dpmlens: the stream ended inside a message of {size} bytes")
                return self._take(start, len(self.buf))
            if not self._fill(_STALL_SECONDS) and _complete_json(self.buf[start:]):
                self.log(f"dpmlens: a message announced {size} bytes but the client sent "
                         f"{len(self.buf) - start} and waits: taken as they are")
                return self._take(start, len(self.buf))

    def _take(self, start: int, end: int) -> bytes:
        body = bytes(self.buf[start:end])
        del self.buf[:end]
        return body

    def _drop(self, n: int, why: str) -> None:
        if n <= 0:
            return
        if bytes(self.buf[:n]).strip():
            self.log(f"dpmlens: dropped {n} bytes of input {why}")
        del self.buf[:n]

    def _fill(self, timeout: float | None = None) -> bool:
        """Read what is available; False if nothing came within `timeout` seconds."""
        if timeout is not None:
            try:
                ready, _, _ = select.select([self.fd], [], [], timeout)
            except (OSError, ValueError):  # not selectable (a file): just read
                ready = [self.fd]
            if not ready:
                return False
        try:
            chunk = os.read(self.fd, 1 << 20)
        except OSError as exc:  # a TCP client that reset its connection: the end, not a crash
            self.log(f"dpmlens: the client's stream ended: {exc.strerror or exc}")
            chunk = b""
        if not chunk:
            self.eof = True
        self.buf += chunk
        return True


def _cut_header(tail: bytearray) -> bool:
    """Does `tail` end with the start of a header ("...}Content-Le")? A JSON body ends with a
    bracket, a quote or a digit, never with a prefix of "Content-Length"."""
    low = bytes(tail).lower()
    return any(b"content-length".startswith(low[k:]) for k in range(len(low)))


def _complete_json(body: bytearray) -> bool:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True
