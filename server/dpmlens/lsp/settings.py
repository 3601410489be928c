"""Client settings (initializationOptions / didChangeConfiguration) -> config.Config.

The shape is documented in docs/lsp-protocol.md. Unknown keys are ignored; a bad value is
reported once (one line naming the key) and the default is kept, so a typo in settings.json
never stops the server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpmlens.config.settings import DEFAULT_HELPER_DEPTH, Config, RuleSetting
from dpmlens.core.findings import Severity

DEFAULT_TRACE_GLOBS = ("**/*_dmesg.txt", "**/*_ftrace.txt", "**/*.perfetto-trace")
LOG_LEVELS = ("error", "warning", "info", "debug")
RUN_MODES = ("onType", "onSave")


@dataclass(frozen=True)
class PathMapping:
    """A trace recorded against `source` paths is shown against the `target` checkout."""

    source: str
    target: str


# The editor's `dpmlens.*` settings the server reads (camelCase, as the client sends them) ->
# the Settings field; package.json must declare exactly these plus CLIENT_ONLY, with the same
# defaults (tests/test_contracts.py).
SETTING_KEYS: dict[str, str] = {
    "enable": "enable",
    "rules": "rules",
    "helperDepth": "helper_depth",
    "debounceMs": "debounce_ms",
    "traceGlobs": "trace_globs",
    "pathMappings": "path_mappings",
    "logLevel": "log_level",
    "run": "run",
    "traceLinks": "trace_links",
    "fleetStore": "fleet_store",
    "indexFindings": "index_findings",
}
# read by the VS Code client alone (how to start the server)
CLIENT_ONLY: frozenset[str] = frozenset({"interpreter"})


@dataclass
class Settings:
    enable: bool = True
    rules: dict[str, RuleSetting] = field(default_factory=dict)
    helper_depth: int = DEFAULT_HELPER_DEPTH
    debounce_ms: int = 150
    trace_globs: tuple[str, ...] = DEFAULT_TRACE_GLOBS
    path_mappings: tuple[PathMapping, ...] = ()
    log_level: str = "info"
    run: str = "onType"  # or "onSave": re-analyze on save instead of as you type
    trace_links: str = ""  # device links file for the traces; "": .dpmlens.toml [traces] links
    fleet_store: str = ""  # a `dpmlens fleet` store; "": .dpmlens.toml [fleet] store, else none
    # after the workspace scan, compute each C file's findings in the index's workers (a
    # didOpen of that text then needs no parse); off: no background pass after the scan
    index_findings: bool = True
    problems: list[str] = field(default_factory=list)  # one line per rejected value
    sent: frozenset[str] = frozenset()  # the keys the client sent
    explicit_keys: frozenset[str] | None = None  # the keys the user set (VS Code says which)

    def to_config(self) -> Config:
        return Config(rules=dict(self.rules), helper_depth=self.helper_depth)

    def is_explicit(self, key: str) -> bool:
        """Does the editor's value of `key` override `.dpmlens.toml` (lsp.project_config)?"""
        if self.explicit_keys is not None:
            return key in self.explicit_keys
        return key in self.sent

    def map_path(self, path: str) -> str:
        """Apply the first path mapping whose `source` prefixes `path` (traces -> checkout)."""
        for m in self.path_mappings:
            src = m.source.rstrip("/")
            if path == src or path.startswith(src + "/"):
                return m.target.rstrip("/") + path[len(src) :]
        return path


def unwrap(raw: Any) -> Any:
    """didChangeConfiguration may carry {"dpmlens": {...}} or the object itself."""
    if isinstance(raw, dict) and isinstance(raw.get("dpmlens"), dict):
        return raw["dpmlens"]
    return raw


