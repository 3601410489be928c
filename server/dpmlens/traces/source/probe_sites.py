"""Where a driver's probe is (`trace advise --source`): the place for the probe-time
device_enable_async_suspend() call that makes its devices' suspend/resume async."""

from __future__ import annotations

import os
import re
from pathlib import Path

from dpmlens.traces.source.mapping import SourceIndex, build_index


def bus_of(device: str, parent: str) -> str | None:
    """The bus a device name says it is on (a driver name alone is ambiguous: "serial" is
    registered by a dozen drivers on as many buses)."""
    if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", device):
        return "pci"
    if parent.startswith("pnp"):
        return "pnp"
    if re.fullmatch(r"(usb\d+|\d+-[\d.]+(:\d+\.\d+)?)", device):
        return "usb"
    if parent == "platform":
        return "platform"
    return None


def probe_sites(source: str | os.PathLike[str], wanted: dict[str, str | None]
                ) -> dict[str, tuple[str, int, str] | list[str]]:
    """driver name -> (path relative to `source`, line, probe function) where one driver
    struct of that name (on the bus given, when given) has its probe under `source`; the
    candidates' paths when several do. `wanted`: driver -> bus or None."""
    if not wanted:
        return {}
    return sites_in(build_index(source, set(wanted)), wanted)


def sites_in(index: SourceIndex, wanted: dict[str, str | None]
             ) -> dict[str, tuple[str, int, str] | list[str]]:
    out: dict[str, tuple[str, int, str] | list[str]] = {}
    root = Path(index.root)

    def rel(path: str) -> str:
        p = Path(path)
        return str(p.relative_to(root)) if root.is_dir() and p.is_relative_to(root) else path

    for name, bus in sorted(wanted.items()):
        found = [(model, drv, model.functions[drv.probe]) for model, drv in
                 index.drivers.get(name, []) if drv.probe and drv.probe in model.functions
                 and (bus is None or drv.bus == bus)]
        if len(found) == 1:
            model, _, fn = found[0]
            out[name] = (rel(model.path), fn.span.line, fn.name)
        elif found:
            out[name] = sorted({rel(m.path) for m, _, _ in found})
    return out
