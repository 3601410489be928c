"""`dpmlens check --fleet STORE` (issue 22, item 4): the severity policy with a fleet's costs.

The store is made by a real `dpmlens fleet ingest` of the captures in ../shared/traces
(skipped when absent). test-fixtures/fleet-editor/gpu/i915_pm.c registers as "i915" with the
callbacks and delay calls those captures measured, plus an `mdelay(10)` the probes never saw,
inside a callback the fleet measured on suspend_late's critical path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_process
from fleet_helpers import dpmlens

TOP = Path(__file__).resolve().parents[2]
TRACES = TOP.parent / "shared" / "traces"
DRIVER = TOP / "test-fixtures" / "fleet-editor" / "gpu" / "i915_pm.c"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not TRACES.is_dir():
        pytest.skip("real captures not found (../shared/traces is absent): the store of "
                    "these tests is ingested from them")
    s = tmp_path_factory.mktemp("fleet") / "store"
    r = dpmlens("fleet", "ingest", "--store", str(s), "-j", "1", "-q", str(TRACES))
    assert r.returncode == 0, r.stderr
    return s


def _line(needle: str) -> int:
    return next(i for i, t in enumerate(DRIVER.read_text().splitlines(), 1) if needle in t)


def _check(*args: str) -> tuple[int, dict, str]:
    r = run_process("check", "--no-cache", "--fail-level", "none", "-f", "json", *args)
    return r.code, (json.loads(r.out) if r.out.strip() else {}), r.err


def test_fleet_costs_raise_delay_sites_and_callbacks(store: Path) -> None:
    code, plain, _ = _check(str(DRIVER))
    assert code == 0
    assert plain["findings"] == []  # alone, all three are quiet hints (--all-costs shows them)
    code, doc, err = _check("--fleet", str(store), str(DRIVER))
    assert code == 0, err
    assert "dpmlens: --fleet: 41 delay sites, 4 callbacks mapped to the checked files, " \
           "3 findings joined" in err
    by_line = {f["line"]: f for f in doc["findings"]}
    assert set(by_line) == {_line("msleep(50)"), _line("msleep(200)"), _line("mdelay(10)")}
    vdd = by_line[_line("msleep(200)")]
    assert vdd["rule"] == "delay-beyond-spec" and vdd["severity"] == "warning"
    assert vdd["message"].endswith(
        "; fleet: msleep() in edp_panel_vdd_on() p50 203 ms per cycle on the critical path of "
        "resume (p50 203.12 ms · p95 203.73 ms per cycle · 2 cycles on 1 machine (4.6.0-rc4+))")
    assert vdd["fleet"] == {
        "kind": "delay site", "what": "msleep() in edp_panel_vdd_on()", "phase": "resume",
        "kernel": "4.6.0-rc4+", "cycles": 2, "machines": 1, "runs": 2, "p50_us": 203119.0,
        "p95_us": 203733.7, "critical_path_p50_us": 203119.0, "cycles_on_critical_path": 2,
        "previous_kernel": None, "previous_p50_us": None, "store": str(store)}
    busy = by_line[_line("mdelay(10)")]
    assert busy["rule"] == "busy-wait-in-pm-callback" and busy["severity"] == "warning"
    assert busy["fleet"]["kind"] == "callback"
    assert busy["message"].endswith(
        "; fleet: i915_pm_suspend_late() (suspend_late) p50 12.5 ms per cycle on the critical "
        "path of suspend_late (p50 12.50 ms · p95 12.50 ms · 1 cycle on 1 machine "
        "(4.6.0-rc4+) · -3.15 ms vs 3.15.0-latest)")
    assert busy["fleet"]["previous_kernel"] == "3.15.0-latest"


def test_cheap_sites_are_capped(store: Path) -> None:
    """mdelay(60) is a warning by the table; the fleet saw the ehci_bus_suspend() busy-wait
    off every critical path: capped at info, as --traces does."""
    fixture = TOP / "test-fixtures" / "traces-join" / "measured_sites.c"
    code, doc, err = _check("--fleet", str(store), str(fixture))
    assert code == 0, err
    busy = [f for f in doc["findings"] if f["rule"] == "busy-wait-in-pm-callback"]
    assert [f["severity"] for f in busy] == ["info"]
    assert "on a critical path (p50 302 us" in busy[0]["message"]


def test_sarif_carries_the_fleet_figures(store: Path) -> None:
    r = run_process("check", "--no-cache", "--fail-level", "none", "-f", "sarif",
                    "--fleet", str(store), str(DRIVER))
    assert r.code == 0, r.err
    results = json.loads(r.out)["runs"][0]["results"]
    props = [x["properties"]["fleet"] for x in results if "fleet" in x["properties"]]
    assert sorted(p["what"] for p in props) == [
        "i915_pm_suspend_late() (suspend_late)", "msleep() in edp_panel_vdd_on()",
        "msleep() in intel_dp_link_down()"]
    assert {x["level"] for x in results} == {"warning"}


def test_bad_stores_are_usage_errors(store: Path, tmp_path: Path) -> None:
    code, _doc, err = _check("--fleet", str(tmp_path / "nowhere"), str(DRIVER))
    assert code == 2 and f"--fleet {tmp_path / 'nowhere'}: no such folder" in err
    assert "Traceback" not in err
    (tmp_path / "empty").mkdir()
    code, _doc, err = _check("--fleet", str(tmp_path / "empty"), str(DRIVER))
    assert code == 2 and "not a dpmlens fleet store" in err and "Traceback" not in err
    newer = tmp_path / "newer"
    shutil.copytree(store, newer)
    (newer / "dpmlens-store.json").write_text('{"format": 99, "created_by": "dpmlens 9"}')
    code, _doc, err = _check("--fleet", str(newer), str(DRIVER))
    assert code == 2 and "newer dpmlens" in err and "upgrade dpmlens" in err
    corrupt = tmp_path / "corrupt"
    shutil.copytree(store, corrupt)
    next((corrupt / "delays").glob("*/*.parquet")).write_bytes(b"PAR1 not parquet")
    code, doc, err = _check("--all-costs", "--fleet", str(corrupt), str(DRIVER))
    assert code == 2 and "Traceback" not in err
    assert f"dpmlens: error: --fleet {corrupt}: cannot be read" in err
    # the report is still written, without fleet figures
    assert len(doc["findings"]) == 3 and not any("fleet" in f for f in doc["findings"])
