"""Per-device runtime PM statistics from the paired rpm_* calls (traces.rpm_events).

A runtime suspend or resume is a call of the PM core that changed the device's status:
- with `rpm_status` (newer kernels) exactly: RPM_SUSPENDING -> RPM_SUSPENDED is a suspend,
  RPM_RESUMING -> RPM_ACTIVE a resume, each attributed to the rpm_suspend/rpm_resume call of
  the device that contains it;
- without it, from the calls (drivers/base/power/runtime.c): a synchronous rpm_resume that
  returned 0 resumed the device (1 means it was active); a synchronous rpm_suspend that
  returned 0 suspended it, except that with RPM_AUTO it may only have re-armed the
  autosuspend timer, so such a suspend counts once the device's next call shows it suspended
  (rpm_resume returned 0 or, while disabled, -EACCES; rpm_suspend returned 1) or the call
  itself notified the parent (a nested rpm_idle of another device). Asynchronous calls
  (RPM_ASYNC) only queue work on pm_wq: the worker's own call is the transition.
The latency of a transition is its call's event -> rpm_return_int; a call that first resumed
the device's parent includes that nested call (`nested_us` says how much). Break-even is
the median resume latency plus the median suspend latency: a suspended period shorter than
that cost more than staying active would have (the NVMe APST trade).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from dpmlens.traces.analysis.aggregate import percentile
from dpmlens.traces.model.rpm_log import CALL_KINDS, RpmLog, errno_name, explain
from dpmlens.traces.model.traceset import TraceSet

# rpm_status values (rules/tables/runtime-pm.yaml, include/linux/pm.h:597)
ACTIVE, RESUMING, SUSPENDED, SUSPENDING = 0, 1, 2, 3
SUSPEND, RESUME, IDLE = 0, 1, 2  # RpmLog.kinds
_EACCES = 13  # include/uapi/asm-generic/errno-base.h:17
_EAGAIN, _EBUSY, _EINVAL = 11, 16, 22  # errno-base.h:15, 20, 26
# the phases from suspend_late to resume_early: runtime PM is disabled there
# (drivers/base/power/main.c: __device_suspend_late() .. device_resume_early())
_DISABLED_FROM = ("suspend_late", "freeze_late", "poweroff_late")
_DISABLED_UNTIL = ("resume_early", "thaw_early", "restore_early")
DISABLED_RULE = "runtime-pm-while-disabled"


@dataclass(frozen=True)
class Dist:
    n: int
    min_us: float
    median_us: float
    p95_us: float
    max_us: float
    values: tuple[float, ...]

    @staticmethod
    def of(values: list[float]) -> Dist | None:
        if not values:
            return None
        v = sorted(round(x, 3) for x in values)
        return Dist(len(v), v[0], round(percentile(v, 0.5), 3), round(percentile(v, 0.95), 3),
                    v[-1], tuple(v))


@dataclass
class RpmError:
    call: str  # rpm_suspend, rpm_resume, rpm_idle
    code: int
    count: int = 0
    in_system_sleep: int = 0  # how many while a system suspend/resume ran
    in_disabled: int = 0  # how many between suspend_late and resume_early
    callbacks: Counter[str] = field(default_factory=Counter)  # "suspend_late" -> n (its own)
    first_s: float = math.nan
    # the runtime PM callback a call trace in the log shows running inside the failed call
    returned_by: Counter[str] = field(default_factory=Counter)
    # -EINVAL (runtime_error left set): the device's earlier failure that set it
    after: Counter[str] = field(default_factory=Counter)

    @property
    def name(self) -> str:
        return errno_name(self.code)

    @property
    def meaning(self) -> tuple[str, str]:
        """(class, why) from the table: "refusal" is the PM core declining (normal traffic of
        a busy device), "error" a failed or impossible call."""
        return explain(self.call, self.code)

    @property
    def rule(self) -> str | None:
        """The static rule whose mistake produces this error: a resume refused with -EACCES
        while runtime PM was disabled by a system suspend."""
        if self.call == "rpm_resume" and self.name == "-EACCES" and self.in_disabled:
            return DISABLED_RULE
        return None


@dataclass
class DeviceRpm:
    device: str
    driver: str  # from the capture's device_pm_callback events; "" when none names it
    exact: bool  # states from rpm_status (else inferred from the calls)
    suspend: Dist | None
    resume: Dist | None
    resume_nested_us: float  # median time of a resume spent in nested calls (the parent's)
    idles: int
    calls: int
    errors: list[RpmError]
    active_us: float
    suspended_us: float
    transition_us: float
    periods: tuple[float, ...]  # closed suspended periods (us)
    break_even_us: float | None
    short_periods: int
    autosuspend: Dist | None  # last put -> the suspend it led to
    unconfirmed: int  # autosuspend calls that returned 0 with no later proof of a suspend

    @property
    def suspends(self) -> int:
        return self.suspend.n if self.suspend else 0

    @property
    def resumes(self) -> int:
        return self.resume.n if self.resume else 0

    @property
    def short_share(self) -> float | None:
        if self.break_even_us is None or not self.periods:
            return None
        return self.short_periods / len(self.periods)


@dataclass
class RpmReport:
    devices: list[DeviceRpm]
    events: int
    calls: int
    status_events: int
    unmatched_returns: int
    unreturned: int
    formats_from_capture: list[str]


def runtime_stats(traces: TraceSet) -> RpmReport | None:
    """None when the captures hold no rpm_* events (the report then has no runtime section)."""
    log: RpmLog | None = traces.store.rpm
    if log is None:
        return None
    calls = defaultdict(list)  # (file, dev) -> call indices, in time order
    for i in range(len(log)):
        calls[(log.file[i], log.dev[i])].append(i)
    statuses = defaultdict(list)
    for j in range(len(log.st_dev)):
        statuses[(log.st_file[j], log.st_dev[j])].append(j)
    file_end: dict[int, float] = {}
    for i in range(len(log)):
        e = log.end[i] if log.end[i] == log.end[i] else log.start[i]
        f = log.file[i]
        file_end[f] = max(file_end.get(f, e), e)
    for j in range(len(log.st_dev)):
        f = log.st_file[j]
        file_end[f] = max(file_end.get(f, log.st_ts[j]), log.st_ts[j])
    ctx = _SystemSleep(traces)
    per_dev: dict[int, _Acc] = {}
    for key in sorted(set(calls) | set(statuses)):
        f, d = key
        acc = per_dev.setdefault(d, _Acc())
        cl = sorted(calls.get(key, []), key=lambda i: log.start[i])
        st = statuses.get(key)
        if f in log.untimed_files:  # order without times: errors and calls, no latencies
            acc.exact = False
        elif st:
            _with_status(log, cl, sorted(st, key=lambda j: log.st_ts[j]), file_end[f], acc)
        else:
            _from_calls(log, cl, file_end[f], acc)
        _errors_and_idles(log, cl, f, log.devices[d], ctx, acc)
    drivers = _drivers(traces)
    # a device no system sleep callback names: the module of its callback in a call trace
    devices = [acc.result(log.devices[d], drivers.get(log.devices[d], "") or (
        acc.modules.most_common(1)[0][0] if acc.modules else "")) for d, acc in per_dev.items()]
    devices.sort(key=lambda r: (-(r.resumes + r.suspends), r.device))
    r = traces.files
    return RpmReport(devices, sum(x.rpm_events for x in r), len(log), len(log.st_dev),
                     log.unmatched_returns, log.unreturned, sorted(log.formats_from_capture))


class _Acc:
    """What one device accumulates over the files."""

    def __init__(self) -> None:
        self.suspend: list[float] = []
        self.resume: list[float] = []
        self.nested: list[float] = []
        self.exact = True
        self.time = [0.0, 0.0, 0.0]  # active, suspended, in transition (us)
        self.periods: list[float] = []
        self.auto: list[float] = []
        self.unconfirmed = 0
        self.idles = 0
        self.calls = 0
        self.errors: dict[tuple[str, int], RpmError] = {}
        self.modules: Counter[str] = Counter()  # of its callbacks seen in call traces

    def result(self, device: str, driver: str) -> DeviceRpm:
        sus, res = Dist.of(self.suspend), Dist.of(self.resume)
        be = round(sus.median_us + res.median_us, 3) if sus and res else None
        short = sum(1 for p in self.periods if be is not None and p < be)
        nested = round(percentile(sorted(self.nested), 0.5), 3) if self.nested else 0.0
        errors = sorted(self.errors.values(),
                        key=lambda e: (-e.count, e.first_s, e.call, e.code))
        return DeviceRpm(device, driver, self.exact, sus, res, nested, self.idles, self.calls,
                         errors, round(self.time[0], 3), round(self.time[1], 3),
                         round(self.time[2], 3), tuple(round(p, 3) for p in self.periods), be,
                         short, Dist.of(self.auto), self.unconfirmed)


def _dur(log: RpmLog, i: int) -> float:
    return (log.end[i] - log.start[i]) * 1e6


def _ended(log: RpmLog, i: int) -> bool:
    return log.end[i] == log.end[i]  # not nan


def _is_put(log: RpmLog, i: int) -> bool:
    """An autosuspend request: RPM_AUTO with RPM_GET_PUT (pm_runtime_put_autosuspend) or
    synchronous (pm_runtime_autosuspend); not the timer's own RPM_ASYNC|RPM_AUTO call."""
    fl = log.flags[i]
    return log.kinds[i] == SUSPEND and bool(fl & 0x8) and bool(fl & 0x4 or not fl & 0x1) \
        and _ended(log, i) and log.ret[i] == 0


