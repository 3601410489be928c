"""Three held-out fuzz findings of issue 21, each over the CLI or a real server:
- a capture holding durations of hundreds of digits (inf once parsed): finite numbers or a
  counted skip, never inf in the model (it once took GBs);
- a Perfetto trace with invalid UTF-8 in a name: decoded with replacement (was a TypeError);
- `dpmlens.loadTraces` with `[{}]` and other bad shapes: InvalidParams, connection usable."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from raw_lsp import RawServer
from traces_helpers import FIXTURES

WS = Path(__file__).resolve().parents[2] / "test-fixtures" / "lsp" / "ws"
HUGE = "9" * 400  # float() of it is inf


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpmlens.cli", "trace", *args], text=True,
                          capture_output=True, timeout=120, check=False)


# The CLI run from a small launcher that reports its child's peak: a child forked from the
# test process itself starts from pytest's resident set (Linux keeps the pre-exec high-water
# mark in ru_maxrss), so a long test run would read as the CLI's peak.
_LAUNCH = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
           "sys.stderr.write('\\nPEAK %d\\n' % "
           "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")


def _cli_peak(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """`cli`, and the peak RSS (KiB) of that one CLI process."""
    run = subprocess.run([sys.executable, "-c", _LAUNCH, sys.executable, "-m", "dpmlens.cli",
                          "trace", *args], text=True, capture_output=True, timeout=120,
                         check=False)
    err, _, peak = run.stderr.rstrip("\n").rpartition("\nPEAK ")
    return subprocess.CompletedProcess(run.args, run.returncode, run.stdout, err), int(peak)


def _finite(obj: object) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(_finite(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_finite(v) for v in obj)
    return True


def graph_with_huge_durations(tmp_path: Path) -> Path:
    """The sleepgraph function_graph fixture with a 400-digit delay duration (a leaf
    __const_udelay) and a 400-digit firmware time."""
    lines = (FIXTURES / "sleepgraph_fgraph_ftrace.txt").read_text().splitlines()
    out = []
    for line in lines:
        if "__const_udelay();" in line:
            line = line.replace("+ 20.000 us", f"{HUGE}.000 us")
        out.append(line)
    out.insert(1, f"# fwsuspend {HUGE} fwresume 5")
    path = tmp_path / "huge_ftrace.txt"
    path.write_text("\n".join(out) + "\n")
    return path


def test_huge_durations_are_skipped_not_inf(tmp_path: Path) -> None:
    path = graph_with_huge_durations(tmp_path)
    run, peak_kb = _cli_peak("report", "--format", "json", str(path))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert _finite(report)
    assert report["skipped_lines"] == 1 and report["cycles"] >= 1 and report["callbacks"]
    table = cli("report", str(path))
    assert "1 skipped (1 impossible duration)" in table.stdout + table.stderr, table
    html = cli("report", "--format", "html", "-o", str(tmp_path / "t.html"), str(path))
    assert html.returncode == 0 and "Traceback" not in html.stderr, html.stderr
    # the CLI's peak stays that of a small capture (it once grew to GBs): this child's own
    # peak (RUSAGE_CHILDREN is the largest of every child the test run has waited for)
    assert peak_kb < 400 << 10, peak_kb


def test_dmesg_phase_time_of_many_digits_is_a_skip(tmp_path: Path) -> None:
    path = tmp_path / "huge_dmesg.txt"
    path.write_text(
        "[  100.000000] PM: suspend entry (deep)\n"
        "[  100.100000] calling  0000:00:15.0+ @ 123, parent: pci0000:00\n"
        "[  100.400000] call 0000:00:15.0+ returned 0 after 1000 usecs\n"
        f"[  100.500000] PM: suspend of devices complete after {'9' * 5000}.000 msecs\n"
        "[  101.000000] PM: resume of devices complete after 300.000 msecs\n")
    run = cli("report", "--format", "json", str(path))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert [p["phase"] for p in report["phases"]] == ["resume"]
    table = cli("report", str(path))
    assert "1 impossible number in a phase line" in table.stdout + table.stderr, table
    assert "internal error" not in table.stdout + table.stderr


def bad_utf8_perfetto(tmp_path: Path) -> Path:
    """The committed Perfetto fixture with a device name and an action made invalid UTF-8
    (same lengths, so the protobuf framing holds)."""
    data = (FIXTURES / "perfetto_basic.perfetto-trace").read_bytes()
    assert data.count(b"0-0055") == 6
    data = data.replace(b"0-0055", b"0-\xff\xfe55")
    path = tmp_path / "bad_names.perfetto-trace"
    path.write_bytes(data)
    return path


def test_perfetto_invalid_utf8_names_decode_with_replacement(tmp_path: Path) -> None:
    path = bad_utf8_perfetto(tmp_path)
    for fmt in ("json", "table", "csv"):
        run = cli("report", "--format", fmt, str(path))
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    report = json.loads(cli("report", "--format", "json", str(path)).stdout)
    devices = {c["device"] for c in report["callbacks"]}
    assert "0-\ufffd\ufffd55" in devices and "0000:00:1f.0" in devices, devices
    table = cli("report", str(path))
    assert "error" not in table.stdout + table.stderr, table


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    ws = tmp_path_factory.mktemp("findings") / "ws"
    shutil.copytree(WS, ws)
    srv = RawServer(ws)
    srv.initialize()
    yield srv
    srv.close()


def _status(server: RawServer) -> dict:
    return server.response(server.request(
        "workspace/executeCommand", {"command": "dpmlens.traceStatus", "arguments": []}))


@pytest.mark.parametrize("arguments", [
    [{}], [None], [[]], [{"paths": None}], [{"paths": [None]}], [{"paths": [{}]}],
    [{"paths": {}}], [{}, {}], ["x"], [], None,
])
def test_load_traces_bad_shapes_are_invalid_params(server: RawServer, arguments: object) -> None:
    params: dict[str, object] = {"command": "dpmlens.loadTraces"}
    if arguments is not None:
        params["arguments"] = arguments
    msg = server.answer(server.request("workspace/executeCommand", params))
    assert msg.get("error", {}).get("code") == -32602, msg
    assert msg["error"]["message"].startswith("dpmlens.loadTraces: expected"), msg
    assert "files" in _status(server)  # the next request is answered normally


def test_server_loads_the_bad_utf8_perfetto(server: RawServer, tmp_path: Path) -> None:
    path = bad_utf8_perfetto(tmp_path)
    got = server.response(server.request(
        "workspace/executeCommand",
        {"command": "dpmlens.loadTraces", "arguments": [{"paths": [str(path)]}]}))
    assert got["samples"] > 0 and got["files"] == 1, got
    slow = server.response(server.request(
        "workspace/executeCommand", {"command": "dpmlens.slowestCallbacks", "arguments": []}))
    assert any("\ufffd" in c["device"] for c in slow["callbacks"]), slow
    assert _status(server)["files"] == 1
