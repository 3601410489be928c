"""The ftrace reader's caches live for a whole load (issue 29): a sleepgraph -multi run is one
cycle a file, and every file used to resolve its callback payloads again. Sharing them must
change nothing: the same load with caches made afresh per file gives the same store."""

from __future__ import annotations

import shutil
from array import array
from pathlib import Path

import pytest
from traces_helpers import shared_traces

from dpmlens.traces import load_traces
from dpmlens.traces.model.sample import Collector, FileReport, Group, SampleStore
from dpmlens.traces.read import events
from dpmlens.traces.read.events import Assembler
from dpmlens.traces.read.ftrace import parse

MEM = Path("pm-graph-4.6") / "suspend-160422-155735-ivybridge-dev-late" / \
    "ivybridge_mem_ftrace.txt"


def _plain(x: object) -> object:
    """Arrays as bytes, groups by key, the rest as repr (nan == nan there)."""
    if isinstance(x, array):
        return x.tobytes()
    if isinstance(x, Group):
        return x.key
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return sorted((repr(k), _plain(v)) for k, v in x.items())
    if isinstance(x, set):
        return sorted(map(repr, x))
    return repr(x)


def _everything(traces) -> object:  # noqa: ANN001 - TraceSet
    store = traces.store
    groups = [(k, [_plain(getattr(g, a)) for a in Group.__slots__])
              for k, g in store.groups.items()]
    d, act = store.delays, store.activity
    return _plain([groups, store.threads, store.phase_times, store.steps,
                   [getattr(d, a) for a in type(d).__slots__],
                   [getattr(act, a) for a in type(act).__slots__],
                   [(f.path, f.samples, f.cycles, f.skipped_lines, f.notes)
                    for f in traces.files], traces.cycles])


def test_three_real_tests_as_three_files_read_the_same_with_shared_caches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = shared_traces() / MEM
    files = []
    for i in range(3):  # as sleepgraph -multi writes them: one test per directory
        d = tmp_path / f"suspend-16042{i}-155735"
        d.mkdir()
        files.append(d / src.name)
        shutil.copyfile(src, files[-1])
    shared = load_traces(files)
    assert shared.sample_count > 5000 and shared.cycles == 3
    monkeypatch.setattr(events, "SHARED_MAX", -1)  # every file starts with empty caches
    alone = load_traces(files)
    assert _everything(shared) == _everything(alone)


def test_a_kprobe_return_is_cached_without_its_value(tmp_path: Path) -> None:
    lines = [
        "# tracer: nop\n",
        "  kworker/0:1-9     [000] ....   1.000000: udelay_cal: (__const_udelay+0x0/0x50) "
        "loops=42950\n",
        "  kworker/0:1-9     [000] d...   1.000010: udelay_ret: (azx_get_response+0x11b/0x2b0 "
        "[snd_hda_codec] <- __const_udelay) arg1=0x24982c918d\n",
        "  kworker/0:1-9     [000] ....   1.000020: udelay_cal: (__const_udelay+0x0/0x50) "
        "loops=42950\n",
        "  kworker/0:1-9     [000] d...   1.000040: udelay_ret: (azx_get_response+0x11b/0x2b0 "
        "[snd_hda_codec] <- __const_udelay) arg1=0x24983011a3\n",
        # no "+" before the ")": the whole line is read, as before (the caller is "x) y")
        "  kworker/0:1-9     [000] ....   1.000050: udelay_cal: (__const_udelay+0x0/0x50) "
        "loops=1\n",
        "  kworker/0:1-9     [000] d...   1.000060: udelay_ret: (x) y+1\n",
    ]
    f = tmp_path / "t_ftrace.txt"
    f.write_text("".join(lines))
    store = SampleStore()
    coll = Collector(FileReport(str(f)), store, 0)
    with open(f, "rb") as fh:
        parse(fh, coll)
    coll.finish()
    cache = events.shared_caches(store).probe_fields
    rets = [k for k in cache if b"_ret: " in k]
    assert rets == [b"udelay_ret: (azx_get_response+0x11b/0x2b0 [snd_hda_codec] <- "
                    b"__const_udelay)"]
    names = store.delays.names
    assert "azx_get_response" in names and "x) y" in names
    assert Assembler(coll).probe_fields is cache  # the next file of the load shares it
