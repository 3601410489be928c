"""Traces in the editor, what the time means: measured delays over their calls (CodeLens with
the spec minimum and what it would win back) and the critical path on callback lenses."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsp_harness import command, line_of, open_file, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "traces"


async def _titles(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    got = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    out: dict[int, list[str]] = {}
    for lens in got or []:
        out.setdefault(lens.range.start.line, []).append(lens.command.title)
    return out


async def test_measured_delay_lens_names_the_spec_minimum_and_the_saving(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    src = ws / "usb" / "hubsim.c"
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "timeline_src" / "usb" / "hubsim.c", src)
    capture = FIXTURES / "timeline" / "test_mem_ftrace.txt"
    uri = open_file(client, src)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")
    assert await _titles(client, uri) == {}

    status = await command(client, "dpmlens.loadTraces", {"paths": [str(capture)]})
    assert status["files"] == 1 and status["errors"] == []
    await wait_for(lambda: client.lens_refreshes > 0,  # type: ignore[attr-defined]
                   what="workspace/codeLens/refresh")
    titles = await _titles(client, uri)
    at_40 = titles[line_of(src, "\tmsleep(40);")]
    assert len(at_40) == 1, titles
    # the probe measured each msleep(40); TRSMRCY's minimum is 10 ms: 30 ms too long per call
    assert at_40[0].startswith("msleep(40) · measured "), at_40
    assert " per resume" in at_40[0] and "at the 10 ms TRSMRCY minimum: -" in at_40[0], at_40
    assert "on the critical path" in at_40[0], at_40
    # the delay rules' diagnostic at that call quotes the measurement
    line40 = line_of(src, "\tmsleep(40);")
    await wait_for(lambda: any("(traces: measured " in d.message and d.range.start.line == line40
                               for d in client.diagnostics.get(uri, [])),
                   what="a delay diagnostic with its measured cost")
    await command(client, "dpmlens.clearTraces")
    await wait_for(lambda: uri in client.diagnostics and client.diagnostics[uri] and not any(
        "(traces:" in d.message for d in client.diagnostics[uri]), what="measurements dropped")
    # no lens on lines without a measured call
    assert line_of(src, "static int usb_port_resume(") not in titles


async def test_timeline_html_command_draws_the_loaded_traces(client: LanguageClient) -> None:
    import pytest
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException, match="no traces loaded"):
        await command(client, "dpmlens.timelineHtml")
    capture = FIXTURES / "timeline" / "test_mem_ftrace.txt"
    await command(client, "dpmlens.loadTraces", {"paths": [str(capture)]})
    page = await command(client, "dpmlens.timelineHtml")
    assert page["files"] == [str(capture)]
    html = page["html"]
    assert html.startswith("<!DOCTYPE html>") and "<canvas" in html
    assert "dpmlens timeline: test_mem_ftrace.txt" in html
    assert "acquireVsCodeApi" in html  # in the editor's webview a click opens the source


async def test_slowest_callbacks_carry_the_critical_path_and_what_ifs(
    client: LanguageClient,
) -> None:
    capture = FIXTURES / "timeline" / "test_mem_ftrace.txt"
    await command(client, "dpmlens.loadTraces", {"paths": [str(capture)]})
    got = await command(client, "dpmlens.slowestCallbacks", {"limit": 5})
    crit = {c["phase"]: c for c in got["critical"]}
    resume = crit["resume"]
    assert resume["runs"] >= 1 and resume["wall_us"] > 0 and resume["replayed"] is True
    assert resume["devices"] and all(d["on_path"] >= 1 for d in resume["devices"])
    for w in resume["whatif"]:
        assert w["change"] in ("every device async", "the async ordering of Linux 6.16")
        assert 0 < w["saving_us"] < resume["wall_us"]
        assert abs(w["predicted_us"] + w["saving_us"] - resume["wall_us"]) < 1
        # how sure: the capture's evidence, the lab's band for it (or null), what to capture
        assert w["evidence"] in ("kprobes+sched", "kprobes", "sched", "neither")
        assert w["band"] is None or w["band"]["low_pct"] <= 0 <= w["band"]["high_pct"]
        assert w["capture_next"] is None or w["capture_next"].startswith("to predict")


def test_delay_lens_title_counts_per_cycle_and_saving() -> None:
    from dpmlens.lsp.delay_lens import title
    from dpmlens.lsp.trace_mapping import MeasuredSite

    site = MeasuredSite("msleep", "hub_port_reset", 50.0, calls=16, cycles=2, mean_us=55_000.0,
                        total_us=880_000.0, on_path=16, phases=("resume",))
    static = {"call": "msleep(50)", "spec": "TRSTRCY", "min_ms": 10.0, "padding_ms": 40.0}
    assert title(site, static) == ("msleep(50) · measured 8 × 55.00 ms per resume · on the "
                                   "critical path · at the 10 ms TRSTRCY minimum: -320.00 ms "
                                   "of resume")
    partly = MeasuredSite("msleep", "f", 10.0, 4, 1, 10_500.0, 42_000.0, 1, ())
    assert title(partly, {"call": "msleep(10)", "spec": None, "min_ms": None,
                          "padding_ms": None}) == (
        "msleep(10) · measured 4 × 10.50 ms per cycle · 1 of 4 calls on the critical path")


def test_one_duration_format_for_cli_and_editor() -> None:
    import json

    from dpmlens.traces.model.durations import format_us

    table = json.loads((FIXTURES.parent / "durations.json").read_text())["cases"]
    assert len(table) > 5
    assert all(format_us(us) == text for us, text in table)


def test_hover_says_how_often_a_device_was_on_the_critical_path() -> None:
    from dpmlens.lsp.hover import critical_note

    rows = [{"phase": "resume", "device": "1-1.4", "critical":
             {"on_path": 7, "runs": 10, "contribution_us": 2_674_000.0}},
            {"phase": "suspend", "device": "1-1.4", "critical": None}]
    assert critical_note(rows) == ("**On the critical path** (what the phase waited for): "
                                   "1-1.4 in resume: 7 of 10 cycles, 2.67 s on the path")
    assert critical_note([rows[1]]) == ""


def test_the_what_ifs_carry_their_evidence_and_band() -> None:
    """A pm_async=0 lab capture with delay kprobes (test-fixtures/lab/ab-sched): making
    every device async wins resume back; the row says the capture's evidence, the lab's band
    for that change with it, and what to capture next (delay kprobes, for a surer one)."""
    from dpmlens.lsp.trace_mapping import critical_phases
    from dpmlens.traces import load_traces
    from dpmlens.traces.analysis.critical import critical_path
    from dpmlens.traces.analysis.delays import measured_delays
    from dpmlens.traces.model.timeline import build_timeline

    capture = FIXTURES.parent / "lab" / "ab-sched" / "6.12" / "async0" / "part1" / "ftrace.txt.xz"
    traces = load_traces([capture])
    runs = build_timeline(traces)
    paths = [critical_path(r) for r in runs]
    rows = {c["phase"]: c for c in critical_phases(runs, paths, measured_delays(traces, runs),
                                                    traces.store.sched is not None)}
    (w,) = [w for w in rows["resume"]["whatif"] if w["change"] == "every device async"]
    assert w["saving_us"] > 0.2 * rows["resume"]["wall_us"]
    assert w["evidence"] == "kprobes"  # (the editor replays without the contention model)
    assert w["band"] is None or w["band"]["low_pct"] < w["band"]["high_pct"]
    from dpmlens.traces.analysis.bands import table

    cell = table()[("async-unseen", "kprobes", "resume")]  # the row's band is bands.yaml's
    assert w["band"] == {"low_pct": cell.low_pct, "high_pct": cell.high_pct}
    # the capture has the scheduler's events: not asked for, said where they are used
    assert "used by `dpmlens trace whatif`" in w["capture_next"]
