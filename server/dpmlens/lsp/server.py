"""The dpmlens language server, assembled: the core (core.py), the lifecycle handlers
(lifecycle.py) and the features, in the order their hooks run."""

from __future__ import annotations

from dpmlens.lsp import lifecycle
from dpmlens.lsp.code_actions import CodeActions
from dpmlens.lsp.codelens import CodeLens
from dpmlens.lsp.commands import Commands
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.diagnostics import Diagnostics
from dpmlens.lsp.fleet_loader import Fleet
from dpmlens.lsp.hover import Hover
from dpmlens.lsp.idle_gc import IdleCollector
from dpmlens.lsp.project_config import ProjectConfigs
from dpmlens.lsp.rulebook import RuleBook
from dpmlens.lsp.trace_loader import Traces
from dpmlens.lsp.workspace_index import WorkspaceIndex

# Order matters only for the hooks: an opened document's analysis is queued before the index
# looks at its directory; the warm-up of the rules runs before the index starts its workers.
FEATURES: tuple[type[LanguageFeature], ...] = (
    RuleBook,
    ProjectConfigs,
    Diagnostics,
    WorkspaceIndex,
    CodeActions,
    Hover,
    Traces,
    Fleet,
    Commands,
    CodeLens,
    IdleCollector,
)


def create_server() -> DpmlensServer:
    server = DpmlensServer()
    lifecycle.register(server)
    for feature in FEATURES:
        server.features.add(feature(server))
    return server
