"""ftrace text written by the function_graph tracer (sleepgraph -f, `current_tracer` set to
function_graph): call graphs, with the PM trace events as comments in them.

Each line is a prologue then the graph column (kernel/trace/trace_functions_graph.c,
print_graph_prologue / print_graph_duration; sleepgraph's ftrace_line_fmt_fg):
  [abstime |  ] cpu) [comm-pid | ] [mark] [duration us] |  <indent><graph>
  550.702789 |   0)  kworker-123  |               |      hub_port_reset() {
  550.702801 |   0)  kworker-123  |               |        msleep() {
  550.752950 |   0)  kworker-123  | * 50149.00 us |        } /* msleep */
  550.752960 |   0)  kworker-123  |   2.480 us    |        __const_udelay();
  550.702700 |   0)  kworker-123  |               |  /* device_pm_callback_start: ... */
`funcgraph-abstime`, `funcgraph-proc` and the duration are options; the mark (+ ! # * @ $)
exists with `funcgraph-overhead`, the `/* msleep */` after a return with `funcgraph-tail`.
A call's start is its line's time ("msleep() {", a leaf "udelay();"), a return's line has
the end. Per thread (comm-pid, else the CPU) the last call opened at each depth is kept:
the one a depth above a delay call is its caller.

Such files are read by this module instead of ftrace._scan (the reader decides per file),
so a trace without function graph lines pays nothing for it. `trace-cmd report` prints the
graph as events ("task-pid [cpu] time: funcgraph_entry:  0.123 us |  udelay();"): ftrace._scan
finds them with the PM events and hands their graph column to GraphReader.entry().
"""

from __future__ import annotations

import re

from dpmlens.traces.model.sample import Collector
from dpmlens.traces.read.events import Assembler

# The delay functions as the graph names them -> the name a delay site uses (the kprobe
# form's names: udelay()/mdelay()/ndelay() are macros reaching __const_udelay/__udelay/
# __ndelay; usleep_range() is an inline calling usleep_range_state() since 5.17).
DELAY_FUNCS = {
    b"msleep": "msleep", b"msleep_interruptible": "msleep_interruptible",
    b"usleep_range": "usleep_range", b"usleep_range_state": "usleep_range",
    b"udelay": "udelay", b"__const_udelay": "udelay", b"__udelay": "udelay",
    b"mdelay": "mdelay", b"ndelay": "ndelay", b"__ndelay": "ndelay",
    b"ssleep": "ssleep", b"fsleep": "fsleep",
}
NAN = float("nan")  # one object: the (func, caller, requested) keys of a site compare equal
UNKNOWN_CALLER = "?"

# abstime, cpu, optional comm-pid (no "|" in it), duration column, the graph column. The
# proc group is tried first and gives way when what follows is not a duration column.
_LINE = re.compile(
    rb" *(?:(\d+\.\d+) \| +)?(\d+)\) (?:([^|]*?) \| )?"
    rb"(?:[+!#*@$] )? *(?:(\d+(?:\.\d+)?) us)? *\|  ( *)(.*?)\r?")
# trace-cmd report: "funcgraph_entry:        7.076 us   |  __math_state_restore();"
_TC_PAYLOAD = re.compile(rb" *(?:[+!#*@$] )? *(?:(\d+(?:\.\d+)?) us)? *\|  ( *)(.*?)\r?")
_STAMP = re.compile(rb"# (?:suspend|freeze|standby|mem|disk|hibernate)-\d{6}-\d{6} ")
_FW = re.compile(rb"# fwsuspend (\d{1,15}) fwresume (\d{1,15})")
_PROLOGUE = re.compile(rb"\n *(?:\d+\.\d+ \| +)?\d+\) .*\|  ")
_PARENT = b", parent: "
_ERR = b", err="
_TS_BOUND = 1e15
_DUR_BOUND = 1e6  # seconds: a delay of 11 days is no measurement


def looks_like(head: bytes) -> bool:
    """A function_graph capture: its tracer header, else graph lines without one."""
    if b"# tracer: " in head:
        return b"# tracer: function_graph" in head
    return _PROLOGUE.search(head) is not None


