"""`dpmlens trace advise` on the lab's real A/B captures (test-fixtures/lab/ab-sched): the
advice read off one boot of a configuration is checked against what the other configuration
measured over 48 cycles (ab-KERNEL.json, the same machine with the knob turned): the measured
phase time lies inside the band printed with the prediction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from kernel_trees import K612

REPO = Path(__file__).resolve().parents[2]
AB = REPO / "test-fixtures" / "lab" / "ab-sched"
TREE_612 = K612


def _advise(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    r = run_cli(capsys, "trace", "advise", *args, "--format", "json")
    assert r.code == 0, r.err
    out: dict[str, Any] = json.loads(r.out)
    return out


def _measured(kernel: str, config: str, phase: str) -> float:
    summary = json.loads((AB / f"ab-{kernel}.json").read_text())
    return float(summary["runs"][config][phase]["median"]) * 1000  # us


def _inside(item: dict[str, Any], phase: str, measured_us: float) -> bool:
    p = next(x for x in item["phases"] if x["phase"] == phase)
    minus, plus = p["band_pct"]
    return p["predicted_after_us"] * (1 - minus / 100) <= measured_us \
        <= p["predicted_after_us"] * (1 + plus / 100)


def _boots(kernel: str, config: str) -> list[str]:
    """The boots with the lab's usual device set (the HDA codec probes in a few: another
    machine, which the A/B summary lists)."""
    summary = json.loads((AB / f"ab-{kernel}.json").read_text())
    return [b for b, info in sorted(summary["boots"][config].items()) if not info["hda_codec"]]


@pytest.mark.parametrize("kernel", ["6.12", "6.1"])
def test_from_pm_async_1_the_first_change_is_usb_fast_enumeration(
        capsys: pytest.CaptureFixture[str], kernel: str) -> None:
    for boot in _boots(kernel, "A1"):
        _fast_enumeration(capsys, kernel, boot)


def _fast_enumeration(capsys: pytest.CaptureFixture[str], kernel: str, boot: str) -> None:
    adv = _advise(capsys, str(AB / kernel / "A1" / boot))
    assert adv["version"] == 1 and adv["evidence"][:2] == ["delay kprobes", "scheduler events"]
    first = adv["advice"][0]
    assert first["kind"] == "usb-fast"
    assert first["whatif"] == ["--delay hub_port_reset:msleep(50)=usleep_range(10000)"]
    assert all(k.startswith("echo 2 > /sys/bus/usb/devices/") and k.endswith("/quirks")
               for k in first["knob"])
    assert [p["phase"] for p in first["phases"]] == ["resume"]
    # the fastenum boots (lab.quirks=2) measured this resume
    assert _inside(first, "resume", _measured(kernel, "fastenum", "resume")), boot
    lo, hi = first["saving_range_us"]
    assert lo <= first["saving_us"] <= hi


@pytest.mark.parametrize("kernel", ["6.12", "6.1"])
def test_from_pm_async_0_the_first_change_is_pm_async_with_its_wide_band(
        capsys: pytest.CaptureFixture[str], kernel: str) -> None:
    for boot in _boots(kernel, "async0"):
        _pm_async(capsys, kernel, boot)


def _pm_async(capsys: pytest.CaptureFixture[str], kernel: str, boot: str) -> None:
    adv = _advise(capsys, str(AB / kernel / "async0" / boot))
    assert adv["pm_async_off"] is True
    first = adv["advice"][0]
    assert first["kind"] == "pm_async" and first["knob"] == ["echo 1 > /sys/power/pm_async"]
    # the pm_async=1 boots measured these: the USB devices' contention behind the xHCI,
    # which a boot where nothing overlapped cannot show, is replayed (their names and port
    # resets), so the resume band is narrow
    for phase in ("suspend", "resume"):
        assert _inside(first, phase, _measured(kernel, "A1", phase)), (boot, phase)
    assert first["band"]["resume_plus_pct"] <= 10
    assert any(n.startswith("replayed as one lock: topology (names, never overlapped) in "
                            "resume: 2-1, 2-2, 3-3 behind 0000:00:05.0") for n in first["notes"])
    # a device made async on its own comes with its sysfs knob and the probe-time patch
    dev = next(a for a in adv["advice"] if a["kind"] == "async")
    assert dev["knob"][0] == "echo 1 > /sys/power/pm_async"
    assert "device_enable_async_suspend(dev)" in dev["patch"]


def test_text_output_names_the_knob_the_patch_and_the_check(
        capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "trace", "advise", str(AB / "6.12" / "A1" / "part1"), "--top", "1")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith("What to change first (8 cycle(s); evidence: delay kprobes, "
                               "scheduler events")
    assert lines[2].startswith("1. USB fast enumeration") and "band" in lines[2]
    assert any(x.strip().startswith("now:   echo 2 > /sys/bus/usb/devices/") for x in lines)
    assert any(x.strip().startswith("check: dpmlens trace whatif CAPTURE --delay") for x in lines)
    assert "\n2. " not in r.out  # --top 1


@pytest.mark.skipif(not (TREE_612 / "drivers/usb/core/hub.c").is_file(),
                    reason=f"needs the 6.12 kernel tree at {TREE_612} (apt-get install "
                    "linux-source-6.12, unpacked)")
def test_with_the_source_the_reset_recovery_delay_is_named_at_its_spec_minimum(
        capsys: pytest.CaptureFixture[str]) -> None:
    adv = _advise(capsys, str(AB / "6.12" / "A1" / "part1"), "--source",
                  str(TREE_612 / "drivers" / "usb"))
    spec = next(a for a in adv["advice"] if a["kind"] == "spec")
    assert spec["patch"].startswith("core/hub.c:")
    assert "TRSTRCY minimum 10 ms instead of 50 ms" in spec["patch"]
    assert spec["whatif"] == ["--delay hub_port_reset:msleep(50)=10"]
    assert _inside(spec, "resume", _measured("6.12", "fastenum", "resume"))


def test_bad_input_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_cli(capsys, "trace", "advise", str(tmp_path / "none"))
    assert r.code == 2 and "no such file" in r.err
    bad = tmp_path / "broken.tar.gz"
    bad.write_bytes(b"\x1f\x8b not really")
    r = run_cli(capsys, "trace", "advise", str(bad))
    assert r.code == 2 and "broken.tar.gz: cannot unpack archive" in r.err
    assert "Traceback" not in r.err


def test_a_device_link_on_the_path_is_listed_not_replayed(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from traces_helpers import write_links_capture

    capture = write_links_capture(tmp_path / "links_ftrace.txt")
    links = tmp_path / "devlink.txt"
    links.write_text("dev-s dev-c\n")
    adv = _advise(capsys, str(capture), "--links", str(links))
    (link,) = [a for a in adv["advice"] if a["kind"] == "link"]
    assert link["targets"] == ["dev-s", "dev-c"] and link["phases"] == []
    assert "(1 of 1 resume runs)" in link["title"]
    assert adv["evidence"] == ["device links"]
    assert any("no scheduler events" in n for n in adv["notes"])


PNP_DRIVER = """
#include <linux/pnp.h>
static int serial_pnp_probe(struct pnp_dev *dev, const struct pnp_device_id *id)
{
\treturn 0;
}
static struct pnp_driver serial_pnp_driver = {
\t.name\t\t= "serial",
\t.probe\t\t= serial_pnp_probe,
};
"""
PLATFORM_DRIVER = """
#include <linux/platform_device.h>
static int serial_plat_probe(struct platform_device *pdev)
{
\treturn 0;
}
static struct platform_driver serial_plat_driver = {
\t.probe = serial_plat_probe,
\t.driver = { .name = "serial" },
};
"""


def test_the_probe_site_is_the_driver_of_the_devices_bus(tmp_path: Path) -> None:
    from dpmlens.traces.source.probe_sites import bus_of, probe_sites

    (tmp_path / "pnp.c").write_text(PNP_DRIVER)
    (tmp_path / "plat.c").write_text(PLATFORM_DRIVER)
    assert bus_of("00:03", "pnp0") == "pnp" and bus_of("0000:00:05.0", "pci0000:00") == "pci"
    assert bus_of("2-1", "usb2") == "usb" and bus_of("serial8250", "platform") == "platform"
    assert probe_sites(tmp_path, {"serial": "pnp"}) == {"serial": ("pnp.c", 3,
                                                                   "serial_pnp_probe")}
    assert probe_sites(tmp_path, {"serial": None}) == {"serial": ["plat.c", "pnp.c"]}
