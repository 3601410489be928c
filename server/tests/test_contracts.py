"""The client and the server agree: setting keys and defaults (package.json, settings.ts, the
server's Settings) and command ids (protocol.ts, the server's commands). One source each in
the server; the client's copies are checked here, not trusted."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from dpmlens.config.settings import DEFAULT_HELPER_DEPTH
from dpmlens.lsp.commands import COMMANDS
from dpmlens.lsp.settings import CLIENT_ONLY, SETTING_KEYS, Settings

REPO = Path(__file__).resolve().parents[2]


def _manifest() -> dict[str, Any]:
    return json.loads((REPO / "package.json").read_text(encoding="utf-8"))


def _server_default(field_name: str) -> Any:
    value = getattr(Settings(), field_name)
    if isinstance(value, tuple):
        return list(value)
    return value


def disagreements(manifest: dict[str, Any]) -> list[str]:
    """What package.json declares that the server does not read (or with another default)."""
    props = manifest["contributes"]["configuration"]["properties"]
    declared = {k.removeprefix("dpmlens."): v for k, v in props.items()}
    out = []
    for key, spec in sorted(declared.items()):
        if key in CLIENT_ONLY:
            continue
        if key not in SETTING_KEYS:
            out.append(f"dpmlens.{key}: declared in package.json, unknown to the server")
            continue
        if spec.get("default") != _server_default(SETTING_KEYS[key]):
            out.append(f"dpmlens.{key}: package.json default {spec.get('default')!r}, server "
                       f"{_server_default(SETTING_KEYS[key])!r}")
    out += [f"dpmlens.{k}: read by the server, not declared in package.json"
            for k in sorted(set(SETTING_KEYS) - set(declared))]
    return out


def test_package_json_settings_are_the_servers() -> None:
    assert disagreements(_manifest()) == []
    assert {f.name for f in fields(Settings)} >= set(SETTING_KEYS.values())


def test_a_setting_added_only_to_package_json_fails_the_contract() -> None:
    manifest = _manifest()
    props = manifest["contributes"]["configuration"]["properties"]
    props["dpmlens.newThing"] = {"type": "boolean", "default": False}
    props["dpmlens.helperDepth"] = {**props["dpmlens.helperDepth"], "default": 4}
    assert disagreements(manifest) == [
        "dpmlens.helperDepth: package.json default 4, server 3",
        "dpmlens.newThing: declared in package.json, unknown to the server",
    ]


def test_settings_ts_defaults_are_the_servers() -> None:
    text = (REPO / "extension" / "src" / "settings.ts").read_text(encoding="utf-8")
    block = re.search(r"export const DEFAULTS: ServerSettings = \{(.*?)\n\};", text, re.S)
    assert block is not None
    ts = dict(re.findall(r"^\s*(\w+):\s*(.+?),?$", block.group(1), re.M))
    assert set(ts) == set(SETTING_KEYS)
    for key, value in ts.items():
        assert json.loads(value.rstrip(",")) == _server_default(SETTING_KEYS[key]), key
    assert _server_default("helper_depth") == DEFAULT_HELPER_DEPTH


def test_protocol_ts_command_ids_are_the_servers() -> None:
    text = (REPO / "extension" / "src" / "protocol.ts").read_text(encoding="utf-8")
    block = re.search(r"export const ServerCommand = \{(.*?)\} as const;", text, re.S)
    assert block is not None
    ids = re.findall(r'^\s*\w+:\s*"([\w.]+)",?$', block.group(1), re.M)
    assert sorted(ids) == sorted(COMMANDS)
    # the client's own commands never reuse a server id (the language client registers those)
    ours = {c["command"] for c in _manifest()["contributes"]["commands"]}
    assert not ours & set(COMMANDS)
