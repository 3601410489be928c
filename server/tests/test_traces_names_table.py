"""The spaced driver names table is read without PyYAML when it is as --generate writes it
(traces/model/names._plain_table): the same keys as YAML's reading, and YAML's reading for
any file that is not in that plain form."""

from __future__ import annotations

import pytest

from dpmlens.traces.model import names
from dpmlens.traces.model.yaml_tables import safe_load

TEXT = names._TABLE.read_text(encoding="utf-8")


def _yaml_keys(text: str) -> frozenset[str]:
    return frozenset(str(k) for k in ((safe_load(text) or {}).get("drivers") or {}))


def test_the_table_read_plainly_is_yamls() -> None:
    plain = names._plain_table(TEXT)
    assert plain is not None and len(plain) > 200
    assert plain == _yaml_keys(TEXT)
    assert names.spaced_driver_names() == plain


@pytest.mark.parametrize("line", [
    '  "A\\tB": "x"',  # an escape: YAML's to read
    '  "A B": "x"  # a comment',
    "  A B: x",  # plain scalars
    "  'A B': 'x'",
    '    "A B": "x"',  # deeper: another structure
    'other:',
])
def test_other_forms_are_left_to_yaml(line: str) -> None:
    text = TEXT + line + "\n"
    assert names._plain_table(text) is None


def test_plain_keys_with_any_printable_text() -> None:
    text = ('# c\ndrivers:\n  "Caf\u00e9 # not a comment": "a: b"\n\n  "x\'y": ""\n')
    assert names._plain_table(text) == _yaml_keys(text) == {"Caf\u00e9 # not a comment", "x'y"}
    assert names._plain_table("# only comments\n") is None
    assert names._plain_table('  "A": "b"\ndrivers:\n') is None  # an entry before drivers:
