"""ftrace text: /sys/kernel/tracing/trace, `trace-cmd report`, sleepgraph `*_ftrace.txt`.

Only three events matter, wherever they sit in a line:
  <task>-<pid> [cpu] <flags> <timestamp>: device_pm_callback_start: ...
The flags column differs (none in trace-cmd, 4 chars, 5 on PREEMPT_RT), so the parser
anchors on ": <event>: " and takes the timestamp as the word just before it. Everything else
(other kprobe lines, `#` headers, other events) is never looked at per line: a
regex with a literal prefix scans each multi-megabyte block in C, which is what makes the
50 MB/s budget reachable in Python. Files of the function_graph tracer are read by
traces.ftrace_graph instead (decided on the first 64 KiB); trace-cmd's funcgraph_entry/exit
events are handed to it from this scan. Besides the PM events: sleepgraph's -dev kprobe lines
(delays, kernel functions, and the returns of its other probes: thread activity) and its
"SUSPEND START"/"RESUME COMPLETE" trace_marker lines (the bounds of its test).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from dpmlens.core import inputs, limits
from dpmlens.traces.model.sample import Collector, DelayColumns
from dpmlens.traces.read import ftrace_graph, ftrace_tokens, rpm_events
from dpmlens.traces.read.events import Assembler

NAME = "ftrace"
CHUNK = 4 << 20
HEAD = 64 << 10  # where a function_graph capture shows what it is

# trace-cmd report pads short event names ("suspend_resume:       dpm_suspend[2] begin"); the
# callback events are never padded, and their payload may start with a space (empty driver).
# sleepgraph's kprobes on the delay functions (its dev_tracefuncs; `udelay` probes
# __const_udelay): "msleep_cal: (msleep+0x0/0x40) time=10" then, on the same thread,
# "msleep_ret: (hub_port_reset+0x3ab/0x6c0 [usbcore] <- msleep) arg1=0x0".
DELAY_PROBES = ("msleep", "msleep_interruptible", "usleep_range", "usleep_range_state",
                "udelay", "mdelay", "ssleep", "fsleep", "schedule_timeout")
# sleepgraph's kprobes on kernel functions of the suspend path (its `tracefuncs`, and the
# -dev ones pm-graph adds on current kernels): timed as kernel steps of their phase.
KERNEL_FUNCS = ("sys_sync", "ksys_sync", "pm_prepare_console", "pm_restore_console",
                "pm_notifier_call_chain", "pm_notifier_call_chain_robust",
                "__pm_notifier_call_chain", "freeze_processes", "freeze_kernel_threads",
                "thaw_processes", "thaw_kernel_threads", "pm_restrict_gfp_mask",
                "pm_restore_gfp_mask", "suspend_console", "resume_console",
                "async_synchronize_full", "cpufreq_suspend", "cpufreq_resume",
                "acpi_suspend_begin", "acpi_pm_prepare", "acpi_pm_finish", "acpi_pm_end",
                "syscore_suspend", "syscore_resume", "arch_enable_nonboot_cpus_end",
                "acpi_hibernation_begin", "acpi_s2idle_begin", "acpi_s2idle_prepare",
                "acpi_s2idle_prepare_late", "acpi_s2idle_wake", "acpi_s2idle_restore",
                "acpi_s2idle_restore_early", "acpi_s2idle_end", "acpi_s2idle_sync")
# The rest of sleepgraph's -dev kprobes (sleepgraph.py dev_tracefuncs): neither delays nor
# steps, only thread activity (the "kernel thread" rows, traces.analysis.steps.thread_rows).
# Only their returns are matched: sleepgraph draws a call only once it returned, and the call
# line is then found backwards from the return (_call_before). A capture full of calls that
# never return, or of calls inside callbacks, costs the scan nothing per line but the return.
OTHER_PROBES = ("mutex_lock_slowpath", "acpi_os_stall", "rt_mutex_slowlock",
                "acpi_resume_power_resources", "acpi_ps_execute_method", "mei_reset",
                "ext4_sync_fs", "ath10k_bmi_read_memory", "ath10k_bmi_write_memory",
                "ath10k_bmi_fast_download", "iwlagn_mac_start", "iwlagn_alloc_bcast_station",
                "iwl_trans_pcie_start_hw", "iwl_trans_pcie_start_fw", "iwl_run_init_ucode",
                "iwl_load_ucode_wait_alive", "iwl_alive_start", "iwlagn_mac_stop",
                "iwlagn_mac_suspend", "iwlagn_mac_resume", "iwlagn_mac_add_interface",
                "iwlagn_mac_remove_interface", "iwlagn_mac_change_interface",
                "iwlagn_mac_config", "iwlagn_configure_filter", "iwlagn_mac_hw_scan",
                "iwlagn_bss_info_changed", "iwlagn_mac_channel_switch", "iwlagn_mac_flush",
                "ata_eh_recover", "i915_gem_resume", "i915_restore_state",
                "intel_opregion_setup", "g4x_pre_enable_dp", "vlv_pre_enable_dp",
                "chv_pre_enable_dp", "g4x_enable_dp", "vlv_enable_dp", "intel_hpd_init",
                "intel_opregion_register", "intel_dp_detect", "intel_hdmi_detect",
                "intel_opregion_init", "intel_fbdev_set_suspend")


# the scheduler's events (traces.model.sched): what a callback's thread waited for
SCHED_EVENTS = ("sched_switch", "sched_waking")


def _trie(words: dict[str, str]) -> str:
    """An alternation of `words` (each followed by its own suffix pattern) as a prefix tree:
    re tries the alternatives of a flat `a|b|c` one by one at every ": " of the file, a tree
    only as far as a prefix goes (the probe names cost ~10% of the scan instead of doubling
    it)."""
    tree: dict[str, Any] = {}
    for w, suffix in words.items():
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = suffix

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(node[ch]) for ch in sorted(k for k in node if k)]
        if "" in node:
            alts.append(node[""])  # tried last: "msleep" + "_cal" after "msleep_interruptible"
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(tree)


# rpm_* (runtime PM) lines only mark their block for traces.rpm_events: finding them in this
# one scan is what keeps traces without them at their old speed.
# A callback event's match runs to its line's end (the payload is read from it; it costs the
# scan nothing measurable and saves a find per event).
_RPM = ("suspend", "resume", "idle", "usage", "return_int", "status")
_EVENT = re.compile(rb": (?:device_pm_callback_(?:start|end): [^\n]*|suspend_resume: +|"
                    + _trie({**dict.fromkeys(DELAY_PROBES + KERNEL_FUNCS, "_(?:cal|ret): "),
                              **dict.fromkeys(OTHER_PROBES, "_ret: "),
                              **dict.fromkeys(SCHED_EVENTS, ": ")}).encode()
                    + rb"|rpm_(?:" + "|".join(_RPM).encode() + rb"): "
                    + rb"|funcgraph_(?:entry|exit): "
                    + rb"|tracing_mark_write: (?:SUSPEND START|RESUME COMPLETE))")
# the delay kprobes' names, which the C scan pairs itself when it can (ftrace_tokens.pairing),
# and the other -dev probes' returns, whose calls it finds when it can
_DELAY_NAMES = tuple(f"{f}_{sfx}".encode() for f in DELAY_PROBES for sfx in ("cal", "ret"))
_OTHER_RETS = tuple(f"{f}_ret".encode() for f in OTHER_PROBES)
# the names of _EVENT's "<name>: " alternatives, for the C scan (ftrace_tokens)
_PLAIN = tuple(n.encode() for n in (
    [f + sfx for f in DELAY_PROBES + KERNEL_FUNCS for sfx in ("_cal", "_ret")]
    + [f + "_ret" for f in OTHER_PROBES] + list(SCHED_EVENTS) + ["rpm_" + r for r in _RPM]
    + ["funcgraph_entry", "funcgraph_exit"]))
_STAMP = re.compile(rb"# (?:suspend|freeze|standby|mem|disk|hibernate)-\d{6}-\d{6} ")
_FW = re.compile(rb"# fwsuspend (\d{1,15}) fwresume (\d{1,15})")
_ARG = re.compile(rb"\b(time|min|timeout)=(-?\d+)")
_ARG_MS = {b"time": 1.0, b"min": 1e-3}  # msleep(time) in ms, usleep_range(min, max) in us
_TS_BOUND = 1e15  # seconds; also false for nan, so a nan timestamp is skipped too
_PARENT = b", parent: "
_ERR = b", err="
_ERR0 = b", err=0"
_S, _D, _RB, _R, _F = ord("s"), ord("d"), ord("]"), ord("r"), ord("f")
_T, _UT, _P, _NL, _SP = ord("t"), ord("T"), ord("p"), ord("\n"), ord(" ")
_MARK = b"tracing_mark_write: "
_US, _C, _W = ord("_"), ord("c"), ord("w")
_CAL_RET_END = (ord("l"), ord("t"))  # "..._cal: " / "..._ret: " (suspend_resume ends "e: ")


def looks_like(head: bytes) -> bool:
    return (
        b"# tracer:" in head
        or _EVENT.search(head) is not None
        or (b"cpus=" in head[:64] and b"[0" in head)
        or ftrace_graph.looks_like(head)
    )


def parse(stream: BinaryIO, coll: Collector, threads_known: bool = True) -> None:
    """`threads_known=False`: the task column is made up (tracepoints printed into the kernel
    log by tp_printk, traces.read.dmesg): runtime PM calls pair by device."""
    asm = Assembler(coll)
    rpm = rpm_events.TextHook(coll, threads_known)  # runtime PM events, in the blocks _scan saw
    graph: ftrace_graph.GraphReader | None = None  # the function_graph tracer's files
    tc_graph = ftrace_graph.GraphReader(asm, coll)  # trace-cmd's funcgraph_entry/exit events
    carry = b""
    undecided = HEAD  # bytes left in which a function_graph header or line would show
    max_line = int(limits.LINE_BYTES.value)  # a longer "line" is binary garbage: dropped
    tokens = ftrace_tokens.scanner(_EVENT, _PLAIN)
    pairing = ftrace_tokens.pairing(_PLAIN, _DELAY_NAMES, _OTHER_RETS)
    if pairing is not None:  # the open delay calls and the threads in one: C tables
        asm.open_delays, asm.in_delay = ftrace_tokens.delay_tables()
    for block in _blocks(stream):
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
            if len(carry) > max_line:
                coll.skip(inputs.too_long_line())
                carry = b""
            continue
        carry = buf[cut + 1 :]
        if undecided > 0:
            undecided -= cut
            if ftrace_graph.looks_like(buf[:HEAD]):
                graph, undecided = ftrace_graph.GraphReader(asm, coll), 0
        if graph is not None:
            graph.scan(buf, cut + 1)
            continue
        seen = _scan(buf, cut + 1, asm, coll, tc_graph, tokens, pairing)
        if seen or not rpm.first_done:
            rpm.feed(buf, cut + 1, seen)
        # where _call_before looks when a call is not in buf
        asm.prev_block, asm.call_firsts = (buf, cut + 1, asm.call_firsts), {}
        asm.block_serial += 1
    if carry:
        # The last line has no newline: the file was probably cut mid-line. A cut start or
        # end line fails to parse and is counted as skipped; a whole one still counts.
        if undecided > 0 and ftrace_graph.looks_like(carry[:HEAD]):
            graph = ftrace_graph.GraphReader(asm, coll)
        if graph is not None:
            graph.scan(carry + b"\n", len(carry) + 1)
        else:
            seen = _scan(carry + b"\n", len(carry) + 1, asm, coll, tc_graph, tokens,
                         pairing)
            if seen or not rpm.first_done:
                rpm.feed(carry + b"\n", len(carry) + 1, seen)
    if graph is not None:
        graph.finish()
    asm.finish()
    rpm.finish()
    if asm.events == 0 and not coll.report.skipped_lines and not rpm.events:
        coll.report.notes.append("no power:device_pm_callback_* or suspend_resume events")


def _blocks(stream: BinaryIO) -> Iterator[bytes]:
    """CHUNK-sized blocks. A truncated .gz raises at its end: the blocks decoded before that
    are still yielded (read1 hands out what each step decompressed), then the error."""
    read1 = getattr(stream, "read1", None) or stream.read
    while True:
        parts: list[bytes] = []
        size = 0
        failure: BaseException | None = None
        try:
            while size < CHUNK:
                piece = read1(CHUNK - size)
                if not piece:
                    break
                parts.append(piece)
                size += len(piece)
        except (EOFError, OSError, zlib.error, inputs.LimitExceeded) as exc:
            failure = exc
        if parts:
            yield b"".join(parts)
        if failure is not None:
            raise failure
        if size < CHUNK:
            return


def _headers(buf: bytes, limit: int) -> list[tuple[int, tuple[float, float] | None]]:
    """sleepgraph header lines by position: a stamp (None) or its firmware times in us. A
    header line starts with "# "; '#' is rare elsewhere, so it is looked for alone (memchr:
    a tenth of the time of looking for "\n# ", which stops at every line)."""
    out: list[tuple[int, tuple[float, float] | None]] = []
    find = buf.find
    pos = find(b"#", 0, limit - 1)
    while pos >= 0:
        if (pos == 0 or buf[pos - 1] == _NL) and buf[pos + 1] == _SP:
            if _STAMP.match(buf, pos):
                out.append((pos, None))
            else:
                fw = _FW.match(buf, pos)
                if fw is not None:
                    out.append((pos, (int(fw.group(1)) / 1e3, int(fw.group(2)) / 1e3)))
        pos = find(b"#", pos + 1, limit - 1)
    return out


_RELEASE = re.compile(rb"(\d+)\.(\d+)")


def _stamp_version(buf: bytes, stamps: list[tuple[int, tuple[float, float] | None]],
                   ) -> tuple[int, int] | None:
    """The kernel release a sleepgraph stamp names (its last word: "6.12.48+deb13-amd64")."""
    for pos, fw in stamps:
        if fw is not None:
            continue
        end = buf.find(b"\n", pos)
        words = buf[pos : end if end >= 0 else len(buf)].split()
        m = _RELEASE.match(words[-1]) if len(words) >= 5 else None
        if m is not None:
            return int(m.group(1)), int(m.group(2))
    return None


def _scan(buf: bytes, limit: int, asm: Assembler, coll: Collector,
          graph: ftrace_graph.GraphReader, tokens: ftrace_tokens.Tokens,
          pairing: ftrace_tokens.Pairing | None = None) -> bool:
    """Read the block's PM events; True when it holds rpm_* events (read elsewhere)."""
    # sleepgraph writes one "# suspend-MMDDYY-HHMMSS host mode kernel" stamp per test; with
    # several tests in one file each stamp starts a new cycle. Stamps are rare: collect them
    # first and interleave by position.
    stamps = _headers(buf, limit)
    if stamps and coll.report.kernel_version is None:
        coll.report.kernel_version = _stamp_version(buf, stamps)
    si = 0
    next_stamp = stamps[0][0] if stamps else limit + 1
    find = buf.find
    begin = asm.begin
    end_popped = asm.end_popped
    pending = asm.pending
    pending_pop = pending.pop
    open_on_thread = asm.open_on_thread
    open_members = asm.open_members
    delay_acc = asm.delay_acc
    cycle_base, file_id = coll.cycle_base, coll.file_id
    n_samples, max_cycle = 0, -1
    tcache = asm.thread_cache
    pcache = asm.probe_fields
    open_delays = asm.open_delays
    open_kfuncs = asm.open_kfuncs
    kfunc_ids = _kfunc_ids(coll.store.delays)
    other_ids = _other_ids(coll.store.delays)
    not_delay = kfunc_ids | other_ids
    kprobe_threads = coll.store.activity.kprobe_threads
    in_delay = asm.in_delay
    delays = coll.store.delays
    ecache = asm.end_fields
    task_thread = coll.store.task_thread
    rpm = False
    ts_bound = _TS_BOUND
    # Indices into `buf` instead of slicing a payload per line: this loop runs once per PM
    # event and is what the 50 MB/s budget is spent on.
    # (the positions and the timestamp of each event: ftrace_tokens, in C when built; in C,
    # the delay kprobe lines, the callback starts and ends and the -dev probe returns on the
    # common paths of the branches below are paired there, on this state, in this order, and
    # not handed to this loop; the samples it appended are counted into `c_counted` once the
    # block is done)
    c_counted = [0, -1]
    events = tokens(buf, limit) if pairing is None else pairing(
        buf, limit, [pos for pos, _ in stamps],
        (tcache, pcache, not_delay, open_delays, in_delay, asm.delay, open_on_thread, pending,
         delay_acc, asm.activity_outside, asm, open_members, cycle_base, file_id, c_counted,
         other_ids, asm.cycles, asm.outside_acc, coll.store.activity.spans, coll.skip_many))
    for s, e, le, p, ls, ts in events:
        c = buf[s + 2]
        if c == _R and buf[s + 3] == _P:  # rpm_*: traces.rpm_events reads the block
            # (resume_console_*, rt_mutex_slowlock_ret start with "r" too)
            rpm = True
            continue
        while s > next_stamp:
            _header(asm, stamps[si][1])
            si += 1
            next_stamp = stamps[si][0] if si < len(stamps) else limit + 1
        d = c == _D  # "device_pm_callback_..." (no other event starts with "d")
        if d:  # matched to the line's end; the payload starts after "..._start: "/"_end: "
            e = s + 28 if buf[s + 21] == _S else s + 26
        if ts is None:
            coll.skip("no timestamp before the event name")
            continue
        if not -ts_bound < ts < ts_bound:  # nan, inf, 1e999: an impossible number
            coll.skip("impossible timestamp")
            continue
        if d and e == s + 28:  # device_pm_callback_start
            # the same payload recurs every cycle: split and look it up once per stage
            pl = buf[e:le]
            hit = asm.stage_cache.get(pl)
            if hit is None:
                j = pl.find(_PARENT)
                k = pl.find(b", ", j + 10)
                if j < 0 or k < 0 or not pl.endswith(b"]"):
                    coll.skip("malformed device_pm_callback_start")
                    continue
                head = pl[:j]
                found = asm.lookup(head, pl[j + 10 : k], pl[k + 2 :])
                # (the callback's key, its group, its phase): the key is the payload of its
                # end line as it comes without an error, "<driver> <device>, err=0"
                hit = asm.stage_cache[pl] = False if found is False else (
                    head + _ERR0, found[0], found[1])
            if hit is False:
                coll.skip("callback start with an unknown verb or stage")
                continue
            # the task ("kworker/u8:3-193", the suspending shell): the thread the callback
            # ran on, for the timeline and the critical path
            tb = buf[ls:p]
            try:
                tid = tcache[tb]
            except KeyError:
                tid = tcache[tb] = task_thread(_task(tb))
            key, group, phase = hit
            if phase is not asm._last_phase or key in pending:
                begin(ts, key, group, phase, tid)
                continue
            # the common case of Assembler.begin, inlined: the phase goes on, no start left
            pending[key] = (ts, group, phase, asm._last_cycle, tid)
            open_on_thread[tid] = key
        elif d:  # device_pm_callback_end
            pl = buf[e:le]
            p = pending_pop(pl, None)  # "<driver> <device>, err=0": the callback's key
            if p is None:  # an error, or no start: the key from the payload
                he = ecache.get(pl)
                if he is None:
                    j = pl.rfind(_ERR)
                    try:
                        he = ecache[pl] = (pl[:j] + _ERR0, int(pl[j + 6 :]))
                    except ValueError:
                        j = -1
                    if j < 0:
                        coll.skip("malformed device_pm_callback_end")
                        continue
                end_popped(pending_pop(he[0], None), ts, he[0], he[1])
                continue
            if p[2] not in open_members or ts < p[0] \
                    or (delay_acc and pl in delay_acc):  # delays measured in it
                end_popped(p, ts, pl, 0)
                continue
            # the common case of Assembler.end_popped, inlined (the 50 MB/s budget)
            t0, group, _, cycle, thread = p
            group.threads.append(thread)
            group.durations.append((ts - t0) * 1e6)
            group.starts.append(t0)
            group.cycles.append(cycle_base + cycle)
            group.files.append(file_id)
            n_samples += 1
            if cycle > max_cycle:
                max_cycle = cycle
        elif c == _F and buf.startswith(b"funcgraph_", s + 2):  # trace-cmd report of the graph
            tb = buf[ls:p]
            try:
                tid = tcache[tb]
            except KeyError:
                tid = tcache[tb] = task_thread(_task(tb))
            graph.entry(tid, buf[p + 1 : s], buf[e:le])
        elif c == _S and buf[s + 7] == _US and buf[s + 3] == _C:  # sched_switch/_waking
            # ("schedule_timeout_cal" has "u" there, "suspend_resume" "u" after the "s")
            _sched(buf, s, e, le, p, ts, coll, tcache)
        elif c == _T and buf.startswith(_MARK, s + 2):  # sleepgraph's test start / end
            asm.test_marker(ts, buf[e - 1] == _UT)  # "...SUSPEND START" / "...COMPLETE"
        elif buf[e - 3] in _CAL_RET_END:  # <delay>_cal: / <delay>_ret:
            tb = buf[ls:p]
            try:
                tid = tcache[tb]
            except KeyError:
                tid = tcache[tb] = task_thread(_task(tb))
            # a return's value ("arg1=0x24982c918d": udelay's cycle count) differs on every
            # line and is never read: its key ends at the ")" after the caller
            q = find(b")", e, le) + 1 if buf[e - 3] == _T else 0
            pl = buf[s + 2 : q or le]
            probe = pcache.get(pl)
            if probe is None:
                probe = _probe(pl, delays)
                if probe is None and q:  # no "(caller+" before that ")": the whole line
                    probe = _probe(buf[s + 2 : le], delays)
                elif probe is not None:
                    pcache[pl] = probe
                if probe is None:
                    coll.skip("malformed delay kprobe line")
                    continue
            if probe[1] in not_delay:
                if probe[1] in other_ids:  # a return (only those match): thread activity
                    t0 = _call_before(buf, s, probe[1], tid, asm, delays)
                    if t0 is not None and ts >= t0:
                        asm.activity(t0, ts, tid, probe[1])
                elif probe[0]:  # a kernel function (sleepgraph -dev): a step
                    open_kfuncs[(tid, probe[1])] = ts
                    kprobe_threads.add((cycle_base + asm.cycles.cycle, tid))
                else:
                    t0 = open_kfuncs.pop((tid, probe[1]), None)
                    if t0 is not None and ts >= t0:
                        asm.kfunc(delays.names[probe[1]], t0, ts, tid)
                continue
            if probe[0]:  # the call: (True, func id, requested ms)
                lost = open_delays.pop((tid, probe[1]), None)
                if lost is not None:  # its return is not in the capture: drop the call,
                    coll.skip("delay kprobe call without its return")  # not the thread
                    if not lost[2]:
                        in_delay.discard(tid)
                # a delay inside another of the same thread (schedule_timeout in msleep)
                nested = tid in in_delay
                open_delays[(tid, probe[1])] = (ts, probe[2], nested)
                if not nested:
                    in_delay.add(tid)
                continue
            opened = open_delays.pop((tid, probe[1]), None)  # the return: (False, func, caller)
            if opened is None:
                continue
            if opened[2]:  # not a delay of its own, but thread activity all the same
                if ts >= opened[0]:
                    asm.activity(opened[0], ts, tid, probe[1])
                continue
            in_delay.discard(tid)
            if ts >= opened[0]:
                asm.delay(opened[0], ts, tid, probe[1], probe[2], opened[1])
        else:  # suspend_resume: action[val] begin|end
            payload = buf[e:le]
            lb = payload.find(b"[")
            rb = payload.find(b"] ", lb)
            try:
                val = int(payload[lb + 1 : rb])
            except ValueError:
                coll.skip("malformed suspend_resume event")
                continue
            tb = buf[ls:p]
            try:
                tid = tcache[tb]
            except KeyError:
                tid = tcache[tb] = task_thread(_task(tb))
            asm.marker(ts, payload[:lb].decode("ascii", "replace"), val,
                       payload.endswith(b"begin"), tid)
    coll.counted(n_samples + c_counted[0], max(max_cycle, c_counted[1]))
    for _, fw in stamps[si:]:
        _header(asm, fw)
    return rpm


def _sched(buf: bytes, s: int, e: int, le: int, p: int, ts: float, coll: Collector,
           tcache: dict[bytes, int]) -> None:
    """One sched_switch or sched_waking line into the store's SchedLog:
    "prev_comm=a prev_pid=1 prev_prio=120 prev_state=D ==> next_comm=b next_pid=2 next_prio=120",
    "comm=a pid=1 prio=120 target_cpu=000" (a comm may hold spaces: fields found from the
    right). pid 0, the idle task, is not tracked."""
    log = coll.store.sched_log()
    pl = buf[e:le]
    try:
        if buf[s + 8] == _W:  # sched_waking
            j = pl.rfind(b" pid=")
            k = pl.find(b" ", j + 5)
            pid = int(pl[j + 5 : k if k > 0 else len(pl)])
            if j < 5 or pid == 0:
                return
            thread = coll.store.task_thread(pl[5:j].decode("utf-8", "replace") + f"-{pid}")
            tb = buf[buf.rfind(b"\n", 0, p) + 1 : p]  # the waker: the task column, as _scan
            waker = -1
            if not _in_irq(tb):
                task = _task(tb)
                if not task.endswith("-0"):  # pid 0: the idle task
                    try:
                        waker = tcache[tb]
                    except KeyError:
                        waker = tcache[tb] = coll.store.task_thread(task)
            log.woken(coll.file_id, ts, thread, waker)
            return
        j = pl.find(b" prev_pid=")
        k = pl.find(b" prev_state=", j)
        arrow = pl.find(b" ==> next_comm=", k)
        n = pl.rfind(b" next_pid=")
        if not (pl.startswith(b"prev_comm=") and 0 < j < k < arrow < n):
            coll.skip("malformed sched_switch")
            return
        prev_pid = int(pl[j + 10 : pl.find(b" ", j + 10)])
        after = pl.find(b" ", n + 10)
        next_pid = int(pl[n + 10 : after if after > 0 else len(pl)])
        state = pl[k + 12 : arrow]
        task_thread = coll.store.task_thread
        prev = task_thread(pl[10:j].decode("utf-8", "replace") + f"-{prev_pid}") \
            if prev_pid else -1
        nxt = task_thread(pl[arrow + 15 : n].decode("utf-8", "replace") + f"-{next_pid}") \
            if next_pid else -1
        log.switch(coll.file_id, ts, prev, state[:1] == b"R", nxt)
    except ValueError:
        coll.skip("malformed sched event")


