"""Fuzz: the real server over stdio, and over TCP for the frames (issue 11).

Invariants: after any sequence of edits the diagnostics equal those of a fresh open of the same
text; after any malformed frame the server answers the next good request.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator

import pytest
from fuzz_support import FIXTURES, mutated, record
from hypothesis import given
from hypothesis import strategies as st
from raw_lsp import RawServer

WS = FIXTURES / "lsp" / "ws"
DRIVERS = sorted(WS.glob("*.c")) + sorted((FIXTURES / "rules").glob("*.c"))[:8]
TEXTS = {p: p.read_text(encoding="utf-8", errors="replace") for p in DRIVERS}
SNIPPETS = ["{", "}", "(", ")", ";", "\n", "msleep(10);", "pm_runtime_get_sync(dev);",
            "enable_irq_wake(irq);", "/*", "*/", "\"", "x", "\ud800", "\u00e9", "\t",
            "static SIMPLE_DEV_PM_OPS(p, foo_suspend, NULL);\n", "return 0;"]
_SEQ = itertools.count(1)
# Seconds to wait for an answer: a hang still fails, a round on a loaded machine (`make fuzz`
# is nice'd, 30 minutes beside other work) does not.
_WAIT = 60.0


def _start(tmp_path_factory: pytest.TempPathFactory, transport: str) -> RawServer:
    ws = tmp_path_factory.mktemp("fuzz") / "ws"
    shutil.copytree(WS, ws)
    srv = RawServer(ws, transport=transport)
    srv.initialize({"debounceMs": 0})
    return srv


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    srv = _start(tmp_path_factory, "stdio")
    yield srv
    srv.close()


@pytest.fixture(scope="module", params=["stdio", "tcp"])
def frames_server(tmp_path_factory: pytest.TempPathFactory,
                  request: pytest.FixtureRequest) -> Iterator[RawServer]:
    """The frames go through the same reader on both transports (serve_cmd.py)."""
    srv = _start(tmp_path_factory, request.param)
    yield srv
    srv.close()


def _diags(server: RawServer, uri: str, version: int) -> list[tuple]:
    msg = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri and m["params"].get("version") == version,
                      timeout=_WAIT, what=f"diagnostics of {uri} v{version}")
    return sorted((json.dumps(d["range"], sort_keys=True), d["code"], d["message"])
                  for d in msg["params"]["diagnostics"])


def _position(text: str, offset: int) -> dict[str, int]:
    """UTF-16 position of a str offset (each BMP character, surrogates too, is one unit)."""
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


@given(st.data())
def test_edits_equal_a_fresh_open(server: RawServer, data: st.DataObject) -> None:
    src = data.draw(st.sampled_from(DRIVERS))
    text = TEXTS[src]
    # In a directory of its own: helpers in other files of the workspace (whose index may
    # finish between the two opens) must not enter the comparison.
    uri = (server.root / "fuzz" / f"f{next(_SEQ)}_{src.name}").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "c", "version": 1, "text": text}})
    version = 1
    for version in range(2, 2 + data.draw(st.integers(1, 10))):
        changes = []
        for _ in range(data.draw(st.integers(1, 3))):
            start = data.draw(st.integers(0, len(text)))
            end = data.draw(st.integers(start, min(len(text), start + 200)))
            new = data.draw(st.sampled_from(SNIPPETS))
            changes.append({"range": {"start": _position(text, start),
                                      "end": _position(text, end)}, "text": new})
            text = text[:start] + new + text[end:]
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": changes})
    try:
        edited = _diags(server, uri, version)
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        # A version never used for this uri: the publish of the first open (version 1) is
        # still in the message list.
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "c", "version": version + 1, "text": text}})
        assert _diags(server, uri, version + 1) == edited
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    except BaseException:
        record("lsp-edits", text.encode("utf-8", "surrogatepass"), ".c")
        raise


_GOOD = [
    {"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///nowhere.c"}, "position": {"line": 0, "character": 0}}},
    {"jsonrpc": "2.0", "id": 8, "method": "workspace/executeCommand",
     "params": {"command": "dpmlens.slowestCallbacks", "arguments": [{"limit": 3}]}},
    {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": "file:///nowhere.c", "version": 2},
        "contentChanges": [{"text": "int x;"}]}},
    {"jsonrpc": "2.0", "id": 9, "method": "textDocument/codeLens",
     "params": {"textDocument": {"uri": "file:///nowhere.c"}}},
]


@st.composite
def bad_frames(draw: st.DrawFn) -> bytes:
    body = json.dumps(draw(st.sampled_from(_GOOD))).encode()
    body = draw(mutated(body, max_edits=4)) if draw(st.booleans()) else body
    length = len(body) + draw(st.sampled_from([0, 0, -1, -10, 1, 50, 10**6, 10**12]))
    head = b"Content-Length: %d\r\n" % max(0, length)
    head = draw(st.sampled_from([head + b"\r\n", head, b"", head + b"Content-Type: x\r\n\r\n",
                                 b"content-length:%d\r\n\r\n" % max(0, length)]))
    return head + body


@given(bad_frames())
def test_malformed_frames_then_a_good_request(frames_server: RawServer, raw: bytes) -> None:
    # A mutation must not turn a frame into a real shutdown/exit of the session.
    if b"shutdown" in raw or b"exit" in raw:
        return
    try:
        frames_server.send(raw)
        frames_server.alive(timeout=_WAIT)
    except BaseException:
        record("lsp-frame", raw, ".bin")
        raise
