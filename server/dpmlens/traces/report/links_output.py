"""The device links section of `trace report` (text and JSON)."""

from __future__ import annotations

from typing import Any

from dpmlens.traces.model.links import DeviceLinks
from dpmlens.traces.model.timeline import PhaseRun


def used_links(links: DeviceLinks, runs: list[PhaseRun]) -> int:
    """Links whose two ends both have a callback in one phase run (the ones that can order)."""
    used: set[tuple[str, str]] = set()
    for r in runs:
        devices = {iv.device for iv in r.intervals}
        for c in devices:
            for s in links.suppliers.get(c, ()):
                if s in devices:
                    used.add((s, c))
    return len(used)


def links_json(links: DeviceLinks | None, runs: list[PhaseRun]) -> dict[str, Any] | None:
    if links is None:
        return None
    return {"file": links.source, "links": links.count, "used": used_links(links, runs),
            "unparsed": links.unparsed}


def links_text(links: DeviceLinks | None, runs: list[PhaseRun]) -> list[str]:
    if links is None:
        return []
    out = [f"\nDevice links: {links.count} from {links.source}, {used_links(links, runs)} "
           "between devices with callbacks in the same phase (used as critical-path "
           "predecessors)"]
    if links.unparsed:
        out.append(f"  {len(links.unparsed)} line(s) not understood, the first: "
                   f"{links.unparsed[0]}")
    return out