class GraphReader:
    """State kept across the blocks of one file."""

    def __init__(self, asm: Assembler, coll: Collector) -> None:
        self.asm = asm
        self.coll = coll
        self.threads: dict[bytes, int] = {}  # comm-pid (or "CPU n") -> SampleStore thread
        self.opens: dict[int, dict[int, bytes]] = {}  # thread -> indent -> last call there
        self.in_delay: dict[int, tuple[int, str, float, str]] = {}  # indent, func, t0, caller
        self.untimed = 0  # delay calls without funcgraph-abstime: no time, no callback
        self.untimed_us = 0.0
        self.kinds: dict[bytes, tuple] = {}  # line shape -> _classify()
        self.state: dict[bytes, tuple[int, dict[int, bytes]]] = {}  # task -> (thread, opens)
        self.comments: dict[bytes, tuple] = {}  # comment -> _parse_comment()
        self.started: dict[bytes, tuple] = {}  # a start's comment -> (stage, asm.lookup())
        self.callers: dict[bytes, str] = {}  # a graph's function name -> a delay's caller
        self.site_ids: dict[tuple[str, str], tuple[int, int]] = {}  # DelayColumns.names ids

    def scan(self, buf: bytes, limit: int) -> None:
        """A block of the function_graph tracer's own text.

        A line's form is decided once per *shape*: the line with every digit made 0
        (`bytes.translate`, the same length). The line regex and every test on the graph
        column give the same answer for a digit and for 0, so the shape decides whether the
        line is a graph line, where its fields are and what kind it is; most lines of a graph
        repeat a shape (the same thread, depth and function, other times and pids). The
        values (task, time, duration, name) are then sliced from the line itself."""
        text = buf[:limit]
        kinds = self.kinds
        if len(kinds) > _MAX_SHAPES:  # flat memory on a file of ever new shapes
            kinds.clear()
        state = self.state
        in_delay = self.in_delay
        OTHER, OPEN, RETURN, LEAF, COMMENT, NODE, DCALL, DLEAF = _KINDS  # noqa: N806
        C_START, C_END = _C_START, _C_END  # noqa: N806
        comments = self.comments
        started = self.started
        asm = self.asm
        pending_pop = asm.pending.pop
        for line, shape in zip(text.split(b"\n"), text.translate(_ZERO).split(b"\n"),
                               strict=True):
            v = kinds.get(shape)
            if v is None:
                v = kinds[shape] = _classify(shape)
            kind = v[0]
            if kind == OTHER:
                self._other(line)
                continue
            st = state.get(line[v[1]])  # the task (comm-pid), else the CPU
            if st is None:
                st = self._state(line, v)
            if kind == OPEN:  # a call of a function that is no delay: most of a graph
                st[1][v[2]] = line[v[3]]
            elif kind == RETURN:
                if in_delay and st[0] in in_delay:
                    tid = st[0]
                    opened = in_delay[tid]
                    if opened[0] == v[2] and v[4] and v[5]:  # _return()'s common case
                        ts = float(line[v[4]])
                        if -_TS_BOUND < ts < _TS_BOUND:
                            del in_delay[tid]
                            self._delay(opened[1], opened[3], ts - float(line[v[5]]) / 1e6, ts,
                                        tid)
                            continue
                    self._return(v[2], self._time(line[v[4]] if v[4] else None),
                                 line[v[5]] if v[5] else None, tid)
            elif kind == LEAF:  # a call of a function that is no delay, on one line
                continue
            elif kind == COMMENT:
                body = line[v[3]]
                parsed = comments.get(body)
                if parsed is None or not v[4]:
                    self._comment(body, self._time(line[v[4]] if v[4] else None), st[0])
                    continue
                ts = float(line[v[4]])
                if not -_TS_BOUND < ts < _TS_BOUND:
                    self._comment(body, self._time(line[v[4]]), st[0])
                elif parsed[0] == C_START:  # asm.start(), looked up once per marker stage
                    hit = started.get(body)
                    if hit is None or hit[0] != asm.marker_stage:
                        hit = started[body] = (asm.marker_stage,
                                               asm.lookup(parsed[1], parsed[2], parsed[3]))
                    if hit[1] is False:
                        self.coll.skip("callback start with an unknown verb or stage")
                    else:
                        asm.begin(ts, parsed[1], hit[1][0], hit[1][1], st[0])
                elif parsed[0] == C_END:  # asm.end()
                    asm.end_popped(pending_pop(parsed[1], None), ts, parsed[1], parsed[2])
                else:
                    self._comment(body, ts, st[0])
            elif kind == DCALL:  # node()'s "() {" of a delay function
                tid, opens = st
                opens[v[2]] = line[v[3]]
                if tid not in in_delay or self._outside_delay(tid, v[2]):
                    ts = self._time(line[v[4]] if v[4] else None)
                    in_delay[tid] = (v[2], v[7], NAN if ts is None else ts,
                                     self._caller_in(opens, v[2]))
            elif kind == DLEAF:  # node()'s "();" of a delay function
                tid = st[0]
                if tid not in in_delay or self._outside_delay(tid, v[2]):
                    caller = self._caller_in(st[1], v[2])
                    if v[4] and v[5]:  # _leaf()'s common case
                        ts = float(line[v[4]])
                        if -_TS_BOUND < ts < _TS_BOUND:
                            self._delay(v[7], caller, ts, ts + float(line[v[5]]) / 1e6, tid)
                            continue
                    self._leaf(v[7], caller, self._time(line[v[4]] if v[4] else None),
                               line[v[5]] if v[5] else None, tid)
            else:
                self.node(st[0], line[v[4]] if v[4] else None, line[v[5]] if v[5] else None,
                          v[2], line[v[3]])

    def _state(self, line: bytes, v: tuple) -> tuple[int, dict[int, bytes]]:
        """The thread of a task (or CPU) seen for the first time: its id and open calls."""
        key = line[v[1]]
        tid = self.threads.get(key)
        if tid is None:
            name = (key.strip() if v[6] else b"CPU " + key).decode("utf-8", "replace")
            store = self.coll.store
            tid = self.threads[key] = store.task_thread(name) if v[6] else store.thread_id(name)
        opens = self.opens.get(tid)
        if opens is None:
            opens = self.opens[tid] = {}
        st = self.state[key] = (tid, opens)
        return st

    def entry(self, tid: int, t: bytes, payload: bytes) -> None:
        """`trace-cmd report`'s form, from ftrace._scan: the text after "funcgraph_entry: " or
        "funcgraph_exit: " (the task and time are the line's)."""
        m = _TC_PAYLOAD.fullmatch(payload)
        if m is None:
            self.coll.skip("malformed funcgraph_entry/exit event")
            return
        dur, pad, body = m.groups()
        self.node(tid, t, dur, len(pad), body)

    def node(self, tid: int, t: bytes | None, dur: bytes | None, indent: int,
             body: bytes) -> None:
        """One graph column: the cheapest test first (calls and returns of other functions
        are most of a graph); times are converted only where needed."""
        if body[-1:] == b"{" and body.endswith(b"() {"):
            name = body[:-4]
            opens = self.opens.get(tid)
            if opens is None:
                opens = self.opens[tid] = {}
            opens[indent] = name
            func = DELAY_FUNCS.get(name)
            if func is not None and self._outside_delay(tid, indent):
                ts = self._time(t)
                self.in_delay[tid] = (indent, func, NAN if ts is None else ts,
                                      self._caller(tid, indent))
        elif body[:1] == b"}":
            if tid in self.in_delay:
                self._return(indent, self._time(t), dur, tid)
        elif body.endswith(b"();"):
            func = DELAY_FUNCS.get(body[:-3])
            if func is not None and self._outside_delay(tid, indent):
                self._leaf(func, self._caller(tid, indent), self._time(t), dur, tid)
        elif body.startswith(b"/* "):
            self._comment(body, self._time(t), tid)
        elif b"(); /* = " in body:  # a leaf with funcgraph-retval
            func = DELAY_FUNCS.get(body[: body.index(b"();")])
            if func is not None and self._outside_delay(tid, indent):
                self._leaf(func, self._caller(tid, indent), self._time(t), dur, tid)
        else:
            self.coll.skip("malformed function_graph line")

    def _thread(self, proc: bytes | None, cpu: bytes) -> int:
        name = (proc.strip() if proc else b"CPU " + cpu).decode("utf-8", "replace")
        store = self.coll.store
        tid = self.threads[proc or cpu] = (store.task_thread(name) if proc
                                           else store.thread_id(name))
        return tid

    def _time(self, t: bytes | None) -> float | None:
        """The line's abstime; None without one, nan (counted as skipped) when it is
        impossible (1e999)."""
        if t is None:
            return None
        ts = float(t)
        if not -_TS_BOUND < ts < _TS_BOUND:
            self.coll.skip("impossible timestamp")
            return NAN
        return ts

    def finish(self) -> None:
        if self.untimed:
            self.coll.report.notes.append(
                f"{self.untimed} delay call(s) ({self.untimed_us / 1000:.2f} ms) in "
                "function_graph lines without timestamps (record with funcgraph-abstime): not "
                "attributed to callbacks")

    # -- lines ---------------------------------------------------------------------------
    def _other(self, line: bytes) -> None:
        """A line that is no graph line: headers, stamps, context switches, or broken."""
        s = line.strip()
        # context switch "------" / " 1)  kworker-1  =>  bash-2", irq entry "==========>"
        # and exit "<==========", "(Overruns: 0)" (funcgraph-overrun)
        if not s or s.startswith((b"-----", b"(Overruns")) or b"=>" in s or b"<==" in s:
            return
        if s.startswith(b"#"):
            if _STAMP.match(line):
                self.asm.boundary()
            else:
                fw = _FW.match(line)
                if fw is not None:
                    self.asm.firmware(int(fw.group(1)) / 1e3, int(fw.group(2)) / 1e3)
            return
        self.coll.skip("malformed function_graph line")

    def _caller(self, tid: int, indent: int) -> str:
        opens = self.opens.get(tid)
        return UNKNOWN_CALLER if opens is None else self._caller_in(opens, indent)

    def _caller_in(self, opens: dict[int, bytes], indent: int) -> str:
        """The function open one depth above (the thread's open calls)."""
        name = opens.get(indent - 2)
        if name is None:
            return UNKNOWN_CALLER
        caller = self.callers.get(name)
        if caller is None:
            if len(self.callers) > _MAX_SHAPES:
                self.callers.clear()
            cut = name.find(b" [")  # "hub_port_reset [usbcore]"
            caller = self.callers[name] = (name[:cut] if cut >= 0 else name).decode(
                "ascii", "replace")
        return caller

    def _outside_delay(self, tid: int, indent: int) -> bool:
        """No delay call of the thread is open around this depth (ssleep -> msleep is one
        delay). One whose return was lost (a buffer overrun) is given up when the graph is
        back at its depth."""
        opened = self.in_delay.get(tid)
        if opened is None:
            return True
        if indent > opened[0]:
            return False
        del self.in_delay[tid]
        self.coll.skip("function_graph delay call without its return")
        return True

    def _return(self, indent: int, ts: float | None, dur: bytes | None, tid: int) -> None:
        opened = self.in_delay.get(tid)
        if opened is None or opened[0] < indent:
            return
        if opened[0] > indent:
            del self.in_delay[tid]
            self.coll.skip("function_graph delay call without its return")
            return
        del self.in_delay[tid]
        if ts != ts:
            return
        if ts is None:
            self._untimed(dur)
        elif dur is not None:  # the return's line has the end; the duration gives the start
            d = float(dur) / 1e6
            self._delay(opened[1], opened[3], ts - d, ts, tid)
        elif opened[2] == opened[2]:  # no duration column: from the call's line
            self._delay(opened[1], opened[3], opened[2], ts, tid)
        else:
            self.coll.skip("function_graph delay call without a duration")

    def _leaf(self, func: str, caller: str, ts: float | None, dur: bytes | None,
              tid: int) -> None:
        if ts is None:
            self._untimed(dur)
        elif ts != ts:
            return
        elif dur is None:
            self.coll.skip("function_graph delay call without a duration")
        else:
            self._delay(func, caller, ts, ts + float(dur) / 1e6, tid)

    def _untimed(self, dur: bytes | None) -> None:
        d = float(dur) if dur is not None else 0.0
        if not d < _DUR_BOUND * 1e6:
            self.coll.skip("impossible duration")
            return
        self.untimed += 1
        self.untimed_us += d

    def _delay(self, func: str, caller: str, t0: float, t1: float, tid: int) -> None:
        if not -_DUR_BOUND < t1 - t0 < _DUR_BOUND:  # inf, nan, 400 digits of "us": no delay
            self.coll.skip("impossible duration")
            return
        key = (func, caller)
        fc = self.site_ids.get(key)
        if fc is None:  # names are numbered at a site's first delay, the function first
            ids = self.coll.store.delays.name_id
            fc = self.site_ids[key] = (ids(func), ids(caller))
        self.asm.delay(t0, t1, tid, fc[0], fc[1], NAN)

    def _comment(self, body: bytes, ts: float | None, tid: int) -> None:
        """`/* event: payload */`: the PM events (the others are not read)."""
        parsed = self.comments.get(body)
        if parsed is None:
            if len(self.comments) > _MAX_SHAPES:
                self.comments.clear()
                self.started.clear()
            parsed = self.comments[body] = _parse_comment(body)
        what = parsed[0]
        if what == _C_IGNORE:
            return
        if what == _C_TRUNCATED:
            self.coll.skip("truncated function_graph comment")
            return
        if ts is None:
            self.coll.skip("PM event without a timestamp (record with funcgraph-abstime)")
            return
        if ts != ts:
            return
        if what == _C_START:
            self.asm.start(ts, parsed[1], parsed[2], parsed[3], tid)
        elif what == _C_END:
            self.asm.end(ts, parsed[1], parsed[2])
        elif what == _C_MARKER:
            self.asm.marker(ts, parsed[1], parsed[2], parsed[3], tid)
        else:
            self.coll.skip(parsed[1])


