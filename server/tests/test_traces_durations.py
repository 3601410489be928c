"""One duration formatter (issue 9): 2,410,000 us prints "2.41 s" wherever dpmlens writes a
duration in text: the trace tables, the what-if assumptions, the HTML timeline's script,
`dpmlens check`'s summary and the language server's log lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from traces_helpers import FIXTURES

from dpmlens.commands.check_cmd import _summary_line
from dpmlens.core.durations import format_us, signed_us
from dpmlens.lsp.diagnostics import analysed_message
from dpmlens.lsp.workspace_index import index_summary
from dpmlens.traces.model import durations as trace_durations
from dpmlens.traces.report.output import human_us
from dpmlens.traces.report.timeline_page import PAGE

US = 2_410_000.0
CASES = [2_410_000.0, -2_410_000.0, 1_000_000.0, 999_999.0, 5_500.0, 1_000.0, 999.0, 42.0,
         42.4, 10.0, 4.5, 4.0, 0.0]


def test_format_us() -> None:
    assert [format_us(x) for x in CASES] == [
        "2.41 s", "-2.41 s", "1.00 s", "1000.00 ms", "5.50 ms", "1.00 ms", "999 us", "42 us",
        "42 us", "10 us", "4.5 us", "4 us", "0 us"]
    assert format_us(float("nan")) == "-"
    assert signed_us(US) == "+2.41 s"


def test_the_trace_names_are_the_same_function() -> None:
    assert trace_durations.format_us is format_us and human_us is format_us


def test_check_summary_and_server_logs() -> None:
    run = SimpleNamespace(findings=[], files_checked=3, files_analyzed=2,
                          baseline_suppressed=0, quiet_hidden=0, errors=[],
                          elapsed=US / 1e6)
    assert _summary_line(run).endswith(" in 2.41 s")
    assert analysed_message("a.c", 3, 1, US / 1e6) == "analysed a.c v3: 1 findings in 2.41 s"
    assert index_summary(4, US / 1e6, 4, 1).startswith("indexed 4 C files in 2.41 s (")


def test_whatif_async_lag_assumption() -> None:
    from dpmlens.traces.analysis.whatif import Nodes, _to_async

    nodes = Nodes([SimpleNamespace(device="d", driver="x")], [10.0], [0.0], [[]], [0], [0.0],
                  0.0)
    notes: set[str] = set()
    _to_async(nodes, 0, lambda iv: True, US, notes)
    (note,) = notes
    assert note.startswith("moved to async: dispatched 2.41 s after")


def test_html_timeline_script_formats_like_the_cli() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's script cannot be run")
    m = re.search(r"function fmt\(us\) \{.*?\}\n", PAGE, re.S)
    assert m, "the page has no fmt()"
    table = json.loads((FIXTURES.parent / "durations.json").read_text())["cases"]
    values = CASES + [us for us, _ in table]
    script = m.group(0) + f"console.log(JSON.stringify({json.dumps(values)}.map(fmt)));"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    assert json.loads(out) == [format_us(x) for x in values]
    assert json.loads(out)[len(CASES):] == [text for _, text in table]
