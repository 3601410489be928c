"""Which files to read (directories, sleepgraph -multi trees) and in which format.

Formats are recognised from the content (the first 64 KiB, decompressed), not the name;
`.gz` and `.xz` are recognised by their magic bytes, and such a name on other data is an
error.
"""

from __future__ import annotations

import gzip
import lzma
import os
import re
import zlib
from pathlib import Path
from typing import BinaryIO

from dpmlens.core import inputs
from dpmlens.traces.read import dmesg, ftrace, perfetto

FORMATS = ("dmesg", "ftrace", "perfetto")
HEAD = 64 << 10
_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
# In a directory, only these names are read (sleepgraph output and common capture names).
_DIR_SUFFIXES = (
    "_dmesg.txt",
    "_ftrace.txt",
    ".perfetto-trace",
    ".pftrace",
    ".pb",
    ".dmesg",
    ".ftrace",
    "dmesg.txt",
    "dmesg.log",
    "trace.txt",
    "ftrace.txt",
)


# an ftrace/trace-cmd line's `task-pid [cpu]` columns
_TASK_CPU = re.compile(rb"(?m)^.{0,48}?-\d+ +(?:\( *[\d-]+\) +)?\[\d{1,4}\] ")


class FormatError(Exception):
    """The file cannot be read as any trace format; the message says why."""


def open_stream(path: Path) -> BinaryIO:
    """Open a file, transparently decompressing gzip (recognised by its magic bytes) up to
    `limits.TRACE_DECOMPRESSED_BYTES` (past it, reads raise inputs.LimitExceeded)."""
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    magic = f.read(6)
    f.seek(0)
    if magic[:2] == _GZIP_MAGIC:
        return inputs.capped_gzip(gzip.GzipFile(fileobj=f, mode="rb"))  # type: ignore[arg-type]
    if magic == _XZ_MAGIC:
        return inputs.capped_gzip(lzma.LZMAFile(f, mode="rb"))  # type: ignore[arg-type]
    if path.name.endswith(".gz"):
        f.close()
        raise FormatError("named .gz but not gzip data (no 1f 8b magic)")
    if path.name.endswith(".xz"):
        f.close()
        raise FormatError("named .xz but not xz data (no fd 37 7a 58 5a 00 magic)")
    return f


def detect(path: Path) -> str:
    """Return one of FORMATS, or raise FormatError naming the formats tried."""
    head = b""
    with open_stream(path) as s:
        read1 = getattr(s, "read1", None) or s.read
        try:
            while len(head) < HEAD:
                piece = read1(HEAD - len(head))
                if not piece:
                    break
                head += piece
        except (OSError, EOFError, zlib.error, lzma.LZMAError, inputs.LimitExceeded) as exc:
            if not head:  # a truncated .gz still gets read as far as it goes
                raise FormatError(f"cannot decompress: {exc}") from None
    if not head:
        raise FormatError("empty file")
    if head.startswith(b"\x17\x08\x44tracing"):
        raise FormatError("trace-cmd binary data: convert it with "
                          f"`trace-cmd report -i {path.name} > {path.stem}.txt`")
    base = path.name[:-3] if path.name.endswith((".gz", ".xz")) else path.name
    if _binary(head):
        if perfetto.looks_like(head) or base.endswith(perfetto.SUFFIXES):
            return "perfetto"
        raise FormatError("binary data that is not a Perfetto trace "
                          f"(tried {', '.join(FORMATS)})")
    # Text first: a log that starts with an empty line also starts with byte 0x0A, and
    # protobuf parses many byte strings without complaint.
    if ftrace.looks_like(head) and (b"# tracer:" in head or _TASK_CPU.search(head)
                                    or not dmesg.looks_like(head.decode("utf-8", "replace"))):
        return "ftrace"
    # tracepoints printed into a kernel log (tp_printk) and pasted from journalctl read
    # `... kernel: rpm_resume: ...`: ftrace's event text, without its task and CPU columns
    if dmesg.looks_like(head.decode("utf-8", "replace")):
        return "dmesg"
    if perfetto.looks_like(head):
        return "perfetto"
    raise FormatError(
        "unknown format: no kernel log lines (a `[ ts]` prefix, or pm_print_times, phase or "
        "rpm_*/device_pm_callback tracepoint messages in any pasted form: dmesg), no "
        "device_pm_callback/suspend_resume events or '# tracer:' header (ftrace), not a "
        f"Perfetto protobuf (tried {', '.join(FORMATS)})"
    )


# the bytes that are text for _binary (all but controls other than \t \n \v \f \r)
_TEXT = bytes(b for b in range(256) if not (b < 9 or 13 < b < 32))


def _binary(head: bytes) -> bool:
    # Ratio, not "any NUL": a kernel log with one corrupted line is still a kernel log.
    sample = head[:4096]
    nontext = len(sample.translate(None, _TEXT))  # the others, counted in C
    return nontext > len(sample) // 20


def expand(paths: list[str | os.PathLike[str]]) -> tuple[list[tuple[Path, bool, Path | None]],
                                                      list[str]]:
    """(file, named, directory it came from) in a stable order, and errors for missing paths.

    `named` files (given by the user, or with a capture name such as `*_ftrace.txt`) are
    always read; other `.txt`/`.log`/... files found in a directory are read only if their
    content is a trace, so a directory of notes beside captures is not an error.
    """
    files: list[tuple[Path, bool, Path | None]] = []
    errors: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for f in sorted(p.rglob("*")):
                kind = _wanted(f.name)
                if kind and f.is_file():
                    found.append((f, kind == "named", p))
            if not found:
                errors.append(f"{p}: {NO_TRACES}")
            files.extend(found)
        elif p.exists():
            if (what := inputs.not_regular(p)) is not None:  # a FIFO or /dev/zero never ends
                errors.append(f"{p}: {what}, not a trace file; skipped")
                continue
            files.append((p, True, None))
        else:
            errors.append(f"{p}: no such file or directory")
    seen: set[Path] = set()
    unique = [t for t in files if not (t[0].resolve() in seen or seen.add(t[0].resolve()))]
    return unique, errors


NO_TRACES = ("directory holds no trace files (*_dmesg.txt, *_ftrace.txt, *.perfetto-trace, "
             "*.pftrace, or .txt/.log files with trace content)")
_MAYBE_SUFFIXES = (".txt", ".log", ".trace", ".dat", ".out")


def _wanted(name: str) -> str | None:
    base = name[:-3] if name.endswith((".gz", ".xz")) else name
    if base.endswith(_DIR_SUFFIXES) or base in ("trace", "dmesg"):
        return "named"
    if base.endswith(_MAYBE_SUFFIXES):
        return "maybe"
    return None


def sleepgraph_pair(path: Path) -> Path | None:
    """For X_dmesg.txt[.gz|.xz] the X_ftrace.txt[.gz|.xz] of the same sleepgraph test, and
    for a folder's dmesg.txt its ftrace.txt or trace.txt (the capture lab's layout), if
    present."""
    name = path.name[:-3] if path.name.endswith((".gz", ".xz")) else path.name
    if name == "dmesg.txt":
        twins: tuple[str, ...] = ("ftrace.txt", "trace.txt")
    elif name.endswith("_dmesg.txt"):
        twins = (name[: -len("_dmesg.txt")] + "_ftrace.txt",)
    else:
        return None
    for cand in (t + ext for t in twins for ext in ("", ".gz", ".xz")):
        if (path.parent / cand).is_file():
            return path.parent / cand
    return None
