"""pm-graph's published USB pair (test-fixtures/traces/pm-graph-usb/SOURCE.md): an Ivy Bridge
laptop resumed with the USB delays as shipped and at their spec minimums. `--spec-minimums`
from the first predicts the second's resume, and the path it predicts runs through i915 (the
slowest callback once the USB chains are short), as the second capture measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from kernel_trees import K612

PAIR = Path(__file__).resolve().parents[2] / "test-fixtures" / "traces" / "pm-graph-usb"


def _whatif(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    r = run_cli(capsys, "trace", "whatif", *args, "--format", "json")
    assert r.code == 0, r.err
    out: dict = json.loads(r.out)
    return out


def _resume(doc: dict) -> dict:
    return next(p for p in doc["phases"] if p["phase"] == "resume")


def test_spec_minimums_predict_the_minimum_capture(capsys: pytest.CaptureFixture[str]) -> None:
    if not (K612 / "drivers" / "usb").is_dir():
        pytest.skip(f"no kernel tree at {K612} (apt-get install linux-source-6.12 and extract "
                    "it there, or set DPMLENS_LINUX)")
    own = _whatif(capsys, str(PAIR / "minimum"))
    measured = _resume(own)["measured_us"]
    assert 440_000 < measured < 470_000  # 454.15 ms
    doc = _whatif(capsys, str(PAIR / "default"), "--spec-minimums", "--source", str(K612))
    r = _resume(doc)
    assert r["measured_us"] > 540_000  # 548.19 ms as shipped
    assert abs(r["predicted_us"] - measured) / measured < 0.05  # 444.74 ms: -2.1%
    path = next(p for p in doc["critical_path"] if p["phase"] == "resume")
    assert "0000:00:02.0" in [x["device"] for x in path["chain"]]
    # the spec quantities it cut, each named at its source line
    cuts = " ".join(doc["assumptions"])
    assert "the TRSTRCY minimum" in cuts and "the TDRSMDN minimum" in cuts
    # and the minimum capture's own path runs through i915 too
    path = next(p for p in own["critical_path"] if p["phase"] == "resume")
    assert "0000:00:02.0" in [x["device"] for x in path["chain"]]
