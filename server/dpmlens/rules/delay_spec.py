"""The spec delay table (`rules/tables/spec-delays.yaml`): spec minimums with their sources,
the kernel constants that implement them, the words that admit padding, the delay functions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dpmlens.core.paths import rules_dir
from dpmlens.rules.loader import RuleError, load_table

UNIT_MS = {"s": 1000.0, "ms": 1.0, "us": 0.001, "ns": 0.000001}


@dataclass(frozen=True)
class Quantity:
    id: str
    title: str
    min_ms: float
    source: str
    keywords: tuple[str, ...]
    # the statement right after the wait that shows what it is for (`gpio_set_value(...
    # reset_gpio ...)` after msleep(100) in a PCIe host driver: power stable to PERST#)
    followed_by: re.Pattern[str] | None = None
    followed_by_in: tuple[str, ...] = ()  # path parts of the files where followed_by holds


@dataclass(frozen=True)
class SpecTable:
    quantities: tuple[Quantity, ...]
    constants: dict[str, tuple[Quantity, int, str, str]]  # name -> (q, raw, unit, documented)
    padding_words: re.Pattern[str]
    # "xd needs some extra time before power on" (tifm_7xx1.c:100): the device's need, not a
    # margin the author admits; matched against the text just before a padding word
    need_before: re.Pattern[str]
    citation_words: re.Pattern[str]  # words that cite a datasheet, a spec, a manual
    delay_functions: dict[str, tuple[int, str]]
    report_from_ms: float
    unit_constants: dict[str, str]


@lru_cache(maxsize=4)
def load_spec(overrides: tuple[tuple[str, float], ...]) -> SpecTable:
    """The table with `overrides` (quantity id -> min_ms, from `.dpmlens.toml [spec]`)."""
    try:
        return _parse_spec(load_table("spec-delays"), dict(overrides))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, RuleError):
            raise
        where = rules_dir() / "tables" / "spec-delays.yaml"
        raise RuleError(f"{where}: malformed spec table: {type(exc).__name__}: {exc}") from None


def _parse_spec(data: dict[str, Any], over: dict[str, float]) -> SpecTable:
    quantities = []
    constants: dict[str, tuple[Quantity, int, str, str]] = {}
    for q in data.get("quantities", []):
        quantity = Quantity(
            id=str(q["id"]),
            title=str(q.get("title", q["id"])),
            min_ms=float(over.get(str(q["id"]), q["min_ms"])),
            source=str(q.get("source", "")),
            keywords=tuple(str(k) for k in q.get("keywords", []) or []),
            followed_by=re.compile(str(q["followed_by"])) if q.get("followed_by") else None,
            followed_by_in=tuple(str(x) for x in q.get("followed_by_in", []) or []),
        )
        quantities.append(quantity)
        for name, c in (q.get("constants") or {}).items():
            constants[str(name)] = (
                quantity,
                int(c["value"]),
                str(c.get("unit", "ms")),
                str(c.get("documented", "")),
            )
    for name, (_q, _raw, unit, _doc) in constants.items():
        if unit not in UNIT_MS:
            raise ValueError(f"constant {name}: unknown unit {unit!r}")
    for name, v in (data.get("delay_functions") or {}).items():
        if str(v.get("unit", "ms")) not in UNIT_MS:
            raise ValueError(f"delay function {name}: unknown unit {v.get('unit')!r}")
    words = "|".join(re.escape(w) for w in data.get("padding_words", []))
    needs = "|".join(re.escape(w) for w in data.get("need_words", []))
    cites = "|".join(re.escape(w) for w in data.get("citation_words", []))
    return SpecTable(
        quantities=tuple(quantities),
        constants=constants,
        padding_words=re.compile(rf"\b(?:{words})\b", re.IGNORECASE) if words else re.compile("$^"),
        need_before=(
            re.compile(rf"\b(?:{needs})\s+(?:some\s+|a\s+bit\s+of\s+|a\s+little\s+)?$",
                       re.IGNORECASE)
            if needs
            else re.compile("$^")
        ),
        # a word, not a hyphenated part ("out-of-spec" cites nothing)
        citation_words=(
            re.compile(rf"(?<![\w-])(?:{cites})(?![\w-])", re.IGNORECASE)
            if cites
            else re.compile("$^")
        ),
        delay_functions={
            str(k): (int(v.get("arg", 0)), str(v.get("unit", "ms")))
            for k, v in (data.get("delay_functions") or {}).items()
        },
        report_from_ms=float(data.get("report_from_ms", 20)),
        unit_constants={str(k): str(v) for k, v in (data.get("unit_constants") or {}).items()},
    )


def fmt_ms(ms: float) -> str:
    """One duration format for the delay rules: `150 ms`, `2.5 ms`, `200 us`."""
    if ms >= 10:
        return f"{round(ms):g} ms"
    if ms >= 1 or ms == 0:
        return f"{round(ms, 2):g} ms"
    return f"{ms * 1000:g} us"
