"""The one contract between rule files and the code that checks them.

A checker module registers itself once, with everything the loader and the engine need to
know about it:

    @dataclass(frozen=True)
    class Options:                        # the `match:` keys of its rule files, typed
        report: Literal["a", "b"]
        min_ms: float = 10

    @checker("delays", Options, fields={"callee", "value"}, keywords=lambda o: Keywords(...))
    def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
        opts: Options = rule.options
        ...
        yield ctx.report(rule, at=call, ..., callee=call.callee, value=ms)

- `Options` is validated when the YAML loads: an unknown key, a missing key or a value of the
  wrong type or outside a `Literal` is one `RuleError` line naming the file and the key.
- `fields` are the message placeholders the checker fills: a rule whose `message` uses
  another placeholder is rejected at load time, so messages can live in YAML safely.
- `keywords(options)` are the words a file must contain for the checker to find anything:
  the engine's byte prefilter is the union over the enabled rules (see `Keywords`).
- `Context.report(...)` is the one way to make a finding and its chain.

A generic matcher kind (`match: {kind: call-in-phase, ...}`) is a checker like any other;
`kind:` and `checker:` are two spellings of the registered name. Modules of the
`dpmlens.rules` package are imported on first use, so a new checker is one new module.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from dpmlens.core.findings import Finding


@dataclass(frozen=True)
class Keywords:
    """What a file must contain for a checker to report anything in it.

    `words`: any one keeps the file. `gated`: words that keep a file only when it also names
    one of `gate` as a whole word (spec quantity names matter only next to a delay call).
    `callbacks`: the checker looks at PM callbacks, so any word that makes the model find a
    callback keeps the file (tables, legacy bus callbacks, subsystem ops: the model says which).
    `needs`: groups of substrings the file must also hold one of each for `words` to keep it
    (a probe/remove balance needs a driver's `.probe` in the file; a usage count, a get).
    """

    words: tuple[str, ...] = ()
    gated: tuple[str, ...] = ()
    gate: tuple[str, ...] = ()
    callbacks: bool = False
    needs: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class NoOptions:
    """The options of a checker that takes none (its `match:` names only the checker)."""


Runner = Callable[[Any, Any], Iterable[Finding]]  # (Rule, Context) -> findings


@dataclass(frozen=True)
class Checker:
    name: str
    run: Runner
    options: type  # a frozen dataclass
    fields: frozenset[str]  # message placeholders the checker fills
    keywords: Callable[[Any], Keywords] = field(default=lambda _o: Keywords(callbacks=True))
    doc: str = ""
    # Reports only at calls whose own function it reads (recorded per function, see
    # model/footprint.py `units`), and honours Context.only
    per_function: bool = False
    # warm(path): read once what every file of `path`'s tree would make the checker read (a
    # batch check calls it before its workers fork, so they share it instead of each reading)
    warm: Callable[[str], None] | None = None


_REGISTRY: dict[str, Checker] = {}
_LOADED = False


def checker(
    name: str,
    options: type,
    *,
    fields: Iterable[str],
    keywords: Callable[[Any], Keywords] | Keywords = Keywords(callbacks=True),
    per_function: bool = False,
    warm: Callable[[str], None] | None = None,
) -> Callable[[Runner], Runner]:
    """Register the decorated `run(rule, ctx)` as checker `name` (see the module doc)."""
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"checker {name}: options must be a dataclass")
    kw = keywords if callable(keywords) else (lambda _o, _k=keywords: _k)

    def register(run: Runner) -> Runner:
        if name in _REGISTRY and _REGISTRY[name].run is not run:
            raise ValueError(f"checker {name!r} registered twice")
        _REGISTRY[name] = Checker(
            name, run, options, frozenset(fields), kw, run.__doc__ or "", per_function, warm
        )
        return run

    return register


def checkers() -> dict[str, Checker]:
    """Every registered checker by name (imports the `dpmlens.rules` modules once)."""
    global _LOADED
    if not _LOADED:
        import dpmlens.rules as package

        for mod in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{mod.name}")
        _LOADED = True
    return _REGISTRY


# --- options ---------------------------------------------------------------------------------

_META_KEYS = frozenset({"kind", "checker"})


def parse_options(cls: type, match: dict[str, Any]) -> tuple[Any, str | None]:
    """(an instance of `cls` from the `match` mapping, or None and one line saying why)."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in match:
        if key not in known and key not in _META_KEYS:
            return None, f"unknown key {key!r} (known: {', '.join(sorted(known)) or 'none'})"
    values: dict[str, Any] = {}
    for name, f in known.items():
        if name not in match:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                return None, f"missing key {name!r}"
            continue
        value, problem = _convert(hints[name], match[name])
        if problem:
            return None, f"{name}: {problem}"
        values[name] = value
    try:
        opts = cls(**values)
    except (TypeError, ValueError) as exc:
        return None, str(exc)
    check = getattr(opts, "validate", None)
    problem = check() if callable(check) else None
    return (None, problem) if problem else (opts, None)


def _convert(hint: Any, value: Any) -> tuple[Any, str | None]:
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)
        if value in allowed:
            return value, None
        return None, f"{value!r} is not one of {', '.join(repr(a) for a in allowed)}"
    if origin in (Union, types.UnionType):
        problems = []
        for arm in get_args(hint):
            if arm is type(None):
                if value is None:
                    return None, None
                continue
            converted, problem = _convert(arm, value)
            if problem is None:
                return converted, None
            problems.append(problem)
        return None, "; ".join(problems)
    if origin in (tuple, list):
        (item,) = get_args(hint)[:1] or (Any,)
        if not isinstance(value, list):
            return None, f"expected a list, got {type(value).__name__}"
        out = []
        for v in value:
            converted, problem = _convert(item, v)
            if problem:
                return None, problem
            out.append(converted)
        return tuple(out), None
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            return None, f"expected a mapping, got {type(value).__name__}"
        return parse_options(hint, value)  # type: ignore[arg-type]
    if hint is bool:
        return (value, None) if isinstance(value, bool) else (None, "expected true or false")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value, None
        return None, f"expected an integer, got {value!r}"
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), None
        return None, f"expected a number, got {value!r}"
    if hint is str:
        if isinstance(value, str):
            return value, None
        return None, f"expected a string, got {value!r}"
    if hint is Any:
        return value, None
    return None, f"unsupported option type {hint!r}"


# --- JSON schema -----------------------------------------------------------------------------


def _schema_of(hint: Any) -> dict[str, Any]:
    origin = get_origin(hint)
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if origin in (Union, types.UnionType):
        arms = [a for a in get_args(hint) if a is not type(None)]
        sub = [_schema_of(a) for a in arms]
        if len(arms) < len(get_args(hint)):
            sub.append({"type": "null"})
        return sub[0] if len(sub) == 1 else {"anyOf": sub}
    if origin in (tuple, list):
        (item,) = get_args(hint)[:1] or (Any,)
        return {"type": "array", "items": _schema_of(item)}
    if dataclasses.is_dataclass(hint):
        return options_schema(hint)  # type: ignore[arg-type]
    return {bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"type": "number"},
            str: {"type": "string"}}.get(hint, {})  # fmt: skip


def options_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        props[f.name] = _schema_of(hints[f.name])
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out