def _in_irq(prefix: bytes) -> bool:
    """Whether the flags column after "[cpu]" says interrupt context ("d.h3.", "d.s3.": hard
    or soft irq; trace-cmd without flags: no)."""
    cut = prefix.rfind(b" [")
    flags = prefix[prefix.find(b"]", cut) + 1 :].split() if cut >= 0 else []
    return bool(flags) and len(flags[0]) >= 3 and flags[0][2:3] in (b"h", b"s", b"H")


def _kfunc_ids(delays: DelayColumns) -> frozenset[int]:
    return frozenset(delays.name_id(f) for f in KERNEL_FUNCS)


def _other_ids(delays: DelayColumns) -> frozenset[int]:
    return frozenset(delays.name_id(f) for f in OTHER_PROBES)


# calls of other threads (or unreturned ones) looked past per block before a return is given
# up (a bound; each search also starts only after the thread's previous return of the probe)
_CALL_LOOKBACK = 64
# the windows before a return where its call is looked for first: 4 KiB, 64 KiB, 1 MiB
_CALL_NEAR, _CALL_FAR = 4 << 10, 4 << 20


# a probe's name -> what its call lines hold (only OTHER_PROBES' names come here)
_NEEDLES: dict[str, bytes] = {}


def _call_before(buf: bytes, end: int, func: int, tid: int, asm: Assembler,
                 delays: DelayColumns) -> float | None:
    """The time of the latest "<func>_cal: " line of thread `tid` before `end` in `buf`, or
    else in the block before (sleepgraph pairs a return with its thread's open call of the
    same probe). None when neither holds it: the call is dropped with its return. The search
    goes back only to the thread's previous return of the probe (the call it returned from
    came before that: these probes do not nest) and each block's first line of the probe is
    found once: a capture of returns without their calls is read in linear time."""
    name = delays.names[func]
    needle = _NEEDLES.get(name)
    if needle is None:
        needle = _NEEDLES[name] = b": " + name.encode() + b"_cal: "
    tcache = asm.thread_cache
    serial = asm.block_serial
    mark = asm.call_marks.get((func, tid))
    asm.call_marks[(func, tid)] = (serial, end)
    searches = [(buf, end, asm.call_firsts, mark[1] if mark and mark[0] == serial else 0)]
    if mark is None or mark[0] < serial:  # the call may be in the block before
        pb, plim, pfirsts = asm.prev_block
        searches.append((pb, plim, pfirsts, mark[1] if mark and mark[0] == serial - 1 else 0))
    for b, lim, firsts, low in searches:
        # The call is nearly always shortly before its return: until the block's first call
        # line of the probe is known, it is looked for in growing windows before the return
        # (16x each time), and only past the last one is that first line found (once per
        # block: a probe whose first call comes late in a 4 MiB block made that find a third
        # of the returns' cost). The latest call in [low, lim) is the same either way.
        first = firsts.get(needle, -2)  # -2: not looked for yet
        j = -1
        if first == -2:
            w = _CALL_NEAR
            while j < 0 and w < _CALL_FAR and lim - w > low:
                j = b.rfind(needle, lim - w, lim)
                w <<= 4
            if j < 0:
                first = firsts[needle] = b.find(needle)
        if j < 0:
            low = max(low, first)
            if first < 0 or low >= lim:
                continue
            j = b.rfind(needle, low, lim)
        for _ in range(_CALL_LOOKBACK):
            if j < 0:
                break
            ls = b.rfind(b"\n", 0, j) + 1
            p = b.rfind(b" ", ls, j)
            tb = b[ls:p]
            t = tcache.get(tb)
            if t is None:
                t = tcache[tb] = asm.coll.store.task_thread(_task(tb))
            if t == tid:
                try:
                    return float(b[p + 1 : j])
                except ValueError:
                    return None
            if first == -2:
                first = firsts.get(needle, -2)
                if first == -2:
                    first = firsts[needle] = b.find(needle)
                low = max(low, first)
            j = b.rfind(needle, low, ls)
    return None


