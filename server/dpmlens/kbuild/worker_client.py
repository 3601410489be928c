"""`dpmlens cc`'s way to a warm worker (kbuild/worker.py): one per user, kernel tree and
dpmlens installation, over a Unix socket in a directory only the user can enter.

kbuild runs the checker once per compiled file; a cold `dpmlens cc` on a file with PM code
pays Python's imports, the rule files, tree-sitter's set-up and the build's Kconfig header
before its first rule runs. The worker pays them once and forks a child per file, which runs
the same `dpmlens cc` code on the client's own stdin/stdout/stderr (passed over the socket):
the output is the in-process run's by construction.

The first call of a build finds no worker: it starts one in the background and checks its own
file in-process. Whatever goes wrong on the way (no directory of our own, a socket that does
not answer, a worker that is stale or dies before it starts the file) ends the same way: the
in-process run. DPMLENS_CC_WORKER=0 turns the worker off.

Imports: stdlib only, and only what a call that reaches the worker needs.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import sys

ENV_SWITCH = "DPMLENS_CC_WORKER"
# the worker's reply: b"S" it started the file (then 4 bytes: the exit code), b"X" refused
# (stale: a dpmlens or rule file changed since it started)
STARTED, REFUSED = b"S", b"X"
START_TIMEOUT = 10.0  # seconds from connecting to the worker's b"S"


def runtime_dir() -> str | None:
    """A directory only this user can use: $XDG_RUNTIME_DIR/dpmlens, else /tmp/dpmlens-UID;
    made 0700 when missing; None when it is not ours or others may write to it."""
    uid = os.getuid()
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = os.path.join(base, "dpmlens") if base and os.path.isabs(base) \
        else os.path.join("/tmp", f"dpmlens-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None  # a symlink, someone else's, or open to others: never used
    return path


def worker_key(cwd: str) -> str:
    """The tree (kbuild runs the checker from its object tree), the interpreter, the dpmlens
    installation and every DPMLENS_* setting: a worker only answers for what it loaded (it
    compares this text with its own; the socket's name is only a checksum of it)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = sorted(f"{k}={v}" for k, v in os.environ.items()
                 if k.startswith("DPMLENS_") and k != ENV_SWITCH)
    return "\n".join([cwd, sys.executable, here, str(os.getuid()), *env])


def paths(cwd: str) -> tuple[str, str] | None:
    import zlib  # not hashlib: loading OpenSSL costs more than the rest of the client

    d = runtime_dir()
    if d is None:
        return None
    raw = worker_key(cwd).encode("utf-8", "surrogateescape")
    key = f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}"
    return os.path.join(d, f"cc-{key}.sock"), os.path.join(d, f"cc-{key}.lock")


def encode_request(argv: list[str], cwd: str) -> bytes:
    """NUL-separated (no NUL can be in an argument, a path or the environment): the key, the
    directory, the number of arguments, the arguments, then the environment as KEY=VALUE."""
    env = [f"{k}={v}" for k, v in os.environ.items()]
    parts = [worker_key(cwd), cwd, str(len(argv)), *argv, *env]
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def decode_request(data: bytes) -> tuple[str, str, list[str], dict[str, str]]:
    parts = data.decode("utf-8", "surrogateescape").split("\0")
    key, cwd, n = parts[0], parts[1], int(parts[2])
    argv = parts[3 : 3 + n]
    env = dict(item.partition("=")[::2] for item in parts[3 + n :] if item)
    return key, cwd, argv, env


def run(argv: list[str]) -> int | None:
    """The exit code of `dpmlens cc ARGV` as the worker ran it, or None: run it in-process."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    where = paths(cwd)
    if where is None:
        return None
    sock_path, lock_path = where
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            s.connect(sock_path)
        except OSError:
            _start(sock_path, lock_path, cwd, argv)
            return None
        req = encode_request(argv, cwd)
        s.settimeout(START_TIMEOUT)  # a worker that cannot take the file: in-process
        s.sendall(struct.pack("!I", len(req)))
        socket.send_fds(s, [req], [0, 1, 2])
        first = s.recv(1)
        if first != STARTED:  # refused or gone before it began: nothing was written
            return None
        s.settimeout(None)  # the check itself takes what it takes, as in-process
        tail = b""
        while len(tail) < 4:
            chunk = s.recv(4 - len(tail))
            if not chunk:
                break
            tail += chunk
        if len(tail) < 4:  # the child died mid-file: the file again, in-process
            print("dpmlens: warning: cc worker stopped; checking in-process", file=sys.stderr)
            return None
        return int(struct.unpack("!i", tail)[0])
    except OSError:
        return None
    finally:
        s.close()


def _start(sock_path: str, lock_path: str, cwd: str, argv: list[str]) -> None:
    """Start a worker in the background unless one is starting (it holds the lock); it warms
    up on this call's file, so the build's Kconfig header is read before the next file."""
    import contextlib
    import fcntl
    import json
    import subprocess

    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return  # a worker holds it: starting, or running with its socket not yet bound
    os.close(fd)  # released: the worker takes it for its lifetime
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "dpmlens.kbuild.worker", sock_path, lock_path,
             json.dumps(argv)],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
