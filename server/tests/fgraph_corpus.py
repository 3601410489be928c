"""Function-graph captures for the equivalence test of the graph reader (test_fgraph_golden.py).

No capture in ../shared/traces was recorded with `-f` (all six are `# tracer: nop`), so the real
ones are rewritten here in the function_graph tracer's form, with their real times, devices,
threads and delays: every PM event becomes a graph comment, every kprobe pair (`X_cal` ..
`X_ret: (caller+0x.. <- X)`) a call `X() {` inside its caller `caller() {` with the return's
duration. Synthetic captures add what the real ones lack: deep graphs, leaves, nested delays,
several threads interleaved, module names, the retval/no-tail/no-proc forms, irq and context
switch lines, and broken lines.

`dump(traces)` is everything an importer leaves in a TraceSet, as plain JSON: the golden file
test-fixtures/traces/fgraph_golden.json was written by the reader before its rewrite
(`python tests/fgraph_corpus.py --write`, ftrace_graph.py of commit 525d189).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from traces_helpers import FIXTURES, REPO, SHARED_TRACES  # noqa: E402

sys.path.insert(0, str(FIXTURES))
import make_fgraph as _FGRAPH  # noqa: E402  (test-fixtures/traces/make_fgraph.py)

GOLDEN = FIXTURES / "fgraph_golden.json"
DELAYS = ("msleep", "msleep_interruptible", "usleep_range", "usleep_range_state", "udelay",
          "__const_udelay", "__udelay", "mdelay", "ndelay", "__ndelay", "ssleep", "fsleep")
_EVENT = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S*\s+(\d+\.\d+): (\w+): (.*)$")
_RET = re.compile(r"\((\w+)(?:\+0x\w+/0x\w+)?(?: \[\w+\])? <- (\w+)\)")


# -- the prologue (kernel/trace/trace_functions_graph.c): the fixture generator's formatting
_duration, _proc = _FGRAPH._duration, _FGRAPH._proc


class Style:
    def __init__(self, abstime: bool = True, proc: bool = True, tail: bool = True,
                 retval: bool = False) -> None:
        self.abstime, self.proc, self.tail, self.retval = abstime, proc, tail, retval

    def line(self, ts: float, cpu: int, comm: str, pid: int, depth: int, text: str,
             dur_us: float | None = None) -> str:
        out = f"{ts:12.6f} |  " if self.abstime else ""
        out += f"{cpu:>2}) "
        if self.proc:
            out += f"{_proc(comm, pid)} | "
        out += " " * 14 if dur_us is None else _duration(dur_us)
        return out + "|  " + "  " * depth + text


# -- real captures, rewritten ------------------------------------------------------------
def convert(text: str, style: Style | None = None) -> str:
    """A nop-tracer capture (sleepgraph *_ftrace.txt) in the function_graph tracer's form."""
    style = style or Style()
    lines = text.splitlines()
    # pair each kprobe call with its return on the same task: the return names the caller
    opened: dict[tuple[str, str], list[int]] = {}
    callers: dict[int, str] = {}
    for i, ln in enumerate(lines):
        m = _EVENT.match(ln)
        if m is None:
            continue
        task, name = f"{m[1].strip()}-{m[2]}", m[5]
        if name.endswith("_cal"):
            opened.setdefault((task, name[:-4]), []).append(i)
        elif name.endswith("_ret") and opened.get((task, name[:-4])):
            r = _RET.search(m[6])
            callers[opened[(task, name[:-4])].pop()] = r[1] if r else "?"
    out: list[str] = []
    stacks: dict[str, list[tuple[str, float, bool]]] = {}  # task -> [(func, t0, own caller)]
    for i, ln in enumerate(lines):
        m = _EVENT.match(ln)
        if m is None:
            if ln.startswith("# tracer:"):
                out.append("# tracer: function_graph")
            elif ln.startswith("#"):
                out.append(ln)
            continue
        comm, pid, cpu, ts, name, payload = (m[1].strip(), int(m[2]), int(m[3]), float(m[4]),
                                              m[5], m[6])
        task = f"{comm}-{pid}"
        stack = stacks.setdefault(task, [])
        depth = len(stack)
        if name.endswith("_cal") and i in callers:
            func = name[:-4]
            caller = callers[i]
            own = caller != "?" and not (stack and stack[-1][0] == caller)
            if own:
                out.append(style.line(ts, cpu, comm, pid, depth, f"{caller}() {{"))
                stack.append((caller, ts, False))
            out.append(style.line(ts, cpu, comm, pid, len(stack), f"{func}() {{"))
            stack.append((func, ts, own))
        elif name.endswith("_ret") and stack and stack[-1][0] == name[:-4]:
            func, t0, own = stack.pop()
            tail = f" /* {func} */" if style.tail else ""
            out.append(style.line(ts, cpu, comm, pid, len(stack), "}" + tail,
                                  (ts - t0) * 1e6))
            if own:
                caller, c0, _ = stack.pop()
                tail = f" /* {caller} */" if style.tail else ""
                out.append(style.line(ts, cpu, comm, pid, len(stack), "}" + tail,
                                      (ts - c0) * 1e6))
        elif not name.endswith(("_cal", "_ret")):
            out.append(style.line(ts, cpu, comm, pid, depth + 1 if depth else 0,
                                  f"/* {name}: {payload} */"))
    return "\n".join(out) + "\n"


