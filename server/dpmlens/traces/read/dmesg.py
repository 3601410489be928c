"""Kernel log with pm_print_times / initcall_debug, in every generation of the format.

  <= 4.x   calling  0-0055+ @ 1224, parent: i2c-0
           call 0-0055+ returned 0 after 1461860 usecs            ("usecs" = ns >> 10)
  ~4.19    i2c 0-0055: calling i2c_device_pm_suspend+0x0/0x40 @ 1224, parent: i2c-0
           i2c 0-0055: i2c_device_pm_suspend+0x0/0x40 returned 0 after 1461 usecs
  current  i2c 0-0055: PM: calling i2c_device_pm_suspend @ 1224, parent: i2c-0
           i2c 0-0055: PM: i2c_device_pm_suspend returned 0 after 1461 usecs
           (a module symbol is followed by " [module]")

The kernel printed ns >> 10 as "usecs" until 5.14 (commit "PM: sleep: core: Use ktime_us_delta()
in initcall_debug_report()"); the old and the %pF forms are converted (x 1.024), the current
form is taken as microseconds, and a "+0x.../0x..." form is decided by the kernel version
when the log says it, else by comparing the reported durations with the printk timestamps.

Phases: `PM: <stage> <verb> of devices complete after N msecs` closes a phase (callbacks are
printed before it); cycles: `PM: suspend entry` / sleepgraph stamps / the phase order.

Tracepoints printed into the log (`trace_event=power:*,rpm:* tp_printk` on the kernel command
line: kernel/trace/trace.c output_printk) are the ftrace events without the task/CPU columns:
  [   12.345678] device_pm_callback_start: usb 1-1, parent: usb1, type [resume]
  [   12.345679] rpm_return_int: rpm_idle+0x27f/0x350:0000:00:01.0 ret=0
They are read by traces.read.ftrace, as one more ftrace text: the same callbacks, phases
(suspend_resume markers) and runtime PM calls as the ftrace of the same run. When the log has
such callback events, its pm_print_times lines (the same callbacks, fewer) are not counted
again. No thread is printed (unless CONFIG_PRINTK_CALLER adds `[T123]`): runtime PM calls
then pair by device, and delay kprobes are left out (they pair by thread).
"""

from __future__ import annotations

import io
import re
from datetime import date
from typing import BinaryIO

from dpmlens.core import inputs
from dpmlens.model.phases import member_for_dmesg_phase, member_for_stage
from dpmlens.traces.model.rpm_log import CallbackTrace, RpmLog, rpm_log
from dpmlens.traces.model.sample import Collector, CycleTracker
from dpmlens.traces.read import ftrace

NAME = "dmesg"
_NAN = float("nan")

