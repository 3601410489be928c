#!/usr/bin/env python3
"""Run `dpmlens capture`'s script inside one of the lab's qemu guests, as a user runs it.

The script (written by `dpmlens capture`, or given with --script) goes into the initramfs as
/capture.sh; guest-init.sh sets the A/B knobs (pm_async, USB port quirks), runs
`sh /capture.sh -n CYCLES -m MODE -o /out/capture.tar.gz` and saves /out on the ahci disk.
The boot, the console, the QMP wake-ups and the retries are lab/run_lab.py's.

    lab/run_capture.py --kernel 6.12 --cycles 3 --out capture-6.12.tar.gz [--pm-async 0]

Writes the archive the script packed (atomically) and prints its exit status and the guest's
console log path on failure. Needs the dpmlens CLI (DPMLENS, default: the repository's .venv).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_lab  # noqa: E402 - lab/ is not a package

DPMLENS = os.environ.get("DPMLENS", str(HERE.parent / ".venv" / "bin" / "dpmlens"))


def initramfs(kver: str, script: Path) -> Path:
    out = run_lab.CACHE / f"initramfs-{kver}-capture-{os.getpid()}.cpio.gz"
    env = dict(os.environ, CAPTURE_SH=str(script), EXTRA_MODS="")
    subprocess.run([str(HERE / "build-initramfs.sh"), kver, str(out)], check=True, env=env)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", choices=("6.1", "6.12", "7.2"), required=True)
    p.add_argument("--mode", choices=("mem", "freeze"), default="mem")
    p.add_argument("--cycles", type=int, default=3)
    p.add_argument("--pm-async", type=int, choices=(0, 1), default=1)
    p.add_argument("--quirks", default="", help="hex value written to every USB port's quirks")
    p.add_argument("--script", type=Path,
                   help="the capture script (default: `dpmlens capture -o` a fresh one)")
    p.add_argument("--idle", type=int, default=2, help="seconds between cycles")
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--cycle-timeout", type=float, default=120)
    p.add_argument("--nice", type=int, default=5)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--out", type=Path, required=True, help="where to write the .tar.gz")
    args = p.parse_args()
    kver = subprocess.run([str(HERE / "fetch-kernel.sh"), args.kernel], check=True,
                          capture_output=True, text=True).stdout.strip()
    vmlinuz = run_lab.CACHE / kver / "boot" / f"vmlinuz-{kver}"
    with tempfile.TemporaryDirectory(prefix="capture-", dir=run_lab.CACHE) as tmpdir:
        script = args.script
        if script is None:
            script = Path(tmpdir) / "capture.sh"
            subprocess.run([DPMLENS, "capture", "-o", str(script)], check=True)
        initrd = initramfs(kver, script)
        # run_lab.boot's options: the guest's knobs (lab.*) and the host's timeouts
        boot_args = argparse.Namespace(
            mode=args.mode, cycles=args.cycles, pm_async=args.pm_async, quirks=args.quirks,
            rpm=False, no_kprobes=False, idle=args.idle, sched=False, sleepgraph=False,
            tp_printk=False, nice=args.nice, quiet=args.quiet, boot_timeout=240,
            cycle_timeout=args.cycle_timeout, wake_after=6.0)
        try:
            for attempt in range(1, args.retries + 1):
                work = Path(tempfile.mkdtemp(prefix="lab-", dir=tmpdir))
                try:
                    run_lab.boot(boot_args, vmlinuz, initrd, work)
                    files = work / "files"
                    status = (files / "capture-exit").read_text().strip() \
                        if (files / "capture-exit").exists() else "?"
                    archive = files / "capture.tar.gz"
                    if status != "0" or not archive.exists():
                        raise run_lab.RunFailed(f"the capture script exited {status}")
                    with tarfile.open(archive) as tar:  # a whole archive, or a retry
                        tar.getmembers()
                    tmp = args.out.with_name(args.out.name + ".tmp")
                    shutil.copy(archive, tmp)
                    tmp.rename(args.out)
                    shutil.copy(work / "console.log", args.out.with_name(
                        args.out.name.removesuffix(".tar.gz") + ".console.log"))
                    print(f"run_capture: {kver} {args.mode} pm_async={args.pm_async}: "
                          f"-> {args.out} (attempt {attempt})", file=sys.stderr)
                    return 0
                except (run_lab.RunFailed, tarfile.TarError, OSError) as e:
                    keep = run_lab.CACHE / f"failed-capture-{kver}-{attempt}.log"
                    if (work / "console.log").exists():
                        shutil.copy(work / "console.log", keep)
                    print(f"run_capture: attempt {attempt} of {args.retries} failed: {e} "
                          f"(console: {keep})", file=sys.stderr)
        finally:
            initrd.unlink(missing_ok=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
