"""Delay calls told from the scheduler's events, for a capture without delay kprobes.

`msleep(m)` puts its thread to sleep until a timer wakes it, and the timer wheel makes the
length of that sleep a known window: at level 0 (timeouts under 63 jiffies) it fires on the
tick after `msecs_to_jiffies(m)` more jiffies, so the sleep lasts between that many jiffies
and one more (kernel/time/sleep_timeout.c; before 6.12 msleep() adds one jiffy of its own:
"timers: Remove historical extra jiffie for timeout in msleep()"). A blocked stretch of a
callback's own thread, ended by an interrupt or a timer, whose length falls in that window
(widened by the wake-up latency the lab saw: `SLACK_MS`) is taken as one call. Which function
made the call is not in the events: the --delay target's caller is assumed and said so.

Checked on the lab's tuning captures (test-fixtures/lab/ab-sched, ab-sched-rep: delay kprobes
and scheduler events both, so each callback's real `hub_port_reset` msleep(50) calls are
known): 6.1 160 of 160 calls found, 1 extra; 6.12 234 of 240, none extra; the replication 78
of 80, 2 extra.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dpmlens.rules.sleep_slack import extra_jiffies_of
from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.model.sched import BLOCKED, EXTERNAL, SchedLog
from dpmlens.traces.model.timeline import PhaseRun

DEFAULT_HZ = 250  # kernel/Kconfig.hz's default, and Debian's
SLACK_MS = 2.0  # wake-up latency either side of the window (the lab's qemu guests)
# the delay functions whose sleep a timer-wheel window describes
TIMER_SLEEPS = ("msleep", "msleep_interruptible")
_RELEASE = re.compile(r"(\d+)\.(\d+)")  # "6.1.0-57-amd64", "6.12.117+deb12-amd64"


@dataclass(frozen=True)
class SleepClock:
    """What the window of a sleep depends on, and whether it was read from the capture."""

    hz: int = DEFAULT_HZ
    extra_jiffy: int = 0  # 1 before Linux 6.12
    hz_known: bool = False
    kernel: str | None = None  # the release the capture names, if any

    def window_ms(self, request_ms: float) -> tuple[float, float]:
        """Where an msleep(request_ms)'s blocked stretch lies, in ms (slack included)."""
        per = 1000.0 / self.hz
        jiffies = math.ceil(request_ms / per - 1e-9) + self.extra_jiffy
        return max(request_ms, jiffies * per) - SLACK_MS, (jiffies + 1) * per + SLACK_MS

    def text(self, request_ms: float) -> str:
        lo, hi = self.window_ms(request_ms)
        hz = f"HZ={self.hz}" + ("" if self.hz_known else " assumed (CONFIG_HZ not in the "
                                "capture)")
        ver = ("before 6.12: one more jiffy" if self.extra_jiffy else
               "6.12 or later" if self.kernel else "6.12 or later assumed (no kernel release "
               "in the capture)")
        return f"{lo:g}-{hi:g} ms at {hz}, {ver}"


def clock_of(kernel: str | None, config_hz: str | None) -> SleepClock:
    """The sleep clock from a capture's kernel release ("6.1.0-57-amd64") and CONFIG_HZ."""
    hz = DEFAULT_HZ
    known = False
    if config_hz and config_hz.strip().isdigit() and int(config_hz) > 0:
        hz, known = int(config_hz), True
    m = _RELEASE.match(kernel.strip()) if kernel else None
    # (the cutoff is the delay rules' own: rules/sleep_slack.py)
    extra = extra_jiffies_of((int(m.group(1)), int(m.group(2))) if m else None)
    return SleepClock(hz, extra, known, kernel or None)


def sleep_calls(runs: list[PhaseRun], sched: SchedLog,
                wanted: list[tuple[str, str, float]], clock: SleepClock
                ) -> list[MeasuredDelay]:
    """Per callback run and wanted (caller, delay function, request ms): its thread's sleeps
    that fit the request's window, as one MeasuredDelay (the caller as wanted). A sleep that
    fits two requests' windows counts for the nearer one."""
    wanted = [w for w in wanted if w[1] in TIMER_SLEEPS]
    if not wanted:
        return []
    windows = [clock.window_ms(req) for _, _, req in wanted]
    out = []
    for run in runs:
        for iv in run.intervals:
            if iv.thread < 0:
                continue
            file = iv.group.files[iv.index]
            if not sched.has(file, iv.thread):
                continue
            found: dict[int, list[tuple[float, float]]] = {}
            for a, b, state, waker in sched.states(file, iv.thread, iv.start, iv.end):
                if state != BLOCKED or waker != EXTERNAL:
                    continue
                ms = (b - a) * 1e3
                fits = [k for k, (lo, hi) in enumerate(windows) if lo <= ms <= hi]
                if fits:
                    k = min(fits, key=lambda k: abs(ms - sum(windows[k]) / 2))
                    found.setdefault(k, []).append((a, b))
            for k, spans in found.items():
                caller, func, req = wanted[k]
                out.append(MeasuredDelay(
                    func, caller, run.cycle, iv.thread, spans[0][0], spans[-1][1], req, iv,
                    calls=len(spans), total_us=sum((b - a) * 1e6 for a, b in spans)))
    return out
