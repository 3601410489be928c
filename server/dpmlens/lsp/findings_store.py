"""The workspace index's findings, kept on disk across server restarts.

The findings the index's workers compute after a scan (index_findings.py) take minutes of
background CPU over a kernel's drivers/, and are lost when the editor restarts: until the pass
has run again, every didOpen parses and analyses. This store keeps them, one file per set of
workspace folders and dpmlens build (`<cache>/editor/<key>.json`, the CLI's cache directory:
$XDG_CACHE_HOME/dpmlens), so that after a restart

  - a didOpen whose text, configuration, directory and headers are what they were publishes
    the stored findings at once (the same check as for the findings computed this run:
    `Precomputed.holds`);
  - the findings pass skips a file whose stored findings still hold (its worker reads the file
    and stats its directory instead of parsing and analysing it).

Kept: the files the scan parsed whose findings were computed, with the findings as
`engine.result_cache` writes them and the kernel version of their tree (the delay rules read
it; a checkout of another version between two runs leaves many files as they were). Not kept:
a finding carrying more than that codec holds (a measurement, a fleet cost, a dead-code
reason). A store that cannot be read (absent, corrupt, another format or build) is an empty
one; one that cannot be written leaves the old file as it was (atomic write) and is logged by
the caller.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.core.atomic import write_text_atomic
from dpmlens.engine.result_cache import (
    build_fingerprint,
    config_text,
    default_dir,
    finding_in,
    finding_out,
)
from dpmlens.lsp.index_findings import Precomputed, Stamp
from dpmlens.rules.sleep_slack import tree_version

FORMAT = 2
MAX_FILES = 50_000  # a workspace bigger than a kernel keeps the first this many (by path)
MAX_STORES = 8  # stores kept in the cache directory (the least recently written go first)


def store_path(roots: list[str], build: str, directory: Path | None = None) -> Path:
    """Where the findings of a workspace with these folders are kept."""
    key = hashlib.sha256("\0".join([build, *sorted(roots)]).encode("utf-8", "surrogateescape"))
    return (directory or default_dir()) / "editor" / f"{key.hexdigest()[:24]}.json"


class FindingsStore:
    """Stored findings by path: `get(path, config)` gives a `Precomputed` to check with
    `holds`, `save(found)` replaces the file with the findings computed this run."""

    def __init__(self, path: Path, build: str) -> None:
        self.path = path
        self.build = build
        # (files, configs, directories' C files as [name, size, mtime_ns]): replaced as one
        # (a save runs in a thread while the server reads)
        self._data: tuple[dict[str, list[Any]], list[str], list[list[Any]]] = ({}, [], [])

    @classmethod
    def for_roots(cls, roots: list[str]) -> FindingsStore:
        build = build_fingerprint()
        return cls(store_path(roots, build), build)

    def __len__(self) -> int:
        return len(self._data[0])

    def load(self) -> str | None:
        """Read the store (empty if it is absent); the reason it was not usable, if one."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            return f"{self.path}: not read ({e})"
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return f"{self.path}: not a findings store of format {FORMAT}"
        if data.get("build") != self.build:
            return None  # (another dpmlens build or rule set: its findings may differ)
        files, configs, dirs = data.get("files"), data.get("configs"), data.get("dirs")
        if not isinstance(files, dict) or not isinstance(configs, list) or not isinstance(
                dirs, list):
            return f"{self.path}: no 'files', 'configs' or 'dirs' table"
        self._data = (files, [str(c) for c in configs], dirs)
        return None

    def get(self, path: str, config: Config) -> Precomputed | None:
        """The stored findings of `path`, if they were computed with `config`."""
        files, configs, dirs = self._data
        entry = files.get(path)
        if entry is None:
            return None
        try:
            digest, ci, stamp, headers, findings, version = entry
            if configs[ci] != config_text(config) or version != _version(path):
                return None
            if isinstance(stamp, int):  # the directory's listing, less the file itself
                me = os.path.basename(path)
                stamp = [row for row in dirs[stamp] if row[0] != me]
            return Precomputed(
                bytes.fromhex(digest), config, _stamp(stamp),
                tuple(finding_in(f, path) for f in findings), _stamp(headers), earlier=True,
            )  # fmt: skip
        except (ValueError, TypeError, IndexError, KeyError):
            return None  # (a damaged entry: analysed the usual way)

    def forget(self, path: str) -> None:
        self._data[0].pop(path, None)

    def save(self, found: Mapping[str, Precomputed]) -> int:
        """Replace the store with `found` (atomically); the number of files kept. Raises
        OSError when it cannot be written (the old store is then as it was)."""
        configs: dict[str, int] = {}
        files: dict[str, list[Any]] = {}
        kept = sorted(p for p, pre in found.items()
                      if not any(f.dead or f.measured or f.fleet for f in pre.findings))
        # A directory's C files are listed once: each file's stamp is that listing less itself
        # (a directory of n files would otherwise be stored n times over).
        listings: dict[str, dict[str, tuple[int, int]]] = {}
        for path in kept:
            rows = listings.setdefault(os.path.dirname(path), {})
            rows.update((n, (size, mtime)) for n, size, mtime in found[path].stamp)
        dirs: list[list[Any]] = []
        dir_index: dict[str, int] = {}
        for path in kept[:MAX_FILES]:
            pre = found[path]
            directory, me = os.path.split(path)
            listing = listings[directory]
            stamp: int | list[Any] = [list(s) for s in pre.stamp]
            if tuple((n, *listing[n]) for n in sorted(listing) if n != me) == pre.stamp:
                if directory not in dir_index:
                    dir_index[directory] = len(dirs)
                    dirs.append([[n, *listing[n]] for n in sorted(listing)])
                stamp = dir_index[directory]
            ci = configs.setdefault(config_text(pre.config), len(configs))
            files[path] = [
                pre.digest.hex(), ci, stamp, [list(h) for h in pre.headers],
                [finding_out(f, path) for f in pre.findings], _version(path),
            ]  # fmt: skip
        data = {"format": FORMAT, "build": self.build, "configs": list(configs),
                "dirs": dirs, "files": files}  # fmt: skip
        os.makedirs(self.path.parent, exist_ok=True)
        write_text_atomic(self.path, json.dumps(data, separators=(",", ":")))
        self._data = (files, list(configs), dirs)
        _evict(self.path.parent)
        return len(files)


def _evict(directory: Path) -> None:
    """At most MAX_STORES stores (one per workspace and build): the oldest go."""
    try:
        stores = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    except OSError:  # (one removed meanwhile by another server: next time)
        return
    for old in stores[:-MAX_STORES]:
        with contextlib.suppress(OSError):
            old.unlink()


def _version(path: str) -> list[int] | None:
    """The kernel version of the tree holding `path`, which the delay rules read (msleep()'s
    extra jiffy before 6.12): a tree checked out at another version between two runs changes
    findings of files that did not change."""
    version = tree_version(os.path.dirname(os.path.abspath(path)))
    return list(version) if version is not None else None


def _stamp(rows: list[Any]) -> Stamp:
    return tuple((str(n), int(size), int(mtime)) for n, size, mtime in rows)
