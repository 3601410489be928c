"""`dpmlens capture -o capture.sh`: write the shell script that records a capture on the target.

Exit codes: 0 written; 2 a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "capture",
        help="write a shell script that records suspend/resume cycles on the target",
        description="Write a self-contained POSIX shell script (busybox sh is enough; no "
        "Python on the target) that, run as root, records N suspend/resume cycles with "
        "everything `dpmlens trace report|whatif|advise` and `fleet ingest` use: power and "
        "rpm events, sched_switch/sched_waking, sleepgraph's delay kprobes, pm_print_times, "
        "/sys/class/devlink, each device's power/async, the kernel release and CONFIG_HZ. It "
        "sizes the trace buffer, checks for overruns, restores every setting it changed and "
        "packs one .tar.gz. The options here are the script's defaults; its own flags "
        "(sh capture.sh -h) change them on the target.",
    )
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="where to write the script ('-': standard output)")
    p.add_argument("-n", "--cycles", type=int, default=10, help="suspend/resume cycles (10)")
    p.add_argument("--mode", choices=("mem", "freeze"), default="mem",
                   help="what to write to /sys/power/state (mem)")
    p.add_argument("--mem-sleep", choices=("deep", "s2idle"), default="",
                   help="set /sys/power/mem_sleep for the capture (default: as it is)")
    p.add_argument("--wake", type=int, default=10, metavar="S",
                   help="seconds until the RTC wakes the machine (10)")
    p.add_argument("--idle", type=int, default=3, metavar="S", help="seconds between cycles (3)")
    p.add_argument("--waker", choices=("auto", "rtcwake", "alarm", "none"), default="auto",
                   help="auto: rtcwake when present, else the RTC's wakealarm; none: "
                   "something else wakes the machine (a key, the lid, the host of a VM)")
    p.add_argument("--no-kprobes", action="store_true",
                   help="no delay kprobes (delays are then not measured)")
    p.add_argument("--no-sched", action="store_true",
                   help="no sched_switch/sched_waking (waits are then not told from work)")
    p.add_argument("--buffer-kb", type=int, default=0, metavar="KB",
                   help="trace buffer per CPU (default: from the cycles and the free memory)")
    p.add_argument("--archive", default="", metavar="PATH",
                   help="where the script writes its .tar.gz on the target "
                   "(default ./dpmlens-capture-HOST-DATE.tar.gz)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dpmlens.capture.script import Options, render

    opts = Options(cycles=args.cycles, mode=args.mode, mem_sleep=args.mem_sleep,
                   wake=args.wake, idle=args.idle, waker=args.waker,
                   kprobes=not args.no_kprobes, sched=not args.no_sched,
                   buffer_kb=args.buffer_kb, archive=args.archive)
    try:
        text = render(opts)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.output == "-":
        sys.stdout.write(text)
        return exit_codes.OK
    from dpmlens.core.atomic import write_text_atomic

    try:
        write_text_atomic(args.output, text)
        os.chmod(args.output, os.stat(args.output).st_mode | 0o111)
    except OSError as exc:
        raise UsageError(f"-o {args.output}: {exc.strerror or exc}") from exc
    print(f"dpmlens: wrote {args.output}: copy it to the machine and run it as root "
          f"(sh {os.path.basename(args.output)}), then read the .tar.gz it writes with "
          "`dpmlens trace report ARCHIVE`", file=sys.stderr)
    return exit_codes.OK
