"""Pairs power:device_pm_callback_start/_end events into samples (ftrace text and Perfetto).

The kernel emits (drivers/base/power/main.c, include/trace/events/power.h):
  device_pm_callback_start: <driver> <device>, parent: <parent>, <info>[<verb>]
  device_pm_callback_end: <driver> <device>, err=<N>
  suspend_resume: dpm_suspend_late[2] begin / end
where <info> is "noirq bus ", "late power domain ", "preparing type ", ..., empty for every
device in dpm_prepare()/dpm_complete() (kernels >= 4.6) and "none " when NULL. Async suspend
interleaves callbacks of different devices, so starts and ends pair by "<driver> <device>".
"""

from __future__ import annotations

import math
import weakref

from dpmlens.model.phases import (
    DPM_MARKER_STAGES,
    PHASES,
    PM_EVENT_VERBS,
    member_for_event,
    member_for_stage,
    split_layer,
)
from dpmlens.traces.model.sample import Collector, CycleTracker, Group, SampleStore

# sleepgraph.py TestLine.startMarker/endMarker without trace_marker lines ("SUSPEND START",
# "RESUME COMPLETE"): a test runs from suspend_enter[N] begin to thaw_processes[0] end.
WINDOW_STEPS = frozenset({"suspend_enter", "thaw_processes"})

# suspend_resume steps that open a suspend (kernel/power/suspend.c, hibernate.c): seen after a
# resume phase they start the next cycle.
ENTRY_STEPS = frozenset({"suspend_enter", "sync_filesystems", "freeze_processes",
                         "freeze_kernel_threads", "pm_notifier_call_chain", "hibernate"})


def _text(x: bytes | str) -> str:
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else x


# Past this many entries in all, a load's caches start again empty at the next file: real
# captures repeat a few thousand payloads, a pile of random text must not grow them for ever.
SHARED_MAX = 500_000


class SharedCaches:
    """What the readers of one load work out once per distinct text, whichever file it is in.

    Every entry is a pure function of its key and of the SampleStore (groups, thread and name
    ids are the store's), so the files of a sleepgraph -multi run (one cycle each) share them:
    each used to split and resolve its ~2,000 callback payloads again."""

    __slots__ = ("heads", "groups", "probe_fields", "thread_cache", "stage_caches",
                 "end_fields", "__weakref__")

    def __init__(self) -> None:
        self.heads: dict[bytes | str, tuple[str, str]] = {}
        self.groups: dict[tuple, tuple[Group, str] | bool] = {}
        self.probe_fields: dict[bytes, tuple | None] = {}
        self.thread_cache: dict[bytes, int] = {}
        self.stage_caches: dict[str, dict[bytes, tuple | bool]] = {"main": {}}
        self.end_fields: dict[bytes, tuple[bytes, int]] = {}

    def size(self) -> int:
        return (len(self.heads) + len(self.groups) + len(self.probe_fields)
                + len(self.thread_cache) + len(self.end_fields)
                + sum(map(len, self.stage_caches.values())))


_SHARED: weakref.WeakKeyDictionary[SampleStore, SharedCaches] = weakref.WeakKeyDictionary()


def shared_caches(store: SampleStore) -> SharedCaches:
    sh = _SHARED.get(store)
    if sh is None or sh.size() > SHARED_MAX:
        sh = _SHARED[store] = SharedCaches()
    return sh


