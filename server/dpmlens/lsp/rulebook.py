"""The rule set the server runs, loaded once (for diagnostics, `.dpmlens.toml` checks and
dpmlens.explainRule); a broken rule directory is logged and leaves it empty."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpmlens.lsp.core import LanguageFeature

if TYPE_CHECKING:  # the loader is imported on first use (server start-up time)
    from dpmlens.rules.loader import Rule


class RuleBook(LanguageFeature):
    name = "rules"

    _rules: dict[str, Rule] | None = None

    def by_id(self) -> dict[str, Rule]:
        if self._rules is None:
            self._rules = {}
            with self.server.guard("rules (load)"):
                from dpmlens.rules.loader import load_rules

                self._rules = {r.id: r for r in load_rules()}
        return self._rules
