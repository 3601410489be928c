"""Baselines: keyed on rule + path + function + normalized message, robust to line shifts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from report_data import msleep_finding, wake_finding

from dpmlens.core.errors import UsageError
from dpmlens.core.findings import Span
from dpmlens.engine.baseline import normalize_message, subtract_baseline, write_baseline


def test_round_trip_survives_line_shift(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    baseline = tmp_path / "base.json"
    assert write_baseline(str(baseline), [wake_finding(), msleep_finding()]) == 2
    moved = replace(wake_finding(), span=Span(52, 3, 52, 28))  # 15 lines added above it
    kept, suppressed = subtract_baseline(str(baseline), [moved, msleep_finding()])
    assert kept == [] and suppressed == 2


def test_new_finding_is_reported(tmp_path: Path) -> None:
    baseline = tmp_path / "base.json"
    write_baseline(str(baseline), [wake_finding()])
    other_function = replace(msleep_finding(), function="acme_probe")
    kept, suppressed = subtract_baseline(str(baseline), [wake_finding(), other_function])
    assert kept == [other_function] and suppressed == 1


def test_counts_are_respected(tmp_path: Path) -> None:
    baseline = tmp_path / "base.json"
    write_baseline(str(baseline), [msleep_finding()])
    twice = [msleep_finding(), replace(msleep_finding(), span=Span(90, 2, 90, 11))]
    kept, suppressed = subtract_baseline(str(baseline), twice)
    assert len(kept) == 1 and suppressed == 1


def test_paths_relative_to_the_baseline_file(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    baseline = tmp_path / "base.json"
    write_baseline(str(baseline), [wake_finding()])  # path drivers/misc/... from tmp_path
    stored = json.loads(baseline.read_text())["findings"][0]
    assert stored["path"] == "drivers/misc/acme,als.c"
    assert "line" not in stored
    monkeypatch.chdir(tmp_path / "sub")  # same file, spelled from another directory
    respelled = replace(wake_finding(), path="../drivers/misc/acme,als.c")
    kept, _ = subtract_baseline(str(baseline), [respelled])
    assert kept == []


def test_message_normalization_drops_line_references() -> None:
    assert normalize_message("x() at line 12  via foo.c:40:2") == "x() at via foo.c"
    assert normalize_message("msleep(50)  pads 40 ms") == "msleep(50) pads 40 ms"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", ":1:2: invalid baseline JSON"),
        ('{"version": 7, "findings": []}', "not a dpmlens baseline"),
        ('{"version": 1, "findings": [{"rule": "x"}]}', "malformed baseline entry"),
    ],
)
def test_broken_baseline_is_a_one_line_usage_error(
    tmp_path: Path, content: str, expected: str
) -> None:
    baseline = tmp_path / "base.json"
    baseline.write_text(content)
    with pytest.raises(UsageError) as info:
        subtract_baseline(str(baseline), [])
    assert expected in str(info.value) and str(baseline) in str(info.value)
