"""`dpmlens cc`'s warm worker (kbuild/worker.py): started by the first file with PM code,
then the same output and exit code as the in-process run, only its user's, refused when a
rule file changed (the client falls back), gone when idle."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import NOIRQ_WAKE, write_driver

from dpmlens.core.paths import grammars_dir, rules_dir
from dpmlens.kbuild import worker_client

BIN = Path(sys.executable).parent


def _cc(env: dict[str, str], *args: str, cwd: Path) -> tuple[int, str, str]:
    r = subprocess.run([str(BIN / "dpmlens"), "cc", *args], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def _wait_for(path: Path, present: bool = True, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while path.exists() != present:
        assert time.monotonic() < end, f"{path} {'never came' if present else 'never went'}"
        time.sleep(0.1)


@pytest.fixture
def env(tmp_path: Path):
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    data = tmp_path / "data"
    shutil.copytree(rules_dir(), data / "rules")  # a rules tree this test may touch
    shutil.copytree(grammars_dir(), data / "grammars")
    e = dict(os.environ, XDG_RUNTIME_DIR=str(run_dir), DPMLENS_CC_WORKER="1",
             DPMLENS_CC_WORKER_IDLE="20", DPMLENS_DATA_DIR=str(data))
    yield e
    for lock in (run_dir / "dpmlens").glob("*.lock"):  # stop what the test started
        text = lock.read_text().strip()
        if text.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(text), 15)


def test_same_output_through_the_worker_and_refused_when_stale(tmp_path, env):
    src = write_driver(tmp_path / "drivers" / "foo.c", NOIRQ_WAKE)
    inproc = _cc(dict(env, DPMLENS_CC_WORKER="0"), "-O2", str(src), cwd=tmp_path)
    assert "[dpmlens-wake-setup-in-noirq]" in inproc[2]
    first = _cc(env, "-O2", str(src), cwd=tmp_path)  # no worker yet: in-process, starts one
    assert first == inproc
    _wait_for_any(Path(env["XDG_RUNTIME_DIR"]) / "dpmlens")
    sock = next((Path(env["XDG_RUNTIME_DIR"]) / "dpmlens").glob("cc-*.sock"))
    assert (sock.stat().st_mode & 0o777) == 0o600
    assert (sock.parent.stat().st_mode & 0o777) == 0o700
    for _ in range(2):
        assert _cc(env, "-O2", str(src), cwd=tmp_path) == inproc
    # the worker really answered: its lock names a live process other than ours
    pid = int(sock.with_suffix(".lock").read_text())
    os.kill(pid, 0)
    # --fail-level through the worker: the exit code travels back
    failing = _cc(env, "--fail-level", "warning", "-O2", str(src), cwd=tmp_path)
    assert failing == _cc(dict(env, DPMLENS_CC_WORKER="0"), "--fail-level", "warning", "-O2",
                          str(src), cwd=tmp_path)
    assert failing[0] == 1
    # a rule file changes: the worker refuses and leaves, the answer is the in-process one
    rule = next((Path(env["DPMLENS_DATA_DIR"]) / "rules").glob("*.yaml"))
    rule.write_text(rule.read_text() + "\n")
    assert _cc(env, "-O2", str(src), cwd=tmp_path) == inproc
    _wait_for(sock, present=False)


def _wait_for_any(d: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not list(d.glob("cc-*.sock")):
        assert time.monotonic() < end, f"no worker socket in {d}"
        time.sleep(0.1)


def test_a_directory_others_can_enter_is_never_used(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    (run_dir / "dpmlens").mkdir(parents=True)
    (run_dir / "dpmlens").chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run_dir))
    assert worker_client.runtime_dir() is None
    monkeypatch.setenv("DPMLENS_CC_WORKER", "1")
    assert worker_client.run(["-O2", str(tmp_path / "x.c")]) is None  # in-process
    (run_dir / "dpmlens").chmod(0o700)
    assert worker_client.runtime_dir() == str(run_dir / "dpmlens")


def test_switched_off(monkeypatch):
    monkeypatch.setenv("DPMLENS_CC_WORKER", "0")
    assert worker_client.run(["x.c"]) is None
