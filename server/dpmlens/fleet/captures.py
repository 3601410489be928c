"""Read stage, part 1: which captures a list of paths holds, their ids and header metadata.

A capture is one sleepgraph test (its `X_dmesg.txt` and `X_ftrace.txt`, plain, `.gz` or
`.xz`), one folder's `dmesg.txt` + `ftrace.txt`/`trace.txt` (the capture lab's layout), or
one other trace file (dmesg, ftrace, Perfetto). Directories are walked (sleepgraph `-multi`
trees give one capture per test folder); `.tar.gz`/`.tgz`/`.tar` archives are unpacked into a
temporary folder and walked the same way. The id is a hash of the files' bytes, so the same
capture under another name or path is the same capture.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import re
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ARCHIVES = (".tar.gz", ".tgz", ".tar")
_SLEEPGRAPH = ("_dmesg.txt", "_ftrace.txt")
_TRACE_NAMES = (".perfetto-trace", ".pftrace", ".pb", ".dmesg", ".ftrace", "dmesg.txt",
                "dmesg.log", "trace.txt")
_PAIR = ("dmesg.txt", "ftrace.txt", "trace.txt")
_STAMP = re.compile(r"^# (?:suspend|freeze|standby|mem|disk|hibernate)-(\d{6})-(\d{6}) "
                    r"(\S+) (\S+) (\S+)")
_FW = re.compile(r"^# fwsuspend (\d+) fwresume (\d+)")
_LINUX = re.compile(r"Linux version (\S+)")
_DMI = re.compile(r"\bDMI: (.+?)\s*$")
HEAD_BYTES = 256 << 10


@dataclass
class Capture:
    files: list[Path]  # the files to read
    names: list[str]  # how to name them to the user (archive!member for archive members)
    capture_id: str = ""
    meta: dict[str, str] = field(default_factory=dict)  # from the capture's own header lines
    dmesg_issues: list[str] = field(default_factory=list)  # warning/error lines of its dmesg


@dataclass
class Found:
    captures: list[Capture]
    errors: list[tuple[str, str]]  # (path, reason): what is not a capture at all
    tempdirs: list[tempfile.TemporaryDirectory[str]]

    def cleanup(self) -> None:
        for t in self.tempdirs:
            t.cleanup()


def find(paths: list[str]) -> Found:
    found = Found([], [], [])
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            _walk(p, str(p), found)
        elif p.is_file():
            if p.name.endswith(ARCHIVES):
                _unpack(p, found)
            else:
                found.captures.append(Capture([p], [str(p)]))
        elif p.exists():
            found.errors.append((raw, "not a regular file or directory"))
        else:
            found.errors.append((raw, "no such file or directory"))
    return found


def _walk(root: Path, shown: str, found: Found, archive: str | None = None) -> None:
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in sorted(root.rglob("*")):
        if not f.is_file() or any(part.startswith(".") for part in f.relative_to(root).parts):
            continue
        name = f.name[:-3] if f.name.endswith((".gz", ".xz")) else f.name
        if name in _PAIR:  # one folder, one run: its dmesg and its trace are one capture
            groups.setdefault((f.parent, "\0"), []).append(f)
        elif name.endswith(_SLEEPGRAPH):
            stem = name[:-len("_dmesg.txt")] if name.endswith("_dmesg.txt") else name[:-len(
                "_ftrace.txt")]
            groups.setdefault((f.parent, stem), []).append(f)
        elif f.name.endswith(ARCHIVES) and archive is None:
            _unpack(f, found)
        elif name.endswith(_TRACE_NAMES) or name in ("trace", "dmesg"):
            groups[(f, "")] = [f]
    if not groups:
        found.errors.append((shown, "holds no capture files (*_dmesg.txt, *_ftrace.txt, "
                                    "*.perfetto-trace, trace.txt, dmesg.txt, archives)"))
    for (_, _), files in sorted(groups.items(), key=lambda kv: str(kv[1][0])):
        names = [f"{archive}!{f.relative_to(root)}" if archive else str(f) for f in files]
        found.captures.append(Capture(files, names))


def _unpack(path: Path, found: Found) -> None:
    tmp = tempfile.TemporaryDirectory(prefix="dpmlens-fleet-")
    found.tempdirs.append(tmp)
    try:
        with tarfile.open(path) as tar:
            tar.extractall(tmp.name, filter="data")  # no absolute paths, links out, devices
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        found.errors.append((str(path), f"cannot unpack archive: {exc}"))
        return
    _walk(Path(tmp.name), str(path), found, archive=str(path))


def identify(cap: Capture) -> None:
    """Content id, header metadata and dmesg issue lines (reads each file once)."""
    h = hashlib.blake2b(digest_size=10)
    digests = []
    for f in cap.files:
        fh = hashlib.blake2b(digest_size=16)
        head = b""
        with _open(f) as s:
            while chunk := s.read(1 << 20):
                fh.update(chunk)
                if len(head) < HEAD_BYTES:
                    head += chunk[:HEAD_BYTES - len(head)]
                if _is_dmesg(f):
                    cap.dmesg_issues.extend(issue_lines(chunk))
        digests.append(fh.digest())
        _header(head.decode("utf-8", "replace"), cap.meta)
    for d in sorted(digests):  # order of files does not matter
        h.update(d)
    cap.capture_id = h.hexdigest()
    if "kernel" not in cap.meta:
        _release_beside(cap)


_META_KERNEL = re.compile(r"^kernel: (\S+)\s*$", re.MULTILINE)


def _release_beside(cap: Capture) -> None:
    """A trace alone in its folder (the ftrace of a run whose dmesg was kept apart, the
    capture lab's parts): the kernel release from a kernel log beside it (`Linux version`),
    else from the lab's `meta.txt` (`kernel: 6.1.0-56-amd64`). Not part of the capture id."""
    for folder in dict.fromkeys(f.parent for f in cap.files):
        beside = sorted(f for f in folder.iterdir() if f.is_file() and f not in cap.files)
        for f in beside:
            name = f.name[:-3] if f.name.endswith((".gz", ".xz")) else f.name
            if not (name in ("dmesg.txt", "dmesg.log", "dmesg") or name.endswith("_dmesg.txt")):
                continue
            try:
                with _open(f) as s:
                    head = s.read(HEAD_BYTES).decode("utf-8", "replace")
            except (OSError, EOFError, lzma.LZMAError, gzip.BadGzipFile):
                continue
            if m := _LINUX.search(head):
                cap.meta["kernel"] = m.group(1)
                return
        meta = folder / "meta.txt"
        if meta.is_file():
            try:
                text = meta.read_text(encoding="utf-8", errors="replace")[:HEAD_BYTES]
            except OSError:
                continue
            if m := _META_KERNEL.search(text):
                cap.meta["kernel"] = m.group(1)
                return


def _open(path: Path):  # type: ignore[no-untyped-def]
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    if magic == b"\xfd7zXZ\x00":
        return lzma.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115


def _is_dmesg(path: Path) -> bool:
    name = path.name[:-3] if path.name.endswith((".gz", ".xz")) else path.name
    return "dmesg" in name


_ISSUE = re.compile(rb"^[^\n]*(?:\berror\b|\bfail|\bwarn|timed? ?out|\bBUG\b|Oops|"
                    rb"Call Trace|hung task)[^\n]*$", re.IGNORECASE | re.MULTILINE)


def issue_lines(chunk: bytes) -> list[str]:
    # chunk boundaries may cut a line; an issue split in two is rare and costs one count
    return [m.group(0).decode("utf-8", "replace") for m in _ISSUE.finditer(chunk)]


def _header(text: str, meta: dict[str, str]) -> None:
    for line in text.splitlines():
        if line.startswith("# "):
            if (m := _STAMP.match(line)) and "host" not in meta:
                d, t = m.group(1), m.group(2)
                try:  # sleepgraph writes MMDDYY-HHMMSS
                    when = datetime.strptime(d + t, "%m%d%y%H%M%S").replace(tzinfo=timezone.utc)
                    meta["captured_at"] = when.isoformat()
                except ValueError:
                    pass
                meta["host"], meta["mode"], meta["kernel"] = m.group(3), m.group(4), m.group(5)
            elif m := _FW.match(line):
                meta.setdefault("fw_suspend_ns", m.group(1))
                meta.setdefault("fw_resume_ns", m.group(2))
            elif line.startswith("# sysinfo |"):
                meta.setdefault("sysinfo", line[2:].strip())
                fields = dict(_kv(part) for part in line.split("|")[1:])
                machine = " ".join(v for v in (fields.get("man"), fields.get("plat")) if v)
                if machine:
                    meta.setdefault("machine", machine)
            elif line.startswith("# command |"):
                cmd = line.split("|", 1)[1].strip()
                meta.setdefault("command", cmd)
                if "-rtcwake" in cmd:
                    meta.setdefault("trigger", "rtcwake")
        # the substring tests first: a regex per line of a 256 KB head costs 5 ms a capture
        elif "kernel" not in meta and "Linux version" in line and (m := _LINUX.search(line)):
            meta["kernel"] = m.group(1)
        elif "machine" not in meta and "DMI: " in line and (m := _DMI.search(line)):
            meta["machine"] = m.group(1)


def _kv(part: str) -> tuple[str, str]:
    k, _, v = part.strip().partition(":")
    return k.strip(), v.strip()


def file_date(cap: Capture) -> str:
    """When the capture does not say: the newest file's modification time (UTC)."""
    mtime = max(os.stat(f).st_mtime for f in cap.files)
    return datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat()
