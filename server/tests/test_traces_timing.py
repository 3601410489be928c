"""TimingIndex: what the language server calls (TraceStatus, slowest, per-function stats)."""

from __future__ import annotations

from traces_helpers import FIXTURES

from dpmlens.model.build import build_model
from dpmlens.traces import TimingIndex, lens_title

SRC = FIXTURES / "src"
BASIC = FIXTURES / "ftrace_basic.txt"


def test_status_with_source() -> None:
    idx = TimingIndex.load([BASIC], source_roots=[SRC])
    assert idx.status() == {
        "files": 1, "samples": 11, "cycles": 2, "callbacks_mapped": 4, "callbacks_unmapped": 4,
        "unmapped_reasons": {
            "'bar_pm_ops' has no .resume_noirq (the time is spent in the bus callback itself)": 1,
            "'foo_pm_ops' has no .prepare": 1, "'foo_pm_ops' has no .complete": 1,
            "no driver name in the trace (device without driver, bus or class)": 1},
        "errors": []}


def test_status_without_source_and_empty() -> None:
    idx = TimingIndex.load([BASIC])
    st = idx.status()
    assert (st["callbacks_mapped"], st["callbacks_unmapped"]) == (0, 8)
    assert st["unmapped_reasons"] == {"no --source given": 8}
    assert TimingIndex().status()["files"] == 0


def test_slowest_shape() -> None:
    out = TimingIndex.load([BASIC], source_roots=[SRC]).slowest(2)
    assert list(out) == ["callbacks", "phases", "status"]
    assert [c["source"]["function"] for c in out["callbacks"]] == [
        "bar_suspend", "foo_suspend"]
    assert out["phases"][0] == {"phase": "prepare", "cycles": 2, "mean_us": 100.0, "sd_us": 0.0}


def test_for_function_and_lens_title() -> None:
    idx = TimingIndex.load([BASIC], source_roots=[SRC])
    got = idx.for_function(str(SRC / "foo.c"), "foo_suspend")
    assert [(s.driver, s.phase) for s in got] == [("foo", "suspend")]
    assert lens_title(got) == ("suspend · median 4.00 ms · p95 5.80 ms · max 6.00 ms · "
                               "2 cycles · 0-0055")
    assert idx.for_function(str(SRC / "foo.c"), "foo_probe") == []


def test_for_model_of_an_open_document() -> None:
    idx = TimingIndex.load([BASIC])  # no source roots: map from the document itself
    path = SRC / "foo.c"
    by_fn = idx.for_model(build_model(str(path), path.read_bytes()))
    assert {fn: [s.phase for s in v] for fn, v in by_fn.items()} == {
        "foo_suspend": ["suspend"], "foo_resume": ["resume"]}
    bar = SRC / "bar_main.c"  # KBUILD_MODNAME -> "bar" through the Makefile beside it
    by_fn = idx.for_model(build_model(str(bar), bar.read_bytes()))
    assert {fn: [s.phase for s in v] for fn, v in by_fn.items()} == {
        "bar_suspend_noirq": ["suspend_noirq"]}


def test_load_reports_progress_and_can_be_cancelled() -> None:
    seen: list[tuple[str, int, int]] = []
    idx = TimingIndex.load([FIXTURES], progress=lambda p, i, n: seen.append((p, i, n)))
    assert len(seen) == len(idx.traces.files) >= 5
    assert [i for _, i, _ in seen] == list(range(len(seen)))
    stopped = TimingIndex.load([FIXTURES], cancelled=lambda: True)
    assert stopped.traces.files == [] and stopped.traces.errors == ["loading cancelled"]
