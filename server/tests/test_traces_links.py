"""Device links (`--links FILE`) as critical-path predecessors and in the what-if replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traces_helpers import shared_traces, write_links_capture

from dpmlens.cli import main
from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import PhaseGraph, critical_path
from dpmlens.traces.analysis.delays import measured_delays
from dpmlens.traces.analysis.whatif import Changes, what_if
from dpmlens.traces.model.links import parse_links
from dpmlens.traces.model.timeline import build_timeline


def test_parse_every_form() -> None:
    text = "\n".join([
        "# ls /sys/class/devlink",
        "platform:fe200000.gpio--platform:fe300000.mmc",
        "i2c:i2c-ELAN0000:00--platform:soc:pinctrl--x",  # names with ':' and '--'
        "/sys/class/devlink/pci:0000:00:1f.0--i2c:0-0055/status:active",  # grep -r
        "/sys/devices/virtual/devlink/spi:spi0.0--platform:fixed/supplier/uevent:X=1",
        "/sys/devices/pci0000:00/0000:00:14.0 /sys/devices/pci0000:00/0000:00:14.0/usb1",
        "sup-a\tFixed MDIO bus.0",  # a tab keeps spaces in names
        "sup-b -> cons b",
        "",
        "three words here",
    ])
    links = parse_links(text, "f")
    assert dict(links.suppliers) == {
        "fe300000.mmc": {"fe200000.gpio"},
        "soc:pinctrl--x": {"i2c-ELAN0000:00"},
        "0-0055": {"0000:00:1f.0"},
        "fixed": {"spi0.0"},
        "usb1": {"0000:00:14.0"},
        "Fixed MDIO bus.0": {"sup-a"},
        "cons b": {"sup-b"},
    }
    assert links.consumers["fe200000.gpio"] == {"fe300000.mmc"}
    assert links.count == 7
    assert links.unparsed == ["line 10: three words here"]


# The capture: traces_helpers.LINKS_CAPTURE (critical path p -> c; with the link s -> c,
# s -> c).


def _capture(tmp_path: Path) -> Path:
    return write_links_capture(tmp_path / "links_ftrace.txt")


def _chain(traces) -> list[tuple[str, str]]:  # noqa: ANN001 - TraceSet
    (run,) = build_timeline(traces)
    return [(x.interval.device, x.link) for x in critical_path(run).chain]


def test_supplier_is_a_predecessor_on_resume(tmp_path: Path) -> None:
    t = load_traces([_capture(tmp_path)])
    # without links: c waited for its parent (which ended 9 ms before it started)
    assert _chain(t) == [("dev-p", "phase start"), ("dev-c", "parent")]
    t.device_links = parse_links("x:dev-s--x:dev-c")
    assert _chain(t) == [("dev-s", "phase start"), ("dev-c", "supplier")]
    (run,) = build_timeline(t)
    g = PhaseGraph(run)
    assert g.all_deps() == [g.deps(i) for i in range(len(run.intervals))]


def test_consumer_is_a_predecessor_on_suspend(tmp_path: Path) -> None:
    lines = [(1.0, "bash-1", "suspend_resume: dpm_suspend[2] begin"),
             (1.000010, "kworker/0:2-10", "device_pm_callback_start: c dev-c, parent: none, "
                                          "bus [suspend]"),
             (1.020010, "kworker/0:2-10", "device_pm_callback_end: c dev-c, err=0"),
             (1.000020, "bash-1", "device_pm_callback_start: a dev-a, parent: none, bus "
                                  "[suspend]"),
             (1.001020, "bash-1", "device_pm_callback_end: a dev-a, err=0"),
             (1.020060, "bash-1", "device_pm_callback_start: s dev-s, parent: none, bus "
                                  "[suspend]"),
             (1.025060, "bash-1", "device_pm_callback_end: s dev-s, err=0"),
             (1.025100, "bash-1", "suspend_resume: dpm_suspend[2] end")]
    f = tmp_path / "t_ftrace.txt"
    f.write_text("".join(f"{task:>16} [000] .... {ts:.6f}: {x}\n" for ts, task, x in
                         sorted(lines)))
    t = load_traces([f])
    assert _chain(t) == [("dev-c", "phase start"), ("dev-s", "async wait")]
    t.device_links = parse_links("dev-s dev-c")
    assert _chain(t) == [("dev-c", "phase start"), ("dev-s", "consumer")]


def test_whatif_keeps_the_link_when_the_consumer_moves(tmp_path: Path) -> None:
    from dpmlens.traces.analysis.whatif import matcher

    t = load_traces([_capture(tmp_path)])
    t.device_links = parse_links("dev-s dev-c")
    runs = build_timeline(t)
    # c moved to the synchronous thread still waits for its supplier (and runs after s)
    w = what_if(runs, measured_delays(t, runs), Changes(make_sync=matcher(["c"])))
    (r,) = w.replays
    assert [(iv.device, link) for iv, _, _, link in r.path()] == [("dev-s", "phase start"),
                                                                   ("dev-c", "supplier")]


def test_cli_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(_capture(tmp_path))
    links = tmp_path / "devlink.txt"
    links.write_text("x:dev-s--x:dev-c\nx:a--x:b\nnonsense line here\n")
    assert main(["trace", "report", f, "--links", str(links), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device_links"] == {"file": str(links), "links": 2, "used": 1,
                                    "unparsed": ["line 3: nonsense line here"]}
    assert [s["link"] for s in data["critical_path"][0]["chain"]] == ["phase start",
                                                                     "supplier"]
    assert main(["trace", "report", f, "--links", str(links)]) == 0
    assert "Device links: 2 from" in capsys.readouterr().out
    assert main(["trace", "whatif", f, "--links", str(links), "--sync", "c"]) == 0
    assert main(["trace", "report", f, "--links", str(tmp_path / "none.txt")]) == 2
    assert "--links" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    assert main(["trace", "report", f, "--links", str(empty)]) == 2
    assert "no link found" in capsys.readouterr().err


def test_real_captures_carry_no_links() -> None:
    # sleepgraph/ftrace/dmesg captures name parents only: no device_link line anywhere
    for p in shared_traces().rglob("*.txt"):
        text = p.read_text(errors="replace")
        assert "devlink" not in text and "device_link" not in text, p


def test_cli_links_from_the_project_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    f = str(_capture(tmp_path))
    tree = tmp_path / "linux"
    (tree / "drivers").mkdir(parents=True)
    (tree / "devlink.txt").write_text("dev-s dev-c\n")
    (tree / ".dpmlens.toml").write_text('[traces]\nlinks = "devlink.txt"\n')
    # the toml governing --source, else the current directory; --links wins over it
    for args in (["--source", str(tree / "drivers")], []):
        monkeypatch.chdir(tree if not args else tmp_path)
        assert main(["trace", "report", f, *args, "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["device_links"]["file"] == str(tree / "devlink.txt")
        assert [s["link"] for s in data["critical_path"][0]["chain"]] == ["phase start",
                                                                         "supplier"]
    other = tmp_path / "other.txt"
    other.write_text("dev-x dev-y\n")
    assert main(["trace", "report", f, "--links", str(other), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["device_links"]["file"] == str(other)
    (tree / ".dpmlens.toml").write_text('[traces]\nlinks = "gone.txt"\n')
    assert main(["trace", "report", f]) == 2
    assert f"{tree / '.dpmlens.toml'}: [traces] links {tree / 'gone.txt'}: No such file" in \
        capsys.readouterr().err