def _autosuspend(log: RpmLog, cl: list[int], pos: int, since: float, acc: _Acc) -> None:
    """The last put before the suspend call cl[pos] (after the previous resume): the time
    from it to the suspend is the autosuspend delay as observed."""
    start = log.start[cl[pos]]
    for k in range(pos - 1, -1, -1):
        i = cl[k]
        if log.start[i] < since:
            return
        if _is_put(log, i):
            if log.flags[cl[pos]] & 0x8 and i != cl[pos]:
                acc.auto.append((start - log.start[i]) * 1e6)
            return


def _with_status(log: RpmLog, cl: list[int], st: list[int], end: float, acc: _Acc) -> None:
    starts = [log.start[i] for i in cl]

    def enclosing(ts: float, kind: int) -> int | None:
        k = bisect_right(starts, ts) - 1
        while k >= 0:
            i = cl[k]
            if log.kinds[i] == kind and (not _ended(log, i) or log.end[i] >= ts):
                return k
            k -= 1
        return None

    prev_val, prev_ts = None, None
    last_active = -math.inf
    for j in st:
        ts, val = log.st_ts[j], log.st_val[j]
        if prev_val is not None:
            span = (ts - prev_ts) * 1e6
            slot = 0 if prev_val == ACTIVE else 1 if prev_val == SUSPENDED else 2
            acc.time[slot] += span
            if prev_val == SUSPENDED:
                acc.periods.append(span)
        if val == SUSPENDED and prev_val == SUSPENDING or val == ACTIVE and prev_val == RESUMING:
            kind = SUSPEND if val == SUSPENDED else RESUME
            k = enclosing(ts, kind)
            if k is not None and _ended(log, cl[k]):
                lat = _dur(log, cl[k])
                if kind == RESUME:
                    acc.nested.append(log.nested[cl[k]])
                else:
                    _autosuspend(log, cl, k, last_active, acc)
            else:  # no call around it in the capture: the status change itself
                lat = (ts - prev_ts) * 1e6
            (acc.suspend if kind == SUSPEND else acc.resume).append(lat)
        if val == ACTIVE:
            last_active = ts
        prev_val, prev_ts = val, ts
    if prev_val is not None and end > prev_ts:
        slot = 0 if prev_val == ACTIVE else 1 if prev_val == SUSPENDED else 2
        acc.time[slot] += (end - prev_ts) * 1e6


