"""`.dpmlens.toml`: found upward from the checked paths, turned into a `config.Config`.

helper_depth = 3                  # how many calls deep rules follow same-file helpers

[rules]
msleep-under-20ms = false         # off
async-suspend-not-enabled = "off" # also off; "on" re-enables
delay-beyond-spec = "info"        # on, with this severity
wake-setup-in-noirq = { enabled = true, severity = "error" }

[spec]                            # spec minimum overrides, in milliseconds
TRSTRCY = 10

[traces]                          # measured traces (the editor, `dpmlens trace` without --links)
links = "devlink.txt"             # device links of the traced machine, relative to this file

[fleet]                           # a `dpmlens fleet` store (the editor's figures, `fleet report`)
store = "../fleet"                # relative to this file; thresholds: dpmlens/fleet/thresholds.py
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.core.errors import ConfigError
from dpmlens.core.findings import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

CONFIG_NAME = ".dpmlens.toml"
# [fleet] is read by dpmlens.fleet.thresholds (fleet report settings)
_TOP_KEYS = {"helper_depth", "rules", "spec", "traces", "fleet"}
_TRACE_KEYS = {"links"}
_LINE_RE = re.compile(r"\(at line (\d+), column (\d+)\)")


def find_config(start: str | os.PathLike[str]) -> Path | None:
    """The nearest `.dpmlens.toml` in `start` (a file's directory, or a directory) or above."""
    here = Path(os.path.abspath(start))
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def find_config_for_paths(paths: Iterable[str]) -> Path | None:
    """The configuration governing a set of checked paths: the nearest one above all of them."""
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    try:
        common = os.path.commonpath(absolute)
    except ValueError:  # different drives; cannot happen on Linux, be safe anyway
        common = os.getcwd()
    return find_config(common)


def load_config(start_dir: str | os.PathLike[str]) -> Config:
    """The architecture contract: the Config for `start_dir` (defaults if no file is found)."""
    found = find_config(start_dir)
    return read_config(found) if found else Config()


def read_config(
    path: Path,
    known_rules: Iterable[str] | None = None,
    known_spec: Iterable[str] | None = None,
) -> Config:
    """Parse one `.dpmlens.toml`; every problem is a ConfigError naming the file and line.

    `known_rules` / `known_spec`: the rule ids and spec quantities that exist, to reject typos.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_toml_error(path, exc)) from None
    rules = set(known_rules) if known_rules else None
    spec = set(known_spec) if known_spec else None
    return _to_config(path, raw.decode("utf-8"), data, rules, spec)


def _toml_error(path: Path, exc: Exception) -> str:
    text = str(exc)
    match = _LINE_RE.search(text)
    reason = _LINE_RE.sub("", text).strip()
    if match:
        return f"{path}:{match.group(1)}:{match.group(2)}: invalid TOML: {reason}"
    return f"{path}: invalid TOML: {reason}"


def _line_of(text: str, key: str) -> str:
    """`:N` for the first line mentioning `key`, to point the user at it ('' if not found)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if key in line:
            return f":{number}"
    return ""


def _to_config(
    path: Path,
    text: str,
    data: dict[str, Any],
    known: set[str] | None,
    known_spec: set[str] | None,
) -> Config:
    def fail(key: str, what: str) -> ConfigError:
        return ConfigError(f"{path}{_line_of(text, key)}: {what}")

    config = Config()
    for key in data:
        if key not in _TOP_KEYS:
            expected = ", ".join(sorted(_TOP_KEYS))
            raise fail(key, f"unknown key {key!r} (expected one of: {expected})")

    depth = data.get("helper_depth", config.helper_depth)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 20:
        raise fail("helper_depth", f"helper_depth must be an integer 0..20, not {depth!r}")
    config.helper_depth = depth

    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise fail("rules", "[rules] must be a table of rule-id = setting")
    for rule_id, value in rules.items():
        if known is not None and rule_id not in known:
            raise fail(rule_id, f"unknown rule {rule_id!r} (see `dpmlens rules list`)")
        try:
            config.rules[rule_id] = _rule_setting(value)
        except ValueError as exc:
            raise fail(rule_id, f"rule {rule_id!r}: {exc}") from None

    spec_table = data.get("spec", {})
    if not isinstance(spec_table, dict):
        raise fail("spec", "[spec] must be a table of QUANTITY = milliseconds")
    for quantity, value in spec_table.items():
        if known_spec is not None and quantity not in known_spec:
            names = ", ".join(sorted(known_spec))
            raise fail(quantity, f"unknown spec quantity {quantity!r} (known: {names})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise fail(quantity, f"spec {quantity!r} must be a number of milliseconds >= 0")
        config.spec_overrides[quantity] = float(value)
    _traces_table(data, fail)
    _fleet_store(data, fail)
    return config


def _traces_table(data: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> dict[str, Any]:
    """`[traces]`, checked: not part of Config (it does not change what a check finds)."""
    table = data.get("traces", {})
    if not isinstance(table, dict):
        raise fail("traces", "[traces] must be a table (links = \"FILE\")")
    for key, value in table.items():
        if key not in _TRACE_KEYS:
            expected = ", ".join(sorted(_TRACE_KEYS))
            raise fail(key, f"unknown key {key!r} in [traces] (expected one of: {expected})")
        if key == "links" and (not isinstance(value, str) or not value.strip()):
            raise fail("links", "[traces] links must be the path of a device links file "
                                "(`ls /sys/class/devlink` output), not " + repr(value))
    return table


def _fleet_store(data: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> None:
    """`[fleet] store`, checked here too: the editor reads it (its other keys are the
    thresholds of `fleet report`, checked by dpmlens.fleet.thresholds)."""
    table = data.get("fleet", {})
    if not isinstance(table, dict):
        raise fail("fleet", "[fleet] must be a table (store = \"FOLDER\", thresholds)")
    store = table.get("store")
    if store is not None and (not isinstance(store, str) or not store.strip()):
        raise fail("store", "[fleet] store must be the path of a dpmlens fleet store folder, "
                            "not " + repr(store))


def trace_links(path: Path) -> Path | None:
    """`[traces] links` of one `.dpmlens.toml` as a path (relative ones from the file's
    directory), None when it has none; a broken file raises ConfigError as read_config."""
    read_config(path)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    links = data.get("traces", {}).get("links")
    if not isinstance(links, str):  # read_config checked it: absent, or a path
        return None
    return path.parent / os.path.expanduser(links)


def _rule_setting(value: Any) -> RuleSetting:
    """false/true, "off"/"on", a severity name, or {enabled = .., severity = ..}."""
    if isinstance(value, bool):
        return RuleSetting(enabled=value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("off", "false", "disabled"):
            return RuleSetting(enabled=False)
        if word in ("on", "true", "enabled"):
            return RuleSetting(enabled=True)
        return RuleSetting(enabled=True, severity=Severity.parse(word))
    if isinstance(value, dict):
        unknown = set(value) - {"enabled", "severity"}
        if unknown:
            raise ValueError(f"unknown setting {sorted(unknown)[0]!r} (expected enabled, severity)")
        enabled = value.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ValueError("enabled must be true or false")
        severity = value.get("severity")
        if severity is not None and not isinstance(severity, str):
            raise ValueError("severity must be a string")
        return RuleSetting(enabled=enabled, severity=Severity.parse(severity) if severity else None)
    raise ValueError(f'expected true/false, "off", a severity or a table, not {value!r}')
