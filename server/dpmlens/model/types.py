"""Data types of the PM model of one C file (the contract between model/, rules/, lsp/, traces/).

Spans are 1-based with exclusive end columns (see findings.Span); byte offsets are kept where
rules need to look at the tree again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dpmlens.core.findings import Span
from dpmlens.model import footprint


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
    # set for a call through a function pointer (`ops->power_up(x)`): the member called;
    # `callee` is then one function the file's static const initializers set it to
    via_pointer: str | None = None


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


class CallLoader(Protocol):
    """Extracts call sites on demand (build_model's implementation reads the tree)."""

    def calls_of(self, function: str) -> list[CallSite]: ...

    def calls_named(self, names: frozenset[str]) -> list[CallSite]: ...

    def callee_names(self) -> frozenset[str]: ...

    def header_defines(self) -> dict[str, str]: ...

    def header_files(self) -> dict[str, object]: ...


@dataclass
class FileModel:
    """Everything one C file says about PM.

    Call sites are extracted lazily when `build_model` made the model: `calls` (the whole
    list) is built on first access, which costs as much as the rest of the model together
    on big files. Cheaper ways in: `calls_in(fn)` (one function's calls), `calls_to(*names)`
    (calls of given functions anywhere, found by a text search first) and `callee_names()`.
    """

    path: str
    source: bytes
    functions: dict[str, FunctionDef]
    calls: list[CallSite]  # in document order (see class doc: may be loaded lazily)
    pm_tables: dict[str, PmTable]
    drivers: list[DriverStruct]
    defines: dict[str, str]  # object-like #defines: name -> replacement text
    tree: object | None = None  # the tree_sitter.Tree, for rules that need to look again
    loader: CallLoader | None = field(default=None, repr=False, compare=False)

    def _lazy(self) -> bool:
        return "_calls" not in self.__dict__ and self.loader is not None

    def calls_in(self, function: str | None) -> list[CallSite]:
        """The call sites inside `function` (None: at file scope), in document order."""
        if (fp := footprint.of(self)) is not None:
            if function is None:
                fp.give_up("calls at file scope")
            else:
                fp.functions.add(function)
        if function is not None and self._lazy():
            assert self.loader is not None
            cache = self.__dict__.setdefault("_calls_in", {})
            if function not in cache:
                cache[function] = self.loader.calls_of(function)
            return cache[function]
        return self.calls_by_caller().get(function, [])

    def calls_to(self, *names: str) -> list[CallSite]:
        """Calls (anywhere in the file, file scope included) to any of `names`, in order."""
        wanted = frozenset(names)
        if (fp := footprint.of(self)) is not None:
            for name in wanted:
                fp.search(name)
        if self._lazy():
            assert self.loader is not None
            return self.loader.calls_named(wanted)
        return [c for c in self.calls if c.callee in wanted]

    def callee_names(self, matching: re.Pattern[str] | None = None) -> frozenset[str]:
        """The names called anywhere in the file (those `matching` fully, when given: the
        footprint then records that pattern instead of every callee)."""
        if matching is not None:
            footprint.searched(self, re.compile(matching.pattern.encode()))
            with footprint.paused(self):
                return frozenset(n for n in self.callee_names() if matching.fullmatch(n))
        if (fp := footprint.of(self)) is not None:
            fp.callees = True
        if self._lazy():
            assert self.loader is not None
            return self.loader.callee_names()
        return frozenset(c.callee for c in self.calls)

    def all_defines(self) -> dict[str, str]:
        """`defines` over those of the file's local `#include "x.h"` headers (file wins).

        For evaluating `msleep(FOO_DELAY)` when FOO_DELAY lives in the driver's own header;
        the headers are read on first use (see build.py `header_defines`).
        """
        merged = self.__dict__.get("_all_defines")
        if merged is None:
            extra = self.loader.header_defines() if self.loader is not None else {}
            merged = {**extra, **self.defines} if extra else self.defines
            self.__dict__["_all_defines"] = merged
        return merged

    def calls_by_caller(self) -> dict[str | None, list[CallSite]]:
        """Call sites grouped by enclosing function (None: file scope); built once, cached."""
        index = self.__dict__.get("_calls_by_caller")
        if (fp := footprint.of(self)) is not None:
            fp.give_up("every call of the file")
        if index is None:
            index = {}
            for c in self.calls:
                index.setdefault(c.caller, []).append(c)
            self.__dict__["_calls_by_caller"] = index
        return index


def _get_calls(self: FileModel) -> list[CallSite]:
    if (fp := footprint.of(self)) is not None:
        fp.give_up("every call of the file")
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
