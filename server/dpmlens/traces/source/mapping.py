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

from dpmlens.model.build import build_model, kbuild_modname
from dpmlens.model.buses import DRIVER_STRUCTS, LEGACY_CALLBACKS
from dpmlens.model.keywords import callback_filter
from dpmlens.model.types import DriverStruct, FileModel, FunctionDef
from dpmlens.traces.analysis.aggregate import CallbackStats
from dpmlens.traces.model.names import BUS_NAMES

_BUS_NAMES = frozenset(DRIVER_STRUCTS.values()) | BUS_NAMES
# The legacy bus callback (struct xxx_driver .suspend(dev, pm_message_t) / .resume(dev)) that
# serves a phase: it gets the pm_message_t, so one .suspend covers suspend, freeze and
# poweroff, and one .resume covers resume, thaw and restore.
_LEGACY_FOR_PHASE = {
    "suspend": "suspend", "freeze": "suspend", "poweroff": "suspend",
    "resume": "resume", "thaw": "resume", "restore": "resume",
    "suspend_late": "suspend_late", "freeze_late": "suspend_late",
    "poweroff_late": "suspend_late",
    "resume_early": "resume_early", "thaw_early": "resume_early",
    "restore_early": "resume_early",
    "suspend_noirq": "suspend_noirq", "freeze_noirq": "suspend_noirq",
    "poweroff_noirq": "suspend_noirq",
    "resume_noirq": "resume_noirq", "thaw_noirq": "resume_noirq",
    "restore_noirq": "resume_noirq",
}
assert set(_LEGACY_FOR_PHASE.values()) <= set(LEGACY_CALLBACKS)


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
    models: dict[str, FileModel] = field(default_factory=dict)  # path -> model
    table_files: dict[str, list[str]] = field(default_factory=dict)  # table name -> paths
    dir_files: dict[str, list[str]] = field(default_factory=dict)  # dir -> .c paths
    files_scanned: int = 0
    files_parsed: int = 0
    errors: list[str] = field(default_factory=list)

    def model(self, path: str, source: bytes | None = None) -> FileModel | None:
        """The model of `path`, built on first use (tables and helpers in other files);
        `source`: the file's bytes when the caller has read them already."""
        m = self.models.get(path)
        if m is None and path not in self._failed:
            try:
                m = build_model(path, Path(path).read_bytes() if source is None else source)
            except Exception as exc:  # unreadable file or a parser bug: one file, not all
                self.errors.append(f"{path}: could not build the PM model: {exc}")
                self._failed.add(path)
                return None
            m.tree = None  # keep memory down: mapping needs no tree
            self.models[path] = m
            self.files_parsed += 1
        return m

    def function(self, name: str, prefer: FileModel) -> tuple[FileModel, FunctionDef] | None:
        fn = prefer.functions.get(name)
        if fn is not None:
            return prefer, fn
        # Static helpers live in the same file; exported ones usually in the same directory.
        for path in self.dir_files.get(os.path.dirname(prefer.path), []):
            m = self.model(path)
            if m is not None and name in m.functions:
                return m, m.functions[name]
        for m in list(self.models.values()):
            if name in m.functions:
                return m, m.functions[name]
        return None

    def table(self, name: str, prefer: FileModel):  # noqa: ANN201 - (FileModel, PmTable) | None
        t = prefer.pm_tables.get(name)
        if t is not None:
            return prefer, t
        for path in self.table_files.get(name, []):
            m = self.model(path)
            if m is not None and name in m.pm_tables:
                return m, m.pm_tables[name]
        return None

    def __post_init__(self) -> None:
        self._failed: set[str] = set()
        self._modnames: dict[str, dict[str, str]] = {}

    def add_model(self, model: FileModel) -> None:
        """Register an already built model (the language server's workspace index).

        Driver names go through `effective_name`: KBUILD_MODNAME of a multi-file module is
        taken from the Makefile beside the file, not from the file stem.
        """
        self.models[model.path] = model
        directory = os.path.dirname(model.path)
        files = self.dir_files.setdefault(directory, [])
        if model.path not in files:
            files.append(model.path)
        for name in model.pm_tables:
            paths = self.table_files.setdefault(name, [])
            if model.path not in paths:
                paths.append(model.path)
        mods = self._modnames.get(directory)
        if mods is None:
            mods = self._modnames[directory] = module_names(directory)
        modname = file_modname(model.path, mods)
        for drv in model.drivers:
            name = effective_name(model, drv, modname, {})
            if name:
                entries = self.drivers.setdefault(name, [])
                if all(d is not drv for _, d in entries):
                    entries.append((model, drv))


_TABLE_DEF = re.compile(rb"\b(?:struct\s+dev_pm_ops\s+|[A-Z_]*DEV_PM_OPS\s*\(\s*)(\w+)")
_MAKE_OBJ = re.compile(r"^\s*obj-[\w$()-]*\s*[:+]?=\s*((?:[^\n\\]|\\\n)*)", re.M)
_MAKE_COMPOSITE = re.compile(
    r"^\s*([\w-]+)-(?:y|objs|\$\(CONFIG_\w+\))\s*[:+]?=\s*((?:[^\n\\]|\\\n)*)", re.M)


