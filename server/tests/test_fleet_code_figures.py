"""The fleet's figures for the code (fleet/code_figures.py), the store's change stamp the
editor polls, and `[fleet] store` in `.dpmlens.toml`. The store: a real `fleet ingest` of
../shared/traces (skipped when absent), one kernel first, then the other."""

from __future__ import annotations

from pathlib import Path

import pytest
from fleet_helpers import dpmlens

from dpmlens.config.file import read_config
from dpmlens.core.errors import ConfigError
from dpmlens.fleet import code_figures
from dpmlens.fleet.store import Store

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def _ingest(store: Path, capture: Path) -> None:
    if not TRACES.is_dir():
        pytest.skip("real captures not found (../shared/traces is absent)")
    r = dpmlens("fleet", "ingest", "--store", str(store), "-j", "1", "-q", str(capture))
    assert r.returncode == 0, r.stderr


def test_stamp_changes_only_when_an_ingest_lands(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert Store(store).stamp() == (("callbacks", -1), ("captures", -1), ("delays", -1),
                                    ("dpmlens-store.json", -1))
    _ingest(store, TRACES / "pm-graph-3.15")
    first = Store(store).stamp()
    assert first == Store(store).stamp()  # reading changes nothing
    code_figures.load(str(store))
    assert first == Store(store).stamp()
    _ingest(store, TRACES / "pm-graph-3.15")  # a no-op: nothing new lands
    assert first == Store(store).stamp()
    _ingest(store, TRACES / "pm-graph-4.6")
    assert Store(store).stamp() != first


def test_figures_newest_kernel_and_the_one_before(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _ingest(store, TRACES)
    figs = code_figures.load(str(store), {"i915"})
    assert figs.cycles == 6 and figs.kernels == ["3.15.0-latest", "4.6.0-rc4+"]
    assert {cb.driver for cb in figs.callbacks} == {"i915"}
    [resume] = [cb for cb in figs.callbacks if cb.phase == "resume" and cb.layer == "bus"]
    f = resume.figure
    assert (f.kernel, f.prev_kernel, f.cycles, f.machines, f.runs) == (
        "4.6.0-rc4+", "3.15.0-latest", 2, 1, 2)
    assert f.summary() == ("p50 586.71 ms · p95 594.25 ms · 2 cycles on 1 machine "
                           "(4.6.0-rc4+) · +539.04 ms vs 3.15.0-latest")
    # a driver filter that names nothing asks for nothing
    assert code_figures.load(str(store), set()).callbacks == []
    [vdd] = [d for d in figs.delays if d.caller == "edp_panel_vdd_on"]
    assert (vdd.func, vdd.requested_ms, vdd.phase) == ("msleep", 200.0, "resume")
    assert vdd.figure.cycles_on_path == 2 and vdd.figure.path_p50_us == vdd.figure.p50_us


def test_fleet_store_in_dpmlens_toml_is_checked(tmp_path: Path) -> None:
    toml = tmp_path / ".dpmlens.toml"
    toml.write_text('[fleet]\nresume_max_ms = 800\nstore = 3\n')
    with pytest.raises(ConfigError, match=r"\.dpmlens\.toml:3: \[fleet\] store must be the path"):
        read_config(toml)
    toml.write_text('[fleet]\nstore = "../fleet"\n')
    read_config(toml)
