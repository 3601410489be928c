"""One configuration everywhere: the language server reads the same `.dpmlens.toml` as the CLI.

For each document, the nearest `.dpmlens.toml` in or above its directory (as `dpmlens check`
finds it) gives the base; the editor's settings override it per key: a rule configured in the
editor replaces that rule's entry of the file (the other rules keep the file's), `helperDepth`
replaces `helper_depth` when the user set it, `[spec]` comes from the file only. A client
that says which keys the user set (`explicitKeys`, VS Code does) overrides only those; any
other client overrides with every key it sends.

A broken file is never a silent fallback: one diagnostic on the file itself (at the line the
parser names) and one log line; the documents are analyzed with the editor's settings alone
until it is fixed. The file is read again when its size or mtime changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from dpmlens.config.file import find_config, read_config
from dpmlens.config.settings import Config
from dpmlens.core.errors import ConfigError
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.rulebook import RuleBook
from dpmlens.lsp.settings import Settings

_WHERE = re.compile(r"^(?P<path>.*?\.dpmlens\.toml):(?P<line>\d+)(?::(?P<col>\d+))?: ")


def merge(base: Config, settings: Settings) -> Config:
    """The file's Config with the editor's settings laid over it (module doc)."""
    out = replace(base, rules=dict(base.rules), spec_overrides=dict(base.spec_overrides))
    if settings.is_explicit("rules"):
        out.rules.update(settings.rules)
    if settings.is_explicit("helperDepth"):
        out.helper_depth = settings.helper_depth
    return out


class ProjectConfigs(LanguageFeature):
    name = "project config"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        # path -> ((size, mtime_ns), Config or the error message)
        self._read: dict[str, tuple[tuple[int, int], Config | str]] = {}
        self._broken: set[str] = set()  # files with a published diagnostic

    def config_for(self, doc_path: str) -> Config:
        editor = self.server.settings.to_config()
        path = find_config(os.path.dirname(doc_path) or ".")
        if path is None:
            return editor
        base = self._load(str(path))
        return editor if isinstance(base, str) else merge(base, self.server.settings)

    def _load(self, path: str) -> Config | str:
        try:
            st = os.stat(path)
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = (-1, -1)
        cached = self._read.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        result: Config | str
        try:
            result = read_config(Path(path), known_rules=self._rule_ids(),
                                 known_spec=_spec_quantities())  # fmt: skip
        except ConfigError as exc:
            result = str(exc)
        self._read[path] = (stamp, result)
        self._report(path, result)
        return result

    def _rule_ids(self) -> list[str]:
        return list(self.server.get_feature(RuleBook).by_id())

    def _report(self, path: str, result: Config | str) -> None:
        uri = from_fs_path(path) or path
        if isinstance(result, str):
            self.server.log("error", f"{result} (using the editor's settings only until fixed)")
            self._broken.add(path)
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[_diagnostic(result)])
            )
        elif path in self._broken:
            self._broken.discard(path)
            self.server.log("info", f"{path}: read again, no problems")
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )


def _spec_quantities() -> list[str]:
    from dpmlens.engine.rule_set import spec_quantities

    return spec_quantities()


def _diagnostic(message: str) -> types.Diagnostic:
    m = _WHERE.match(message)
    line = int(m.group("line")) - 1 if m else 0
    col = int(m.group("col")) - 1 if m and m.group("col") else 0
    text = message[m.end() :] if m else message.split(": ", 1)[-1]
    return types.Diagnostic(
        range=types.Range(start=types.Position(line, col), end=types.Position(line + 1, 0)),
        message=text,
        severity=types.DiagnosticSeverity.Error,
        source="dpmlens",
        code="config",
    )