# A line's kind (GraphReader.scan); a comment's (_parse_comment)
_KINDS = _OTHER, _OPEN, _RETURN, _LEAF, _COMMENT, _NODE, _DCALL, _DLEAF = range(8)
_C_IGNORE, _C_TRUNCATED, _C_START, _C_END, _C_MARKER, _C_MALFORMED = range(6)
_ZERO = bytes.maketrans(b"123456789", b"000000000")
_MAX_SHAPES = 50_000  # per cache: a few MB at most


def _classify(shape: bytes) -> tuple:
    """A line's shape -> (kind, ) for no graph line, else (kind, the task's slice (comm-pid,
    else the CPU), indent, the body's slice (the name's for a call), the time's slice, the
    duration's slice (None: not printed), the task is comm-pid, the delay function for
    _DCALL/_DLEAF). The tests are GraphReader.node()'s, in its order."""
    m = _LINE.fullmatch(shape)
    if m is None:
        return (_OTHER,)
    b0, b1 = m.span(6)
    body = shape[b0:b1]
    func = None
    if body[:1] == b"}":
        kind = _RETURN
    elif body[-1:] == b"{" and body.endswith(b"() {"):
        func = DELAY_FUNCS.get(body[:-4])  # no digit in a delay's name: the shape's is the line's
        kind = _OPEN if func is None else _DCALL
        b1 -= 4
    elif body.endswith(b"();"):
        func = DELAY_FUNCS.get(body[:-3])
        kind = _LEAF if func is None else _DLEAF
    elif body.startswith(b"/* "):
        kind = _COMMENT
    else:
        kind = _NODE
    proc = m.end(3) > m.start(3)  # "proc or cpu": a task when one is printed
    t = slice(*m.span(1)) if m.start(1) >= 0 else None
    dur = slice(*m.span(4)) if m.start(4) >= 0 else None
    return (kind, slice(*m.span(3 if proc else 2)), m.end(5) - m.start(5), slice(b0, b1), t,
            dur, proc, func)


