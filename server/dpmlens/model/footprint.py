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
- `whole`: something was read that cannot be attributed (the reason), so every edit counts;
- `units`: what was read to evaluate the delay calls of one function (key: its name; `NAMES`:
  the search for the delay calls themselves). `incremental.py` sets a function's own unit aside
  when no other read touched it, and evaluates that function's delays again instead
  (`delays.unreached_findings`): most delay calls of a file lie where no callback reaches;
- `answers`: units of file-wide answers (`answer()`) that an edit may touch if computing the
  answer again on the new text gives the same;
- `units[CHECKERS]`: everything else the per-function checkers read, kept apart from what the
  other rules read: an edit that only they saw reruns them; each callback's walk towards the
  delays in a unit of its own (`WALK`, `WALK_EMPTY`), which a rerun may leave unwalked.

Recording is on only for the model under analysis (`record(model)`); every hook is a dict
lookup when it is off, and other files' models never record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from dpmlens.model.types import FileModel

_KEY = "_footprint"
_ROOT = "_footprint_root"  # inside a unit: the recording it belongs to


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
    units: dict[str, Footprint] = field(default_factory=dict)
    # unit key -> (how to compute it, what it was) for `answer()`'s units
    answers: dict[str, tuple[Callable[[FileModel], Any], Any]] = field(default_factory=dict)

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

    def unit_reading(
        self, name: str, start: int, end: int, texts: tuple[bytes, ...], skip: frozenset[str]
    ) -> str | None:
        """The first unit, of those not in `skip`, that read function `name`, bytes
        [start, end) or searched for something in `texts`; None when none did."""
        for key, u in self.units.items():
            if key not in skip and u.reads(name, start, end, texts):
                return key
        return None

    def reads(self, name: str, start: int, end: int, texts: tuple[bytes, ...]) -> bool:
        """Did this read function `name` or bytes [start, end), or search for something in
        one of `texts` (the function's text before and after an edit)?"""
        return self.touches(name, start, end) or any(self.matches(t) is not None for t in texts)

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
            # (a unit is never changed once recorded: one with nothing to move is shared)
            {
                k: u.shifted(at, delta) if any(s >= at for s, _e in u.ranges) else u
                for k, u in self.units.items()
            },
            dict(self.answers),
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


NAMES = ""  # the unit of the search for the delay calls themselves
# the unit of what the per-function checkers (delays, get-sync-leak) read beyond their
# per-function units: the callbacks' walks and what the findings' messages look up. They run
# after the other rules (engine.analyze.run_rules), so what they leave in the rules' shared
# caches (the walker's, the Context's) is read by none of those: an edit only this unit and
# theirs read is handled by running them again alone (incremental.py's `_rerun`).
CHECKERS = "<per-function checkers>"
# NAMES as the per-function checkers read it inside CHECKERS (their own calls' searches:
# the delay functions, pm_runtime_get_sync): apart from the other rules' (the balance rules'
# set-up calls), which no rerun of the checkers can answer for
CHECKER_NAMES = "<per-function checkers' names>"


# the unit of what the probe/remove balance rules (checker `lifetime-balance`) read: they run
# after the other rules, in a Context of their own (incremental.analyze_apart), so no other
# rule reads what they cached and they read no cache another rule filled; an edit only this
# unit (and the units set aside) read is decided by running them again alone
BALANCE = "<balance rules>"


# one callback's walk towards the delays (rules/delays.py), WALK + its function, in a unit of
# its own inside CHECKERS; WALK_EMPTY + its function when it reached no delay call: a rerun of
# the checkers need not walk it again while the edit touches nothing it read
WALK = "<walk> "
WALK_EMPTY = "<walk, reached nothing> "


@contextmanager
def walk(model: FileModel, function: str) -> Iterator[list[object]]:
    """Record the walk of callback `function` inside into its unit: the caller puts what the
    walk reached into the list it is given (the unit's key says whether it was empty)."""
    reached: list[object] = []
    key = f"<walking> {function}"
    with unit(model, key):
        yield reached
    root = model.__dict__.get(_ROOT, of(model))
    if root is not None and key in root.units:
        root.units[(WALK if reached else WALK_EMPTY) + function] = root.units.pop(key)


@contextmanager
def unit(model: FileModel, key: str) -> Iterator[None]:
    """Record what is read inside into the unit `key` of the recording under way (see
    `units`); what a unit cannot attribute, or finds in other files, counts for the whole."""
    cur = of(model)
    if cur is None:
        yield
        return
    root = model.__dict__.get(_ROOT, cur)
    if key == NAMES and cur is not root and (
        root.units.get(CHECKERS) is cur or any(
            u is cur for k, u in root.units.items() if k.startswith("<walking> "))
    ):  # fmt: skip
        key = CHECKER_NAMES
    elif key == NAMES and cur is not root and root.units.get(BALANCE) is cur:
        # the balance rules' search for their set-up calls: a call typed or removed anywhere
        # can change what they report, and a rerun of theirs answers for it (not NAMES, set
        # aside for a judgement of the delay rules, which would keep their findings)
        key = BALANCE
    sub = root.units.setdefault(key, Footprint())
    model.__dict__[_KEY], model.__dict__[_ROOT] = sub, root
    at = _ACTIVE.index(cur) if cur in _ACTIVE else -1
    if at >= 0:
        _ACTIVE[at] = sub
    try:
        yield
    finally:
        model.__dict__[_KEY] = cur
        if cur is root:
            del model.__dict__[_ROOT]
        if at >= 0:
            _ACTIVE[at] = cur
        if sub.whole is not None:
            root.give_up(sub.whole)
        root.callees = root.callees or sub.callees
        root.lookups.update(sub.lookups)


_T = TypeVar("_T")


def answer(
    model: FileModel,
    key: str,
    compute: Callable[[FileModel], _T],
    now: Callable[[], _T] | None = None,
) -> _T:
    """`compute(model)` (or `now()`, the same computed with what the caller remembers), an
    answer about the file that several rules share, read in unit `key`: an edit that touches
    only that unit is judged by computing the answer again on the new text
    (`Footprint.answers`), not by what it read."""
    root = model.__dict__.get(_ROOT, of(model))
    if root is None:
        return now() if now is not None else compute(model)
    with unit(model, key):
        value = now() if now is not None else compute(model)
    root.answers[key] = (compute, value)
    return value


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
