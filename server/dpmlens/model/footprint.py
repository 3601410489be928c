"""What one analysis of a file read: the footprint that decides whether an edit can change it.

The language server re-analyses a document on every keystroke. Most keystrokes land in a
function that no rule looked at; if the analysis can be shown not to depend on that function's
body, the findings of the last analysis still hold (moved by the lines the edit added or
removed). `incremental.py` makes that decision; this module records what it needs while the
rules run on a model:

- `functions`: the functions whose body a rule read (their call sites, their nodes, their text);
- `patterns`: every text search the rules made over the whole file (a word, a regex): an edit
  that adds or removes a match of one of them can change a result even in a function that no
  rule entered;
- `ranges`: byte ranges of the tree a rule looked at by position;
- `lookups`: helpers looked up through the resolver (other files), with what was found;
- `headers`: local headers whose #defines were read (by the build or a rule; filled in by
  `incremental.py` from the model's loader once the analysis is done);
- `callees`: a rule asked for the set of every name called in the file;
- `whole`: something was read that cannot be attributed (the reason), so every edit counts.

Recording is on only for the model under analysis (`record(model)`); every hook is a dict
lookup when it is off, and other files' models never record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpmlens.model.types import FileModel

_KEY = "_footprint"


@dataclass
class Footprint:
    functions: set[str] = field(default_factory=set)
    patterns: dict[bytes, re.Pattern[bytes]] = field(default_factory=dict)
    ranges: list[tuple[int, int]] = field(default_factory=list)
    # name -> (path, source) of the definition found through the resolver, or None
    lookups: dict[str, tuple[str, bytes] | None] = field(default_factory=dict)
    headers: dict[str, object] = field(default_factory=dict)  # header path -> its #defines
    callees: bool = False
    whole: str | None = None

    # -- recording ------------------------------------------------------------------------

    def search(self, pattern: re.Pattern[bytes] | bytes | str) -> None:
        """A search over the whole text: `str`/`bytes` are literal words, or a regex."""
        if isinstance(pattern, str):
            pattern = pattern.encode("latin-1", "replace")
        if isinstance(pattern, bytes):
            if pattern not in self.patterns:
                self.patterns[pattern] = re.compile(re.escape(pattern))
            return
        self.patterns.setdefault(pattern.pattern, pattern)

    def range(self, start: int, end: int) -> None:
        self.ranges.append((start, end))

    def give_up(self, reason: str) -> None:
        if self.whole is None:
            self.whole = reason

    # -- deciding -------------------------------------------------------------------------

    def matches(self, text: bytes) -> bytes | None:
        """The first recorded search that finds something in `text`, or None."""
        for key, pattern in self.patterns.items():
            if pattern.search(text) is not None:
                return key
        return None

    def touches(self, name: str, start: int, end: int) -> bool:
        """Did the analysis read function `name`, or any byte of [start, end)?"""
        if name in self.functions:
            return True
        return any(s < end and start < e for s, e in self.ranges)

    def shifted(self, at: int, delta: int) -> Footprint:
        """This footprint after an edit of `delta` bytes at offset `at` outside every range."""
        moved = [(s + delta, e + delta) if s >= at else (s, e) for s, e in self.ranges]
        return Footprint(
            set(self.functions), dict(self.patterns), moved, dict(self.lookups),
            dict(self.headers), self.callees, self.whole,
        )


def of(model: FileModel) -> Footprint | None:
    """The footprint `model` is recording into, if any."""
    return model.__dict__.get(_KEY)


@contextmanager
def paused(model: FileModel) -> Iterator[None]:
    """Read without recording: the caller recorded something narrower itself."""
    fp = model.__dict__.pop(_KEY, None)
    try:
        yield
    finally:
        if fp is not None:
            model.__dict__[_KEY] = fp


_ACTIVE: list[Footprint] = []  # the recording under way, for hooks that see only a node


@contextmanager
def record(model: FileModel) -> Iterator[Footprint]:
    fp = Footprint()
    model.__dict__[_KEY] = fp
    _ACTIVE.append(fp)
    try:
        yield fp
    finally:
        _ACTIVE.remove(fp)
        model.__dict__.pop(_KEY, None)


# Hooks for the places that read the file outside the model's own accessors (one line each).


def searched(model: FileModel, *patterns: re.Pattern[bytes] | bytes | str) -> None:
    """A text search over the whole file: `str`/`bytes` are literal words, or a regex."""
    fp = of(model)
    if fp is not None:
        for p in patterns:
            fp.search(p)


def searched_any_file(*patterns: re.Pattern[bytes] | str) -> None:
    """A whole-text search of a file known only by a node: recorded into the analysis under
    way whichever file it is (recording too much only costs speed)."""
    for fp in _ACTIVE:
        for p in patterns:
            fp.search(p)


def read_function(model: FileModel, name: str | None) -> None:
    fp = of(model)
    if fp is not None:
        if name is None:
            fp.give_up("file-scope text")
        else:
            fp.functions.add(name)


def read_range(model: FileModel, start: int, end: int) -> None:
    fp = of(model)
    if fp is not None:
        fp.range(start, end)


def read_all(model: FileModel, reason: str) -> None:
    fp = of(model)
    if fp is not None:
        fp.give_up(reason)