def _parse_comment(body: bytes) -> tuple:
    """A graph comment -> (_C_*, fields): what GraphReader._comment does with it."""
    if not body.endswith(b" */"):
        return (_C_TRUNCATED,)
    name, sep, pl = body[3:-3].partition(b": ")
    if not sep or name not in (b"device_pm_callback_start", b"device_pm_callback_end",
                               b"suspend_resume"):
        return (_C_IGNORE,)
    if name == b"device_pm_callback_start":
        j = pl.find(_PARENT)
        k = pl.find(b", ", j + 10)
        if j < 0 or k < 0 or not pl.endswith(b"]"):
            return (_C_MALFORMED, "malformed device_pm_callback_start")
        return (_C_START, pl[:j], pl[j + 10 : k], pl[k + 2 :])
    if name == b"device_pm_callback_end":
        j = pl.rfind(_ERR)
        try:
            err = int(pl[j + 6 :])
        except ValueError:
            j = -1
        if j < 0:
            return (_C_MALFORMED, "malformed device_pm_callback_end")
        return (_C_END, pl[:j], err)
    pl = pl.lstrip(b" ")
    lb = pl.find(b"[")
    rb = pl.find(b"] ", lb)
    try:
        val = int(pl[lb + 1 : rb])
    except ValueError:
        return (_C_MALFORMED, "malformed suspend_resume event")
    return (_C_MARKER, pl[:lb].decode("ascii", "replace"), val, pl.endswith(b"begin"))
