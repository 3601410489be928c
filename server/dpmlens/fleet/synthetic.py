"""A fleet made from one real capture, with known injected changes (tests and benchmarks).

From a real sleepgraph/ftrace capture (`../shared/traces/`), every synthetic cycle is a copy
of its text with each callback's duration multiplied by per-host speed and per-cycle noise
(log-normal), and with the injected effects: a device slower by a fixed amount from one kernel
on, a device failing (err=-110) with some probability from one kernel on, a device changed by
less than the noise. Only callback end timestamps move (the capture is async: shifting all
later lines would lengthen the callbacks running beside it), so the phases keep their walls.
Header stamps say the host, kernel and date, so `fleet ingest` reads them as real captures.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

_EVENT = re.compile(r"^(.*?\s)(\d+\.\d+): (device_pm_callback_start|device_pm_callback_end): "
                    r"(.*)$")
_STAMP = re.compile(r"^# suspend-\d{6}-\d{6} \S+ (\S+) \S+")


@dataclass(frozen=True)
class Effect:
    head: str  # "<driver> <device>" as the capture prints it: "i915 0000:00:02.0"
    phase: str  # prepare, suspend, suspend_late, suspend_noirq, resume_noirq, resume_early, resume
    from_kernel: str
    add_us: float = 0.0  # added to the duration
    fail_rate: float = 0.0  # probability of err=-110


@dataclass
class Fleet:
    kernels: list[str]  # in release order
    hosts: int
    cycles_per_host_kernel: int
    effects: list[Effect] = field(default_factory=list)
    noise: float = 0.10  # sd of the log-normal per-callback factor
    host_spread: float = 0.05  # sd of the per-host speed factor
    seed: int = 1


def _phase(start_text: str) -> str:
    direction = "resume" if "[resume]" in start_text else "suspend"
    info = start_text.rsplit(",", 1)[-1]
    if "preparing" in info:
        return "prepare"
    if "completing" in info:
        return "complete"
    if "noirq" in info:
        return direction + "_noirq"
    if "late" in info:
        return "suspend_late"
    if "early" in info:
        return "resume_early"
    return direction


class Template:
    """A capture's lines with its callbacks paired (start line, end line, head, phase)."""

    def __init__(self, path: Path) -> None:
        self.lines = path.read_text(errors="replace").splitlines()
        self.callbacks: list[tuple[int, int, float, float, str, str]] = []
        open_: dict[str, tuple[int, float, str]] = {}
        for i, line in enumerate(self.lines):
            m = _EVENT.match(line)
            if not m:
                continue
            ts, ev, rest = float(m.group(2)), m.group(3), m.group(4)
            head = rest.split(",", 1)[0].strip()
            if ev == "device_pm_callback_start":
                open_[head] = (i, ts, _phase(rest))
            elif head in open_:
                si, st, ph = open_.pop(head)
                self.callbacks.append((si, i, st, ts, head, ph))

    def render(self, host: str, kernel: str, when: datetime, factor: dict[int, float],
               add: dict[int, float], fail: set[int]) -> str:
        out = list(self.lines)
        for k, (_si, ei, st, et, _head, _ph) in enumerate(self.callbacks):
            dur = (et - st) * factor.get(k, 1.0) + add.get(k, 0.0) / 1e6
            m = _EVENT.match(out[ei])
            assert m is not None
            rest = m.group(4)
            if k in fail:
                rest = re.sub(r"err=-?\d+", "err=-110", rest)
            out[ei] = f"{m.group(1)}{st + max(dur, 1e-6):.6f}: {m.group(3)}: {rest}"
        stamp = f"# suspend-{when:%m%d%y-%H%M%S} {host} mem {kernel}"
        for i, line in enumerate(out[:5]):
            if _STAMP.match(line):
                out[i] = stamp
                break
        else:
            out.insert(0, stamp)
        return "\n".join(out) + "\n"


def generate(template: Path, fleet: Fleet, out: Path) -> int:
    """Write host-*/KERNEL-N/..._ftrace.txt captures under `out`; returns how many."""
    tpl = Template(template)
    rng = random.Random(fleet.seed)
    order = {k: i for i, k in enumerate(fleet.kernels)}
    n = 0
    start = datetime(2026, 1, 5, 9, 0, 0)
    name = template.name if template.name.endswith("_ftrace.txt") else "capture_ftrace.txt"
    targets = {}
    for e in fleet.effects:
        idx = [k for k, c in enumerate(tpl.callbacks) if c[4] == e.head and c[5] == e.phase]
        if not idx:
            raise ValueError(f"{template}: no {e.phase} callback of {e.head!r} to inject into")
        targets[e] = idx
    for h in range(fleet.hosts):
        host = f"host{h:03d}"
        speed = rng.lognormvariate(0.0, fleet.host_spread)
        for ki, kernel in enumerate(fleet.kernels):
            d = out / host / kernel
            d.mkdir(parents=True, exist_ok=True)
            for c in range(fleet.cycles_per_host_kernel):
                factor = {k: speed * rng.lognormvariate(0.0, fleet.noise)
                          for k in range(len(tpl.callbacks))}
                add: dict[int, float] = {}
                fail: set[int] = set()
                for e, idx in targets.items():
                    if order[kernel] < order[e.from_kernel]:
                        continue
                    for k in idx:
                        add[k] = add.get(k, 0.0) + e.add_us
                        if e.fail_rate and rng.random() < e.fail_rate:
                            fail.add(k)
                when = start + timedelta(days=7 * ki, minutes=h * 60 + c)
                text = tpl.render(host, kernel, when, factor, add, fail)
                (d / f"c{c:04d}_{name}").write_text(text)
                n += 1
    return n


def default_fleet(kernels: list[str] | None = None, hosts: int = 6, cycles: int = 100) -> Fleet:
    """The test fleet over skynet_mem_ftrace.txt (kernel 3.15, 341 callbacks): i915 resume
    +30 ms from the second kernel, r8169 resume failing 2% from the third, snd_hda_intel
    suspend +0.3 ms (its noise is ~3 ms) from the second."""
    ks = kernels or ["6.9.0", "6.10.0", "6.11.0"]
    return Fleet(ks, hosts, cycles, [
        Effect("i915 0000:00:02.0", "resume", ks[1], add_us=30_000),
        Effect("r8169 0000:02:00.0", "resume", ks[-1], fail_rate=0.02),
        Effect("snd_hda_intel 0000:00:1b.0", "suspend", ks[1], add_us=300),
    ])


def shared_template(name: str = "pm-graph-3.15/skynet_mem_ftrace.txt") -> Path | None:
    """A real capture in ../shared/traces (None when ../shared is absent)."""
    here = Path(__file__).resolve()
    for base in [Path(os.environ.get("DPMLENS_SHARED", ""))] + [p / "shared"
                                                                  for p in here.parents]:
        p = base / "traces" / name
        if str(base) and p.is_file():
            return p
    return None
