"""`dpmlens serve [--tcp HOST:PORT]`: run the language server (stdio by default)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable

from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the language server (LSP over stdio, or TCP with --tcp)",
        description="Run the dpmlens language server. Stdio by default: stdout carries only "
        "the protocol, logs go to stderr.",
    )
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    p.add_argument(
        "--log-level",
        default=os.environ.get("DPMLENS_LOG", "warning"),
        choices=("debug", "info", "warning", "error"),
        help="stderr log level (default: warning, or $DPMLENS_LOG)",
    )
    p.set_defaults(handler=run)


def parse_hostport(text: str) -> tuple[str, int]:
    """HOST:PORT ([::1]:PORT for IPv6); port 0 picks a free port (logged on stderr)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--tcp: expected HOST:PORT (e.g. 127.0.0.1:2087), got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def accept_one(host: str, port: int) -> socket.socket:
    """Listen on host:port, say where on stderr, and return the first client's connection.
    One client per server, as pygls' own start_tcp serves: the listener is closed once it
    has connected, so a second client is refused instead of left waiting."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise UsageError(f"--tcp {host}:{port}: cannot listen: {exc.strerror or exc}") from exc
    with listener:
        where = listener.getsockname()
        print(f"dpmlens: listening on {host}:{where[1]}", file=sys.stderr, flush=True)
        conn, _ = listener.accept()
    return conn


class SocketOut:
    """The TCP client's socket as the binary file pygls writes to. A client that is gone
    (reset, closed) ends the session as the end of stdin does: one line in the log, the
    socket shut so the reader sees its end, no traceback for every message still to send."""

    def __init__(self, sock: socket.socket, log: Callable[[str], None]) -> None:
        self.sock, self.log, self.lost = sock, log, False

    def write(self, data: bytes) -> int:
        if not self.lost:
            try:
                self.sock.sendall(data)
            except OSError as exc:
                self.log(f"dpmlens: the client's connection is lost: {exc.strerror or exc}")
                self.close()
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        """Also at `exit`: shutting the socket ends the reader's wait for a next message."""
        self.lost = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


def run(args: argparse.Namespace) -> int:
    hostport = parse_hostport(args.tcp) if args.tcp else None
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="dpmlens %(levelname)s %(name)s: %(message)s",
    )
    try:
        from dpmlens.lsp.framing import FrameReader
        from dpmlens.lsp.server import create_server
    except ImportError as exc:  # a lint-only install (pre-commit, the Action) lacks pygls
        raise UsageError(
            f"serve needs the language-server extra: pip install 'dpmlens[server]' ({exc})"
        ) from None

    server = create_server()
    # Keep the protocol channel for pygls alone: fd 1 becomes a copy of stderr, so a stray
    # print (ours, a library's, a child process's) cannot corrupt the stream. Over TCP,
    # stdout carries nothing at all.
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0) if hostport is None else None
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Frames are checked before pygls reads them (lsp/framing.py): a lying Content-Length
    # must not desynchronize the stream for good. TCP takes the same path as stdio (pygls'
    # start_tcp reads with asyncio streams, which trust every length): the connection's
    # socket is read by the same FrameReader and written like stdout.
    log = logging.getLogger("dpmlens.lsp").warning
    if hostport is not None:
        with accept_one(*hostport) as conn:
            server.start_io(FrameReader(conn.fileno(), log),
                            SocketOut(conn, log))  # type: ignore[arg-type]
    else:
        reader = FrameReader(sys.stdin.buffer.fileno(), log)
        server.start_io(reader, proto_out)  # type: ignore[arg-type]
    return exit_codes.OK
