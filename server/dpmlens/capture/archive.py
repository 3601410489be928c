"""A capture archive (`dpmlens capture`'s .tar.gz, or any .tar/.tgz of capture files) opened
for the trace commands: unpacked into a temporary folder that is read like a directory, with
what the script recorded beside the traces (device links, meta.txt) found for the caller.

`fleet ingest` unpacks archives itself (fleet/captures.py); the trace readers read files and
folders, so the commands hand them the unpacked folder and name the members
`ARCHIVE!member` in what they print.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SUFFIXES = (".tar.gz", ".tgz", ".tar")


class ArchiveError(Exception):
    """An archive that cannot be unpacked; the message names it and says why."""


@dataclass
class Opened:
    paths: list[str]  # what to read: the user's paths, archives replaced by their folders
    links: list[Path] = field(default_factory=list)  # devlink.txt files the archives hold
    meta: dict[str, str] = field(default_factory=dict)  # meta.txt of the (last) archive
    shown: dict[str, str] = field(default_factory=dict)  # temporary folder -> archive name
    warnings: list[str] = field(default_factory=list)  # what the archives' meta.txt says

    def name(self, text: str) -> str:
        """`text` with each temporary folder replaced by its archive's name."""
        for tmp, archive in self.shown.items():
            text = text.replace(tmp + os.sep, archive + "!").replace(tmp, archive)
        return text


def is_archive(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).endswith(SUFFIXES) and os.path.isfile(path)


@contextmanager
def opened(paths: list[str]) -> Iterator[Opened]:
    """Unpack the archives among `paths` (member paths checked: nothing outside the folder,
    no links out, no devices) for as long as the block runs."""
    out = Opened([])
    temps: list[tempfile.TemporaryDirectory[str]] = []
    try:
        for p in paths:
            if not is_archive(p):
                out.paths.append(p)
                continue
            tmp = tempfile.TemporaryDirectory(prefix="dpmlens-capture-")
            temps.append(tmp)
            try:
                with tarfile.open(p) as tar:
                    tar.extractall(tmp.name, filter="data")
            except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
                raise ArchiveError(f"{p}: cannot unpack archive: {exc}") from None
            out.paths.append(tmp.name)
            out.shown[tmp.name] = p
            root = Path(tmp.name)
            out.links += sorted(root.rglob("devlink.txt"))
            for m in sorted(root.rglob("meta.txt")):
                meta = read_meta(m)
                out.meta.update(meta)
                if meta.get("capture", "").startswith("dpmlens"):
                    out.warnings += meta_warnings(meta, p)
        yield out
    finally:
        for t in temps:
            t.cleanup()


def read_meta(path: Path) -> dict[str, str]:
    """meta.txt's "key: value" lines (the first of a repeated key)."""
    meta: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return meta
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and " " not in key:
            meta.setdefault(key, value.strip())
    return meta


def power_async(paths: list[str]) -> dict[str, tuple[str, str]]:
    """device -> (power/async value, its sysfs folder) from the power-async.txt files under
    `paths` (`dpmlens capture` writes "DEVICE enabled|disabled SYSFS-PATH" lines)."""
    out: dict[str, tuple[str, str]] = {}
    for p in paths:
        root = Path(p)
        files = sorted(root.rglob("power-async.txt")) if root.is_dir() else []
        for f in files:
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[2].startswith("/sys/"):
                    out.setdefault(parts[0], (parts[1], parts[2]))
    return out


def meta_warnings(meta: dict[str, str], name: str) -> list[str]:
    """What a `dpmlens capture` archive's meta.txt says the capture lacks."""
    out = []
    lost = meta.get("overrun", "0")
    if lost.isdigit() and int(lost):
        out.append(f"{name}: {lost} trace events were lost (buffer overrun): phases may lack "
                   "callbacks; capture again with a larger -b")
    notes = meta.get("kprobe_notes", "").split()
    entry_only = [n.split(":")[0] for n in notes if n.endswith(":entry-only")]
    if entry_only:
        out.append(f"{name}: the kernel refused the return probes of {', '.join(entry_only)}: "
                   "those delays have no duration")
    if meta.get("sched") == "0":
        out.append(f"{name}: captured without sched_switch/sched_waking: waits are not told "
                   "from work")
    failed = meta.get("failed_cycles", "0")
    if failed.isdigit() and int(failed):
        out.append(f"{name}: {failed} cycle(s) failed to suspend (see its dmesg.txt)")
    return out
