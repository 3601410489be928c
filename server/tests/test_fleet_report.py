"""`dpmlens fleet report` over the synthetic fleet (made from a real capture with known
injected changes): it finds exactly the injected regressions; the JSON contract; the HTML
page in a real browser (Debian's chromium, headless)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fleet_helpers import dpmlens, synthetic_store

from dpmlens.fleet import synthetic

INJECTED = {  # (kind, driver, device, phase, changed from) -- synthetic.default_fleet
    ("slower", "i915", "0000:00:02.0", "resume", "6.10.0"),
    ("fails more", "r8169", "0000:02:00.0", "resume", "6.11.0"),
}
WITHIN_NOISE = ("snd_hda_intel", "0000:00:1b.0", "suspend")  # +0.3 ms, noise sd ~3 ms


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_store(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def doc(store: Path) -> dict:
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_finds_exactly_the_injected_regressions(doc: dict) -> None:
    found = {(c["kind"], c["driver"], c["device"], c["phase"], c["changed_from"])
             for c in doc["regressions"]["changes"]}
    recall = len(found & INJECTED) / len(INJECTED)
    false_pos = found - INJECTED
    print(f"recall {recall:.0%}, false positives {len(false_pos)} of "
          f"{doc['regressions']['tested']} callbacks tested")
    assert recall == 1.0 and not false_pos, (found, INJECTED)
    assert not any((c["driver"], c["device"], c["phase"]) == WITHIN_NOISE
                   for c in doc["regressions"]["changes"])
    slower = next(c for c in doc["regressions"]["changes"] if c["kind"] == "slower")
    assert (slower["before"], slower["after"]) == ("6.9.0", "6.10.0")
    lo, hi = slower["ci_ms"]
    assert lo < 30 < hi and 28 < slower["change_ms"] < 32  # 30 ms injected
    assert 28 < slower["effect_ms_per_cycle"] < 32
    fails = next(c for c in doc["regressions"]["changes"] if c["kind"] == "fails more")
    assert fails["fail_rate_before"] == 0 and 0.005 < fails["fail_rate_after"] < 0.04


def test_json_contract(doc: dict) -> None:
    assert doc["version"] == 1 and doc["by"] == "kernel"
    assert doc["groups"] == ["6.9.0", "6.10.0", "6.11.0"]  # version order, not text order
    for key in ("health", "regressions", "drivers", "devices",
                "worst_devices", "issues", "settings", "percentile"):
        assert key in doc
    d = next(r for r in doc["drivers"] if (r["grp"], r["driver"], r["phase"])
             == ("6.10.0", "i915", "resume"))
    assert set(d) >= {"n", "cycles", "p50_us", "p95_us", "p99_us", "failure_rate",
                      "critical_share", "critical_us_per_run"}
    assert d["n"] == 600 and d["p50_us"] <= d["p95_us"] <= d["p99_us"]
    assert {h["grp"] for h in doc["health"]} == set(doc["groups"])
    assert all(h["cycles"] == 600 and h["hosts"] == 6 for h in doc["health"])
    # worst device per phase: counted per phase, one winner per cycle and phase
    per = {}
    for w in doc["worst_devices"]:
        per.setdefault((w["grp"], w["phase"]), 0)
        per[(w["grp"], w["phase"])] += w["cycles"]
    assert all(v <= 600 for v in per.values())


def test_by_host_and_baseline_and_driver(store: Path) -> None:
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "json",
                "--baseline", "6.9.0", "--driver", "i915")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["regressions"]["pairs"] == [["6.9.0", "6.10.0"], ["6.9.0", "6.11.0"]]
    assert {c["after"] for c in doc["regressions"]["changes"]} == {"6.10.0", "6.11.0"}
    assert {r["driver"] for r in doc["drivers"]} == {"i915"}
    r = dpmlens("fleet", "report", "--store", str(store), "--baseline", "7.0")
    assert r.returncode == 2 and "no such kernel" in r.stderr
    r = dpmlens("fleet", "report", "--store", str(store), "--by", "host")
    assert r.returncode == 0 and "host005" in r.stdout


def test_thresholds_from_dpmlens_toml(store: Path, tmp_path: Path) -> None:
    cfg = tmp_path / ".dpmlens.toml"
    cfg.write_text("[fleet]\nfail_rate_max = 1.0\nsuspend_max_ms = 100\nover_max = 0.5\n")
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "json",
                "--config", str(cfg))
    doc = json.loads(r.stdout)
    # every cycle's suspend (~0.9 s) is over 100 ms
    assert all(h["over_suspend"] == 1.0 and h["status"] == "bad" for h in doc["health"])
    cfg.write_text("[fleet]\nfail_rate_max = 1.0\n")
    doc = json.loads(dpmlens("fleet", "report", "--store", str(store), "--format", "json",
                             "--config", str(cfg)).stdout)
    assert all(h["status"] == "ok" for h in doc["health"])
    cfg.write_text("[fleet]\nfail_rate = 1\n")
    r = dpmlens("fleet", "report", "--store", str(store), "--config", str(cfg))
    assert r.returncode == 2 and "unknown key 'fail_rate' in [fleet]" in r.stderr


def test_html_page_in_a_real_browser(store: Path, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page = tmp_path / "fleet.html"
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "html", "-o", str(page))
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text  # self-contained
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--no-first-run", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    # the browser parsed it: regressions first, one plot per regression, then the drivers
    assert dom.index('id="regressions"') < dom.index("Health") < dom.index("Drivers per phase")
    assert dom.count('class="change"') == 2
    assert dom.count("<svg") >= 2 + 10
    assert "i915 0000:00:02.0 resume (ms)" in dom
    shot = tmp_path / "fleet.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,900",
                    page.as_uri()], capture_output=True, timeout=120)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # drawn, not blank


def test_generator_injects_what_it_says(tmp_path: Path) -> None:
    """The generator alone: the effect lands on the named callback (a mechanism check)."""
    from fleet_helpers import template

    fleet = synthetic.Fleet(["a1", "a2"], hosts=1, cycles_per_host_kernel=3, noise=0.0,
                            host_spread=0.0, effects=[synthetic.Effect(
                                "i915 0000:00:02.0", "resume", "a2", add_us=30_000)])
    assert synthetic.generate(template(), fleet, tmp_path / "caps") == 6
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), str(tmp_path / "caps")
                   ).returncode == 0
    r = dpmlens("fleet", "sql", "--store", str(store), "--format", "json",
                "SELECT kernel, min(duration_us) AS lo, max(duration_us) AS hi FROM callbacks "
                "WHERE driver = 'i915' AND phase = 'resume' GROUP BY kernel ORDER BY kernel")
    rows = json.loads(r.stdout)
    assert rows[0]["lo"] == rows[0]["hi"] and rows[1]["lo"] == rows[1]["hi"]  # no noise
    assert rows[1]["lo"] - rows[0]["lo"] == 30_000


def test_since_keeps_later_cycles_only(store: Path) -> None:
    # the synthetic fleet captures kernel k in the week 2026-01-05 + 7k days
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "json",
                "--since", "2026-01-12")
    doc = json.loads(r.stdout)
    assert doc["groups"] == ["6.10.0", "6.11.0"]
    assert doc["regressions"]["pairs"] == [["6.10.0", "6.11.0"]]
    kinds = {(c["kind"], c["driver"]) for c in doc["regressions"]["changes"]}
    assert kinds == {("fails more", "r8169")}  # the i915 change is before the window
