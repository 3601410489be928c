"""The server core: `DpmlensServer` (one pygls LanguageServer) and `LanguageFeature`.

A feature is a class with typed lifecycle hooks (a document opened, changed, saved, closed or
analysed, settings changed, the index updated, traces loaded...); the server keeps its
features in setup order (server.create_server) and `server.features.<event>(...)` calls each
feature's hook under its own `server.guard()`: an exception is logged to the client
(window/logMessage) with the feature's name, and the other features go on. Features reach each
other with `server.get_feature(cls)`. Nothing here may write to stdout, which carries the
protocol.
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from dpmlens import __version__
from dpmlens.lsp.analysis import Analysis
from dpmlens.lsp.documents import UTF16, Document, DocumentStore
from dpmlens.lsp.jsonrpc_errors import PARSE_ERROR, BadMessage
from dpmlens.lsp.protocol import DpmlensProtocol
from dpmlens.lsp.settings import LOG_LEVELS, Settings

if TYPE_CHECKING:
    from pygls.server import ServerErrors  # (defined for type checkers only)

log = logging.getLogger("dpmlens.lsp")

_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "debug": types.MessageType.Log,
}

F = TypeVar("F", bound="LanguageFeature")
P = TypeVar("P")
R = TypeVar("R")


class LanguageFeature:
    """One feature of the server. The hooks do nothing unless a feature overrides them; a
    feature registers its LSP methods (`server.feature(...)`) in its constructor."""

    name: ClassVar[str] = "feature"  # in log lines: "<name> (<hook>) failed: ..."

    def __init__(self, server: DpmlensServer) -> None:
        self.server = server

    def initialize(self) -> None:
        """`initialize`: the settings are read, the client waits (warm up here)."""

    def initialized(self) -> None:
        """`initialized`: the client is ready for requests from the server."""

    def settings_changed(self, old: Settings, new: Settings) -> None:
        """workspace/didChangeConfiguration gave `new` (server.settings is already it)."""

    def document_opened(self, doc: Document) -> None:
        """A C document was opened (its text is in server.documents)."""

    def document_changed(self, doc: Document) -> None:
        """Edits were applied to `doc`."""

    def document_saved(self, doc: Document) -> None:
        """`doc` was saved."""

    def document_closed(self, doc: Document) -> None:
        """`doc` was closed (no longer in server.documents)."""

    def document_analysed(self, doc: Document, analysis: Analysis) -> None:
        """Diagnostics ran the rules over `doc` and published the result."""

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        """workspace/didChangeWatchedFiles: C or trace files changed on disk."""

    def index_updated(self, directory: str | None) -> None:
        """The workspace index summarised a directory of an open document (or a changed
        file: `directory` None)."""

    def workspace_indexed(self) -> None:
        """The workspace scan finished."""

    def traces_loaded(self) -> None:
        """Traces were loaded or cleared (server: Traces feature)."""

    def shutdown(self) -> None:
        """`shutdown`: release processes and threads."""


class Features:
    """The features of one server in setup order; one method per lifecycle event, which calls
    the features that override its hook, each under its own guard."""

    def __init__(self, server: DpmlensServer) -> None:
        self._server = server
        self._all: list[LanguageFeature] = []

    def add(self, feature: LanguageFeature) -> None:
        if any(type(f) is type(feature) for f in self._all):
            raise ValueError(f"feature {type(feature).__name__} added twice")
        self._all.append(feature)

    def get(self, cls: type[F]) -> F:
        for f in self._all:
            if isinstance(f, cls):
                return f
        raise LookupError(f"no {cls.__name__} feature in this server")

    def __iter__(self) -> Iterator[LanguageFeature]:
        return iter(self._all)

    def _each(self, hook: str, call: Callable[[LanguageFeature], None]) -> None:
        base = getattr(LanguageFeature, hook)
        for f in self._all:
            if getattr(type(f), hook) is not base:
                with self._server.guard(f"{f.name} ({hook})"):
                    call(f)

    def initialize(self) -> None:
        self._each("initialize", lambda f: f.initialize())

    def initialized(self) -> None:
        self._each("initialized", lambda f: f.initialized())

    def settings_changed(self, old: Settings, new: Settings) -> None:
        self._each("settings_changed", lambda f: f.settings_changed(old, new))

    def document_opened(self, doc: Document) -> None:
        self._each("document_opened", lambda f: f.document_opened(doc))

    def document_changed(self, doc: Document) -> None:
        self._each("document_changed", lambda f: f.document_changed(doc))

    def document_saved(self, doc: Document) -> None:
        self._each("document_saved", lambda f: f.document_saved(doc))

    def document_closed(self, doc: Document) -> None:
        self._each("document_closed", lambda f: f.document_closed(doc))

    def document_analysed(self, doc: Document, analysis: Analysis) -> None:
        self._each("document_analysed", lambda f: f.document_analysed(doc, analysis))

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        self._each("files_changed", lambda f: f.files_changed(changes))

    def index_updated(self, directory: str | None) -> None:
        self._each("index_updated", lambda f: f.index_updated(directory))

    def workspace_indexed(self) -> None:
        self._each("workspace_indexed", lambda f: f.workspace_indexed())

    def traces_loaded(self) -> None:
        self._each("traces_loaded", lambda f: f.traces_loaded())

    def shutdown(self) -> None:
        self._each("shutdown", lambda f: f.shutdown())


class DpmlensServer(LanguageServer):
    """The server: settings, the open documents, the features, logging and the guard."""

    protocol: DpmlensProtocol

    def __init__(self) -> None:
        super().__init__("dpmlens", __version__, protocol_cls=DpmlensProtocol)
        self.protocol.warn = lambda message: self.log("warning", message)
        self.settings = Settings()
        self.documents = DocumentStore()
        self.features = Features(self)

    def get_feature(self, cls: type[F]) -> F:
        """The server's feature of class `cls` (LookupError if it has none)."""
        return self.features.get(cls)

    def handle(self, method: str, handler: Callable[[P], R], options: object = None) -> None:
        """Answer the LSP `method` with `handler` (a feature's bound method; synchronous)."""
        if inspect.iscoroutinefunction(handler):
            raise TypeError(f"{method}: handle() takes a synchronous handler")

        def call(params: P) -> R:  # pygls sets attributes on it: a bound method has none
            return handler(params)

        self.feature(method, options)(call)

    @property
    def encoding(self) -> str:
        """The negotiated position encoding (LSP columns)."""
        return self.workspace.position_encoding or UTF16

    # -- logging to the client -------------------------------------------------------------

    def log(self, level: str, message: str) -> None:
        """window/logMessage if the configured logLevel lets it through; stderr always."""
        getattr(log, "debug" if level == "debug" else level, log.info)(message)
        wanted = LOG_LEVELS.index(self.settings.log_level)
        if LOG_LEVELS.index(level) > wanted:
            return
        # Not connected yet, or the pipe is gone: stderr has it.
        with suppress(Exception):
            self.window_log_message(
                types.LogMessageParams(type=_MESSAGE_TYPES[level], message=message)
            )

    def log_exception(self, feature: str, error: BaseException) -> None:
        tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        log.error("%s failed:\n%s", feature, tb)
        self.log("error", f"dpmlens: {feature} failed: {type(error).__name__}: {error}")

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        # pygls' reader loop reports what json.loads raised with source=JsonRpcException:
        # a body that is no JSON (or not UTF-8, or nested past the recursion limit).
        if source is JsonRpcException and isinstance(error, (ValueError, RecursionError)):
            reason = f"Parse Error: {str(error).splitlines()[0][:200]}"
            self.protocol.answer_bad(BadMessage(None, PARSE_ERROR, reason))
            return
        super().report_server_error(error, source)

    def guard(self, feature: str) -> Guard:
        """`with server.guard(name):` runs a feature; if it throws, the exception is logged
        (one line to the client, the traceback to stderr) and the server carries on."""
        return Guard(self, feature)


class Guard:
    """The context manager of `DpmlensServer.guard` (it swallows an Exception, so code after
    a `with` block that returned inside it is reachable)."""

    def __init__(self, server: DpmlensServer, feature: str) -> None:
        self._server = server
        self._feature = feature

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if isinstance(exc, Exception):  # isolation is the point; not CancelledError & co
            self._server.log_exception(self._feature, exc)
            return True
        return False
