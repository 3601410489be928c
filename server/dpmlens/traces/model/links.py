"""Device links (supplier -> consumer) for the critical path and the what-if replay (`--links`).

No capture format carries them (device_pm_callback_start names the parent only), so they come
from the machine's sysfs, one link a line, in any of these forms:
  platform:fe200000.gpio--platform:fe300000.mmc   `ls /sys/class/devlink` (the link's name:
                                                  "<bus>:<supplier>--<bus>:<consumer>",
                                                  drivers/base/core.c device_link_add)
  /sys/class/devlink/<name>/...                   any line with such a path (`grep -r`,
                                                  `find`): the name is read from the path
  SUPPLIER CONSUMER                               two device names (or paths: the last
                                                  component is the name), whitespace- or
                                                  tab-separated, or "SUPPLIER -> CONSUMER"
Blank lines and `#` comments are skipped; other lines are counted as not understood.

The PM core orders by them as by the parent (drivers/base/power/main.c): on resume a consumer
waits for its suppliers (dpm_wait_for_superior -> dpm_wait_for_suppliers), on suspend a
supplier waits for its consumers (dpm_wait_for_subordinate -> dpm_wait_for_consumers).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

_DEVLINK_PATH = re.compile(r"/devlink/([^/]+)")


@dataclass
class DeviceLinks:
    source: str
    suppliers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    consumers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    unparsed: list[str] = field(default_factory=list)  # "line N: text"

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.suppliers.values())

    def add(self, supplier: str, consumer: str) -> None:
        if supplier and consumer and supplier != consumer:
            self.suppliers[consumer].add(supplier)
            self.consumers[supplier].add(consumer)


def _link_name(name: str) -> tuple[str, str] | None:
    """"bus:supplier--bus:consumer" -> (supplier, consumer); device names may hold ':' and,
    rarely, "--": the split is the one that leaves a "bus:" on both sides."""
    parts = name.split("--")
    for k in range(1, len(parts)):
        left, right = "--".join(parts[:k]), "--".join(parts[k:])
        if ":" in left and ":" in right:
            return left.split(":", 1)[1], right.split(":", 1)[1]
    return None


def parse_links(text: str, source: str = "<links>") -> DeviceLinks:
    out = DeviceLinks(source)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _DEVLINK_PATH.search(line)
        pair = _link_name(m.group(1)) if m else None
        if pair is None and "--" in line and " " not in line:
            pair = _link_name(line)
        if pair is None:
            fields = ([x.strip() for x in line.split("->", 1)] if "->" in line
                      else line.split("\t") if "\t" in line else line.split())
            if len(fields) == 2 and all(fields):
                pair = (fields[0].rstrip("/").rsplit("/", 1)[-1],
                        fields[1].rstrip("/").rsplit("/", 1)[-1])
        if pair is None:
            out.unparsed.append(f"line {n}: {line[:80]}")
            continue
        out.add(*pair)
    return out


def load_links(path: str) -> DeviceLinks:
    """Raises OSError when the file cannot be read."""
    return parse_links(Path(path).read_text(encoding="utf-8", errors="replace"), path)


_EXPECTED = "expected `ls /sys/class/devlink` output or 'SUPPLIER CONSUMER' per line"
_WITHOUT = "traces loaded without device links"


def links_for_editor(path: str) -> tuple[DeviceLinks | None, str | None]:
    """The links file the editor was given, all or nothing: (links, None), or (None, one
    warning naming the file and its first line not understood). Unlike `--links`, where the
    lines understood are used and the rest listed, a half-read file would change critical
    paths without anyone seeing why."""
    try:
        links = load_links(path)
    except OSError as exc:
        return None, f"{path}: cannot read the device links file: {exc.strerror or exc}; {_WITHOUT}"
    if links.unparsed:
        where, _, text = links.unparsed[0].partition(": ")
        more = len(links.unparsed) - 1
        also = f" (and {more} more line{'s' if more > 1 else ''})" if more else ""
        return None, (f"{path}:{where.removeprefix('line ')}: not a device link: {text!r}{also} "
                      f"({_EXPECTED}); {_WITHOUT}")
    if links.count == 0:
        return None, f"{path}: no device link in it ({_EXPECTED}); {_WITHOUT}"
    return links, None


def project_links(roots: list[str], setting: str = "") -> tuple[DeviceLinks | None, str | None]:
    """The device links of the editor's traces: the `traceLinks` setting (relative to the first
    workspace folder), else `[traces] links` of the `.dpmlens.toml` governing the first folder
    that has one. (None, None) when neither names a file."""
    from dpmlens.config.file import find_config, trace_links
    from dpmlens.core.errors import ConfigError

    if setting:
        path = Path(os.path.expanduser(setting))
        if not path.is_absolute() and roots:
            path = Path(roots[0]) / path
        return links_for_editor(str(path))
    for root in roots:
        found = find_config(root)
        if found is None:
            continue
        try:
            path = trace_links(found)
        except ConfigError as exc:
            return None, f"{exc}; {_WITHOUT}"
        if path is not None:
            return links_for_editor(str(path))
    return None, None
