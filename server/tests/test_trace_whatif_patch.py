"""`dpmlens trace whatif --patch FILE`: a unified diff's delay changes replayed on a real lab
capture give what the same change written as `--delay` gives; with the kernel tree a change
made through a variable (`reset_recovery_time = 10 + 10`) is evaluated as the delay rules do."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from kernel_trees import K612

from dpmlens.traces.source import patch_delays as pd

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO / "test-fixtures" / "lab" / "ab-sched" / "6.12" / "A1" / "part1"
TREE = K612

T = "\t"
LITERAL = "\n".join([  # kernel code is indented with tabs; a blank context line is " "
    "diff --git a/drivers/usb/core/hub.c b/drivers/usb/core/hub.c",
    "--- a/drivers/usb/core/hub.c",
    "+++ b/drivers/usb/core/hub.c",
    "@@ -3170,7 +3170,7 @@ static int hub_port_reset(struct usb_hub *hub, int port1,",
    f" {T*3}if (hub->hdev->quirks & USB_QUIRK_HUB_SLOW_RESET)",
    f" {T*4}reset_recovery_time += 100;",
    " ",
    f"-{T*3}msleep(50);",
    f"+{T*3}usleep_range(10000, 12000);",
    f" {T*2}}}",
    " ",
    f" {T*2}if (udev) {{",
    "",
])


def _whatif(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    r = run_cli(capsys, "trace", "whatif", str(CAPTURE), *args, "--format", "json")
    assert r.code == 0, r.err
    out: dict[str, Any] = json.loads(r.out)
    return out


def _phases(w: dict[str, Any]) -> dict[str, float]:
    return {p["phase"]: p["predicted_us"] for p in w["phases"]}


def test_a_literal_patch_replays_as_the_same_delay_option(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    patch = tmp_path / "fast.patch"
    patch.write_text(LITERAL)
    by_patch = _whatif(capsys, "--patch", str(patch))
    by_option = _whatif(capsys, "--delay", "hub_port_reset:msleep(50)=usleep_range(10000)")
    assert _phases(by_patch) == _phases(by_option)
    assert _phases(by_patch)["resume"] < 0.8 * next(
        p["measured_us"] for p in by_patch["phases"] if p["phase"] == "resume")
    assert any(a.startswith("patch: drivers/usb/core/hub.c:3173: hub_port_reset: msleep(50) "
                            "-> usleep_range(10000)") for a in by_patch["assumptions"])


@pytest.mark.skipif(not (TREE / "drivers/usb/core/hub.c").is_file(),
                    reason=f"needs the 6.12 kernel tree at {TREE} (apt-get install "
                    "linux-source-6.12, unpacked)")
def test_with_the_tree_a_change_through_a_variable_is_evaluated(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hub = (TREE / "drivers/usb/core/hub.c").read_text()
    new = hub.replace("reset_recovery_time = 10 + 40;", "reset_recovery_time = 10 + 10;")
    assert new != hub
    diff = difflib.unified_diff(hub.splitlines(True), new.splitlines(True),
                                "a/drivers/usb/core/hub.c", "b/drivers/usb/core/hub.c")
    patch = tmp_path / "recovery.patch"
    patch.write_text("".join(diff))
    by_patch = _whatif(capsys, "--patch", str(patch), "--source", str(TREE))
    by_option = _whatif(capsys, "--delay", "hub_port_reset:msleep(50)=20")
    assert _phases(by_patch) == _phases(by_option)
    # without the tree the diff's lines hold no delay call: said so, nothing replayed
    alone = _whatif(capsys, "--patch", str(patch))
    assert any("changes no delay call" in n for n in alone["not_replayed"])


def test_patch_mistakes_are_usage_errors(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a diff\n")
    r = run_cli(capsys, "trace", "whatif", str(CAPTURE), "--patch", str(notes))
    assert r.code == 2 and "no unified diff hunks" in r.err
    r = run_cli(capsys, "trace", "whatif", str(CAPTURE), "--patch", str(tmp_path / "none"))
    assert r.code == 2 and "--patch" in r.err and "Traceback" not in r.err
    tree = tmp_path / "tree" / "drivers/usb/core"
    tree.mkdir(parents=True)
    (tree / "hub.c").write_text("int main(void) { return 0; }\n")
    patch = tmp_path / "fast.patch"
    patch.write_text(LITERAL)
    r = run_cli(capsys, "trace", "whatif", str(CAPTURE), "--patch", str(patch), "--source",
                str(tmp_path / "tree"))
    assert r.code == 2 and "drivers/usb/core/hub.c: hunk 1 (@@ -3170) does not apply" in r.err


def test_diff_reading_pairs_calls_and_keeps_units() -> None:
    files = pd.parse(LITERAL.replace("msleep(50)", "mdelay(5)").replace(
        "usleep_range(10000, 12000)", "mdelay(2)"))
    (change,), notes = pd.changes_from_diff(files)
    assert notes == []
    assert (change.caller, change.old_func, change.old_ms, change.new_func, change.new_ms) == (
        "hub_port_reset", "mdelay", 5.0, "mdelay", 2.0)
    # measured as sleepgraph's udelay probe (no requested value): a caller-wide target
    delays, replace, _ = pd.whatif_targets([change], [("hub_port_reset", "udelay", float("nan"))])
    assert delays == {"hub_port_reset:udelay": 2.0} and replace == {}
    same = pd.parse(LITERAL.replace("usleep_range(10000, 12000)", "msleep(10 + 40)"))
    assert pd.changes_from_diff(same) == ([], [])
    assert pd.whatif_targets([change], [])[2][0].endswith("no such delay measured in the "
                                                          "capture (mdelay from hub_port_reset)")