def _from_calls(log: RpmLog, cl: list[int], end: float, acc: _Acc) -> None:
    acc.exact = False
    state: tuple[int, float] | None = None  # (ACTIVE|SUSPENDED, since)
    pending: int | None = None  # an autosuspend that returned 0: suspended or timer re-armed
    last_active = -math.inf

    def enter(val: int, t0: float, t1: float) -> None:
        """A transition from t0 to t1 into `val`: closes the previous state at t0."""
        nonlocal state
        if state is not None:
            span = (t0 - state[1]) * 1e6
            acc.time[0 if state[0] == ACTIVE else 1] += max(span, 0.0)
            if state[0] == SUSPENDED:
                acc.periods.append(max(span, 0.0))
        acc.time[2] += (t1 - t0) * 1e6
        state = (val, t1)

    def commit_suspend(k: int) -> None:
        i = cl[k]
        acc.suspend.append(_dur(log, i))
        _autosuspend(log, cl, k, last_active, acc)
        enter(SUSPENDED, log.start[i], log.end[i])

    pending_k = None
    for k, i in enumerate(cl):
        if not _ended(log, i) or log.kinds[i] == IDLE or log.flags[i] & 0x1:
            continue  # async calls only queue work; idles are counted elsewhere
        ret = log.ret[i]
        if log.kinds[i] == RESUME:
            if ret == 0:
                if pending is not None:
                    commit_suspend(pending_k)  # it was suspended: the autosuspend happened
                acc.resume.append(_dur(log, i))
                acc.nested.append(log.nested[i])
                enter(ACTIVE, log.start[i], log.end[i])
                last_active = log.end[i]
            elif ret == 1 and pending is not None:
                acc.unconfirmed += 1  # it was active: the autosuspend only re-armed the timer
            elif ret == -_EACCES and log.depth[i] > 0 and pending is not None:
                # disabled and not active (runtime.c:776-780): the autosuspend happened
                commit_suspend(pending_k)
            if ret >= 0 or ret == -_EACCES:
                pending = pending_k = None
        elif ret == 0:
            if log.flags[i] & 0x8 and i not in log.idled_parent:
                if pending is not None:
                    acc.unconfirmed += 1  # a later one replaced it: the timer was re-armed
                pending, pending_k = i, k
            else:
                pending = pending_k = None
                commit_suspend(k)
        elif ret == 1 and pending is not None:  # already suspended: the autosuspend happened
            commit_suspend(pending_k)
            pending = pending_k = None
    if pending is not None:
        acc.unconfirmed += 1
    if state is not None and end > state[1]:
        acc.time[0 if state[0] == ACTIVE else 1] += (end - state[1]) * 1e6