def real_captures() -> list[Path]:
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(SHARED_TRACES.rglob("*_ftrace.txt"))


# -- synthetic ---------------------------------------------------------------------------
_FUNCS = ["pci_pm_resume", "usb_port_resume", "hub_port_reset [usbcore]", "i2c_transfer",
          "regmap_write", "mutex_lock", "_raw_spin_lock_irqsave", "acpi_evaluate_object",
          "pm_runtime_get_sync", "rtl8169_resume [r8169]", "snd_hda_codec_write",
          "intel_dp_detect [i915]", "clk_prepare_enable", "__pm_runtime_resume"]


def synthetic(seed: int, style: Style, cycles: int = 2, devices: int = 24) -> str:
    """A capture with `devices` callbacks per phase on a synchronous thread and 3 async
    workers, each with a random call graph (delays at any depth, nested ones, leaves)."""
    rnd = random.Random(seed)
    out: list[tuple[float, int, str]] = []  # (time, order, line)
    seq = 0

    def emit(ts: float, text: str) -> None:
        nonlocal seq
        seq += 1
        out.append((ts, seq, text))

    def graph(ts: float, cpu: int, comm: str, pid: int, depth: int, budget: list[int]) -> float:
        """A random subtree; returns the time after it."""
        while budget[0] > 0 and rnd.random() < 0.8:
            budget[0] -= 1
            r = rnd.random()
            if r < 0.12:  # a delay leaf
                d = rnd.choice(("__const_udelay", "udelay", "__udelay", "ndelay", "mdelay"))
                us = rnd.uniform(0.1, 900)
                text = f"{d}();" + (" /* = 0x0 */" if style.retval else "")
                emit(ts, style.line(ts, cpu, comm, pid, depth, text, us))
                ts += us / 1e6 + 1e-6
            elif r < 0.22:  # a delay with children (and maybe a nested delay)
                d = rnd.choice(("msleep", "usleep_range_state", "ssleep", "fsleep",
                                "msleep_interruptible", "usleep_range"))
                t0 = ts
                emit(ts, style.line(ts, cpu, comm, pid, depth, f"{d}() {{"))
                ts += 1e-6
                if rnd.random() < 0.3:
                    emit(ts, style.line(ts, cpu, comm, pid, depth + 1, "msleep() {"))
                    ts += rnd.uniform(1e-4, 2e-2)
                    emit(ts, style.line(ts, cpu, comm, pid, depth + 1,
                                        "}" + (" /* msleep */" if style.tail else ""),
                                        (ts - t0) * 1e6 - 1))
                emit(ts, style.line(ts, cpu, comm, pid, depth + 1, "schedule_timeout() {"))
                ts += rnd.uniform(1e-4, 5e-2)
                emit(ts, style.line(ts, cpu, comm, pid, depth + 1, "}", (ts - t0) * 1e6 - 2))
                ts += 1e-6
                tail = f" /* {d} */" if style.tail else ""
                if style.retval:
                    tail = f" /* {d} = 0x0 */"
                emit(ts, style.line(ts, cpu, comm, pid, depth, "}" + tail, (ts - t0) * 1e6))
            elif r < 0.55:  # a leaf
                us = rnd.uniform(0.05, 40)
                emit(ts, style.line(ts, cpu, comm, pid, depth, f"{rnd.choice(_FUNCS)}();", us))
                ts += us / 1e6 + 1e-6
            else:  # a call with children
                f = rnd.choice(_FUNCS)
                t0 = ts
                emit(ts, style.line(ts, cpu, comm, pid, depth, f"{f}() {{"))
                ts = graph(ts + 1e-6, cpu, comm, pid, depth + 1, budget)
                tail = f" /* {f} */" if style.tail else ""
                emit(ts, style.line(ts, cpu, comm, pid, depth, "}" + tail, (ts - t0) * 1e6))
                ts += 1e-6
        return ts

    phases = [("dpm_suspend", 2, "", "suspend"), ("dpm_suspend_noirq", 2, "noirq ", "suspend"),
              ("dpm_resume_noirq", 16, "noirq ", "resume"), ("dpm_resume", 16, "", "resume")]
    t = 100.0
    sync = ("bash", 1000, 0)
    workers = [("kworker/u8:1", 120, 1), ("kworker/u8:2", 121, 2), ("kworker/3:1", 122, 3)]
    for _ in range(cycles):
        for marker, val, stage, verb in phases:
            emit(t, style.line(t, 0, "bash", 1000, 0, f"/* suspend_resume: {marker}[{val}] "
                                                      "begin */"))
            t += 1e-5
            ends = [t]
            free = {w: t for w in workers}
            for d in range(devices):
                who = sync if d % 3 == 0 else rnd.choice(workers)
                comm, pid, cpu = who
                start = ends[-1] if who is sync else free[who]
                head = f"drv{d % 7} dev{d}"
                emit(start, style.line(start, cpu, comm, pid, 0,
                                       f"/* device_pm_callback_start: {head}, parent: "
                                       f"pci0000:00, {stage}bus [{verb}] */"))
                ts = graph(start + 1e-6, cpu if rnd.random() < 0.8 else cpu + 4, comm, pid, 0,
                           [rnd.randint(0, 30)])
                emit(ts, style.line(ts, cpu, comm, pid, 0,
                                    f"/* device_pm_callback_end: {head}, err=0 */"))
                if who is sync:
                    ends.append(ts + 1e-6)
                else:
                    free[who] = ts + 1e-6
                if rnd.random() < 0.05:  # an irq on the worker, a context switch
                    emit(ts, style.line(ts, cpu, comm, pid, 0, "==========> |")
                         .replace("|               |  ", "| "))
                    emit(ts, " ------------------------------------------")
            t = max([*ends, *free.values()]) + 1e-4
            emit(t, style.line(t, 0, "bash", 1000, 0, f"/* suspend_resume: {marker}[{val}] "
                                                      "end */"))
            t += 1e-3
        t += 2.0
    out.sort()
    head = ("# suspend-112326-013000 testhost mem 6.12.0-fg\n# tracer: function_graph\n#\n"
            "#     TIME        CPU    TASK/PID        DURATION                  FUNCTION CALLS\n")
    return head + "".join(x + "\n" for _, _, x in out)


