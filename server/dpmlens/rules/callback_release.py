"""The table rules/tables/callback-release.yaml: which callbacks a framework releases on failure.

`not_released` slots: the framework returns the callback's error without calling a release
callback. `paired` slots: the framework calls the paired release callback after this one, even
when it failed (see the table for the kernel citations).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

from dpmlens.rules.loader import RuleError, load_table

TABLE = "callback-release"


@dataclass(frozen=True)
class SlotFact:
    struct_type: str  # may be a glob ("*_driver")
    member: str
    cite: str
    release: str | None = None  # the paired release member (paired slots only)

    def matches(self, struct_type: str, member: str) -> bool:
        return member == self.member and fnmatchcase(struct_type, self.struct_type)

    @property
    def slot(self) -> str:
        return f"{self.struct_type}.{self.member}"


@dataclass(frozen=True)
class ReleaseTable:
    not_released: tuple[SlotFact, ...]
    paired: tuple[SlotFact, ...]

    def unreleased(self, struct_type: str, member: str) -> SlotFact | None:
        return next((f for f in self.not_released if f.matches(struct_type, member)), None)

    def pairing(self, struct_type: str, member: str) -> SlotFact | None:
        return next((f for f in self.paired if f.matches(struct_type, member)), None)

    def unique_members(self) -> dict[str, str]:
        """member -> struct type, for members that only one (non-glob) type of the table has:
        an assignment `x->member = fn` with an unknown base still names that type."""
        owners: dict[str, set[str]] = {}
        for f in (*self.not_released, *self.paired):
            owners.setdefault(f.member, set()).add(f.struct_type)
        return {
            m: next(iter(types))
            for m, types in owners.items()
            if len(types) == 1 and not any(ch in next(iter(types)) for ch in "*?[")
        }


def load_release_table(rules_dir: Path | str | None = None) -> ReleaseTable:
    return _parse(str(rules_dir) if rules_dir else None)


@lru_cache(maxsize=4)
def _parse(rules_dir: str | None) -> ReleaseTable:
    data = load_table(TABLE, rules_dir)
    return ReleaseTable(
        tuple(_fact(e, paired=False) for e in data.get("not_released") or ()),
        tuple(_fact(e, paired=True) for e in data.get("paired") or ()),
    )


def _fact(entry: object, paired: bool) -> SlotFact:
    where = f"rules/tables/{TABLE}.yaml"
    if not isinstance(entry, dict) or not isinstance(entry.get("slot"), str):
        raise RuleError(f"{where}: each entry needs a 'slot: type.member'")
    struct_type, dot, member = entry["slot"].partition(".")
    cite = entry.get("cite")
    if not dot or not struct_type or not member or not isinstance(cite, str) or not cite:
        raise RuleError(f"{where}: {entry['slot']!r}: needs 'type.member' and a 'cite'")
    release = entry.get("release")
    if paired and not isinstance(release, str):
        raise RuleError(f"{where}: {entry['slot']!r}: a paired slot needs 'release'")
    return SlotFact(struct_type, member, cite, release if paired else None)
