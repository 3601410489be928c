"""A small model of the PM core that writes ftrace captures: synthetic A/B pairs for the
what-if replay (tests/test_traces_ab.py, docs/traces.md "A/B pairs").

It is written from drivers/base/power/main.c, not from traces/whatif.py, so a prediction that
matches it is a check of the replay against a different account of the same rules:
  legacy resume   async devices queued at the phase start; a worker picks one up after a
                  start-up lag and waits for the parent; the synchronous loop runs the others
                  in list order, each after its parent
  legacy suspend  the loop walks the list backwards, queues an async device when it reaches
                  it (the worker waits for the children) and runs a synchronous one after its
                  children
  6.16 resume     async roots queued upfront; a device queues its async children when done;
                  the loop queues one it reaches that is not queued yet
  6.16 suspend    async leaves queued upfront; a device queues its async parent when done;
                  the loop queues one it reaches that is not queued yet
Callbacks vary by +-3% around their base time, msleep() takes its request plus 0.9-1.3 ms,
start-up lags are 20-80 us, wake-ups 5-30 us, the loop's step 2-6 us (a seeded random draw):
two runs of the same setup differ like two real captures do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Dev:
    name: str
    driver: str
    parent: str | None
    is_async: bool
    suspend_ms: float
    resume_ms: float
    # phase -> [(caller, requested ms)]: msleep calls inside the callback
    sleeps: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def laptop() -> list[Dev]:
    """dpm_list order (parents first): a USB hub tree, a disk, audio, graphics, platform."""
    devs = [
        Dev("platform", "", None, False, 0.01, 0.01),
        Dev("pci0000:00", "", None, False, 0.02, 0.02),
        Dev("0000:00:1f.2", "ahci", "pci0000:00", True, 2, 5),
        Dev("ata1", "ata_port", "0000:00:1f.2", True, 0.5, 1),
        Dev("0:0:0:0", "sd", "ata1", True, 40, 20),
        Dev("0000:00:1b.0", "snd_hda_intel", "pci0000:00", True, 10, 60),
        Dev("0000:00:14.0", "xhci_hcd", "pci0000:00", True, 3, 8),
        Dev("usb1", "usb", "0000:00:14.0", True, 2, 10),
        Dev("1-1", "usb", "usb1", True, 5, 15,
            {"resume": [("hub_port_reset", 50), ("hub_port_reset", 50)]}),
    ]
    devs += [Dev(f"1-1.{k}", "usb", "1-1", True, 3, 5,
                 {"resume": [("usb_port_resume", 20)]}) for k in range(1, 5)]
    devs += [
        Dev("0000:00:19.0", "e1000e", "pci0000:00", False, 15, 25),
        Dev("0000:00:02.0", "i915", "pci0000:00", False, 30, 60),
        Dev("i2c-0", "i2c_designware", "pci0000:00", False, 2, 3),
    ]
    devs += [Dev(f"serial8250.{k}", "serial8250", "platform", False, 0.3, 0.4)
             for k in range(30)]
    return devs


class Sim:
    def __init__(self, devs: list[Dev], seed: int, ordering: str = "legacy",
                 sleep_ms: dict[str, float] | None = None,
                 make_async: set[str] | None = None) -> None:
        self.devs = devs
        self.rng = random.Random(seed)
        self.ordering = ordering
        self.sleep_ms = sleep_ms or {}
        self.make_async = make_async or set()
        self.lines: list[tuple[float, str, str]] = []
        self.children: dict[str, list[Dev]] = {}
        for d in devs:
            if d.parent:
                self.children.setdefault(d.parent, []).append(d)

    def _async(self, d: Dev) -> bool:
        return d.is_async or d.driver in self.make_async

    def _u(self, lo: float, hi: float) -> float:
        return self.rng.uniform(lo, hi)

    def _callback(self, d: Dev, phase: str, start: float, task: str) -> float:
        """Emit one callback (and its msleeps) from `start`; return its end (s)."""
        base = (d.suspend_ms if phase == "suspend" else d.resume_ms) * self._u(0.97, 1.03)
        verb, parent = phase, d.parent or "none"
        self.lines.append((start, task, f"device_pm_callback_start: {d.driver} {d.name}, "
                                        f"parent: {parent}, bus [{verb}]"))
        t = start + base / 2e3
        for caller, ms in d.sleeps.get(phase, ()):
            ms = self.sleep_ms.get(caller, ms)
            took = (ms + self._u(0.9, 1.3)) / 1e3
            self.lines.append((t, task, f"msleep_cal: (msleep+0x0/0x40) time={ms:g}"))
            t += took
            self.lines.append((t, task, f"msleep_ret: ({caller}+0x3ab/0x6c0 [usbcore] <- "
                                        "msleep) arg1=0x0"))
        end = t + base / 2e3
        self.lines.append((end, task, f"device_pm_callback_end: {d.driver} {d.name}, err=0"))
        return end

    def _phase(self, t0: float, phase: str) -> float:
        up = phase == "resume"
        marker = "dpm_resume[16]" if up else "dpm_suspend[2]"
        sync_task = "bash-100"
        self.lines.append((t0, sync_task, f"suspend_resume: {marker} begin"))
        order = self.devs if up else list(reversed(self.devs))
        end: dict[str, float] = {}
        queued: dict[str, float] = {}
        new = self.ordering == "6.16"
        # queued before the loop: legacy resume all async devices, 6.16 roots (resume) or
        # leaves (suspend)
        q = t0 + 1e-6
        for d in order:
            if not self._async(d):
                continue
            upfront = (not new) if up else False
            if new:
                upfront = d.parent is None if up else d.name not in self.children
            if upfront:
                queued[d.name] = q
                q += 1e-6
        t = q + self._u(2e-6, 6e-6)
        jobs: list[tuple[float, Dev, float]] = []  # (pickup, dev, start) of async work
        for d in order:
            waits = ([end[d.parent]] if up and d.parent in end else
                     [end[c.name] for c in self.children.get(d.name, ()) if c.name in end])
            ready = max(waits) + self._u(5e-6, 30e-6) if waits else -1.0
            if self._async(d):
                qd = queued.get(d.name)
                if qd is None:  # the loop reaches it (both orderings queue it then)
                    qd = t
                    if new and waits:  # 6.16: the first superior/subordinate done queued it
                        qd = min(qd, min(waits))
                    t += 1e-6
                pickup = qd + self._u(20e-6, 80e-6)
                start = max(pickup, ready)
                jobs.append((pickup, d, start))
                end[d.name] = self._callback(d, phase, start, "?" + d.name)
            else:
                start = max(t, ready)
                end[d.name] = self._callback(d, phase, start, sync_task)
                t = end[d.name] + self._u(2e-6, 6e-6)
        self._assign_workers(jobs, end)
        stop = max([t, *end.values()]) + 20e-6
        self.lines.append((stop, sync_task, f"suspend_resume: {marker} end"))
        return stop

    def _assign_workers(self, jobs: list[tuple[float, Dev, float]],
                        end: dict[str, float]) -> None:
        """A worker is busy from picking an item up (it may block waiting) to its end."""
        free: list[float] = []
        name: dict[str, str] = {}
        for pickup, d, _ in sorted(jobs, key=lambda j: j[0]):
            k = next((i for i, f in enumerate(free) if f <= pickup), None)
            if k is None:
                free.append(0.0)
                k = len(free) - 1
            free[k] = end[d.name]
            name[d.name] = f"kworker/u8:{k}-{300 + k}"
        self.lines = [(ts, name[task[1:]] if task.startswith("?") else task, text)
                      for ts, task, text in self.lines]

    def capture(self, cycles: int) -> str:
        t = 100.0
        for _ in range(cycles):
            t = self._phase(t, "suspend") + 0.5
            t = self._phase(t, "resume") + 5.0
        self.lines.sort(key=lambda x: x[0])
        return "".join(f"{task:>20} [000] .... {ts:.6f}: {text}\n"
                       for ts, task, text in self.lines)
