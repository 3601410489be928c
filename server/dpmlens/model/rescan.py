"""Whole-file regex scans of a file scanned before (the editor's document after an edit), made
piece by piece: the pieces an edit left as they were are answered from memory.

Some facts of a model are a regex pass over the whole text (`ops_structs`: the structs handed
out as match data, the `struct X *name` declarations, the initializers' declarations): 0.5-3.5
ms each on hub.c or lpfc_init.c, again for every model the editor builds after a keystroke.
The text is cut where no match of such a pattern can cross: after the last `}` of every
eighth function that a line break follows (no match holds both: the caller's promise). A
match of the whole text is then a match of one piece scanned alone, the answer for the text
is made of the pieces' answers, and a keystroke inside a function changes one piece. A path
seen for the first time (the CLI's one pass per file) is scanned whole.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from dpmlens.model.types import FileModel

_T = TypeVar("_T")

_SEEN: OrderedDict[str, None] = OrderedDict()  # paths scanned before (a few dozen)
_SEEN_SIZE = 64
_MEMO: OrderedDict[tuple[Hashable, bytes], object] = OrderedDict()
_MEMO_BYTES = 8 << 20  # the pieces kept, in bytes of text (a few edited documents)
_memo_bytes = 0
_PIECE_MAX = 1 << 20  # a longer piece (a generated table) is scanned, not kept
_EVERY = 8  # functions per piece
_LOCK = threading.Lock()  # (the server analyses off its event loop)


def pieces(model: FileModel) -> list[bytes] | None:
    """The model's text cut after some functions' last `}` (see the module doc), or None the
    first time its path is asked for (scan it whole) or when its functions are not known."""
    path = model.path
    with _LOCK:
        seen = path in _SEEN
        _SEEN[path] = None
        _SEEN.move_to_end(path)
        while len(_SEEN) > _SEEN_SIZE:
            _SEEN.popitem(last=False)
    ranges = getattr(model.loader, "func_ranges", None)
    if not seen or not ranges:
        return None
    src = model.source
    # after every _EVERY-th function's last `}`: few pieces to look up, one scanned again
    # after an edit inside a function (the same cuts while the functions are the same)
    cuts: set[int] = set()
    for i, (_start, end, _name) in enumerate(sorted(ranges)):
        if i % _EVERY == _EVERY - 1 and 0 < end < len(src) and src[end - 1] == 0x7D and (
            src[end] == 0x0A
        ):  # (`}` then a line break: no match holds both)
            cuts.add(end)
    out: list[bytes] = []
    last = 0
    for cut in sorted(cuts):
        if cut > last:
            out.append(src[last:cut])
            last = cut
    out.append(src[last:])
    return out


def by_pieces(
    model: FileModel, key: Hashable, scan: Callable[[bytes], _T],
    merge: Callable[[list[tuple[int, _T]]], _T],
) -> _T:  # fmt: skip
    """`scan(model.source)`, or for a file scanned before `merge` of each piece's offset and
    `scan` of it alone (remembered by `key` and the piece's text): `scan` must find in the
    whole text what it finds in the pieces, i.e. no match of it holds a `}` and the line
    break after it (nor looks behind its start or past a line break after its end)."""
    cut = pieces(model)
    if cut is None:
        return merge([(0, scan(model.source))])
    global _memo_bytes
    found: list[tuple[int, _T]] = []
    base = 0
    for piece in cut:
        at, base = base, base + len(piece)
        if len(piece) > _PIECE_MAX:
            found.append((at, scan(piece)))
            continue
        k = (key, piece)
        with _LOCK:
            hit = _MEMO.get(k, _MEMO)
            if hit is not _MEMO:
                _MEMO.move_to_end(k)
        if hit is _MEMO:
            hit = scan(piece)
            with _LOCK:
                if k not in _MEMO:
                    _memo_bytes += len(piece)
                _MEMO[k] = hit
                while _memo_bytes > _MEMO_BYTES and _MEMO:
                    (_key, old), _v = _MEMO.popitem(last=False)
                    _memo_bytes -= len(old)
        found.append((at, hit))  # type: ignore[arg-type]
    return merge(found)


def forget() -> None:
    """Drop what is kept (tests)."""
    global _memo_bytes
    with _LOCK:
        _SEEN.clear()
        _MEMO.clear()
        _memo_bytes = 0
