"""Typed command arguments (lsp/command_args.py): a wrong argument is a JSON-RPC InvalidParams
error with one line naming the field, over a real server on stdio; right ones still work."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from raw_lsp import RawServer

from dpmlens.lsp.command_args import CommandError
from dpmlens.lsp.commands import EXPLAIN_RULE, LOAD_TRACES, SLOWEST_CALLBACKS, TRACE_STATUS

WS = Path(__file__).resolve().parents[2] / "test-fixtures" / "lsp" / "ws"

# (command, arguments, what the one-line message must say)
WRONG = [
    ("dpmlens.loadTraces", [{"paths": [3]}], "paths[0]: got 3, not a string"),
    ("dpmlens.loadTraces", [{"paths": "/tmp/x"}], "paths: got '/tmp/x', not a list"),
    ("dpmlens.loadTraces", [{"paths": []}], "paths: empty"),
    ("dpmlens.loadTraces", [{"path": ["/tmp"]}], "paths: missing"),
    ("dpmlens.loadTraces", [], 'expected [{"paths": ["/file-or-dir", ...]}], got []'),
    ("dpmlens.slowestCallbacks", [{"limit": "ten"}], "limit: got 'ten', not an integer"),
    ("dpmlens.slowestCallbacks", [{"limit": True}], "limit: got True, not an integer"),
    ("dpmlens.slowestCallbacks", [{"limit": 0}], "limit: must be a positive integer, got 0"),
    ("dpmlens.slowestCallbacks", [7], "got [7]"),
    ("dpmlens.explainRule", [42], "rule: got 42, not a string"),
    ("dpmlens.explainRule", ["a", "b"], "got ['a', 'b']"),
    ("dpmlens.traceStatus", ["now"], "expected [], got ['now']"),
    ("dpmlens.clearTraces", [{}], "expected [], got [{}]"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    ws = tmp_path_factory.mktemp("cmd") / "ws"
    shutil.copytree(WS, ws)
    srv = RawServer(ws)
    srv.initialize()
    yield srv
    srv.close()


@pytest.mark.parametrize(("command", "arguments", "says"), WRONG)
def test_wrong_field_is_invalid_params_naming_it(
    server: RawServer, command: str, arguments: list[object], says: str
) -> None:
    rid = server.request("workspace/executeCommand",
                         {"command": command, "arguments": arguments})
    msg = server.answer(rid)
    err = msg.get("error")
    assert err is not None, msg
    assert err["code"] == -32602, err
    assert err["message"].startswith(f"{command}: ") and says in err["message"], err
    assert "\n" not in err["message"] and "data" not in err, err  # one line, no traceback


def test_right_arguments_still_work(server: RawServer) -> None:
    for arguments in ([], [{"limit": 3}], [{"limit": 3, "extra": "ignored"}]):
        got = server.response(server.request(
            "workspace/executeCommand",
            {"command": "dpmlens.slowestCallbacks", "arguments": arguments}))
        assert set(got) >= {"callbacks", "phases", "status"}, got
    got = server.response(server.request(
        "workspace/executeCommand", {"command": "dpmlens.traceStatus", "arguments": []}))
    assert got["files"] == 0
    got = server.response(server.request(
        "workspace/executeCommand", {"command": "dpmlens.traceStatus"}))  # no "arguments"
    assert got["files"] == 0
    got = server.response(server.request(
        "workspace/executeCommand",
        {"command": "dpmlens.explainRule", "arguments": ["msleep-under-20ms"]}))
    assert got["id"] == "msleep-under-20ms"


def test_parse_gives_the_typed_arguments() -> None:
    assert LOAD_TRACES.parse([{"paths": ["/a", "/b"]}]).paths == ["/a", "/b"]
    assert SLOWEST_CALLBACKS.parse([]).limit == 50
    assert SLOWEST_CALLBACKS.parse(None).limit == 50
    assert SLOWEST_CALLBACKS.parse([{"limit": 5}]).limit == 5
    assert EXPLAIN_RULE.parse(["x"]).rule == "x"
    TRACE_STATUS.parse([])
    with pytest.raises(CommandError, match=r"paths\[1\]: got None, not a string"):
        LOAD_TRACES.parse([{"paths": ["/a", None]}])
