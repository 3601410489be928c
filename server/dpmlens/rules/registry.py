"""Matcher kinds (generic, configured from YAML) and checkers (code), by name."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dpmlens.findings import Finding
from dpmlens.rules import callmatch

Runner = Callable[[Any, Any], Iterable[Finding]]  # (Rule, Context) -> findings

# kind -> validator of the `match` mapping (returns a problem or None)
MATCH_KINDS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "call-in-phase": callmatch.validate,
}
_KIND_RUNNERS: dict[str, Runner] = {
    "call-in-phase": callmatch.run,
}


def _checkers() -> dict[str, Runner]:
    from dpmlens.rules import asymmetric, async_suspend, delays, deprecated, getsync, wake

    return {
        "async-suspend": async_suspend.run,
        "delays": delays.run,
        "get-sync-leak": getsync.run,
        "deprecated-pm-ops": deprecated.run,
        "wake-gating": wake.run,
        "asymmetric": asymmetric.run,
    }


CHECKERS: frozenset[str] = frozenset(
    {"async-suspend", "delays", "get-sync-leak", "deprecated-pm-ops", "wake-gating", "asymmetric"}
)


def runner_for(rule: Any) -> Runner:
    if "checker" in rule.match:
        return _checkers()[rule.match["checker"]]
    return _KIND_RUNNERS[rule.match["kind"]]
