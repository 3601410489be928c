"""Where "<driver> <device>" splits when either name contains spaces.

The kernel prints `dev_driver_string(dev) dev_name(dev)` with one space between them
(include/trace/events/power.h, device_pm_callback_start), and both may contain spaces:
`i8042 kbd 00:04` is driver "i8042 kbd" (a pnp_driver) on device 00:04, `platform Fixed MDIO
bus.0` is device "Fixed MDIO bus.0" with no driver bound (the bus name is printed),
`int3400 thermal INT3400:00` is driver "int3400 thermal". The importers split at the first
space and remember the raw text of every head with more than one space; once the whole
capture is read, `resolve_store` decides with what the capture itself says, in this order:

1. a candidate device name the capture states on its own: the `parent:` of another device,
   a device whose head had a single space, a dmesg `calling  <device>+ @` line;
2. a known driver, bus or class name as the driver part (the longest one): the source tree's
   driver names when --source is given, the bus/class names, and the driver names with spaces
   of linux-6.1/6.12 (spaced-driver-names.yaml, each with its file:line);
3. otherwise the first word stays the driver, and the report says the split is a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from dpmlens.traces.model.sample import Group, SampleStore

_TABLE = Path(__file__).with_name("spaced-driver-names.yaml")

# Bus and class names dev_driver_string() prints for a device without a bound driver.
BUS_NAMES = frozenset({
    "pci", "usb", "platform", "i2c", "spi", "scsi", "acpi", "pnp", "net", "vc", "bdi", "tty",
    "block", "input", "misc", "mem", "sound", "graphics", "hidraw", "rtc", "thermal", "leds",
    "bluetooth", "workqueue", "cpu", "machinecheck", "memory", "clockevents", "clocksource",
    "serio", "regulator", "ieee80211", "rfkill", "drm", "scsi_disk", "scsi_device",
    "scsi_host", "scsi_generic", "hwmon", "backlight", "power_supply", "usb_device", "usbmon",
    "ata_port", "ata_link", "ata_device", "pci_bus", "pcieport", "intel_pmu_ext", "mdio_bus",
    "hid", "sdio", "mmc", "mmc_host", "nvme", "wakeup", "dma", "gpio", "i2c-adapter",
    "spi_master", "typec", "ptp", "virtio", "xen", "container", "node", "event_source",
})

_DMESG_DEVICE = re.compile(rb"calling  (.+?)\+ @ \d+")


@lru_cache(maxsize=1)
def spaced_driver_names() -> frozenset[str]:
    """Driver names with spaces from the kernel sources (see the YAML's header)."""
    try:
        text = _TABLE.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    plain = _plain_table(text)
    if plain is not None:
        return plain
    import yaml

    from dpmlens.traces.model.yaml_tables import safe_load

    try:
        data = safe_load(text) or {}
    except yaml.YAMLError:
        return frozenset()
    return frozenset(str(k) for k in (data.get("drivers") or {}))


# An entry as --generate writes it: a double-quoted key and value without escapes, which
# YAML reads as the text between the quotes
_PLAIN_ENTRY = re.compile(r'  "([^"\\\x00-\x1f]*)": "[^"\\\x00-\x1f]*"')


def _plain_table(text: str) -> frozenset[str] | None:
    """The keys under `drivers:` when the file is comments, that line and entries as
    --generate writes them (the table's YAML without importing PyYAML: ~15 ms of a report);
    None for anything else (then YAML reads it)."""
    keys = []
    seen_drivers = False
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line == "drivers:" and not seen_drivers:
            seen_drivers = True
            continue
        m = _PLAIN_ENTRY.fullmatch(line)
        if m is None or not seen_drivers:
            return None
        keys.append(m.group(1))
    return frozenset(keys) if seen_drivers else None


def candidates(raw: str) -> list[tuple[str, str]]:
    """Every (driver, device) a head with spaces can be, driver shortest first."""
    out = []
    i = raw.find(" ")
    while i > 0:
        out.append((raw[:i], raw[i + 1 :]))
        i = raw.find(" ", i + 1)
    return out


def split(raw: str, devices: set[str] | frozenset[str],
          drivers: Iterable[str] = ()) -> tuple[str, str, str]:
    """(driver, device, how it was decided) for one raw head."""
    cands = candidates(raw)
    if len(cands) < 2:
        drv, _, dev = raw.partition(" ")
        return drv, dev, "single space"
    known = set(drivers) | BUS_NAMES | spaced_driver_names()
    stated = [c for c in cands if c[1] in devices]
    if stated:
        # several suffixes named elsewhere: the one whose driver part is known, else the
        # longest device name
        best = next((c for c in stated if c[0] in known), stated[0])
        return best[0], best[1], f"device '{best[1]}' is named elsewhere in the capture"
    named = [c for c in cands if c[0] in known]
    if named:
        best = named[-1]  # the longest known driver name
        what = "bus or class" if best[0] in BUS_NAMES else "driver"
        return best[0], best[1], f"'{best[0]}' is a known {what} name"
    drv, dev = cands[0]
    return drv, dev, "guessed: first word as the driver"


def stated_devices(store: SampleStore) -> set[str]:
    """Device names the capture states without ambiguity."""
    out = set(store.device_names)
    ambiguous = {id(g) for g in store.ambiguous}
    for g in store.groups.values():
        out.add(g.key[2])  # a parent
        if id(g) not in ambiguous:
            out.add(g.key[1])
    out.discard("")
    out.discard("none")
    return out


def harvest_dmesg(data: bytes, store: SampleStore) -> None:
    """Device names from a dmesg the importers did not read (a sleepgraph test's twin of an
    ftrace file): the old pm_print_times form prints the device alone."""
    store.device_names.update(m.group(1).decode("utf-8", "replace")
                              for m in _DMESG_DEVICE.finditer(data))


def resolve_store(store: SampleStore, drivers: Iterable[str] = ()) -> dict[str, str]:
    """Re-key the groups whose head had several spaces; returns raw head -> how decided.

    Idempotent: groups keep their raw head, so a later call with the source tree's driver
    names (the CLI with --source) can decide again.
    """
    if not store.ambiguous:
        return {}
    devices = stated_devices(store)
    drivers = set(drivers)
    how: dict[str, str] = {}
    kept: list[Group] = []
    for g in store.ambiguous:
        raw = g.raw_head
        if raw is None:
            continue
        drv, dev, why = split(raw, devices, drivers)
        how[raw] = why
        kept.append(g)
        if (drv, dev) == g.key[:2]:
            continue
        new_key = (drv, dev, *g.key[2:])
        del store.groups[g.key]
        other = store.groups.get(new_key)
        if other is None:
            g.key = new_key
            store.groups[new_key] = g
        else:
            _merge(other, g)
            kept[-1] = other
            other.raw_head = raw
    store.ambiguous = list({id(g): g for g in kept}.values())
    return how


def _merge(into: Group, g: Group) -> None:
    base = len(into.durations)
    into.durations.extend(g.durations)
    into.starts.extend(g.starts)
    into.cycles.extend(g.cycles)
    into.files.extend(g.files)
    into.threads.extend(g.threads)
    for i, err in g.errors.items():
        into.errors[base + i] = err
    into.symbol = into.symbol or g.symbol


def _generate(trees: list[str]) -> str:
    """The YAML table from kernel trees (newest last wins the citation)."""
    import json
    import os

    struct = re.compile(r"^(?:static\s+)?(?:const\s+)?struct\s+(\w+_driver)\s+\w+\s*"
                        r"(?:\[\s*\w*\s*\]\s*)?(?:__\w+\s*)?=\s*\{", re.M)
    name = re.compile(r'\.name\s*=\s*"([^"]* [^"]*)"')
    found: dict[str, str] = {}
    for tree in trees:
        label = os.path.basename(os.path.normpath(tree))
        for d, _, files in os.walk(os.path.join(tree, "drivers")):
            for f in files:
                if not f.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, f)
                text = Path(p).read_text(encoding="utf-8", errors="replace")
                for m in struct.finditer(text):
                    body = text[m.end() : text.find("\n};", m.end())]
                    for n in name.finditer(body):
                        line = text.count("\n", 0, m.end() + n.start()) + 1
                        found[n.group(1)] = (f"{label} {os.path.relpath(p, tree)}:{line} "
                                             f"({m.group(1)})")
    head = Path(_TABLE).read_text(encoding="utf-8").split("drivers:")[0]
    rows = [f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(found[k])}"
            for k in sorted(found)]
    return head + "drivers:\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    import sys

    if len(sys.argv) < 3 or sys.argv[1] != "--generate":
        sys.exit("usage: python -m dpmlens.traces.model.names --generate LINUX_TREE ...")
    _TABLE.write_text(_generate(sys.argv[2:]), encoding="utf-8")
