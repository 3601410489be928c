"""A rule's message template read by a person: `{callee}() in the {phase} callback` becomes
`<callee>() in the <phase> callback` (`rules explain`), and a rule's description for SARIF is
its note's first paragraph, not the template (`tool.driver.rules[].fullDescription`)."""

from __future__ import annotations

import re

_FIELD = re.compile(r"\{(\w+)\}")
# Fields that the checkers fill with an optional clause (" via foo()", " when ..."), empty for
# most findings: shown as "[...]" so the sentence still reads.
_OPTIONAL = frozenset({"via", "when", "where", "loop", "reason", "extra", "why", "cost", "cycle"})


def readable_message(template: str) -> str:
    """The template with its fields named; "" when it is almost all fields (`{message}`):
    then only the title and the note say what the rule reports."""
    if len(re.findall(r"[A-Za-z]{2,}", _FIELD.sub(" ", template))) < 3:
        return ""

    def field(m: re.Match[str]) -> str:
        name = m.group(1)
        return " [...]" if name in _OPTIONAL else f"<{name}>"

    return _FIELD.sub(field, template).replace("  ", " ")


def description(title: str, note: str) -> str:
    """The note's first paragraph as plain text (markdown's backticks and emphasis dropped)."""
    first = note.strip().split("\n\n", 1)[0]
    text = re.sub(r"[`*_]{1,2}(\S[^`*]*?)[`*_]{1,2}", r"\1", " ".join(first.split()))
    return text or title
