"""`dpmlens trace report --format html`: one self-contained timeline file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from traces_helpers import FIXTURES

from dpmlens.cli import main

CAPTURE = FIXTURES / "timeline" / "test_mem_ftrace.txt"


def _data(page: str) -> dict:
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_self_contained_with_lanes_steps_delays_and_critical_path(tmp_path: Path) -> None:
    out = tmp_path / "timeline.html"
    assert main(["trace", "report", str(CAPTURE), "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    # no network: no external scripts, styles, fonts or images
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    data = _data(page)
    s = data["strings"]
    (cycle,) = data["cycles"]
    assert [s[x[0]] for x in cycle["steps"]][:3] == ["suspend_enter", "sync_filesystems",
                                                     "freeze_processes"]
    resume = next(p for p in cycle["phases"] if p["phase"] == "resume")
    lanes = {s[name]: bars for name, bars in resume["lanes"]}
    # the synchronous thread first, then the workers
    assert s[resume["lanes"][0][0]] == "bash-100"
    bar = next(b for b in lanes["kworker/u8:1-50"] if s[b[2]] == "1-1.4")
    start, end, _dev, drv, parent, critical, link, marks = bar
    assert (end - start, s[drv], s[parent], critical, link) == (50000, "usb", "1-1", 1, -1)
    assert [(m[3], s[m[2]]) for m in marks] == [
        (41000, "msleep(40) from usb_port_resume"),
        (8600, "usleep_range(10000, ...) from hub_port_reset")]
    i8042 = next(b for b in lanes["bash-100"] if s[b[2]] == "00:04")
    assert i8042[5] == 0  # not on the critical path


def test_source_links(tmp_path: Path) -> None:
    out = tmp_path / "t.html"
    assert main(["trace", "report", str(FIXTURES / "ftrace_basic.txt"), "--source",
                 str(FIXTURES / "src"), "--format", "html", "-o", str(out)]) == 0
    data = _data(out.read_text())
    links = {data["strings"][b[6]] for c in data["cycles"] for p in c["phases"]
             for _, bars in p["lanes"] for b in bars if b[6] >= 0}
    assert any(x.endswith("src/bar_hw.c:6|bar_suspend") and x.startswith("/") for x in links)


def test_default_output_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "report", str(CAPTURE), "--format", "html"]) == 0
    assert (tmp_path / "timeline.html").stat().st_size > 1000


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no chromium (apt-get install chromium; e2e/install.sh installs it)")
    return exe


def _render(exe: str, page: Path, tmp_path: Path) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={tmp_path / 'profile'}",
                        "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    return r.stdout, time.perf_counter() - t0


def test_draws_in_a_real_browser(tmp_path: Path) -> None:
    exe = _chromium()
    out = tmp_path / "t.html"
    assert main(["trace", "report", str(CAPTURE), "--format", "html", "-o", str(out)]) == 0
    dom, _ = _render(exe, out, tmp_path)
    m = re.search(r'data-drawn-ms="(\d+)"', dom)
    assert m, dom[:500]
    assert '<option value="0">0</option>' in dom  # the cycle selector was filled


def test_100_cycles_of_2000_devices_first_paint(tmp_path: Path) -> None:
    # ~45 s of CPU (1.6 M callbacks to generate, load and write): opt-in
    if not os.environ.get("DPMLENS_SLOW_TESTS"):
        pytest.skip("set DPMLENS_SLOW_TESTS=1 (45 s: 100 cycles x 2,000 devices in chromium)")
    exe = _chromium()
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_traces", Path(__file__).parents[2] / "bench" / "bench_traces.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    capture = tmp_path / "big_ftrace.txt"
    bench.write_ftrace(capture, 100, 2000, 0)
    out = tmp_path / "big.html"
    assert main(["trace", "report", str(capture), "--format", "html", "-o", str(out)]) == 0
    dom, _ = _render(exe, out, tmp_path)
    m = re.search(r'data-drawn-ms="(\d+)"', dom)
    assert m, dom[:300]
    assert int(m.group(1)) <= 2000, f"first paint after {m.group(1)} ms"
