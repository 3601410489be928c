#!/usr/bin/env python3
"""Boot one of Debian's kernels under qemu (TCG) and capture N suspend/resume cycles.

The guest (lab/guest-init.sh as the initramfs's /init) prints "LAB: ..." lines on the
serial console; this script follows them, wakes freeze cycles with a power-button press
over QMP (and mem cycles whose RTC alarm was missed with system_wakeup), and after qemu
exits reads the tar the guest wrote onto the ahci disk image. A run that does not finish
all its cycles (the 6.12 S3 resume fault, a TCG "Oops: int3") is retried.

    lab/run_lab.py --kernel 6.1 --mode mem --cycles 3 --out DIR [--tp-printk] [--rpm] ...

Writes DIR/dmesg.txt, DIR/ftrace.txt, DIR/meta.txt, DIR/console.log (atomically: into a
temporary folder renamed at the end). Python standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LAB_CACHE", HERE / "cache"))

# The fixed device set: every run of the lab emulates exactly these.
DEVICES = [
    "-machine", "pc", "-global", "PIIX4_PM.disable_s3=0",
    "-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0",
    "-netdev", "user,id=n1", "-device", "e1000,netdev=n1",
    "-device", "piix3-usb-uhci",
    "-device", "qemu-xhci,id=xhci",
    "-device", "usb-kbd,bus=xhci.0", "-device", "usb-tablet,bus=xhci.0",
    "-drive", "if=none,id=usbdisk,file={usb},format=raw",
    "-device", "usb-storage,bus=xhci.0,drive=usbdisk",
    "-device", "ahci,id=ahci",
    "-drive", "if=none,id=outdisk,file={out},format=raw",
    "-device", "ide-hd,bus=ahci.0,drive=outdisk",
    "-audiodev", "none,id=snd0", "-device", "intel-hda", "-device", "hda-duplex,audiodev=snd0",
    "-device", "virtio-rng-pci", "-device", "virtio-balloon-pci",
]
TP_EVENTS = "power:device_pm_callback_start,power:device_pm_callback_end,power:suspend_resume,rpm:*"


class RunFailed(Exception):
    pass


def kernel(series: str, sleepgraph: bool = False) -> tuple[str, Path, Path]:
    """Fetch (cached) and return KVER, vmlinuz and an initramfs for this guest-init."""
    kver = subprocess.run([str(HERE / "fetch-kernel.sh"), series], check=True,
                          capture_output=True, text=True).stdout.strip()
    vmlinuz = CACHE / kver / "boot" / f"vmlinuz-{kver}"
    stamp = max(int((HERE / f).stat().st_mtime) for f in ("guest-init.sh", "build-initramfs.sh"))
    kind = "-ext4" if sleepgraph else ""
    initrd = CACHE / f"initramfs-{kver}{kind}-{stamp}.cpio.gz"
    if not initrd.exists():
        env = dict(os.environ, EXTRA_MODS="crc32c_generic crc16 mbcache jbd2 ext4" if sleepgraph else "")
        subprocess.run([str(HERE / "build-initramfs.sh"), kver, str(initrd)], check=True, env=env)
    return kver, vmlinuz, initrd


def sleepgraph_root() -> Path:
    img = CACHE / "sleepgraph-root.img"
    if not img.exists():
        subprocess.run([str(HERE / "build-sleepgraph-root.sh"), str(img)], check=True)
    return img


class Qmp:
    def __init__(self, path: str) -> None:
        for _ in range(100):
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RunFailed("QMP socket never came up")
        self.file = self.sock.makefile("rw")
        self.file.readline()  # greeting
        self.command("qmp_capabilities")

    def command(self, name: str) -> None:
        self.file.write(json.dumps({"execute": name}) + "\n")
        self.file.flush()
        while True:  # skip asynchronous events until the reply
            line = self.file.readline()
            if not line or "return" in line or "error" in line:
                return


def boot(args: argparse.Namespace, vmlinuz: Path, initrd: Path, work: Path) -> None:
    usb, out = work / "usb.img", work / "out.img"
    for img, size in ((usb, 16), (out, 64)):
        with open(img, "wb") as f:
            f.truncate(size << 20)
    if args.sleepgraph:  # the ahci disk is the bookworm root sleepgraph runs in
        subprocess.run(["cp", "--sparse=always", str(sleepgraph_root()), str(out)], check=True)
    append = ["console=ttyS0,115200", "loglevel=4", "panic=1", "tsc=reliable",
              "log_buf_len=16M", f"lab.mode={args.mode}", f"lab.cycles={args.cycles}",
              f"lab.async={args.pm_async}", f"lab.rpm={int(args.rpm)}",
              f"lab.kprobes={int(not args.no_kprobes)}", f"lab.idle={args.idle}",
              f"lab.sched={int(args.sched)}"]
    if args.quirks:
        append.append(f"lab.quirks={args.quirks}")
    if args.sleepgraph:
        append.append("lab.sleepgraph=1")
    if args.tp_printk:
        append += [f"trace_event={TP_EVENTS}", "tp_printk"]
    qmp_path = str(work / "qmp.sock")
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-smp", "2", "-m", "1024", "-nodefaults",
           "-display", "none", "-no-reboot", "-serial", "stdio", "-monitor", "none",
           "-qmp", f"unix:{qmp_path},server=on,wait=off",
           "-kernel", str(vmlinuz), "-initrd", str(initrd), "-append", " ".join(append)]
    cmd += [a.format(usb=usb, out=out) for a in DEVICES]
    console = open(work / "console.log", "w")  # noqa: SIM115 - closed by the finally below
    proc = subprocess.Popen(["nice", "-n", str(args.nice)] + cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            errors="replace")
    qmp = Qmp(qmp_path)
    state = {"suspended": 0, "since": 0.0, "resumed": 0, "pressed": 0.0, "saved": False}
    lock = threading.Lock()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            console.write(line)
            console.flush()
            if "LAB: " not in line:
                continue
            word = line.split("LAB: ", 1)[1].split()
            with lock:
                if word[0] == "suspend":
                    state["suspended"], state["since"], state["pressed"] = int(word[1]), time.time(), 0.0
                elif word[0] in ("resumed", "failed"):
                    state["resumed"] = int(word[1])
                elif word[0] == "saved":
                    state["saved"] = True
            if not args.quiet:
                print(f"[{time.strftime('%H:%M:%S')}] {line.strip()}", file=sys.stderr)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    deadline = time.time() + args.boot_timeout + args.cycles * args.cycle_timeout
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.time()
            if now > deadline:
                raise RunFailed("timed out")
            with lock:
                pending = state["suspended"] > state["resumed"]
                waited = now - state["since"]
                since_press = now - state["pressed"] if state["pressed"] else None
            if not pending:
                continue
            if waited > args.cycle_timeout:
                raise RunFailed(f"cycle {state['suspended']} never resumed")
            if args.mode == "freeze" and waited > args.wake_after and (
                    since_press is None or since_press > 10):
                qmp.command("system_powerdown")  # the power button wakes s2idle
                with lock:
                    state["pressed"] = now
            elif args.mode == "mem" and waited > 20 and (since_press is None or since_press > 10):
                qmp.command("system_wakeup")  # the RTC alarm went off before S3 was reached
                with lock:
                    state["pressed"] = now
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(5)
        console.close()
    if not state["saved"]:
        raise RunFailed("the guest stopped before saving its captures (panic or fault)")
    if args.sleepgraph:
        (work / "files").mkdir()
        subprocess.run(["debugfs", "-R", f"rdump /out {work / 'files'}", str(out)], check=True,
                       capture_output=True)
        for f in (work / "files" / "out").iterdir():
            f.rename(work / "files" / f.name)
        return
    with tarfile.open(out) as tar:
        tar.extractall(work / "files", filter="data")


def config_hz(vmlinuz: Path, kver: str) -> str:
    """CONFIG_HZ of the unpacked Debian kernel (boot/config-KVER beside its vmlinuz)."""
    try:
        for line in (vmlinuz.parent / f"config-{kver}").read_text().splitlines():
            if line.startswith("CONFIG_HZ="):
                return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", choices=("6.1", "6.12", "7.2"), required=True)
    p.add_argument("--mode", choices=("mem", "freeze"), default="mem")
    p.add_argument("--cycles", type=int, default=3)
    p.add_argument("--pm-async", type=int, choices=(0, 1), default=1)
    p.add_argument("--quirks", default="", help="hex value written to every USB port's quirks")
    p.add_argument("--rpm", action="store_true", help="power/control=auto, autosuspend 100 ms")
    p.add_argument("--tp-printk", action="store_true", help="also print the events into dmesg")
    p.add_argument("--no-kprobes", action="store_true")
    p.add_argument("--sched", action="store_true",
                   help="also sched_switch/sched_waking during the cycles (who ran, who waited)")
    p.add_argument("--sleepgraph", action="store_true",
                   help="run pm-graph's sleepgraph.py -m mem -rtcwake 5 -dev -multi CYCLES 0 "
                        "in a debootstrapped bookworm root instead")
    p.add_argument("--idle", type=int, default=2, help="seconds between cycles")
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--wake-after", type=float, default=6.0, help="freeze: press after S s")
    p.add_argument("--boot-timeout", type=float, default=240)
    p.add_argument("--cycle-timeout", type=float, default=90)
    p.add_argument("--nice", type=int, default=5)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    try:
        kver, vmlinuz, initrd = kernel(args.kernel, args.sleepgraph)
    except subprocess.CalledProcessError as e:
        print(f"run_lab: could not fetch/build the {args.kernel} kernel: {e}", file=sys.stderr)
        return 1
    for attempt in range(1, args.retries + 1):
        work = Path(tempfile.mkdtemp(prefix="lab-", dir=CACHE))
        try:
            boot(args, vmlinuz, initrd, work)
            files = work / "files"
            if args.sleepgraph:
                dmesg = "".join(p.read_text(errors="replace") for p in files.rglob("*_dmesg.txt"))
                done = len(list(files.rglob("*_ftrace.txt")))
            else:
                dmesg = (files / "dmesg.txt").read_text(errors="replace")
                done = dmesg.count("PM: resume of devices complete after")
            if done < args.cycles:
                raise RunFailed(f"{done} of {args.cycles} cycles resumed")
            shutil.copy(work / "console.log", files / "console.log")
            with open(files / "meta.txt", "a") as f:
                f.write(f"kernel: {kver}\n" if args.sleepgraph else "")
                # the guest has no /boot: its CONFIG_HZ from the unpacked package (the what-if
                # tells msleep calls from sleeps by it: traces/analysis/sleep_calls.py)
                f.write(f"config_hz: {config_hz(Path(vmlinuz), kver)}\n")
                f.write(f"host_attempt: {attempt}\nhost_uptime: {os.popen('uptime').read().strip()}\n")
            tmp = args.out.with_name(args.out.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(files, tmp)
            shutil.rmtree(args.out, ignore_errors=True)
            tmp.rename(args.out)
            print(f"run_lab: {kver} {args.mode}: {done} cycles -> {args.out}", file=sys.stderr)
            return 0
        except (RunFailed, tarfile.TarError, OSError) as e:
            print(f"run_lab: attempt {attempt} of {args.retries} failed: {e}"
                  f" (console: {work / 'console.log'})", file=sys.stderr)
            keep = CACHE / f"failed-{kver}-{args.mode}-{attempt}.log"
            if (work / "console.log").exists():
                shutil.copy(work / "console.log", keep)
        finally:
            if not os.environ.get("LAB_KEEP"):
                shutil.rmtree(work, ignore_errors=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