class _SystemSleep:
    """Where system suspend/resume ran, per file: whole cycles and the runtime-PM-disabled
    stretch (suspend_late .. resume_early), from the phase times; and each device's own
    system sleep callbacks (to say inside which callback a runtime PM call failed)."""

    def __init__(self, traces: TraceSet) -> None:
        self.files = {name: i for i, name in enumerate(traces.store.files)}
        span: dict[tuple[str, int], list[float]] = {}
        disabled: dict[tuple[str, int], list[float]] = {}
        for pt in traces.phase_times:
            if pt.start != pt.start:
                continue
            end = pt.start + pt.wall_us / 1e6
            key = (pt.source_file, pt.cycle)
            s = span.setdefault(key, [pt.start, end])
            s[0], s[1] = min(s[0], pt.start), max(s[1], end)
            if pt.phase in _DISABLED_FROM or pt.phase in _DISABLED_UNTIL:
                d = disabled.setdefault(key, [math.inf, -math.inf])
                if pt.phase in _DISABLED_FROM:
                    d[0] = min(d[0], pt.start)
                else:
                    d[1] = max(d[1], end)
        self.sleep: dict[int, list[tuple[float, float]]] = defaultdict(list)
        self.disabled: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for (fname, cyc), (a, b) in span.items():
            fid = self.files.get(fname)
            if fid is None:
                continue
            self.sleep[fid].append((a, b))
            d = disabled.get((fname, cyc))
            if d is not None:
                # a capture cut before resume_early: disabled until the cycle's end
                lo = d[0] if d[0] < math.inf else a
                hi = d[1] if d[1] > -math.inf else b
                self.disabled[fid].append((lo, hi))
        self.callbacks: dict[str, list[tuple[float, float, str, int]]] = defaultdict(list)
        for g in traces.groups.values():
            for k in range(len(g.durations)):
                t0 = g.starts[k]
                if t0 == t0:
                    self.callbacks[g.key[1]].append(
                        (t0, t0 + g.durations[k] / 1e6, g.key[3], g.files[k]))

    def inside(self, windows: dict[int, list[tuple[float, float]]], file: int,
               ts: float) -> bool:
        return any(a <= ts <= b for a, b in windows.get(file, ()))

    def callback_at(self, device: str, file: int, ts: float) -> str | None:
        for a, b, phase, f in self.callbacks.get(device, ()):
            if f == file and a <= ts <= b:
                return phase
        return None