class Assembler:
    """Turns a time-ordered stream of PM trace events into samples in a Collector."""

    def __init__(self, coll: Collector) -> None:
        self.coll = coll
        self.cycles = CycleTracker()
        self.marker_stage = "main"
        self._pending: dict[bytes | str, tuple] = {}
        self._open_markers: dict[str, tuple[float, str, int]] = {}
        sh = shared_caches(coll.store)
        self._heads = sh.heads
        self._groups = sh.groups
        self._markers = 0
        self._last_phase: str | None = None
        self._last_cycle = 0
        self._open_members: set[str] = set()
        self.open_members = self._open_members  # ftrace.py's inlined end
        self._open_steps: dict[tuple[str, int], tuple[float, int, int]] = {}
        # delay kprobes (ftrace.py): payload -> parsed, (thread, func id) -> open call, the
        # threads inside a delay (a delay within one is not counted again), per open callback
        # (its head) and outside callbacks the sums per site (traces.sample.DelayColumns)
        self.probe_fields = sh.probe_fields
        self.open_delays: dict[tuple[int, int], tuple[float, float, bool]] = {}
        self.in_delay: set[int] = set()
        # sleepgraph's -dev kprobes on kernel functions (ksys_sync, freeze_processes, ...):
        # (thread, func id) -> the call's time; a call outside callbacks becomes a step
        self.open_kfuncs: dict[tuple[int, int], float] = {}
        self.open_on_thread: dict[int, bytes | str | tuple[str, str]] = {}
        # sleepgraph's test, where it keeps -dev kprobe calls (parseTraceLog: from its start
        # marker on, and none once the end marker is read): the start and whether the end is
        # still to come; open on both sides until a marker is seen
        self.window: tuple[float, bool] = (-math.inf, True)
        self._spans_start = len(coll.store.activity.spans)  # ThreadActivity.drop_from
        self.trace_markers = False  # "SUSPEND START" lines seen: they bound the test
        # ftrace.py: the block read before (text, end, first call line per probe) and the
        # first call line per probe of the block being read
        self.prev_block: tuple[bytes, int, dict[bytes, int]] = (b"", 0, {})
        self.call_firsts: dict[bytes, int] = {}
        self.block_serial = 0  # blocks read
        # (probe, thread) -> (block serial, position) of the thread's last return of the probe
        self.call_marks: dict[tuple[int, int], tuple[int, int]] = {}
        self.delay_acc: dict[bytes | str | tuple[str, str], dict[tuple, list]] = {}
        self.outside_acc: dict[tuple, list] = {}
        self.pending = self._pending
        self.thread_cache = sh.thread_cache  # the importer's raw task field -> thread id
        # ftrace payloads split once, per marker stage (an empty info defers to it): a start's
        # -> (key, group, phase) or False, an end's -> (key, err); ftrace.py keys a callback
        # by its end line as it comes without an error ("<driver> <device>, err=0"), so that
        # the common end is popped by its own payload
        self.stage_caches = sh.stage_caches
        self.stage_cache = self.stage_caches["main"]
        self.end_fields = sh.end_fields

    # -- events -------------------------------------------------------------------------
    def start(self, ts: float, head: bytes | str | tuple[str, str], parent: bytes | str,
              tail: bytes | str, thread: int = -1) -> None:
        """`head` is "<driver> <device>" as the kernel prints it (or the two already apart, as
        Perfetto has them), `tail` is "<info>[<verb>]"; `thread` a SampleStore.threads index."""
        hit = self.lookup(head, parent, tail)
        if hit is False:
            self.coll.skip("callback start with an unknown verb or stage")
            return
        self.begin(ts, head, hit[0], hit[1], thread)

    def lookup(self, head: bytes | str | tuple[str, str], parent: bytes | str,
               tail: bytes | str):  # noqa: ANN201 - (Group, phase) | False
        # One lookup on the hot path: the raw fields (and the marker stage an empty info
        # defers to) -> the sample group and phase they land in.
        key = (head, parent, tail, self.marker_stage)
        hit = self._groups.get(key)
        if hit is None:
            hit = self._groups[key] = self._resolve(head, parent, tail)
        return hit

    def begin(self, ts: float, head: bytes | str | tuple[str, str], group: Group, phase: str,
              thread: int) -> None:
        """A callback starts (its group and phase already looked up)."""
        if phase is not self._last_phase:  # the cycle can only change with the phase
            self._last_cycle = self.cycles.observe(phase)
            self._last_phase = phase
        if head in self._pending:
            self.coll.report.incomplete += 1
        self._pending[head] = (ts, group, phase, self._last_cycle, thread)
        self.open_on_thread[thread] = head

    def _resolve(self, head: bytes | str | tuple[str, str], parent: bytes | str,
                 tail: bytes | str):  # noqa: ANN202
        resolved = self._resolve_tail(_text(tail), self.marker_stage)
        if resolved is None:
            return False
        phase, layer = resolved
        if isinstance(head, tuple):
            names, raw = head, None
        else:
            raw = _text(head)
            names = self._heads.get(head)
            if names is None:
                names = self._heads[head] = self._split_head(raw)
        group = self.coll.group(names[0], names[1], _text(parent), phase, layer)
        if raw is not None and not raw.startswith(" ") and raw.count(" ") > 1 \
                and group.raw_head is None:
            # "i8042 kbd 00:04": which space separates driver and device is decided once
            # the whole capture is read (traces.names)
            group.raw_head = raw
            self.coll.store.ambiguous.append(group)
        return group, phase

    @property
    def events(self) -> int:
        """PM events seen (at least: starts are counted once they end or stay open)."""
        r = self.coll.report
        return (self._markers + r.samples + r.unmatched_ends + r.incomplete
                + len(self._pending))

    def end(self, ts: float, head: bytes | str, err: int) -> None:
        self.end_popped(self._pending.pop(head, None), ts, head, err)

    def end_popped(self, p: tuple | None, ts: float, head: bytes | str, err: int) -> None:
        """`end` once the pending start is popped (ftrace.py inlines the common case)."""
        if p is None:
            self.coll.report.unmatched_ends += 1
            return
        t0, group, phase, cycle, thread = p
        dur = (ts - t0) * 1e6  # rounded to ns where reported (sample.py, aggregate.py)
        if dur < 0:
            self.coll.skip("callback end before its start")
            return
        # Within an open dpm_* marker the phase wall time will be measured: no span needed.
        coll = self.coll
        if err or phase not in self._open_members:
            coll.add_to(group, phase, t0, dur, err, cycle, phase not in self._open_members,
                        thread)
        else:  # the common case, Collector.add_to inlined (the 50 MB/s budget)
            group.threads.append(thread)
            group.durations.append(dur)
            group.starts.append(t0)
            group.cycles.append(coll.cycle_base + cycle)
            group.files.append(coll.file_id)
            coll.report.samples += 1
            if cycle > coll._max_cycle:
                coll._max_cycle = cycle
        if self.delay_acc:  # the delays measured in this callback, per site
            acc = self.delay_acc.pop(head, None)
            if acc:
                add = coll.store.delays.add
                sample, cycle = len(group.durations) - 1, coll.cycle_base + cycle
                for key, row in acc.items():
                    add(group, sample, thread, cycle, key, row)

    def marker(self, ts: float, action: str, val: int, begin: bool, thread: int = -1) -> None:
        """A `suspend_resume` event; the dpm_* ones delimit the phases, the others are steps."""
        self._markers += 1
        stage = DPM_MARKER_STAGES.get(action)
        if stage is None:
            self._step(ts, action, val, begin, thread)
            return
        verb = PM_EVENT_VERBS.get(val, "")
        member = member_for_stage(verb, stage)
        if begin:
            self.marker_stage = stage
            self.stage_cache = self.stage_caches.setdefault(stage, {})
            if member is not None:
                cycle = self.cycles.observe(member)
                self._last_phase = None
                self._open_markers[action] = (ts, member, cycle, thread)
                self._open_members.add(member)
        else:
            self.marker_stage = "main"
            self.stage_cache = self.stage_caches["main"]
            opened = self._open_markers.pop(action, None)
            if opened is not None:
                t0, member0, cycle, thread0 = opened
                self._open_members.discard(member0)
                self.coll.phase_time(cycle, member0, (ts - t0) * 1e6, t0, thread0)

    def _step(self, ts: float, action: str, val: int, begin: bool, thread: int) -> None:
        key = (action, val)
        if action in WINDOW_STEPS and not self.trace_markers:
            if begin and action == "suspend_enter":
                self.test_bound(ts, True)
            elif not begin and action == "thaw_processes":
                self.test_bound(ts, False)
        if begin:
            if action in ENTRY_STEPS and self.cycles.after_up():
                # the next suspend starts with its own steps, before any device phase
                self.cycles.observe("prepare")
                self._last_phase = None
            self._open_steps[key] = (ts, thread, self.cycles.cycle)
            return
        opened = self._open_steps.pop(key, None)
        if opened is None or ts < opened[0]:
            return
        self.coll.step(opened[2], action, val, opened[0], ts, opened[1])

    def kfunc(self, name: str, t0: float, ts: float, thread: int) -> None:
        """A kernel function timed by a kprobe pair (sleepgraph -dev): a step of its cycle,
        unless it ran inside a device callback of the thread (then it is the callback's)."""
        head = self.open_on_thread.get(thread)
        p = self._pending.get(head) if head is not None else None
        if p is not None and p[4] == thread and p[0] <= t0:
            return
        self.coll.step(self.cycles.cycle, name, 0, t0, ts, thread)

    def firmware(self, suspend_us: float, resume_us: float) -> None:
        self.coll.firmware(self.cycles.cycle, suspend_us, resume_us)

    def boundary(self) -> None:
        self.cycles.boundary()
        self._last_phase = None

    def finish(self) -> None:
        self.coll.report.incomplete += len(self._pending)
        self._pending.clear()
        add = self.coll.store.delays.add
        for (cycle, thread, *key), row in self.outside_acc.items():
            add(None, -1, thread, self.coll.cycle_base + cycle, tuple(key), row)
        self.outside_acc.clear()
        self.delay_acc.clear()  # delays of callbacks that never ended

    def delay(self, t0: float, ts: float, thread: int, func: int, caller: int,
              requested: float) -> None:
        """A delay call from t0 to ts on `thread`: summed into the callback it ran in (the
        open callback of the thread) or, outside callbacks, per cycle and thread."""
        key = (func, caller, requested)
        dur = (ts - t0) * 1e6
        head = self.open_on_thread.get(thread)
        p = self._pending.get(head) if head is not None else None
        if p is not None and p[4] == thread and p[0] <= t0:
            acc = self.delay_acc.get(head)
            if acc is None:
                acc = self.delay_acc[head] = {}
        else:
            acc = self.outside_acc
            key = (self.cycles.cycle, thread, *key)
            self.activity_outside(t0, ts, thread, func)
        row = acc.get(key)
        if row is None:
            acc[key] = [1, dur, t0, ts]
        else:
            row[0] += 1
            row[1] += dur
            row[3] = ts

    def test_marker(self, ts: float, start: bool) -> None:
        """sleepgraph's trace_marker lines "SUSPEND START ..." / "RESUME COMPLETE ...": with
        them, they and not the suspend_resume events bound its test."""
        self.trace_markers = True
        self.test_bound(ts, start)

    def test_bound(self, ts: float, start: bool) -> None:
        if not start:
            self.window = (self.window[0], False)
            return
        if self.window[0] == -math.inf:  # the file's first test: what came before is not in it
            self.coll.store.activity.drop_from(self.coll.cycle_base, self._spans_start)
        self.window = (ts, True)

    def activity(self, t0: float, ts: float, thread: int, func: int) -> None:
        """A -dev kprobe call (not a delay dpmlens sums) on `thread`: thread activity when it
        ran outside the thread's open callback (inside, sleepgraph lists it in the callback)."""
        head = self.open_on_thread.get(thread)
        p = self._pending.get(head) if head is not None else None
        if p is None or p[4] != thread or p[0] > t0:
            self.activity_outside(t0, ts, thread, func)

    def activity_outside(self, t0: float, ts: float, thread: int, func: int) -> None:
        """Kept as sleepgraph's parseTraceLog keeps a dev kprobe call: it lasts at least
        1 us, starts inside the test and returns before the test's end (after it sleepgraph
        reads no line until the next test starts)."""
        if ts - t0 < 0.000001 or t0 < self.window[0] or not self.window[1]:
            return
        self.coll.store.activity.add(self.coll.cycle_base + self.cycles.cycle, thread, func,
                                     t0, ts)

    # -- helpers ------------------------------------------------------------------------
    @staticmethod
    def _split_head(head: str) -> tuple[str, str]:
        # dev_driver_string() has no spaces and may be empty (" device").
        drv, _, dev = head.partition(" ")
        return drv, dev

    @staticmethod
    def _resolve_tail(tail: str, marker_stage: str) -> tuple[str, str] | None:
        tail = tail.rstrip()
        lb = tail.rfind("[")
        if lb < 0 or not tail.endswith("]"):
            return None
        info, verb = tail[:lb], tail[lb + 1 : -1]
        member = member_for_event(verb, info, default_stage=marker_stage)
        if member is None or member not in PHASES:
            return None
        return member, split_layer(info)[1]


__all__ = ["Assembler"]
