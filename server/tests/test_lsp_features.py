"""The feature fan-out (lsp/core.py): each hook runs under its own guard, so one feature that
raises is logged in one line and the features after it still run; typed lookup by class."""

from __future__ import annotations

import asyncio

import pytest

from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.documents import Document
from dpmlens.lsp.hover import Hover
from dpmlens.lsp.server import FEATURES, create_server


class Boom(LanguageFeature):
    name = "boom"

    def document_opened(self, doc: Document) -> None:
        raise RuntimeError(f"cannot open {doc.path}")


class Seen(LanguageFeature):
    name = "seen"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self.opened: list[str] = []

    def document_opened(self, doc: Document) -> None:
        self.opened.append(doc.uri)

    def traces_loaded(self) -> None:
        raise asyncio.CancelledError  # not an Exception: a cancellation is not swallowed


def _server() -> tuple[DpmlensServer, list[tuple[str, str]]]:
    server = DpmlensServer()
    logged: list[tuple[str, str]] = []
    server.log = lambda level, message: logged.append((level, message))  # type: ignore[method-assign]
    server.features.add(Boom(server))
    server.features.add(Seen(server))
    return server, logged


def test_a_raising_feature_is_logged_once_and_the_others_run() -> None:
    server, logged = _server()
    doc = Document(uri="file:///x.c", path="/x.c", version=1, source=b"")
    server.features.document_opened(doc)
    assert server.get_feature(Seen).opened == ["file:///x.c"]
    assert logged == [("error", "dpmlens: boom (document_opened) failed: RuntimeError: "
                                "cannot open /x.c")]
    server.features.document_closed(doc)  # no feature overrides it: nothing runs, no log
    assert len(logged) == 1
    with pytest.raises(asyncio.CancelledError):
        server.features.traces_loaded()


def test_get_feature_by_class() -> None:
    server, _ = _server()
    assert isinstance(server.get_feature(Seen), Seen)
    with pytest.raises(LookupError, match="no Hover feature"):
        server.get_feature(Hover)
    with pytest.raises(ValueError, match="added twice"):
        server.features.add(Seen(server))


def test_the_server_has_each_feature_once() -> None:
    server = create_server()
    assert [type(f) for f in server.features] == list(FEATURES)
    assert isinstance(server.get_feature(Hover), Hover)