# --- line prefixes -------------------------------------------------------------------------
# A wall-clock stamp in front of the kernel's own prefix, as logs get pasted: syslog and
# journalctl (`Nov 28 10:00:01[.123456] host kernel: `), ISO forms (journalctl -o short-iso,
# ChromeOS `... INFO kernel: `, svlogd `... kern.info: `, `dmesg --time-format iso`), and a CI
# log's or VM console's own stamp before the kernel's (LAVA `2020-10-05 16:45:59.342000
# <6>[ ts]`, Qubes `[2022-03-20 22:59:10] [ ts]`).
_WALL = re.compile(
    r"^\[?(?:[A-Z][a-z]{2} [ \d]\d |(?P<date>\d{4}-\d\d-\d\d)[T ])"
    r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?P<frac>[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?\]?")
_KERNEL_TAG = re.compile(r"^ (?:\S+ )?(?:kernel(?:\[\d+\])?|kern\.\w+): ")
_USER_TAG = re.compile(r"^ \S+ [\w.@/-]+\[\d+\]: ")  # host prog[pid]: a user-space line
_HOST_KERNEL = re.compile(r"^ ?\S+ kernel: ")  # journalctl -o short-monotonic, after `[ ts]`
_HUMAN_TS = re.compile(r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]")  # -T
_LEVEL = re.compile(r"^<\d{1,3}>")
_DMESG_X = re.compile(r"^[a-z]+ *:[a-z]+ *: ")
_TS = re.compile(r"^\[\s*(\d+\.\d+)\]")
# a duration or error of more digits is no real measurement (10**15 usecs is 31 years)
_MAX_DIGITS = 15
_CALLER = re.compile(r"^ ?\[ *[TC]\d+\]")
_TASK_ID = re.compile(r"(?:\] ?|^)\[ *T(\d+)\]")  # CONFIG_PRINTK_CALLER: the printing thread
# tp_printk: "<event>: <payload>" as the ftrace text prints it after the task columns
_TP_EVENT = re.compile(r"(?:device_pm_callback_(?:start|end)|suspend_resume|"
                       r"rpm_(?:suspend|resume|idle|usage|return_int|status)): ")
_TP_DELAY = re.compile(r"\w+_(?:cal|ret): ")
_NO_THREAD = "(tp_printk: no thread)"

# --- messages ------------------------------------------------------------------------------
_SYM = r"(?P<sym>[\w.$]+)(?P<off>\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[(?P<mod>[\w-]+)\])?"
_OLD_START = re.compile(r"^calling  (?P<dev>.+?)\+ @ (?P<pid>\d+), parent: (?P<parent>\S+)")
_OLD_END = re.compile(r"^call (?P<dev>.+?)\+ returned (?P<err>-?\d+) after (?P<t>\d+) usecs")
# "<driver> <device>: ": both may contain spaces ("i8042 kbd 00:04: "), never ": "
_NEW_START = re.compile(
    r"^(?P<head>[^ ]*(?: [^ ]+?)+?): (?P<pm>PM: )?calling "
    + _SYM
    + r" @ (?P<pid>\d+), parent: (?P<parent>\S+)"
)
_NEW_END = re.compile(
    r"^(?P<head>[^ ]*(?: [^ ]+?)+?): (?P<pm>PM: )?"
    + _SYM
    + r" returned (?P<err>-?\d+) after (?P<t>\d+) usecs"
)
_PHASE = re.compile(
    r"PM: (?P<words>[a-z][a-z ]*?) of devices (?:complete|aborted) after "
    r"(?P<ms>\d+)\.(?P<frac>\d+) msecs"
)
_CYCLE_START = re.compile(
    r"PM: (?:suspend entry|hibernation entry|Syncing filesystems|"
    r"hibernation: hibernation entry)|^# (?:suspend|freeze|standby|mem|"
    r"disk)-\d{6}-\d{6} "
)
_VERSION = re.compile(r"Linux version (\d+)\.(\d+)|^# \S+ \S+ \S+ (\d+)\.(\d+)")
_DEVPRINTK = re.compile(r"^(?P<drv>[\w.-]+) (?P<dev>\S+?): ")

_VERB_WORDS = {
    "suspend": "suspend",
    "resume": "resume",
    "freeze": "freeze",
    "thaw": "thaw",
    "poweroff": "hibernate",
    "restore": "restore",
}
_STAGE_WORDS = {"noirq": "noirq", "late": "late", "early": "early"}
_NEXT = {
    "suspend": "suspend_late",
    "suspend_late": "suspend_noirq",
    "suspend_noirq": "resume_noirq",
    "resume_noirq": "resume_early",
    "resume_early": "resume",
    "freeze": "freeze_late",
    "freeze_late": "freeze_noirq",
    "freeze_noirq": "thaw_noirq",
    "thaw_noirq": "thaw_early",
    "thaw_early": "thaw",
    "poweroff": "poweroff_late",
    "poweroff_late": "poweroff_noirq",
    "restore_noirq": "restore_early",
    "restore_early": "restore",
}


# what makes a kernel log worth reading, in a line's message (prefixes removed)
_PM_MESSAGE = re.compile(
    r"calling  \S+\+ @ \d+, parent:|: (?:PM: )?calling \S+ @ \d+, parent:|"
    r" returned -?\d+ after \d+ usecs|"
    r"PM: [a-z ]+ of devices complete after|PM: suspend entry|PM: (?:suspend|hibernation) exit|"
    r"^(?:device_pm_callback_(?:start|end)|suspend_resume|"
    r"rpm_(?:suspend|resume|idle|usage|return_int|status)): ")
_HEAD_LINES = 2000


def looks_like(head: str) -> bool:
    """A kernel log: a line with the kernel's `[ ts]` (after any pasted prefix), or a PM
    message (pm_print_times, phase, cycle or tracepoint lines) in any prefix form."""
    for line in head.splitlines()[:_HEAD_LINES]:
        ts, msg = strip_prefix(line.rstrip("\r"))
        if _KERNEL_TS.search(line, 0, 80) or _PM_MESSAGE.search(msg):
            return True
    return False


# the kernel's `[ ts]` opening a line, or after a pasted prefix (`]`, `<6>`, `kernel: `)
_KERNEL_TS = re.compile(r"(?:^\s*|[\]>:] ?)\[\s*\d+\.\d+\](?:\[ *[TC]\d+\])?[ \[]")


def strip_prefix(line: str) -> tuple[float, str]:
    """Remove wall-clock stamps (syslog, journal, ISO, CI logs), `<6>`, `dmesg -x`, `[ ts]`,
    `dmesg -T` and `[ T123]`/`[ C3]` prefixes. The time is the kernel's `[ ts]`, else a wall
    stamp with a fraction of a second (seconds of the day, or Unix time with a date), else
    nan. A user-space syslog line (`host prog[pid]: `) comes back as ""."""
    ts = _NAN
    m = _TS.match(line) if line[:1] == "[" else None  # the common case: the kernel's `[ ts]`
    if m is None:
        if line[:1] in " \t":  # a paste indented as a quote: only in front of a prefix
            bare = line.lstrip(" \t")
            if _WALL.match(bare) or _TS.match(bare) or _LEVEL.match(bare):
                line = bare
        w = _WALL.match(line)
        if w:
            rest = line[w.end():]
            k = _KERNEL_TAG.match(rest)
            if k:
                line = rest[k.end():]
            elif _USER_TAG.match(rest):
                return _NAN, ""
            else:
                line = rest.lstrip(" \t")
            if w.group("frac"):
                ts = _wall_seconds(w)
        lv = _LEVEL.match(line)
        if lv:
            line = line[lv.end() :]
        x = _DMESG_X.match(line)
        if x:
            line = line[x.end() :]
        m = _TS.match(line) or _HUMAN_TS.match(line)
    sep = False
    if m:
        sep = True
        if m.lastindex:  # `[ ts]`; an absurd one (thousands of digits: inf) counts as none
            ts = float(m.group(1)) if len(m.group(1)) <= 2 * _MAX_DIGITS else _NAN
        line = line[m.end() :]
        if "kernel: " in line:
            h = _HOST_KERNEL.match(line)
            if h:
                line = line[h.end() - 1 :]
    if line[:1] == "[" or line[:2] == " [":
        c = _CALLER.match(line)
        if c:
            sep = True
            line = line[c.end() :]
    if sep and line.startswith(" "):
        line = line[1:]  # exactly the one separator: an empty driver name keeps its space
    return ts, line


_EPOCH = date(1970, 1, 1).toordinal()


def _wall_seconds(m: re.Match[str]) -> float:
    secs = int(m.group("h")) * 3600 + int(m.group("m")) * 60 + int(m.group("s"))
    frac = float("0." + m.group("frac")[1:])
    if m.group("date"):
        y, mo, d = (int(x) for x in m.group("date").split("-"))
        try:
            secs += (date(y, mo, d).toordinal() - _EPOCH) * 86400  # Unix time: µs stay exact
        except ValueError:
            return _NAN
    return secs + frac


def _hint_from_symbol(sym: str | None) -> str | None:
    """pci_pm_suspend_noirq -> suspend_noirq; platform_pm_resume -> resume; else None."""
    if not sym:
        return None
    verb = stage = None
    for word in sym.lower().split("_"):
        if word in _VERB_WORDS and verb is None:
            verb = _VERB_WORDS[word]
        elif word in _STAGE_WORDS:
            stage = _STAGE_WORDS[word]
    if verb is None:
        return None
    return member_for_stage(verb, stage or "main")


def _start_line(m: re.Match[str], verb: str, walls: list[tuple[int, str, float]]) -> None:
    total = int(m.group("ms")) * 1000 + int((m.group("frac") + "000")[:3])
    main = member_for_stage(verb, "main")
    prepare = member_for_stage(verb, "prepare")
    if not walls or main is None or prepare is None:
        return
    cycle, phase, wall = walls[-1]
    if phase == main and total >= wall and (cycle, prepare) not in {w[:2] for w in walls}:
        walls.append((cycle, prepare, float(total - wall)))


class _Pending:
    __slots__ = ("drv", "dev", "parent", "start", "dur", "err", "sym", "units", "ts_end", "pid")

    def __init__(
        self,
        drv: str | None,
        dev: str,
        parent: str,
        start: float,
        dur: float,
        err: int,
        sym: str | None,
        units: str,
        ts_end: float,
        pid: str | None = None,
    ) -> None:
        self.drv, self.dev, self.parent, self.start = drv, dev, parent, start
        self.dur, self.err, self.sym, self.units, self.ts_end = dur, err, sym, units, ts_end
        self.pid = pid  # "@ <pid>" of the calling line: the thread that ran the callback


# --- call traces: which runtime PM callback was running ---------------------------------------
_STACK_HEADS = ("Call Trace:", "Call trace:", "Backtrace:")
# ` [<608d05dc>] sym+0x2e/0x40 [mod]`, `  ? sym+0x..`, ARM's `[<c0545abc>] (sym+0x84/0xa8)`
_FRAME = re.compile(r"^(?:\[<[0-9a-f]+>\] )?(?P<q>\? )?\(?(?P<sym>[\w.$]+)"
                    r"(?P<off>\+0x[0-9a-f]+/0x[0-9a-f]+)?\)?(?: \[(?P<mod>[\w-]+)\])?")
_MARKER = re.compile(r"^</?[A-Z]+>$")  # <TASK>, </IRQ>, ...
_RPM_CORE = ("__rpm_callback", "rpm_callback")
_RPM_CALLS = ("rpm_resume", "rpm_suspend", "rpm_idle")
_RUNTIME_CB = re.compile(r"runtime_(?:resume|suspend|idle)")


class _Stack:
    """One call trace in the log: its frames, innermost first."""

    __slots__ = ("frames", "thread", "ts")

    def __init__(self, ts: float, thread: int) -> None:
        self.ts, self.thread = ts, thread
        self.frames: list[tuple[str, str]] = []

    def take(self, msg: str) -> bool:
        """Take a frame line (or a <TASK>-style marker); False: the trace has ended."""
        line = msg.strip()
        if _MARKER.match(line):
            return True
        m = _FRAME.match(line)
        if not m or not (m.group("off") or line.startswith("[<")) or m.end() < len(line) \
                and not line[m.end():].startswith(" from "):
            return False
        if not m.group("q"):  # "? sym": a stale address on the stack, not a frame
            self.frames.append((m.group("sym").split(".")[0], m.group("mod") or ""))
        return True

    def close(self, log: RpmLog, file: int) -> None:
        """A trace through __rpm_callback names the callback the PM core was running."""
        names = [f[0] for f in self.frames]
        k = next((i for i, n in enumerate(names) if n in _RPM_CORE), None)
        if not k:
            return
        call = next((n for n in names[k + 1 : k + 5] if n in _RPM_CALLS), "")
        j = k - 1
        while j > 0 and _RUNTIME_CB.search(names[j - 1]):
            j -= 1
        via = names[k - 1] if j != k - 1 else ""
        log.callback_traces.append(CallbackTrace(file, self.thread, self.ts, call, names[j],
                                                 self.frames[j][1], via))


def parse(stream: BinaryIO, coll: Collector) -> None:
    cycles = CycleTracker()
    starts: dict[tuple[str | None, str], tuple[float, str, str | None, str | None]] = {}
    unphased: list[_Pending] = []  # callbacks printed, their phase line not seen yet
    done: list[tuple[_Pending, str, int]] = []  # (sample, phase, cycle)
    last_phase: str | None = None
    dev_driver: dict[str, str] = {}
    old_devices: set[str] = set()
    raw_heads: dict[tuple[str, str], str] = {}  # split at the first space, had more spaces
    version: tuple[int, int] | None = None
    lines = 0
    tp: list[bytes] = []  # tp_printk events as ftrace text lines
    tp_callbacks = tp_rpm = tp_threads = False
    walls: list[tuple[int, str, float]] = []  # phase lines, committed unless tp mode
    stack: _Stack | None = None  # a call trace being read
    last_ts, since_ts, untimed = 0.0, 0, 0  # the last time seen; lines after it without one

    def flush_unphased() -> None:
        # The log ended, or a new cycle began, before the phase line: use the callback symbol,
        # else the phase that follows the last completed one.
        for p in unphased:
            phase = _hint_from_symbol(p.sym) or (_NEXT.get(last_phase) if last_phase else None)
            if phase is None:
                coll.skip("callback with no phase line and no phase in its symbol")
                continue
            done.append((p, phase, cycles.observe(phase)))
        unphased.clear()

    for raw in inputs.lines(stream):  # bounded: a 1 GiB "line" is skipped, not held
        lines += 1
        if raw is None:
            coll.skip(inputs.too_long_line())
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
        text = text.rstrip("\r\n")
        if "\x00" in text:
            coll.skip("binary data in line")
            continue
        if version is None:
            vm = _VERSION.search(text)
            if vm:
                g = [x for x in vm.groups() if x is not None]
                version = (int(g[0]), int(g[1]))
                coll.report.kernel_version = version
        if _CYCLE_START.search(text):
            tp.append(b"# suspend-000000-000000 (a new cycle in the kernel log)\n")
            flush_unphased()
            cycles.boundary()
            last_phase = None
            continue
        ts, msg = strip_prefix(text)
        if ts == ts:
            last_ts, since_ts = ts, 0
        if stack is not None:
            if stack.take(msg):
                continue
            stack.close(rpm_log(coll.store), coll.file_id)
            stack = None
        if msg.startswith(_STACK_HEADS):
            caller = _TASK_ID.search(text, 0, 64)
            thread = coll.store.task_thread(f"T{caller.group(1)}-{caller.group(1)}") \
                if caller else -1
            if ts != ts:  # untimed: one microsecond a line after the last time seen
                since_ts += 1
            stack = _Stack(ts if ts == ts else last_ts + since_ts * 1e-6, thread)
            continue
        if msg[:1] in "dsr" and _TP_EVENT.match(msg) or _TP_DELAY.match(msg):
            caller = _TASK_ID.search(text, 0, 64)
            if caller is None and msg[:1] not in "dsr":
                continue  # a delay kprobe without its thread cannot pair
            if ts != ts:
                if msg[0] != "r":  # a callback or phase needs its time
                    coll.skip("tracepoint line without a timestamp")
                    continue
                # a runtime PM call keeps its order and its error without a time (dmesg -t,
                # syslog stamps of whole seconds); its latency is not measured
                since_ts += 1
                untimed += 1
                ts = last_ts + since_ts * 1e-6
            task = f"T{caller.group(1)}-{caller.group(1)}" if caller else _NO_THREAD
            tp.append(f"{task} [000] ..... {ts:.6f}: {msg}\n".encode())
            tp_callbacks |= msg[0] in "ds" and not msg.startswith("device_pm_callback_end")
            tp_threads |= caller is not None
            tp_rpm |= msg[0] == "r"
            continue
        if "calling" in msg:
            m = _OLD_START.match(msg)
            if m:
                dev = m.group("dev")
                old_devices.add(dev)
                starts[(None, dev)] = (ts, m.group("parent"), None, m.group("pid"))
                continue
            m = _NEW_START.match(msg)
            if m:
                starts[_head(m.group("head"), raw_heads)] = (ts, m.group("parent"),
                                                             m.group("sym"), m.group("pid"))
                continue
        if "returned" in msg:
            m = _OLD_END.match(msg)
            key: tuple[str | None, str]
            if m:
                key = (None, m.group("dev"))
                old_devices.add(key[1])
                units = "ns>>10"
            else:
                m = _NEW_END.match(msg)
                if m:
                    key = _head(m.group("head"), raw_heads)
                    units = "us" if not m.group("off") else "offset-form"
            if m and (len(m.group("t")) > _MAX_DIGITS or len(m.group("err")) > _MAX_DIGITS):
                coll.skip("impossible number in a 'returned ... usecs' line")
                continue
            if m:
                st = starts.pop(key, None)
                if st is None:
                    coll.report.unmatched_ends += 1
                    parent, t0, sym, pid = "", _NAN, None, None
                else:
                    t0, parent, sym, pid = st
                sym = m.groupdict().get("sym") or sym
                unphased.append(
                    _Pending(
                        key[0],
                        key[1],
                        parent,
                        t0,
                        float(m.group("t")),
                        int(m.group("err")),
                        sym,
                        units,
                        ts,
                        pid,
                    )
                )
                continue
            if "usecs" in msg and ("call " in msg or " returned " in msg):
                coll.skip("malformed 'returned ... usecs' line")
                continue
        if "of devices" in msg:
            m = _PHASE.search(msg)
            if m:
                words = m.group("words")
                if words.startswith("start "):
                    # dpm_suspend_start(): prepare and suspend together, printed after the
                    # suspend line; the difference is the prepare phase (it prints none)
                    _start_line(m, words[6:], walls)
                    continue
                phase = member_for_dmesg_phase(words)
                if phase is None:
                    coll.skip("phase line with unknown phase words")
                    continue
                if len(m.group("ms")) > _MAX_DIGITS:
                    coll.skip("impossible number in a phase line")
                    continue
                cycle = cycles.observe(phase)
                for p in unphased:
                    done.append((p, phase, cycle))
                unphased.clear()
                wall = int(m.group("ms")) * 1000 + int((m.group("frac") + "000")[:3])
                walls.append((cycle, phase, float(wall)))
                last_phase = phase
                continue
        m = _DEVPRINTK.match(msg)
        if m and not m.group("drv").endswith(":"):
            dev_driver.setdefault(m.group("dev"), m.group("drv"))
    flush_unphased()
    if stack is not None:
        stack.close(rpm_log(coll.store), coll.file_id)
    if untimed:
        rpm_log(coll.store).untimed_files.add(coll.file_id)
        coll.report.notes.append(
            f"{untimed} runtime PM tracepoint lines without a time of their own (dmesg -t, or "
            "whole-second syslog stamps): read in order, their calls and errors counted; their "
            "latencies are not measured")
    if tp_callbacks or tp_rpm:
        ftrace.parse(io.BytesIO(b"".join(tp)), coll, threads_known=tp_threads)
        if tp_callbacks:
            n_print = len(done)
            coll.report.notes.append(
                "callbacks from the tracepoint lines printed by tp_printk"
                + (f"; its {n_print} pm_print_times callbacks not counted again" if n_print
                   else ""))
            return
    for cycle, phase, wall in walls:
        coll.phase_time(cycle, phase, wall)
    coll.report.incomplete += len(starts)

    factor = _units_factor(done, version, coll)
    inferred = 0
    for p, phase, cycle in done:
        drv = p.drv
        if drv is None:
            drv = dev_driver.get(p.dev, "")
            inferred += bool(drv)
        dur = p.dur * (
            factor if p.units == "offset-form" else 1.024 if p.units == "ns>>10" else 1.0
        )
        coll.add(drv, p.dev, p.parent, phase, "", p.start, round(dur, 3), p.err, cycle, p.sym,
                 thread=f"pid {p.pid}" if p.pid else None, raw_head=raw_heads.get((drv, p.dev)))
    if any(p.units == "ns>>10" for p, _, _ in done):
        coll.report.notes.append("old format: 'usecs' are ns >> 10, converted to microseconds")
    if old_devices:
        coll.report.notes.append(
            f"old format names no driver: {inferred} of {len(done)} samples took it from other "
            "'<driver> <device>:' lines of the same log"
        )
    if not done and not coll.report.skipped_lines:
        coll.report.notes.append("no pm_print_times / initcall_debug callback lines")


def _head(head: str, raw_heads: dict[tuple[str, str], str]) -> tuple[str, str]:
    """(driver, device) split at the first space; a head with more spaces is remembered for
    traces.names to decide once the whole input is read."""
    drv, _, dev = head.partition(" ")
    if not head.startswith(" ") and head.count(" ") > 1:
        raw_heads[(drv, dev)] = head
    return drv, dev


def _units_factor(
    done: list[tuple[_Pending, str, int]], version: tuple[int, int] | None, coll: Collector
) -> float:
    """For the "sym+0x0/0x170" form: 1.024 if the kernel printed ns >> 10, else 1.0."""
    forms = [p for p, _, _ in done if p.units == "offset-form"]
    if not forms:
        return 1.0
    if version is not None:
        return 1.024 if version < (5, 14) else 1.0
    # Compare with the printk timestamps on callbacks long enough for 2.4% to show.
    ratios = [
        (p.ts_end - p.start) * 1e6 / p.dur
        for p in forms
        if p.dur >= 20000 and p.start == p.start and p.ts_end == p.ts_end
    ]
    if len(ratios) >= 3:
        ratios.sort()
        med = ratios[len(ratios) // 2]
        if med > 1.012:
            coll.report.notes.append("'usecs' judged to be ns >> 10 from the timestamps")
            return 1.024
        return 1.0
    coll.report.notes.append(
        "kernel version unknown: '+0x..' form 'usecs' taken as microseconds"
        " (kernels before 5.14 printed ns >> 10)"
    )
    return 1.0

