"""issue 11, class 6: malformed JSON-RPC traffic to the real server over stdio (and, for the
framing and the spec errors, over a TCP socket: `dpmlens serve --tcp`). Every bad request
gets the error the JSON-RPC 2.0 spec names, a lying frame costs only itself, and after each
the server answers the next good request."""

from __future__ import annotations

import shutil
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from raw_lsp import RawServer, frame

WS = Path(__file__).resolve().parents[2] / "test-fixtures" / "lsp" / "ws"


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RawServer]:
    ws = tmp_path / "ws"
    shutil.copytree(WS, ws)
    srv = RawServer(ws, env={"DPMLENS_MAX_MESSAGE_BYTES": "16M"},
                    transport=getattr(request, "param", "stdio"))
    srv.initialize()
    yield srv
    srv.close()


def error_of(server: RawServer, rid: object) -> dict:
    msg = server.answer(rid)
    assert "error" in msg, msg
    assert "\n" not in msg["error"]["message"] and "traceback" not in str(msg["error"])
    return msg["error"]


BOTH = pytest.mark.parametrize("server", ["stdio", "tcp"], indirect=True)


@BOTH
def test_bad_requests_get_the_spec_errors(server: RawServer) -> None:
    server.send(frame(b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hov'))
    assert error_of(server, None)["code"] == -32700
    server.alive()

    server.send(frame(b'\xff\xfe{"jsonrpc"'))  # not even UTF-8
    server.wait(lambda m: m.get("id") is None and m.get("error", {}).get("code") == -32700)
    server.alive()

    server.send(frame({"jsonrpc": "2.0", "id": 2, "method": 123}))
    err = error_of(server, 2)
    assert err["code"] == -32600 and '"method" must be a string' in err["message"]

    server.send(frame({"jsonrpc": "1.0", "id": 3, "method": "shutdown"}))
    assert error_of(server, 3)["code"] == -32600
    server.alive()  # and it did not shut down

    server.send(frame({"id": 4, "method": "shutdown"}))  # no "jsonrpc"
    assert error_of(server, 4)["code"] == -32600

    server.send(frame(b"[1, 2, 3]"))
    assert error_of(server, None)["code"] == -32600

    server.send(frame({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover",
                       "params": {"textDocument": 1, "position": "x"}}))
    err = error_of(server, 5)
    assert err["code"] == -32602 and "textDocument/hover" in err["message"]

    server.send(frame({"jsonrpc": "2.0", "id": 6, "method": "textDocument/hover", "params": 7}))
    assert error_of(server, 6)["code"] == -32602

    # A notification with bad params gets no answer (the spec forbids one), and no harm.
    server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                       "params": {"textDocument": {"uri": 5}}}))
    server.alive()


@pytest.mark.parametrize("args", [[5], ["x", "y"], [{"paths": "notalist"}], [{"paths": [3]}]])
def test_wrong_command_arguments_are_invalid_params(server: RawServer, args: list) -> None:
    rid = server.request("workspace/executeCommand",
                         {"command": "dpmlens.loadTraces", "arguments": args})
    err = error_of(server, rid)
    assert err["code"] == -32602 and err["message"].startswith("dpmlens.loadTraces: expected")
    for command, bad in (("dpmlens.slowestCallbacks", [{"limit": "ten"}]),
                         ("dpmlens.explainRule", [42]),
                         ("dpmlens.explainRule", [])):
        rid = server.request("workspace/executeCommand", {"command": command, "arguments": bad})
        assert error_of(server, rid)["code"] == -32602
    rid = server.request("workspace/executeCommand",
                         {"command": "dpmlens.slowestCallbacks", "arguments": 3})
    assert error_of(server, rid)["code"] == -32602
    server.alive()


