"""Measured (driver, phase) -> the callback in the source.

driver name -> the driver struct registering that name (`build_model` resolves `.name`,
`.driver.name`, #defines, `static const char[]`, KBUILD_MODNAME) -> its `.pm` table -> the
member for the phase -> the function definition. A callback measured at the bus, type, class
or power-domain layer (pci_pm_suspend, ...) runs the driver's member inside it: it is
attributed to that member and marked with `via` = the layer. Anything that does not map
carries the reason.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dpmlens.model.build import build_model
from dpmlens.model.buses import DRIVER_STRUCTS, LEGACY_CALLBACKS
from dpmlens.model.types import DriverStruct, FileModel, FunctionDef
from dpmlens.syntax.prefilter import may_contain_pm
from dpmlens.traces.aggregate import CallbackStats

_BUS_NAMES = frozenset(DRIVER_STRUCTS.values()) | {
    "pci",
    "usb",
    "platform",
    "i2c",
    "scsi",
    "acpi",
    "pnp",
    "net",
    "vc",
    "bdi",
    "tty",
    "block",
    "input",
    "misc",
    "mem",
    "sound",
    "graphics",
    "hidraw",
    "rtc",
    "thermal",
    "leds",
    "bluetooth",
    "workqueue",
    "cpu",
    "machinecheck",
    "memory",
    "clockevents",
    "clocksource",
    "serio",
    "regulator",
    "ieee80211",
    "rfkill",
    "drm",
    "scsi_disk",
    "scsi_device",
    "scsi_host",
    "scsi_generic",
    "hwmon",
    "backlight",
    "power_supply",
    "usb_device",
    "usbmon",
    "ata_port",
    "ata_link",
    "ata_device",
    "pci_bus",
    "pcieport",
    "intel_pmu_ext",
}
# The legacy member a phase falls back to (struct xxx_driver .suspend / .resume).
_LEGACY_FOR_PHASE = {v: k for k, v in LEGACY_CALLBACKS.items() if k == v}


@dataclass(frozen=True)
class SourceRef:
    path: str
    line: int  # 1-based
    function: str
    via: str | None  # None: measured in the driver's own callback; else the layer it ran under
    member: str  # the dev_pm_ops (or legacy) member mapped to
    table: str | None  # dev_pm_ops table name, None for a legacy callback


@dataclass(frozen=True)
class Mapping:
    source: SourceRef | None
    reason: str | None  # why `source` is None


@dataclass
class SourceIndex:
    root: str
    drivers: dict[str, list[tuple[FileModel, DriverStruct]]] = field(default_factory=dict)
    models: list[FileModel] = field(default_factory=list)
    files_scanned: int = 0
    files_parsed: int = 0
    errors: list[str] = field(default_factory=list)

    def function(self, name: str, prefer: FileModel) -> tuple[FileModel, FunctionDef] | None:
        fn = prefer.functions.get(name)
        if fn is not None:
            return prefer, fn
        same_dir = os.path.dirname(prefer.path)
        for m in sorted(self.models, key=lambda m: os.path.dirname(m.path) != same_dir):
            fn = m.functions.get(name)
            if fn is not None:
                return m, fn
        return None

    def table(self, name: str, prefer: FileModel):  # noqa: ANN201 - PmTable | None
        t = prefer.pm_tables.get(name)
        if t is not None:
            return prefer, t
        for m in self.models:
            t = m.pm_tables.get(name)
            if t is not None:
                return m, t
        return None


def build_index(
    root: str | os.PathLike[str],
    driver_names: Iterable[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SourceIndex:
    """Index the driver structs under `root` (a kernel tree, a directory or one .c file).

    With `driver_names`, only files that mention one of those names (as a string literal or as
    their KBUILD_MODNAME stem) are parsed: a byte search, so a whole drivers/ tree is cheap.
    """
    idx = SourceIndex(str(root))
    names = {n for n in (driver_names or ()) if n}
    pattern = None
    if names:
        alts = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
        pattern = re.compile(b'"(?:' + alts + b')"')
    stems = {n.replace("-", "_") for n in names}
    for path in _c_files(Path(root)):
        idx.files_scanned += 1
        if progress is not None and idx.files_scanned % 1000 == 0:
            progress(idx.files_scanned)
        try:
            src = path.read_bytes()
        except OSError as exc:
            idx.errors.append(f"{path}: {exc.strerror}")
            continue
        if not may_contain_pm(src) and b"_driver" not in src:
            continue
        if pattern is not None and not (
            pattern.search(src)
            or (path.stem.replace("-", "_") in stems and b"KBUILD_MODNAME" in src)
        ):
            continue
        try:
            model = build_model(str(path), src)
        except Exception as exc:  # a parser bug must not lose the whole index
            idx.errors.append(f"{path}: could not build the PM model: {exc}")
            continue
        idx.files_parsed += 1
        keep = False
        for drv in model.drivers:
            if drv.name and (not names or drv.name in names):
                idx.drivers.setdefault(drv.name, []).append((model, drv))
                keep = True
        if keep or model.pm_tables:
            model.tree = None  # the tree is not needed here; keep memory down
            idx.models.append(model)
    return idx


def _c_files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(".c"):
                yield Path(dirpath) / f


def map_callback(stats: CallbackStats, index: SourceIndex) -> Mapping:
    drv_name, phase, layer = stats.driver, stats.phase, stats.layer
    if not drv_name:
        return Mapping(None, "no driver name in the trace (device without driver, bus or class)")
    found = index.drivers.get(drv_name)
    if not found:
        if drv_name in _BUS_NAMES:
            return Mapping(None, f"'{drv_name}' is a bus or class name: no driver was bound")
        return Mapping(None, "driver name not found in source")
    reasons = []
    for model, drv in found:
        m = _map_one(model, drv, phase, layer, stats.symbol, index)
        if m.source is not None:
            return m
        reasons.append(m.reason)
    return Mapping(None, reasons[0])


def _via(layer: str, symbol: str | None, function: str) -> str | None:
    if layer == "driver":
        return None
    if layer:
        return layer
    if symbol and symbol != function:
        return f"{symbol}()"
    return None


def _map_one(
    model: FileModel,
    drv: DriverStruct,
    phase: str,
    layer: str,
    symbol: str | None,
    index: SourceIndex,
) -> Mapping:
    fn_name: str | None = None
    table_name: str | None = None
    if drv.pm:
        found = index.table(drv.pm, model)
        if found is None:
            return Mapping(None, f"dev_pm_ops '{drv.pm}' of {drv.var_name} not found")
        model_t, table = found
        table_name = table.name
        fn_name = table.function_for(phase)
        if fn_name is None:
            legacy = drv.legacy.get(_LEGACY_FOR_PHASE.get(phase, ""))
            if legacy is None:
                return Mapping(None, f"'{drv.pm}' has no .{phase}")
            fn_name, table_name = legacy, None
        else:
            model = model_t
    else:
        legacy_key = _LEGACY_FOR_PHASE.get(phase)
        fn_name = drv.legacy.get(legacy_key) if legacy_key else None
        if fn_name is None:
            return Mapping(None, f"{drv.var_name} has no .pm (and no legacy .{phase})")
    found_fn = index.function(fn_name, model)
    if found_fn is None:
        return Mapping(None, f"{fn_name}() is not defined in the indexed source")
    fmodel, fn = found_fn
    return Mapping(
        SourceRef(
            fmodel.path,
            fn.name_span.line,
            fn.name,
            _via(layer, symbol, fn.name),
            phase,
            table_name,
        ),
        None,
    )


@dataclass
class MappedReport:
    mappings: dict[tuple[str, str, str], Mapping]
    mapped_callbacks: int
    unmapped_callbacks: int
    mapped_samples: int
    total_samples: int
    mapped_us: float
    total_us: float
    unmapped_reasons: Counter[str]


def map_to_source(stats: list[CallbackStats], index: SourceIndex) -> MappedReport:
    out: dict[tuple[str, str, str], Mapping] = {}
    reasons: Counter[str] = Counter()
    mc = ms = ts = 0
    mus = tus = 0.0
    for s in stats:
        m = map_callback(s, index)
        out[s.key] = m
        ts += s.n
        tus += s.total_us
        if m.source is not None:
            mc += 1
            ms += s.n
            mus += s.total_us
        else:
            reasons[m.reason or "unknown"] += 1
    return MappedReport(out, mc, len(stats) - mc, ms, ts, round(mus, 3), round(tus, 3), reasons)