def module_names(directory: str) -> dict[str, str]:
    """stem -> KBUILD_MODNAME for the objects the directory's Makefile/Kbuild builds.

    `r8169-y += r8169_main.o` makes r8169_main.c part of module r8169, whose KBUILD_MODNAME is
    "r8169", not the file stem; `snd-hda-intel-y := hda_intel.o` gives "snd_hda_intel".
    """
    text = ""
    for name in ("Makefile", "Kbuild"):
        try:
            text += Path(directory, name).read_text(errors="replace") + "\n"
        except OSError:
            continue
    objs: set[str] = set()
    for m in _MAKE_OBJ.finditer(text):
        objs.update(w[:-2] for w in m.group(1).split() if w.endswith(".o"))
    out: dict[str, str] = {}
    for m in _MAKE_COMPOSITE.finditer(text):
        mod = m.group(1)
        if mod not in objs:
            continue
        for w in m.group(2).split():
            if w.endswith(".o"):
                out.setdefault(w[:-2], mod.replace("-", "_"))
    for o in objs:
        out.setdefault(o, o.replace("-", "_"))
    return out


def file_modname(path: str, mods: dict[str, str]) -> str:
    """KBUILD_MODNAME of the file `path`, given `module_names()` of its directory."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return mods.get(stem, kbuild_modname(path))


def build_index(root: str | os.PathLike[str], driver_names: Iterable[str] | None = None,
                progress: Callable[[int], None] | None = None) -> SourceIndex:
    """Index the driver structs under `root` (a kernel tree, a directory or one .c file).

    With `driver_names`, only files that can register one of those names are parsed: a byte
    search for the quoted name, for a #define of it in a header of the same directory, or for
    KBUILD_MODNAME in a file the directory's Makefile builds into a module of that name.
    """
    idx = SourceIndex(str(root))
    names = {n for n in (driver_names or ()) if n}
    norm = {n.replace("-", "_") for n in names}
    alts = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
    quoted = re.compile(b'"(?:' + alts + b')"') if names else None
    hdr_define = re.compile(rb'#define\s+(\w+)\s+"(' + alts + rb')"') if names else None
    for directory, cfiles, hfiles in _source_dirs(Path(root)):
        idx.dir_files[directory] = cfiles
        mods = module_names(directory)
        hdr_defs: dict[str, str] = {}
        if hdr_define is not None:
            for h in hfiles:
                try:
                    data = Path(h).read_bytes()
                except OSError:
                    continue
                for m in hdr_define.finditer(data):
                    hdr_defs[m.group(1).decode()] = m.group(2).decode()
        for path in cfiles:
            idx.files_scanned += 1
            if progress is not None and idx.files_scanned % 1000 == 0:
                progress(idx.files_scanned)
            try:
                src = Path(path).read_bytes()
            except OSError as exc:
                idx.errors.append(f"{path}: {exc.strerror}")
                continue
            if b"DEV_PM_OPS" in src or b"dev_pm_ops" in src:
                for m in _TABLE_DEF.finditer(src):
                    idx.table_files.setdefault(m.group(1).decode(), []).append(path)
            if not callback_filter().matches(src) and b"_driver" not in src:
                continue
            modname = file_modname(path, mods)
            if names and not (
                (quoted is not None and quoted.search(src))
                or (modname in norm and b"KBUILD_MODNAME" in src)
                or any(ident.encode() in src for ident in hdr_defs)
            ):
                continue
            model = idx.model(path, src)
            if model is None:
                continue
            for drv in model.drivers:
                name = effective_name(model, drv, modname, hdr_defs)
                if name and (not names or name in names or name in norm):
                    idx.drivers.setdefault(name, []).append((model, drv))
    return idx


def _source_dirs(root: Path) -> Iterable[tuple[str, list[str], list[str]]]:
    if root.is_file():
        yield str(root.parent), [str(root)], []
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files = sorted(filenames)
        cfiles = [os.path.join(dirpath, f) for f in files if f.endswith(".c")]
        if cfiles:
            yield dirpath, cfiles, [os.path.join(dirpath, f) for f in files if f.endswith(".h")]


def _name_text(model: FileModel, drv: DriverStruct) -> str:
    span = drv.name_span
    if span is None:
        return ""
    lines = model.source.splitlines()
    if span.line - 1 >= len(lines):
        return ""
    seg = lines[span.line - 1 : span.end_line]
    return b" ".join(seg).decode("utf-8", "replace")


def effective_name(model: FileModel, drv: DriverStruct, modname: str,
                    hdr_defs: dict[str, str]) -> str | None:
    """The driver name as the running kernel reports it (dev_driver_string())."""
    text = _name_text(model, drv)
    if "KBUILD_MODNAME" in text:
        # build_model uses the file stem; a multi-file module is named by its Makefile.
        return modname
    if drv.name is None:
        for ident in re.findall(r"[A-Za-z_]\w*", text):
            if ident in hdr_defs:
                return hdr_defs[ident]
    return drv.name


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
    reason = reasons[0] or "unknown"
    if layer in ("bus", "type", "class", "power domain", "legacy bus", "legacy class",
                 "legacy type"):
        reason += f" (the time is spent in the {layer} callback itself)"
    return Mapping(None, reason)


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
            return Mapping(None, f"{drv.var_name} has no .pm (and no legacy "
                                 f".{legacy_key or phase})")
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
