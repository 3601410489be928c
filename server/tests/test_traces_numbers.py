"""Impossible numbers in traces (issue 11, class 4): a `nan`/`inf` timestamp, a 5,000-digit
duration, a Perfetto timestamp of 2**64 - 1. Each is a skipped line, counted and reported, the
rest of the file is still read, and no JSON output holds NaN or Infinity."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dpmlens.cli import main
from dpmlens.core.jsonsafe import dumps, finite

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "traces"


def _strict(text: str) -> object:
    """json.loads that refuses NaN/Infinity as Node's JSON.parse does."""

    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _report(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[dict, str]:
    """(the JSON report, read strictly; the table report, which names the skip reasons)."""
    code = main(["trace", "report", str(path), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Traceback" not in out.err
    doc = _strict(out.out)
    assert main(["trace", "report", str(path)]) == 0
    table = capsys.readouterr().out
    return doc, table  # type: ignore[return-value]


def test_json_never_holds_nan_or_infinity() -> None:
    doc = {"a": float("nan"), "b": [float("inf"), 1.5, -float("inf")], "c": {"d": (2.0,)}}
    assert finite(doc) == {"a": None, "b": [None, 1.5, None], "c": {"d": [2.0]}}
    assert _strict(dumps(doc)) == {"a": None, "b": [None, 1.5, None], "c": {"d": [2.0]}}


def test_dmesg_with_absurd_numbers_skips_those_lines(tmp_path: Path, capsys) -> None:
    good = (FIXTURES / "dmesg_current.txt").read_text()
    bad = (
        "[   70.000000] PM: suspend entry (deep)\n"
        "[   70.100000] foo 0-0055: PM: calling foo_suspend [foo] @ 1234, parent: i2c-0\n"
        f"[   70.103000] foo 0-0055: PM: foo_suspend [foo] returned 0 after {'9' * 5000} usecs\n"
        f"[   {'9' * 5000}.000000] foo 0-0055: PM: calling foo_resume [foo] @ 1234, parent: i2c-0\n"
        "[   71.000000] PM: suspend exit\n"
    )
    path = tmp_path / "dmesg.txt"
    path.write_text(good + bad)
    doc, table = _report(capsys, path)
    assert doc["callbacks"], "the good cycles are still read"
    assert doc["skipped_lines"] >= 1 and "impossible number" in table


def test_ftrace_nan_and_inf_timestamps_are_skipped(tmp_path: Path, capsys) -> None:
    text = (FIXTURES / "ftrace_basic.txt").read_text()
    text = text.replace("100.000030: device_pm_callback_end", "nan: device_pm_callback_end", 1)
    text = text.replace("100.000100: suspend_resume: dpm_prepare[2] end",
                        "inf: suspend_resume: dpm_prepare[2] end", 1)  # fmt: skip
    path = tmp_path / "trace.txt"
    path.write_text(text)
    doc, table = _report(capsys, path)
    assert doc["callbacks"]
    assert doc["skipped_lines"] >= 2 and "2 impossible timestamp" in table


def test_perfetto_timestamp_of_2_64_minus_1_is_skipped(tmp_path: Path, capsys) -> None:
    pytest.importorskip("perfetto")
    sys.path.insert(0, str(FIXTURES))
    try:
        import make_perfetto
    finally:
        sys.path.pop(0)
    events = list(make_perfetto.EVENTS)
    events.insert(3, (0, 2**64 - 1, "end", ("foo", "0-0055", 0)))
    path = tmp_path / "t.perfetto-trace"
    make_perfetto.write(path, events)
    doc, table = _report(capsys, path)
    assert doc["callbacks"]
    assert doc["skipped_lines"] >= 1 and "impossible number" in table
