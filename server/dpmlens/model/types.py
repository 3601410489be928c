"""Data types of the PM model of one C file (the contract between model/, rules/, lsp/, traces/).

Spans are 1-based with exclusive end columns (see findings.Span); byte offsets are kept where
rules need to look at the tree again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dpmlens.findings import Span


@dataclass(frozen=True)
class FunctionDef:
    name: str
    span: Span  # the whole definition
    name_span: Span  # the identifier in the declarator
    is_static: bool
    start_byte: int
    end_byte: int
    maybe_unused: bool = False  # declared __maybe_unused
    under_config_ifdef: bool = False  # inside #ifdef CONFIG_PM / CONFIG_PM_SLEEP (or #if ...)


@dataclass(frozen=True)
class CallSite:
    callee: str  # identifier of the called function/macro
    caller: str | None  # enclosing function definition, None at file scope
    span: Span  # the whole call expression
    callee_span: Span  # just the callee identifier
    args: tuple[str, ...]  # argument source text, as written
    start_byte: int
    end_byte: int


@dataclass(frozen=True)
class PmMember:
    member: str  # a dev_pm_ops member name (see model.phases.MEMBERS)
    function: str | None  # the named function; None for NULL or something not an identifier
    span: Span  # where the function name is written (inside a macro call if via a macro)
    via: str  # "designated" or the macro that filled it ("SET_SYSTEM_SLEEP_PM_OPS", ...)


@dataclass(frozen=True)
class PmTable:
    name: str  # the dev_pm_ops variable
    span: Span  # the declaration / macro invocation
    macro: str | None  # defining macro (SIMPLE_DEV_PM_OPS, ...) or None for a plain struct
    members: tuple[PmMember, ...]
    maybe_unused: bool = False  # declared __maybe_unused (explicitly or by the macro)
    under_config_ifdef: bool = False  # inside #ifdef CONFIG_PM / CONFIG_PM_SLEEP
    exported: bool = False  # EXPORT_*_DEV_PM_OPS

    def function_for(self, member: str) -> str | None:
        for m in self.members:
            if m.member == member:
                return m.function
        return None


@dataclass(frozen=True)
class DriverStruct:
    var_name: str  # e.g. "foo_driver"
    struct_type: str  # e.g. "platform_driver", "pci_driver", "i2c_driver"
    bus: str  # e.g. "platform", "pci", "i2c", "usb", "spi", "hid", "acpi", "serio"
    name: str | None  # the registered driver name, resolved; None if unknown
    name_span: Span | None
    probe: str | None
    pm: str | None  # name of the dev_pm_ops table (pm_ptr()/pm_sleep_ptr()/& stripped)
    legacy: dict[str, str] = field(default_factory=dict)  # legacy bus callbacks: {"suspend": fn}
    span: Span | None = None
    registration: str | None = None  # "module_platform_driver", "platform_driver_register", ...
    legacy_spans: dict[str, Span] = field(default_factory=dict)  # where each legacy fn is named


@dataclass
class FileModel:
    """Everything one C file says about PM.

    `calls` may be built lazily: `build_model` passes a loader and the full list is only
    extracted on first access; `calls_in(fn)` extracts just one function's calls. Code that
    needs calls inside PM callbacks and their helpers should use `calls_in`.
    """

    path: str
    source: bytes
    functions: dict[str, FunctionDef]
    calls: list[CallSite]  # in document order (see class doc: may be loaded lazily)
    pm_tables: dict[str, PmTable]
    drivers: list[DriverStruct]
    defines: dict[str, str]  # object-like #defines: name -> replacement text
    tree: object | None = None  # the tree_sitter.Tree, for rules that need to look again
    # optional lazy loader of one function's calls (set by build_model)
    calls_loader: Callable[[str], list[CallSite]] | None = field(
        default=None, repr=False, compare=False
    )

    def calls_in(self, function: str) -> list[CallSite]:
        """The call sites inside `function`, in document order."""
        if "_calls" not in self.__dict__ and self.calls_loader is not None:
            cache = self.__dict__.setdefault("_calls_in", {})
            if function not in cache:
                cache[function] = self.calls_loader(function)
            return cache[function]
        return self.calls_by_caller().get(function, [])

    def calls_by_caller(self) -> dict[str | None, list[CallSite]]:
        """Call sites grouped by enclosing function (None: file scope); built once, cached."""
        index = self.__dict__.get("_calls_by_caller")
        if index is None:
            index = {}
            for c in self.calls:
                index.setdefault(c.caller, []).append(c)
            self.__dict__["_calls_by_caller"] = index
        return index


def _get_calls(self: FileModel) -> list[CallSite]:
    calls = self.__dict__.get("_calls")
    if calls is None:
        loader = self.__dict__.pop("_calls_thunk", None)
        calls = loader() if loader is not None else []
        self.__dict__["_calls"] = calls
    return calls


def _set_calls(self: FileModel, value: list[CallSite] | Callable[[], list[CallSite]]) -> None:
    self.__dict__.pop("_calls_by_caller", None)
    if callable(value):
        self.__dict__.pop("_calls", None)
        self.__dict__["_calls_thunk"] = value
    else:
        self.__dict__["_calls"] = value


# `calls` is a dataclass field whose value may be given as a zero-argument loader.
FileModel.calls = property(_get_calls, _set_calls)  # type: ignore[assignment]
