"""Opening what dpmlens reads, within the bounds of `limits`: C sources and trace captures.

- `not_regular(path)`: why a path (after symlinks) is no regular file: FIFOs and devices
  would block or never end (`/dev/zero`), so they are skipped, never opened.
- `read_source(path)`: a C file's bytes, refused above `limits.SOURCE_BYTES` before reading.
- `Capped`: a decompressing stream that stops at `limits.TRACE_DECOMPRESSED_BYTES`.
- `lines(stream)`: lines of at most `limits.LINE_BYTES`; a longer one is reported, not kept.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from dpmlens.core import limits


class LimitExceeded(Exception):
    """An input bound was hit; the message names it and how to raise it."""


def kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """None for a regular file (symlinks followed); else what it is. Missing paths: None
    (the caller's open reports them)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else kind(mode)


def read_source(path: str) -> bytes:
    """The whole file; a descriptor read (no buffered reader object: ~0.4 s less CPU over
    drivers/). Refuses files over `limits.SOURCE_BYTES` without reading them."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        cap = int(limits.SOURCE_BYTES.value)
        if size > cap:
            raise LimitExceeded(limits.SOURCE_BYTES.exceeded(f"{limits.human_bytes(size)}:"))
        data = os.read(fd, size + 1)  # + 1: notices a file that grew since fstat
        if len(data) == size:
            return data
        parts, total = [data], len(data)  # a short read or a grown file: read to the end
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
            total += len(chunk)
            if total > cap:
                raise LimitExceeded(limits.SOURCE_BYTES.exceeded("grew while read,"))
        return b"".join(parts)
    finally:
        os.close(fd)


class Capped(io.RawIOBase):
    """A read-only view of `inner` that raises LimitExceeded past `limit` bytes (for the
    decompressed side of a .gz: a 1 GiB stream of zeros packs into 1 MB)."""

    def __init__(self, inner: BinaryIO, limit: limits.Limit) -> None:
        self.inner, self.limit, self.count = inner, limit, 0
        self.cap = int(limit.value)
        # read1: what one decompression step gave; a truncated .gz then still yields every
        # byte before the damage (read(n) would drop the last partial block with the error).
        self._read = getattr(inner, "read1", None) or inner.read

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        room = self.cap - self.count
        if room <= 0:  # everything up to the limit was handed out: is there more?
            if self._read(1):
                raise LimitExceeded(self.limit.exceeded("stopped reading:"))
            return 0
        data = self._read(min(len(b), room))
        self.count += len(data)
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def capped_gzip(inner: BinaryIO) -> BinaryIO:
    return io.BufferedReader(Capped(inner, limits.TRACE_DECOMPRESSED_BYTES), 1 << 20)  # type: ignore[return-value]


TOO_LONG = "line longer than the {} limit (set {} to raise it)"


def lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """The lines of `stream`; None stands for a line over `limits.LINE_BYTES`, which is read
    past in pieces, never held whole."""
    cap = int(limits.LINE_BYTES.value)
    readline = stream.readline
    while line := readline(cap + 1):
        if len(line) <= cap or line.endswith(b"\n"):
            yield line
            continue
        while (rest := readline(cap)) and not rest.endswith(b"\n"):
            pass
        yield None


def too_long_line() -> str:
    return TOO_LONG.format(limits.LINE_BYTES.describe(), limits.LINE_BYTES.env)
