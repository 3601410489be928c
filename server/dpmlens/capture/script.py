"""The capture script (capture.sh beside this module) with the user's options filled in.

The script runs on the target under any POSIX sh (busybox ash included); these options become
its defaults, and each can still be changed there with a flag (`sh capture.sh -n 20`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, fields
from importlib import resources

from dpmlens import __version__

MODES = ("mem", "freeze")
MEM_SLEEPS = ("", "deep", "s2idle")
WAKERS = ("auto", "rtcwake", "alarm", "none")


@dataclass(frozen=True)
class Options:
    cycles: int = 10
    mode: str = "mem"
    mem_sleep: str = ""  # leave /sys/power/mem_sleep as it is
    wake: int = 10  # seconds until the RTC alarm
    idle: int = 3  # seconds between cycles
    waker: str = "auto"
    kprobes: bool = True
    sched: bool = True
    buffer_kb: int = 0  # per CPU; 0: from the cycles and the free memory
    archive: str = ""  # where the script writes the .tar.gz; "": ./dpmlens-capture-HOST-DATE

    def problems(self) -> list[str]:
        out = []
        if self.cycles < 1:
            out.append(f"--cycles {self.cycles}: at least 1")
        if self.mode not in MODES:
            out.append(f"--mode {self.mode}: one of {', '.join(MODES)}")
        if self.mem_sleep not in MEM_SLEEPS:
            out.append(f"--mem-sleep {self.mem_sleep}: deep or s2idle")
        if self.wake < 1:
            out.append(f"--wake {self.wake}: at least 1 second")
        if self.idle < 0:
            out.append(f"--idle {self.idle}: not negative")
        if self.waker not in WAKERS:
            out.append(f"--waker {self.waker}: one of {', '.join(WAKERS)}")
        if self.buffer_kb < 0:
            out.append(f"--buffer-kb {self.buffer_kb}: not negative")
        if "\n" in self.archive or "\0" in self.archive:
            out.append("--archive: a path on one line")
        return out


def template() -> str:
    return (resources.files("dpmlens.capture") / "capture.sh").read_text(encoding="utf-8")


def render(opts: Options) -> str:
    """The script with `opts` as its defaults; raises ValueError naming a bad option."""
    bad = opts.problems()
    if bad:
        raise ValueError("; ".join(bad))
    values = {
        "CYCLES": str(opts.cycles), "MODE": opts.mode, "MEM_SLEEP": shlex.quote(opts.mem_sleep),
        "WAKE": str(opts.wake), "IDLE": str(opts.idle), "WAKER": opts.waker,
        "KPROBES": str(int(opts.kprobes)), "SCHED": str(int(opts.sched)),
        "BUFFER_KB": str(opts.buffer_kb), "ARCHIVE": shlex.quote(opts.archive),
        "VERSION": __version__,
        "OPTIONS": " ".join(f"{f.name}={getattr(opts, f.name)!s}" for f in fields(opts)
                            if getattr(opts, f.name) != f.default) or "defaults",
    }
    text = template()
    unknown = set(re.findall(r"@([A-Z_]+)@", text)) - set(values)
    if unknown:
        raise AssertionError(f"capture.sh has placeholders render() does not fill: {unknown}")
    return re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], text)