def _task(prefix: bytes) -> str:
    """"  kworker/u8:3-193   [002] d..1." (the line before its timestamp) -> the task."""
    cut = prefix.rfind(b" [")
    return (prefix[:cut] if cut >= 0 else prefix).strip().decode("utf-8", "replace")


def _header(asm: Assembler, fw: tuple[float, float] | None) -> None:
    if fw is None:
        asm.boundary()
    else:
        asm.firmware(*fw)


def _probe(payload: bytes, delays: DelayColumns) -> tuple | None:
    """A delay kprobe line from its event name on: the call ("msleep_cal: (msleep+0x0/0x40)
    time=10") -> (True, func id, requested ms or nan); the return ("msleep_ret:
    (hub_port_reset+0x3ab/0x6c0 [usbcore] <- msleep) arg1=0x0") -> (False, func id, caller
    id). Function and caller are DelayColumns.names indices."""
    colon = payload.find(b": ")
    if colon < 5:
        return None
    func = delays.name_id(payload[: colon - 4].decode("ascii", "replace"))
    if payload[colon - 3 : colon] == b"cal":
        m = _ARG.search(payload, colon)
        req = float("nan")
        if m is not None and m.group(1) in _ARG_MS:
            req = int(m.group(2)) * _ARG_MS[m.group(1)]
        return True, func, req
    p = payload.find(b"(", colon) + 1
    q = payload.find(b"+", p)
    if p <= 0 or q < 0:
        return None
    return False, func, delays.name_id(payload[p:q].decode("ascii", "replace"))