def _bench(cycles: int, devices: int) -> str:
    """bench/bench_traces.py --graph's capture, small."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("bench_traces",
                                                  REPO / "bench" / "bench_traces.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_ftrace.txt"
        mod.write_fgraph(path, cycles, devices)
        return path.read_text()


def broken(text: str, seed: int) -> str:
    """Lines cut anywhere, lost, or garbage (a buffer overrun, a truncated copy)."""
    rnd = random.Random(seed)
    lines = text.splitlines()
    for _ in range(len(lines) // 40 + 3):
        i = rnd.randrange(4, len(lines))
        r = rnd.random()
        if r < 0.4:
            lines[i] = lines[i][: rnd.randrange(len(lines[i]) + 1)]
        elif r < 0.7:
            lines[i] = ""
        elif r < 0.85:
            lines[i] = lines[i].replace("() {", "() ").replace("();", "(")
        else:
            lines[i] = "\x00garbage | 7) |" + lines[i][5:]
    return "\n".join(lines)  # and the last line has no newline


def corpus() -> dict[str, str]:
    """name -> capture text (the real ones only when ../shared is there)."""
    out: dict[str, str] = {}
    for i, style in enumerate((Style(), Style(tail=False), Style(proc=False),
                               Style(retval=True), Style(abstime=False))):
        text = synthetic(10 + i, style)
        out[f"synthetic-{i}"] = text
        out[f"synthetic-{i}-broken"] = broken(text, 20 + i)
    out["synthetic-crlf"] = synthetic(30, Style()).replace("\n", "\r\n")
    out["fixture"] = (FIXTURES / "sleepgraph_fgraph_ftrace.txt").read_text()
    out["bench"] = _bench(cycles=2, devices=60)
    for p in real_captures():
        text = p.read_text(errors="replace")
        out[f"real:{p.relative_to(SHARED_TRACES)}"] = convert(text)
        out[f"real:{p.relative_to(SHARED_TRACES)}:no-proc"] = convert(text, Style(proc=False))
    return out


# -- what an importer produced ------------------------------------------------------------
def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def dump(ts) -> dict:  # noqa: ANN001 - TraceSet
    """Everything the import left, exact: `digest` is over all of it (every sample's float
    as repr); the rest is a readable summary of the same, for a failure message."""
    store = ts.store
    full = []
    phases: dict[str, list] = {}  # phase -> callbacks, samples, total us
    for key, g in sorted(store.groups.items()):
        threads = [store.threads[i] if i >= 0 else None for i in g.threads]
        full.append([key, list(g.durations), [_num(x) for x in g.starts], list(g.cycles),
                     threads, sorted(g.errors.items())])
        row = phases.setdefault(key[3], [0, 0, 0.0])
        row[0] += 1
        row[1] += len(g.durations)
        row[2] = round(row[2] + sum(g.durations), 3)
    dl = store.delays
    delays = []
    for i in range(len(dl)):
        owner = dl.owners[i]
        delays.append([owner.key if owner else None, dl.samples[i],
                       store.threads[dl.threads[i]], dl.cycles[i], dl.names[dl.funcs[i]],
                       dl.names[dl.callers[i]], _num(dl.requested[i]), dl.calls[i],
                       dl.totals[i], dl.firsts[i], dl.lasts[i]])
    files = [{"format": r.format, "samples": r.samples, "cycles": r.cycles,
              "skipped_lines": r.skipped_lines, "incomplete": r.incomplete,
              "unmatched_ends": r.unmatched_ends, "error": r.error, "notes": r.notes,
              "skip_reasons": dict(sorted(r.skip_reasons.items()))} for r in ts.files]
    rest = {"phase_times": [[p.phase, p.cycle, p.wall_us, p.measured, _num(p.start), p.thread]
                            for p in store.phase_times],
            "steps": [[s.cycle, s.name, s.val, s.start, s.end, s.thread] for s in store.steps],
            "firmware": [[f.cycle, f.suspend_us, f.resume_us] for f in store.firmware],
            "delays": sorted(delays, key=json.dumps), "threads": store.threads}
    text = json.dumps([files, full, rest], sort_keys=True)
    return {"files": files, "phases": dict(sorted(phases.items())), "delays": len(delays),
            "delay_calls": sum(d[7] for d in delays),
            "delay_us": round(sum(d[8] for d in delays), 3),
            "digest": hashlib.sha256(text.encode()).hexdigest()}


def load_dump(name: str, text: str, tmp: Path) -> dict:
    from dpmlens.traces import load_traces

    path = tmp / f"{name.replace(':', '_').replace('/', '_')}_ftrace.txt"
    path.write_bytes(text.encode())
    return json.loads(json.dumps(dump(load_traces([path]))))


def main() -> None:
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: fgraph_corpus.py --write   (with the reader the golden file records)")
    with tempfile.TemporaryDirectory() as tmp:
        golden = {name: load_dump(name, text, Path(tmp)) for name, text in corpus().items()}
    GOLDEN.write_text(json.dumps(golden, sort_keys=True, indent=1) + "\n")
    print(f"{GOLDEN}: {len(golden)} captures, {GOLDEN.stat().st_size} bytes")


if __name__ == "__main__":
    main()
