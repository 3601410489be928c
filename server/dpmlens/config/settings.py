"""Effective configuration shared by the CLI and the language server.

Loaded from `.dpmlens.toml` (CLI) or initializationOptions/didChangeConfiguration (LSP).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dpmlens.core.findings import Severity


@dataclass
class RuleSetting:
    enabled: bool = True
    severity: Severity | None = None  # None: the rule's own severity


# How many calls deep rules follow helpers: the one default of the CLI, the language server,
# the walker and .dpmlens.toml (package.json's dpmlens.helperDepth is tested against it).
DEFAULT_HELPER_DEPTH = 3


@dataclass
class Config:
    rules: dict[str, RuleSetting] = field(default_factory=dict)  # by rule id
    only_rules: set[str] | None = None  # --rule: run only these
    helper_depth: int = DEFAULT_HELPER_DEPTH
    spec_overrides: dict[str, float] = field(default_factory=dict)  # spec quantity -> ms

    def is_enabled(self, rule_id: str) -> bool:
        if self.only_rules is not None and rule_id not in self.only_rules:
            return False
        setting = self.rules.get(rule_id)
        return setting is None or setting.enabled

    def severity_for(self, rule_id: str, default: Severity) -> Severity:
        setting = self.rules.get(rule_id)
        return setting.severity if setting and setting.severity else default