def parse_settings(raw: Any, workspace_folder: str | None = None) -> Settings:
    s = Settings()
    raw = unwrap(raw)
    if raw is None:
        return s
    if not isinstance(raw, dict):
        s.problems.append(f"settings: expected an object, got {type(raw).__name__}")
        return s

    def bad(key: str, expected: str) -> None:
        s.problems.append(f"settings: {key}: expected {expected}, got {raw.get(key)!r}")

    s.sent = frozenset(str(k) for k in raw)
    if "explicitKeys" in raw:
        v = raw["explicitKeys"]
        if isinstance(v, list) and all(isinstance(k, str) for k in v):
            s.explicit_keys = frozenset(v)
        else:
            bad("explicitKeys", "a list of setting names")
    if "run" in raw:
        if raw["run"] in RUN_MODES:
            s.run = raw["run"]
        else:
            bad("run", "one of " + ", ".join(RUN_MODES))

    if "enable" in raw:
        if isinstance(raw["enable"], bool):
            s.enable = raw["enable"]
        else:
            bad("enable", "true or false")
    if "indexFindings" in raw:
        if isinstance(raw["indexFindings"], bool):
            s.index_findings = raw["indexFindings"]
        else:
            bad("indexFindings", "true or false")
    if "helperDepth" in raw:
        v = raw["helperDepth"]
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 20:
            s.helper_depth = v
        else:
            bad("helperDepth", "an integer 0..20")
    if "debounceMs" in raw:
        v = raw["debounceMs"]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 10_000:
            s.debounce_ms = int(v)
        else:
            bad("debounceMs", "a number of milliseconds 0..10000")
    if "traceGlobs" in raw:
        v = raw["traceGlobs"]
        if isinstance(v, list) and all(isinstance(g, str) for g in v):
            s.trace_globs = tuple(v)
        else:
            bad("traceGlobs", "a list of glob strings")
    if "logLevel" in raw:
        v = raw["logLevel"]
        if isinstance(v, str) and v.lower() in LOG_LEVELS:
            s.log_level = v.lower()
        else:
            bad("logLevel", "one of " + ", ".join(LOG_LEVELS))
    if "traceLinks" in raw:
        v = raw["traceLinks"]
        if isinstance(v, str):
            s.trace_links = v.strip()
        else:
            bad("traceLinks", "the path of a device links file")
    if "fleetStore" in raw:
        v = raw["fleetStore"]
        if isinstance(v, str):
            s.fleet_store = v.strip()
        else:
            bad("fleetStore", "the path of a dpmlens fleet store folder")
    if "rules" in raw:
        _parse_rules(raw["rules"], s)
    if "pathMappings" in raw:
        _parse_mappings(raw["pathMappings"], s, workspace_folder)
    return s


def _parse_rules(v: Any, s: Settings) -> None:
    if not isinstance(v, dict):
        s.problems.append(f"settings: rules: expected an object keyed by rule id, got {v!r}")
        return
    for rule_id, opts in v.items():
        setting = RuleSetting()
        if isinstance(opts, bool):  # shorthand: "rule-id": false
            setting.enabled = opts
        elif isinstance(opts, str):  # shorthand: "rule-id": "error" | "off"
            if opts.lower() == "off":
                setting.enabled = False
            else:
                try:
                    setting.severity = Severity.parse(opts)
                except ValueError as e:
                    s.problems.append(f"settings: rules.{rule_id}: {e}")
                    continue
        elif isinstance(opts, dict):
            if isinstance(opts.get("enabled"), bool):
                setting.enabled = opts["enabled"]
            sev = opts.get("severity")
            if sev is not None:
                try:
                    setting.severity = Severity.parse(str(sev))
                except ValueError as e:
                    s.problems.append(f"settings: rules.{rule_id}.severity: {e}")
        else:
            s.problems.append(f"settings: rules.{rule_id}: expected an object, got {opts!r}")
            continue
        s.rules[str(rule_id)] = setting


def _parse_mappings(v: Any, s: Settings, workspace_folder: str | None) -> None:
    if not isinstance(v, list):
        s.problems.append(f"settings: pathMappings: expected a list, got {v!r}")
        return
    out = []
    for i, m in enumerate(v):
        if not (
            isinstance(m, dict) and isinstance(m.get("from"), str) and isinstance(m.get("to"), str)
        ):
            s.problems.append(
                f'settings: pathMappings[{i}]: expected {{"from": path, "to": path}}, got {m!r}'
            )
            continue
        target = os.path.expanduser(m["to"].replace("${userHome}", os.path.expanduser("~")))
        if "${workspaceFolder}" in target:
            if workspace_folder is None:
                s.problems.append(
                    f"settings: pathMappings[{i}]: ${{workspaceFolder}} used without a workspace"
                )
                continue
            target = target.replace("${workspaceFolder}", workspace_folder)
        out.append(PathMapping(source=str(Path(m["from"])), target=str(Path(target))))
    s.path_mappings = tuple(out)