@BOTH
def test_lying_frames_cost_only_themselves(server: RawServer) -> None:
    good = {"jsonrpc": "2.0", "id": 50, "method": "workspace/executeCommand",
            "params": {"command": "dpmlens.traceStatus", "arguments": []}}
    body = frame(good)[len(b"Content-Length: 000\r\n\r\n") - 1:]
    # Too short: the body is cut, the rest is junk before the next header.
    server.send(frame(body, length=len(body) - 20))
    server.alive()
    # Too long, with more messages behind it: cut at the next header.
    server.send(frame(body, length=len(body) + 500))
    server.alive()
    assert "result" in server.answer(50)
    # Too long, and the client waits: taken once it stops sending.
    good["id"] = 51
    server.send(frame(good, length=10_000))
    assert "result" in server.answer(51)
    # No header at all, then a good frame.
    server.send(b'{"jsonrpc": "2.0", "id": 52, "method": "shutdown"}')
    server.alive()
    # A length of 10^12 (over the limit): dropped, the stream goes on.
    server.send(b"Content-Length: 1000000000000\r\n\r\n" + b'{"x": 1}')
    server.alive()
    # Over the (lowered) limit for real: 20 MB, skipped in pieces, not buffered.
    server.send(b"Content-Length: 20000000\r\n\r\n" + b" " * 20_000_000)
    server.alive()
    assert server.proc.poll() is None


def _diags(server: RawServer, uri: str, version: int) -> list[dict]:
    msg = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri and m["params"].get("version") == version,
                      what=f"diagnostics v{version}")
    return msg["params"]["diagnostics"]


def test_lone_surrogate_in_an_edit_is_kept_in_step(server: RawServer) -> None:
    """issue 11, class 8: a lone UTF-16 surrogate in didChange text used to drop the edit, so
    every later edit landed in the wrong place."""
    path = server.root / "foo_core.c"
    uri = path.as_uri()
    text = path.read_text()
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "c", "version": 1, "text": text}})
    _diags(server, uri, 1)
    line = 22  # "\tmsleep(5);"

    def edit(version: int, start: int, end: int, new: str) -> None:
        rng = {"start": {"line": line, "character": start},
               "end": {"line": line, "character": end}}
        # json.dumps escapes a lone surrogate as "\\ud800", as an editor's JSON would
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": rng, "text": new}]})

    edit(2, 1, 1, "/* \ud800 */ ")  # a lone high surrogate
    # UTF-16 columns: tab, "/* ", 1 unit, " */ " = 9 before msleep; "5" is at 16.
    edit(3, 16, 17, "7")
    diags = _diags(server, uri, 3)
    d = next(x for x in diags if x["code"] == "msleep-under-20ms")
    assert (d["range"]["start"]["character"], d["range"]["end"]["character"]) == (9, 18)
    assert "msleep(7)" in d["message"] or "7 ms" in d["message"], d["message"]
    server.wait(lambda m: m.get("method") == "window/logMessage"
                and "lone UTF-16 surrogate" in m["params"]["message"], what="logged once")
    # The server's copy equals a fresh open of the same text (U+FFFD for the surrogate).
    fresh = server.root / "fresh.c"
    lines = text.split("\n")
    lines[line] = "\t/* \ufffd */ msleep(7);"
    fresh.write_text("\n".join(lines))
    furi = fresh.as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": furi, "languageId": "c", "version": 1, "text": fresh.read_text()}})
    fd = next(x for x in _diags(server, furi, 1) if x["code"] == "msleep-under-20ms")
    assert fd["range"] == d["range"] and fd["message"] == d["message"]


@pytest.mark.parametrize("how", ["hang up", "reset, an answer pending", "exit, left open"])
def test_tcp_client_leaving_ends_the_server(tmp_path: Path, how: str) -> None:
    """Over TCP the server serves one client (as pygls' start_tcp did) and exits when it
    leaves, however it leaves: a reset connection used to end the server with a traceback
    from its reader and one from every answer it still had to send."""
    srv = RawServer(tmp_path, transport="tcp")
    srv.initialize()
    srv.alive()
    assert srv.sock is not None
    if how == "hang up":
        srv.sock.shutdown(socket.SHUT_WR)
    elif how == "reset, an answer pending":
        srv.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        srv.request("workspace/executeCommand",
                    {"command": "dpmlens.traceStatus", "arguments": []})
        srv.sock.close()  # SO_LINGER 0: the close sends RST
    else:
        srv.answer(srv.request("shutdown"))
        srv.notify("exit", None)
    assert srv.proc.wait(20) == 0
    time.sleep(0.2)  # the end of stderr
    assert "Traceback" not in srv.stderr_tail(), srv.stderr_tail()
    srv.close()
