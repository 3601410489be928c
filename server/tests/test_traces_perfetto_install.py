"""Perfetto import is part of the editor's install: the server wheel's `traces` extra pulls
perfetto and protobuf in (the editor's managed environment pip-installs the wheel with
`[server,traces]`), a lint-only install leaves them out, and a broken import is one line."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import types
from pathlib import Path
from urllib.parse import urlparse

import pytest
from traces_helpers import FIXTURES

from dpmlens.cli import main

SERVER = Path(__file__).resolve().parents[1]
BASIC = FIXTURES / "perfetto_basic.perfetto-trace"
PB2 = "perfetto.protos.perfetto.trace.perfetto_trace_pb2"
PKG = "perfetto.protos.perfetto.trace"


def test_perfetto_is_the_traces_extra_and_the_editor_installs_it() -> None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((SERVER / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert "perfetto==0.59.1" in extras["traces"] and "protobuf==7.36.2" in extras["traces"]
    assert not any(d.startswith(("perfetto", "protobuf", "pygls")) for d in
                   project["dependencies"])
    env_ts = (SERVER.parent / "extension" / "src" / "serverEnv.ts").read_text()
    assert "manifest.wheel)}[server,traces]`" in env_ts


def _broken(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    class Broken(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise exc

    monkeypatch.setitem(sys.modules, PKG, Broken(PKG))
    monkeypatch.delitem(sys.modules, PB2, raising=False)


@pytest.mark.parametrize("exc", [
    ImportError("No module named 'perfetto'"),
    # protobuf's gencode/runtime check raises a multi-line message
    TypeError("Descriptors cannot be created directly.\nIf this call came from a _pb2.py "
              "file, your generated code is out of date\n and must be regenerated"),
])
def test_a_failing_import_is_one_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        exc: Exception) -> None:
    _broken(monkeypatch, exc)
    code = main(["trace", "report", str(BASIC)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if "Perfetto" in ln]
    assert len(lines) == 1, err
    assert "'perfetto' and 'protobuf>=6.31'" in lines[0]
    assert " ".join(str(exc).split()) in lines[0]


def _index_reachable() -> tuple[bool, str]:
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    host = urlparse(url).hostname or "pypi.org"
    port = urlparse(url).port or (443 if url.startswith("https") else 80)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        return False, f"package index {host} unreachable ({exc})"
    return True, ""


def test_fresh_venv_from_the_server_wheel_reads_a_perfetto_trace(tmp_path: Path) -> None:
    ok, why = _index_reachable()
    if not ok:
        pytest.skip(f"offline: {why}; the wheel's dependencies cannot be installed")
    # a copy: setuptools writes build/ and *.egg-info next to the sources it builds
    src = tmp_path / "server"
    shutil.copytree(SERVER, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", ".pytest_cache", "tests"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("dpmlens-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # what extension/src/serverEnv.ts runs: the wheel with its extras, dependencies from the index
    inst = subprocess.run([str(py), "-m", "pip", "install", "-q", "--progress-bar", "off",
                           f"{wheel}[server,traces]"], capture_output=True, text=True,
                          timeout=900)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    run = subprocess.run([str(py), "-c",
                          "from dpmlens.traces.read.perfetto import _classes; _classes()\n"
                          "from dpmlens.traces import load_traces\n"
                          f"t = load_traces([{str(BASIC)!r}])\n"
                          "print(t.files[0].format, t.files[0].error, t.sample_count)"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    fmt, error, samples = run.stdout.split()
    assert (fmt, error) == ("perfetto", "None") and int(samples) > 0
