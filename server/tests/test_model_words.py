"""model/words.py: whole-word positions, by find passes and by the index a text gets once it
has been searched often enough: both ways give what a regex with word boundaries gives."""

from __future__ import annotations

import re

import pytest
from kernel_trees import K612

from dpmlens.model import words

_TEXT = (b"foo(foo_bar, xfoo, foo1, 1foo, _foo) foo\n"
         b"#define foo 3\nstruct s *foo; a->foo = b.foo; foofoo foo")
_NAMES = ["foo", "foo_bar", "bar", "xfoo", "foo1", "_foo", "s", "a", "b", "foofoo", "define",
          "missing", "3"]


def _expected(source: bytes, name: str) -> list[int]:
    return [m.start() for m in re.finditer(
        rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])", source)]


@pytest.mark.parametrize("indexed", [False, True])
def test_positions_are_the_whole_word_occurrences(indexed: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if indexed:
        monkeypatch.setattr(words, "_INDEX_AFTER", 0)
    source = bytes(_TEXT)  # a new object: nothing kept from another test
    for name in _NAMES:
        assert list(words.positions(source, name)) == _expected(source, name), name
    assert (words._text(source).index is not None) == indexed
    assert list(words.positions(source, "a->foo")) == []  # not a word: nothing


def test_the_index_agrees_with_the_find_passes_on_a_real_driver(
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = K612 / "drivers/usb/core/hub.c"
    if not path.is_file():
        pytest.skip(f"{path} not found (set DPMLENS_LINUX)")
    source = path.read_bytes()
    names = sorted({m.decode() for m in re.findall(rb"[A-Za-z_]\w*", source)})[::25]
    monkeypatch.setattr(words, "_INDEX_AFTER", 1 << 30)
    by_find = {n: list(words.positions(source, n)) for n in names}
    assert words._text(source).index is None
    monkeypatch.setattr(words, "_INDEX_AFTER", 0)
    again = bytes(source)
    assert {n: list(words.positions(again, n)) for n in names} == by_find
    assert words._text(again).index is not None
    assert all(by_find[n] == _expected(source, n) for n in names[:40])


def test_spaces_before() -> None:
    assert words.spaces_before(b"a \t\n b", 5) == 1
    assert words.spaces_before(b"ab", 1) == 1
    assert words.spaces_before(b"  b", 2) == 0
