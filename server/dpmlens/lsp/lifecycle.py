"""The LSP notifications that become lifecycle events of the features (core.py).

initialize / initialized / didChangeConfiguration read the settings (settings.py); the text
sync notifications update the open documents (documents.py); didChangeWatchedFiles and
shutdown are passed on. Each then calls the features' hook through `server.features`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from dpmlens.lsp.core import DpmlensServer
from dpmlens.lsp.documents import Document, is_c_document
from dpmlens.lsp.settings import parse_settings, unwrap


def workspace_folder(server: DpmlensServer) -> str | None:
    ws = server.workspace
    folders = list(ws.folders.values())
    if folders:
        return to_fs_path(folders[0].uri)
    root: str | None = ws.root_path
    return root


def apply_settings(server: DpmlensServer, raw: Any) -> None:
    old = server.settings
    new = parse_settings(raw, workspace_folder(server))
    server.settings = new
    for problem in new.problems:
        server.log("warning", problem)
    server.features.settings_changed(old, new)


def note_surrogates(server: DpmlensServer, doc: Document, replaced: int) -> None:
    """One log line per session: the editor sent text that is not valid Unicode."""
    if replaced and not server.documents.surrogates_logged:
        server.documents.surrogates_logged = True
        server.log("warning", f"dpmlens: {doc.path}: {replaced} lone UTF-16 surrogate(s) in the "
                              "text from the editor, replaced by U+FFFD (logged once)")


def register_watchers(server: DpmlensServer) -> None:
    """Ask the client to tell us about C files and trace files changing on disk."""
    caps = server.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    globs = ["**/*.c", "**/*.h", *server.settings.trace_globs]
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in globs]
    )
    server.client_register_capability(
        types.RegistrationParams(
            registrations=[
                types.Registration(
                    id="dpmlens-watch",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=options,
                )
            ]
        )
    )


def register(server: DpmlensServer) -> None:
    """Register the LSP handlers of the lifecycle on `server`."""

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.settings = parse_settings(params.initialization_options, workspace_folder(server))
        server.features.initialize()

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        for problem in server.settings.problems:
            server.log("warning", problem)
        register_watchers(server)
        server.features.initialized()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        raw = unwrap(params.settings)
        if not isinstance(raw, dict) or not raw:
            # VS Code sends {"settings": null} when it expects the server to pull.
            raw = None
            caps = server.client_capabilities.workspace
            if caps is not None and caps.configuration:
                got = await server.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="dpmlens")])
                )
                raw = got[0] if got else None
        with server.guard("settings"):
            apply_settings(server, raw)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        if not is_c_document(td.uri, td.language_id):
            return
        with server.guard("documents (didOpen)"):
            doc = server.documents.open(td.uri, td.version, td.text)
            note_surrogates(server, doc, server.documents.last_replaced)
            server.features.document_opened(doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        doc = server.documents.get(params.text_document.uri)
        if doc is None:
            return
        with server.guard("documents (didChange)"):
            enc = server.encoding
            replaced = 0
            for change in params.content_changes:
                replaced += doc.apply_change(change, enc)
            note_surrogates(server, doc, replaced)
            doc.version = params.text_document.version
            server.features.document_changed(doc)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        doc = server.documents.get(params.text_document.uri)
        if doc is not None:
            server.features.document_saved(doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        doc = server.documents.get(params.text_document.uri)
        if doc is None:
            return
        server.documents.close(params.text_document.uri)
        server.features.document_closed(doc)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        server.features.files_changed(params.changes)

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.features.shutdown()
