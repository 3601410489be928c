"""The macro -> members table (model/pm_macros.py) against the kernel's own definitions.

Explicit expected expansions always run; the header comparison parses the #define bodies of
include/linux/pm.h and pm_runtime.h and skips (with the reason) when the tree is absent.
"""

from __future__ import annotations

import re

import pytest
from model_helpers import KERNEL, LATE, NOIRQ, SYSTEM, runtime, sleep

from dpmlens.model import ctext
from dpmlens.model.phases import MEMBERS
from dpmlens.model.pm_macros import MEMBER_MACROS, TABLE_MACROS, expand

# -- explicit expansions (always run) --------------------------------------------------------


def test_member_macro_expansions() -> None:
    assert dict(expand("SET_SYSTEM_SLEEP_PM_OPS", ("s", "r"))) == sleep(SYSTEM, "s", "r")
    assert dict(expand("LATE_SYSTEM_SLEEP_PM_OPS", ("s", "r"))) == sleep(LATE, "s", "r")
    assert dict(expand("SET_NOIRQ_SYSTEM_SLEEP_PM_OPS", ("s", "r"))) == sleep(NOIRQ, "s", "r")
    assert dict(expand("RUNTIME_PM_OPS", ("a", "b", "c"))) == runtime("a", "b", "c")
    assert expand("NOT_A_MACRO", ("a",)) == []


def test_table_macro_expansions() -> None:
    assert dict(expand("DEFINE_RUNTIME_DEV_PM_OPS", ("n", "a", "b", "c"))) == {
        **sleep(SYSTEM, "pm_runtime_force_suspend", "pm_runtime_force_resume"),
        **runtime("a", "b", "c"),
    }
    assert dict(expand("UNIVERSAL_DEV_PM_OPS", ("n", "s", "r", "i"))) == {
        **sleep(SYSTEM, "s", "r"),
        **runtime("s", "r", "i"),
    }
    assert TABLE_MACROS["SIMPLE_DEV_PM_OPS"].maybe_unused
    assert not TABLE_MACROS["DEFINE_SIMPLE_DEV_PM_OPS"].maybe_unused
    assert TABLE_MACROS["EXPORT_NS_GPL_DEV_PM_OPS"].takes_initializer


def test_every_filled_member_is_a_phase() -> None:
    for fills in [*MEMBER_MACROS.values(), *(t.fills for t in TABLE_MACROS.values())]:
        for member, _src in fills:
            assert member in MEMBERS


# -- against the headers ---------------------------------------------------------------------

HEADERS = [KERNEL / "include/linux/pm.h", KERNEL / "include/linux/pm_runtime.h"]
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(([^)]*)\))?[ \t]*(.*)$", re.M)
# internal helpers: not used by drivers directly, covered through the macros that use them
_INTERNAL = {"_EXPORT_PM_OPS", "_DISCARD_PM_OPS", "_EXPORT_DEV_PM_OPS", "_EXPORT_DEV_SLEEP_PM_OPS"}


def _header_macros() -> dict[str, tuple[list[str], str]]:
    missing = [str(h) for h in HEADERS if not h.is_file()]
    if missing:
        pytest.skip(f"kernel headers not found ({', '.join(missing)}); install linux-source-6.12")
    out: dict[str, tuple[list[str], str]] = {}
    for h in HEADERS:
        text = re.sub(r"\\\r?\n", " ", h.read_text())
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for m in _DEFINE.finditer(text):
            params = [p.strip() for p in m.group(3).split(",")] if m.group(2) else []
            # the first definition is the CONFIG_PM / CONFIG_PM_SLEEP=y branch
            out.setdefault(m.group(1), (params, m.group(4)))
    return out


def _expand(text: str, macros: dict[str, tuple[list[str], str]], depth: int = 0) -> str:
    """A tiny C preprocessor for these headers: function-like macros, pm_*ptr() as identity."""
    assert depth < 20
    toks = list(ctext.tokens(text))
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if (
            t.kind == "ident"
            and i + 1 < len(toks)
            and toks[i + 1].text == "("
            and (t.text in macros or t.text in ("pm_ptr", "pm_sleep_ptr"))
        ):
            group = ctext.balanced(iter(toks[i + 2 :]), toks[i + 1])
            args = [a.text for a in ctext.split_args(group, text, 0)]
            i += 1 + len(group)
            if t.text in ("pm_ptr", "pm_sleep_ptr"):
                out.append(_expand(args[0], macros, depth + 1))
                continue
            params, body = macros[t.text]
            sub = {p: a for p, a in zip(params, args, strict=False)}
            body_toks = [sub.get(b.text, b.text) if b.kind == "ident" else b.text
                         for b in ctext.tokens(body)]  # fmt: skip
            out.append(_expand(" ".join(body_toks), macros, depth + 1))
            continue
        out.append(t.text)
        i += 1
    return " ".join(out)


def _pairs(expanded: str) -> dict[str, str]:
    return {m: v.strip() for m, v in re.findall(r"\.\s*(\w+)\s*=\s*([^,}]+)", expanded)}


def test_member_macros_match_headers() -> None:
    macros = _header_macros()
    for name in MEMBER_MACROS:
        params, _ = macros[name]
        args = tuple(f"ARG{i}" for i in range(len(params)))
        got = _pairs(_expand(f"{name}({', '.join(args)})", macros))
        assert got == dict(expand(name, args)), name


def test_table_macros_match_headers() -> None:
    macros = _header_macros()
    for name, spec in TABLE_MACROS.items():
        params, _ = macros[name]
        args = tuple(f"ARG{i}" for i in range(len(params)))
        text = _expand(f"{name}({', '.join(args)})", macros)
        var = args[spec.name_arg]
        assert re.search(rf"struct dev_pm_ops (__maybe_unused )?{var}\b", text), (name, text)
        assert ("__maybe_unused" in text) == spec.maybe_unused, name
        assert ("__EXPORT_SYMBOL" in text) == spec.exported, name
        if spec.takes_initializer:
            assert text.rstrip().endswith(var) and "{" not in text, name
        else:
            assert _pairs(text) == dict(expand(name, args)), name


def test_every_header_pm_ops_macro_is_in_the_table() -> None:
    macros = _header_macros()
    defined = {n for n in macros if n.endswith("PM_OPS")} - _INTERNAL
    assert defined - set(MEMBER_MACROS) - set(TABLE_MACROS) == set()
