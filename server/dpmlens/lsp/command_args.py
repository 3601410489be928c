"""Typed arguments of the `workspace/executeCommand` commands (docs/lsp-protocol.md).

Each command declares its arguments as a dataclass and how they travel (`Command`): one
object (`[{"paths": [...]}]`), its fields in order (`["rule-id"]`), or nothing. cattrs turns
the JSON into the class with strict hooks (a number is no string, `true` is no integer, a
string is no list), and a wrong argument is a JSON-RPC InvalidParams error with one line that
names the field: `dpmlens.loadTraces: expected [{"paths": [...]}]: paths[0]: got 3, not a
string`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import cattrs
from cattrs.cols import list_structure_factory
from pygls.exceptions import JsonRpcInvalidParams

from dpmlens.lsp.jsonrpc_errors import short

T = TypeVar("T")


class CommandError(JsonRpcInvalidParams):
    """A bad argument: answered as InvalidParams (-32602) with this one-line message (pygls
    answers any other exception as InternalError with a traceback)."""


class FieldError(ValueError):
    """A field of the right type with a wrong value (raised by an argument's __post_init__)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


# -- the converter ---------------------------------------------------------------------------

_NAMES: dict[type, str] = {str: "a string", int: "an integer", bool: "true or false"}


class _WrongType(TypeError):
    pass


def _strict(kind: type) -> Callable[[object, type], object]:
    def hook(value: object, _cls: type) -> object:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _WrongType(f"got {short(value)}, not {_NAMES[kind]}")
        return value

    return hook


def _is_list(cls: Any) -> bool:
    return typing.get_origin(cls) is list


def _list_hook(cls: Any, converter: cattrs.Converter) -> Callable[[object, type], object]:
    items = list_structure_factory(cls, converter)

    def hook(value: object, _cls: type) -> object:
        if not isinstance(value, list):
            raise _WrongType(f"got {short(value)}, not a list")
        return items(value, _cls)

    return hook


def make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=True)
    for kind in _NAMES:
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook_factory(_is_list, lambda cls: _list_hook(cls, converter))
    return converter


CONVERTER = make_converter()


def _format(exc: BaseException, _cls: type | None) -> str:
    if isinstance(exc, _WrongType):
        return str(exc)
    if isinstance(exc, KeyError):
        return "missing"
    return f"{type(exc).__name__}: {exc}"


# -- commands --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoArguments:
    """The arguments of a command that takes none."""


@dataclass(frozen=True)
class Command(Generic[T]):
    """A command id, the class of its arguments and how the client sends them."""

    id: str
    arguments: type[T]
    shape: str  # as docs/lsp-protocol.md writes the arguments, for the error message
    # "object": [{...}] (or [] for all defaults when `optional`); "positional": the fields in
    # order; "none": []
    form: Literal["object", "positional", "none"] = "object"
    optional: bool = False

    def parse(self, arguments: Sequence[object] | None) -> T:
        """The typed arguments, or CommandError naming what is wrong."""
        args = list(arguments or [])
        value: object
        if self.form == "none":
            if args:
                raise self._error(f"got {short(args)}")
            value = {}
        elif self.form == "positional":
            names = [f.name for f in dataclasses.fields(self.arguments)]  # type: ignore[arg-type]
            if len(args) != len(names):
                raise self._error(f"got {short(args)}")
            value = dict(zip(names, args, strict=True))
        elif not args and self.optional:
            value = {}
        elif len(args) != 1 or not isinstance(args[0], dict):
            raise self._error(f"got {short(args)}")
        else:
            value = args[0]
        try:
            return CONVERTER.structure(value, self.arguments)
        except FieldError as exc:
            raise self._error(f"{exc.field}: {exc.problem}") from None
        except Exception as exc:  # noqa: BLE001 - a cattrs validation error
            problems = cattrs.transform_error(exc, path="", format_exception=_format)
            raise self._error(_where(problems[0]) if problems else str(exc)) from None

    def _error(self, detail: str) -> CommandError:
        sep = ", " if detail.startswith("got ") else ": "
        return CommandError(f"{self.id}: expected {self.shape}{sep}{detail}")


def _where(problem: str) -> str:
    """cattrs' "got 3, not a string @ .paths[0]" -> "paths[0]: got 3, not a string"."""
    what, _, path = problem.rpartition(" @ ")
    return f"{path.lstrip('.')}: {what}" if what else problem
