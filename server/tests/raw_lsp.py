"""A raw client for the real server, over stdio or TCP (`dpmlens serve --tcp`): sends any
bytes (broken frames too) and reads the server's messages, for the protocol-robustness tests
and the fuzz suite."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER_CMD = [sys.executable, "-m", "dpmlens.lsp"]


def frame(body: bytes | str | dict[str, Any], length: int | None = None) -> bytes:
    if isinstance(body, dict):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n\r\n" % n + body


class RawServer:
    def __init__(self, root: Path, env: dict[str, str] | None = None,
                 transport: str = "stdio") -> None:
        tcp = transport == "tcp"
        self.proc = subprocess.Popen(
            SERVER_CMD + (["--tcp", "127.0.0.1:0"] if tcp else []),
            stdin=subprocess.DEVNULL if tcp else subprocess.PIPE,
            stdout=subprocess.DEVNULL if tcp else subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})}, cwd=root)
        self.messages: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.closed = False
        self.errors = bytearray()  # the end of stderr (drained too: a full pipe blocks logging)
        self.sock: socket.socket | None = None
        if tcp:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self._port()))
            except BaseException:
                self.proc.kill()  # no server left behind when it cannot be reached
                self.proc.wait()
                raise
        for target in (self._drain, self._drain_stderr):
            threading.Thread(target=target, daemon=True).start()
        self.next_id = 1000
        self.root = root

    def _port(self) -> int:
        """The port a `--tcp HOST:0` server says it listens on (its first stderr lines)."""
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            self.errors += line
            if m := re.match(rb"dpmlens: listening on .*:(\d+)$", line.strip()):
                return int(m.group(1))
            if not line:
                break
        raise AssertionError(f"the server did not listen: {self.stderr_tail()}")

    # -- sending -------------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        if self.sock is not None:
            self.sock.sendall(data)
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(frame(msg))
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.request("initialize", {
            "processId": None, "rootUri": self.root.as_uri(), "capabilities": {},
            "initializationOptions": {"debounceMs": 0, "traceGlobs": [], **(options or {})}})
        res = self.response(rid)
        self.notify("initialized", {})
        return res

    # -- receiving (a thread drains stdout: a client that stops reading would block the
    # server's writes, and then its reads of our frames) ------------------------------------

    def _drain(self) -> None:
        if self.sock is not None:
            read = self.sock.recv
        else:
            assert self.proc.stdout is not None
            fd = self.proc.stdout.fileno()
            def read(n: int) -> bytes:
                return os.read(fd, n)
        buf = b""
        while chunk := _read_or_eof(read):
            buf += chunk
            while True:
                head, sep, rest = buf.partition(b"\r\n\r\n")
                if not sep:
                    break
                n = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
                if len(rest) < n:
                    break
                with self.cond:
                    self.messages.append(json.loads(rest[:n]))
                    self.cond.notify_all()
                buf = rest[n:]
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(1 << 16):
            self.errors += chunk
            del self.errors[: max(0, len(self.errors) - (64 << 10))]

    def wait(self, pred: Any, timeout: float = 20.0, what: str = "") -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for i in range(seen, len(self.messages)):
                    if pred(self.messages[i]):
                        return self.messages.pop(i)  # consumed: the next wait will not see it
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise AssertionError(
                        f"{'server exited' if self.closed else 'timed out'} waiting for "
                        f"{what}; got {self.messages[-5:]}; stderr: {self.stderr_tail()}")
                self.cond.wait(left)

    def answer(self, rid: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The response (result or error) to request `rid`."""
        return self.wait(lambda m: m.get("id") == rid and "method" not in m
                         and ("result" in m or "error" in m), timeout, f"answer to {rid}")

    def response(self, rid: Any, timeout: float = 20.0) -> Any:
        msg = self.answer(rid, timeout)
        assert "error" not in msg, msg
        return msg["result"]

    def alive(self, timeout: float = 20.0) -> None:
        """The server answers a good request."""
        rid = self.request("workspace/executeCommand",
                           {"command": "dpmlens.traceStatus", "arguments": []})
        assert "samples" in self.response(rid, timeout)

    def stderr_tail(self) -> str:
        return bytes(self.errors[-2000:]).decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                rid = self.request("shutdown")
                self.answer(rid, 10)
                self.notify("exit", None)
                self.proc.wait(10)
            except (AssertionError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr, self.sock):
            if f is not None:
                f.close()


def _read_or_eof(read: Any) -> bytes:
    try:
        return read(1 << 20)
    except OSError:  # the connection was reset: the server is gone
        return b""
