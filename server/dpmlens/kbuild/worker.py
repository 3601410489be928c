"""The warm `dpmlens cc` worker: `python -m dpmlens.kbuild.worker SOCKET LOCK [ARGV_JSON]`.

Started by kbuild/worker_client.py on a build's first file with PM code. It loads once what
every `dpmlens cc` run loads (the modules, the rule files, tree-sitter, the build's Kconfig
header, by checking the file its starter checked, output thrown away), then forks one child
per connection: the child takes the client's stdin/stdout/stderr, working directory and
environment and runs the ordinary `dpmlens cc` code on them, so its output is what the
in-process run prints. Fork gives each file a copy of the warm state: nothing one file does
(a rule switched off by its directory's configuration) reaches the next.

It answers only its own user (SO_PEERCRED), holds LOCK while it lives (one worker per
socket), refuses and exits when a dpmlens module or rule file changed since it started (the
client then checks in-process and the next call starts a fresh worker), and exits after
DPMLENS_CC_WORKER_IDLE seconds (default 600) without a connection.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time
import traceback

from dpmlens.kbuild.worker_client import (
    ENV_SWITCH,
    REFUSED,
    STARTED,
    decode_request,
    worker_key,
)

IDLE_ENV = "DPMLENS_CC_WORKER_IDLE"
_MAX_REQUEST = 16 << 20
_own_key: list[str] = [""]  # worker_key() as the starting client computed it


def fingerprint() -> tuple[tuple[str, int, int], ...]:
    """Every dpmlens module and rule file with its mtime and size."""
    from dpmlens.core.paths import rules_dir

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out: list[tuple[str, int, int]] = []
    for top, suffix in ((here, ".py"), (str(rules_dir()), ".yaml")):
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif e.name.endswith(suffix):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    out.append((e.path, st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def run_cc(argv: list[str]) -> int:
    """`dpmlens cc ARGV` as the command line runs it (its exit code, a traceback as Python
    prints one)."""
    from dpmlens.cli import main

    try:
        return int(main(["cc", *argv]))
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - what the interpreter would print and exit with
        traceback.print_exc()
        return 1


# a driver with PM code: checking it loads the parser, the model and every rule's module
_SNIPPET = b"""static int foo_suspend(struct device *dev)
{
\tpm_runtime_get_sync(dev);
\treturn 0;
}

static const struct dev_pm_ops foo_pm_ops = {
\t.suspend = foo_suspend,
};
"""


def warm(argv: list[str]) -> None:
    """Load what every file needs: check a small driver and the starter's file (the build's
    Kconfig header) with the output thrown away, then keep the rule set for the children."""
    import tempfile

    from dpmlens.engine.rule_set import keep_loaded, load_rule_set

    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    try:
        os.dup2(devnull, 2)
        with tempfile.TemporaryDirectory(prefix="dpmlens-warm-") as tmp:
            snippet = os.path.join(tmp, "warm.c")
            with open(snippet, "wb") as fh:
                fh.write(_SNIPPET)
            run_cc([snippet])
        if argv:
            run_cc(argv)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    keep_loaded()
    load_rule_set()
    import gc

    gc.freeze()  # what is loaded stays: a child's collections need not touch (and copy) it


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise OSError("client closed the connection")
        out += chunk
    return out


def serve_one(conn: socket.socket) -> None:
    """In the forked child: take the client's request and descriptors, run, reply."""
    (n,) = struct.unpack("!I", _recv_exact(conn, 4))
    if n > _MAX_REQUEST:
        raise OSError("request too large")
    data, fds, _, _ = socket.recv_fds(conn, n, 3)
    if len(fds) != 3:
        raise OSError("expected stdin, stdout and stderr")
    if len(data) < n:
        data += _recv_exact(conn, n - len(data))
    key, cwd, argv, env = decode_request(data)
    if key != _own_key[0]:  # a checksum collision: not ours to answer
        conn.sendall(REFUSED)
        return
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    os.environ[ENV_SWITCH] = "0"  # this child is the in-process run
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    conn.sendall(STARTED)
    rc = run_cc(argv)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    conn.sendall(struct.pack("!i", rc))


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _peer_uid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", raw)[1])


def serve(sock_path: str, lock_path: str, first: list[str]) -> int:
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another worker serves this socket
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())  # who to stop: kill $(cat LOCK)
    _own_key[0] = worker_key(os.getcwd())  # started in the client's directory and environment
    idle = float(os.environ.get(IDLE_ENV) or 600)
    signal.signal(signal.SIGTERM, _stop)  # so that the socket is removed on the way out
    os.environ[ENV_SWITCH] = "0"  # the warm-up and the children run in-process
    warm(first)
    stamp = fingerprint()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sock_path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        srv.bind(sock_path)
    finally:
        os.umask(old)
    ino = os.stat(sock_path).st_ino
    srv.listen(64)
    srv.settimeout(1.0)
    children = 0
    last = time.monotonic()
    try:
        while True:
            while children:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    children = 0
                    break
                if pid == 0:
                    break
                children -= 1
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                if not children and time.monotonic() - last > idle:
                    return 0
                continue
            last = time.monotonic()
            with conn:
                if _peer_uid(conn) != os.getuid():
                    continue
                if fingerprint() != stamp:
                    with contextlib.suppress(OSError):
                        conn.sendall(REFUSED)
                    return 0
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:  # the child: one file, then gone
                    code = 0
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    try:
                        srv.close()
                        conn.settimeout(None)
                        serve_one(conn)
                    except BaseException:  # noqa: BLE001 - a child never returns into the loop
                        code = 1
                    os._exit(code)
                children += 1
    finally:
        with contextlib.suppress(OSError):
            if os.stat(sock_path).st_ino == ino:
                os.unlink(sock_path)
        srv.close()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m dpmlens.kbuild.worker SOCKET LOCK [ARGV_JSON]", file=sys.stderr)
        return 2
    first = json.loads(argv[2]) if len(argv) > 2 else []
    return serve(argv[0], argv[1], first)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
