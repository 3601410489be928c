"""The JSON-RPC side of the server: pygls' LanguageServerProtocol with dpmlens' fixes.

The text sync notifications skip pygls' own copy of the document (documents.py keeps ours),
running requests can see their $/cancelRequest, and malformed messages are answered
(jsonrpc_errors.py) instead of dropped. Nothing here may write to stdout, which carries the
protocol.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from dpmlens.lsp.jsonrpc_errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    BadMessage,
    envelope_problem,
    params_problem,
)

log = logging.getLogger("dpmlens.lsp")

# what pygls' handler generators yield: (handler, args, kwargs)
_Step = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any] | None]

# The id of the request a handler's task serves (set while pygls creates the task, which
# copies the context): how a long command finds the event $/cancelRequest sets for it.
REQUEST_ID: ContextVar[Any] = ContextVar("dpmlens_request_id", default=None)

COMMAND_PARAMS: ContextVar[types.ExecuteCommandParams | None] = ContextVar(
    "dpmlens_command_params", default=None
)


class DpmlensProtocol(LanguageServerProtocol):
    # documents.py keeps the text (bytes + tree) of open documents; pygls' own copy would be
    # a second full-text update per keystroke (~1 ms on a 6,000-line file) and a second copy
    # in memory, so the three sync notifications go straight to our handlers.

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any,
                         args: Any = None, kwargs: Any = None) -> None:
        # pygls 2.1.1 files the future of every generator/async handler under its message id
        # and pops it only for requests: each notification (every didChange!) would stay in
        # `_request_futures` for ever. Pop it when it is done; cancellation of a running
        # request still finds its future until then.
        def done(future: Any) -> None:
            self._request_futures.pop(msg_id, None)
            self.cancel_events.pop(msg_id, None)
            callback(future)

        # pygls runs a generator handler's inner handler through this method again, under a
        # made-up id: the client's request id, set first, stays the one its task sees
        token = None
        if msg_id is not None and REQUEST_ID.get() is None:
            self.cancel_events[msg_id] = threading.Event()
            token = REQUEST_ID.set(msg_id)
        try:
            super()._execute_handler(msg_id, handler, done, args, kwargs)
        finally:
            if token is not None:
                REQUEST_ID.reset(token)

    # pygls cancels a request only before it starts ("will only work if the request hasn't
    # started executing"); a running command (loadTraces in its worker thread) looks at this
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancel_events: dict[Any, threading.Event] = {}
        # where a malformed message is logged (the server sets its window/logMessage)
        self.warn: Callable[[str], None] = log.warning

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        event = self.cancel_events.get(msg_id)
        if event is not None:
            event.set()
        super()._handle_cancel_notification(msg_id)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        # pygls 2.1.1's own iterates `_request_futures` while cancelling them, and a cancel
        # runs the done callback above, which removes the entry: "dictionary changed size
        # during iteration" ended the server's shutdown with a traceback. Same steps on a copy;
        # running commands are told too.
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for event in list(self.cancel_events.values()):
            event.set()
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def cancelled(self) -> threading.Event:
        """The event $/cancelRequest sets for the request being handled (never set outside
        a request)."""
        event = self.cancel_events.get(REQUEST_ID.get())
        return event if event is not None else threading.Event()

    # -- malformed messages (jsonrpc_errors.py): answered, never dropped in silence ----------

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:  # pygls calls this for every object in the message
            return data
        if (problem := envelope_problem(data)) is not None:
            return BadMessage(data, *problem)
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            return BadMessage(data, INVALID_PARAMS, params_problem(data.get("method"), exc))

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, BadMessage) and not hasattr(message, "jsonrpc"):
            # a JSON value that is no JSON-RPC object ([], 3, {"id": 1} without "jsonrpc")
            message = BadMessage(message, *(envelope_problem(message)
                                            or (INVALID_REQUEST, "Invalid Request")))
        if isinstance(message, BadMessage):
            self.answer_bad(message)
            return
        super().handle_message(message)

    def answer_bad(self, bad: BadMessage) -> None:
        self.warn(f"dpmlens: {bad.reason}")
        if (answer := bad.answer()) is not None:
            self._send_data(answer)

    def _user(self, method: str, params: Any) -> Generator[_Step, Any, Any]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[_Step, Any, Any]:
        return (yield from self._user(types.TEXT_DOCUMENT_DID_OPEN, params))

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[_Step, Any, Any]:
        return (yield from self._user(types.TEXT_DOCUMENT_DID_CHANGE, params))

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[_Step, Any, Any]:
        return (yield from self._user(types.TEXT_DOCUMENT_DID_CLOSE, params))

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[_Step, Any, Any]:
        # Command handlers only see their arguments; keep the whole request (its
        # workDoneToken) in a context variable: the handler's task is created from this
        # context, so two commands in flight each see their own request.
        COMMAND_PARAMS.set(params)
        return (yield from super().lsp_workspace__execute_command(params))
