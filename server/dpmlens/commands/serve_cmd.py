"""`dpmlens serve [--tcp HOST:PORT]`: run the language server (stdio by default)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from dpmlens import exit_codes
from dpmlens.errors import UsageError


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
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--tcp: expected HOST:PORT (e.g. 127.0.0.1:2087), got {text!r}")
    return host or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    hostport = parse_hostport(args.tcp) if args.tcp else None
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="dpmlens %(levelname)s %(name)s: %(message)s",
    )
    from dpmlens.lsp.framing import FrameReader
    from dpmlens.lsp.server import create_server

    server = create_server()
    # Keep the protocol channel for pygls alone: fd 1 becomes a copy of stderr, so a stray
    # print (ours, a library's, a child process's) cannot corrupt the stream. Over TCP,
    # stdout carries nothing at all.
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0) if hostport is None else None
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if hostport is not None:
        server.start_tcp(*hostport)
    else:
        # Frames are checked before pygls reads them (lsp/framing.py): a lying Content-Length
        # must not desynchronize the stream for good.
        reader = FrameReader(sys.stdin.buffer.fileno(), logging.getLogger("dpmlens.lsp").warning)
        server.start_io(reader, proto_out)  # type: ignore[arg-type]
    return exit_codes.OK