def _errors_and_idles(log: RpmLog, cl: list[int], file: int, device: str,
                      ctx: _SystemSleep, acc: _Acc) -> None:
    last_failure: str | None = None  # the device's last failed call that set runtime_error
    for i in cl:
        acc.calls += 1
        if log.kinds[i] == IDLE:
            acc.idles += 1
        ret = log.ret[i]
        if not _ended(log, i):
            continue
        if ret >= 0:
            if log.kinds[i] != IDLE:
                last_failure = None  # a call that passed the runtime_error check
            continue
        call = "rpm_" + CALL_KINDS[log.kinds[i]]
        err = acc.errors.get((call, ret))
        if err is None:
            err = acc.errors[(call, ret)] = RpmError(call, ret, first_s=log.start[i])
        err.count += 1
        ts = log.start[i]
        if ctx.inside(ctx.sleep, file, ts):
            err.in_system_sleep += 1
        if ctx.inside(ctx.disabled, file, ts):
            err.in_disabled += 1
        phase = ctx.callback_at(device, file, ts)
        if phase is not None:
            err.callbacks[phase] += 1
        for tr in log.callback_traces:
            if tr.file == file and tr.call in ("", call) and log.start[i] <= tr.ts <= log.end[i] \
                    and (tr.thread < 0 or tr.thread == log.thread[i]):
                err.returned_by[tr.label()] += 1
                if tr.module:
                    acc.modules[tr.module] += 1
                break
        if ret == -_EINVAL and last_failure is not None:
            err.after[last_failure] += 1
        elif explain(call, ret)[1].startswith("returned by the callback") \
                and call != "rpm_idle" and ret not in (-_EAGAIN, -_EBUSY):
            last_failure = f"{call} {err.name}"


def _drivers(traces: TraceSet) -> dict[str, str]:
    """device -> driver: the rpm events name only the device; the system sleep callbacks of
    the same captures name both (dev_driver_string())."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for g in traces.groups.values():
        if g.key[0]:
            seen[g.key[1]][g.key[0]] += max(len(g.durations), 1)
    return {dev: c.most_common(1)[0][0] for dev, c in seen.items()}


def by_driver(devices: list[DeviceRpm]) -> list[dict[str, Any]]:
    """Per driver: devices, transitions, errors and the medians over all its devices."""
    groups: dict[str, list[DeviceRpm]] = defaultdict(list)
    for d in devices:
        groups[d.driver].append(d)
    out = []
    for drv, ds in groups.items():
        sus = [v for d in ds if d.suspend for v in d.suspend.values]
        res = [v for d in ds if d.resume for v in d.resume.values]
        s, r = Dist.of(sus), Dist.of(res)
        out.append({
            "driver": drv or None, "devices": len(ds), "suspends": len(sus),
            "resumes": len(res),
            "errors": sum(e.count for d in ds for e in d.errors),
            "suspend_median_us": s.median_us if s else None,
            "resume_median_us": r.median_us if r else None,
        })
    out.sort(key=lambda x: (-(x["suspends"] + x["resumes"]), x["driver"] or ""))
    return out


__all__ = ["DISABLED_RULE", "DeviceRpm", "Dist", "RpmError", "RpmReport", "by_driver",
           "runtime_stats"]
