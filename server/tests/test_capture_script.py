"""`dpmlens capture`: the script it writes parses under sh and busybox sh, and run against a
fake sysfs/tracefs tree (a fake rtcwake appends a synthetic cycle to the fake trace) it
records, packs an archive the trace commands read with nothing skipped, and puts back every
setting it changed, also when interrupted. This shows the mechanism; the proof is the run in
the lab's qemu guests (docs/capture.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli

from dpmlens.capture.script import Options, render

SH = shutil.which("sh")
BUSYBOX = shutil.which("busybox")

# the fake tracefs's settings before the run, as their files read (the script must put the
# selected value back)
SETTINGS = {
    "tracing_on": "1", "current_tracer": "nop", "trace_clock": "[local] global counter",
    "buffer_size_kb": "7 (expanded: 1408)", "saved_cmdlines_size": "128",
    "options/irq-info": "1", "options/record-tgid": "1", "options/context-info": "1",
    "events/power/device_pm_callback_start/enable": "0",
    "events/power/device_pm_callback_end/enable": "0",
    "events/power/suspend_resume/enable": "0", "events/rpm/rpm_suspend/enable": "0",
    "events/sched/sched_switch/enable": "0", "events/sched/sched_waking/enable": "0",
    "events/irq/irq_handler_entry/enable": "1",  # the user's own event: off, then back on
}
POWER = {"state": "freeze mem disk", "pm_print_times": "0", "pm_debug_messages": "0",
         "mem_sleep": "[s2idle] deep", "pm_async": "1"}

# one synthetic cycle per rtcwake call; timestamps move on by 10 s a call
CYCLE = """\
init-1 [000] .... {t}.000100: suspend_resume: suspend_enter[3] begin
init-1 [000] .... {t}.000200: suspend_resume: suspend_enter[3] end
init-1 [000] .... {t}.001000: suspend_resume: dpm_suspend[2] begin
kworker/0:1-20 [000] .... {t}.001100: device_pm_callback_start: usb 2-1, parent: usb2, [suspend]
kworker/0:1-20 [000] .... {t}.001200: msleep_cal: (msleep+0x0/0x40) time=20
kworker/0:1-20 [000] .... {t}.021300: msleep_ret: (usb_port_suspend+0x3ab/0x6c0 <- msleep)
kworker/0:1-20 [000] .... {t}.021400: device_pm_callback_end: usb 2-1, err=0
init-1 [000] .... {t}.022000: suspend_resume: dpm_suspend[2] end
init-1 [000] .... {t}.500000: suspend_resume: dpm_resume[16] begin
kworker/0:1-20 [000] .... {t}.500100: device_pm_callback_start: usb 2-1, parent: usb2, [resume]
kworker/0:1-20 [000] .... {t}.500200: msleep_cal: (msleep+0x0/0x40) time=50
kworker/0:1-20 [000] .... {t}.550300: msleep_ret: (hub_port_reset+0x3ab/0x6c0 <- msleep)
kworker/0:1-20 [000] .... {t}.560000: device_pm_callback_end: usb 2-1, err=0
init-1 [000] .... {t}.561000: suspend_resume: dpm_resume[16] end
"""


def _fake_tree(tmp: Path, rtcwake_sleep: float = 0.0) -> tuple[Path, dict[str, str]]:
    root = tmp / "root"
    t = root / "sys/kernel/tracing"
    for rel, value in SETTINGS.items():
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_text(value + "\n")
    (t / "set_event").write_text("irq:irq_handler_entry\n")
    for name in ("trace", "kprobe_events", "error_log"):
        (t / name).write_text("")
    (t / "trace").write_text("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:1\n")
    for e in ("msleep", "msleep_interruptible", "usleep_range", "usleep_range_state",
              "schedule_timeout", "udelay"):
        for end in ("_cal", "_ret"):
            (t / "events/dpmlens" / (e + end)).mkdir(parents=True)
            (t / "events/dpmlens" / (e + end) / "enable").write_text("0\n")
    (t / "per_cpu/cpu0").mkdir(parents=True)
    (t / "per_cpu/cpu0/stats").write_text("entries: 10\noverrun: 0\ncommit overrun: 0\n"
                                          "dropped events: 0\n")
    for name, value in POWER.items():
        (root / "sys/power").mkdir(parents=True, exist_ok=True)
        (root / "sys/power" / name).write_text(value + "\n")
    (root / "sys/class/devlink/platform:supplier--pci:0000:00:05.0").mkdir(parents=True)
    dev = root / "sys/devices/pci0000:00/0000:00:05.0/power"
    dev.mkdir(parents=True)
    (dev / "async").write_text("enabled\n")
    (root / "sys/class/rtc/rtc0").mkdir(parents=True)
    (root / "sys/class/rtc/rtc0/wakealarm").write_text("\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("processor\t: 0\n")
    (root / "proc/meminfo").write_text("MemAvailable:    4000000 kB\n")
    (root / "proc/cmdline").write_text("quiet\n")
    (root / "boot").mkdir()
    kver = os.uname().release
    (root / "boot" / f"config-{kver}").write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    (root / "dev").mkdir()
    (root / "dev/rtc0").write_text("")
    bin_ = tmp / "bin"
    bin_.mkdir()
    (bin_ / "id").write_text("#!/bin/sh\necho 0\n")
    (bin_ / "dmesg").write_text("#!/bin/sh\necho '[    1.000000] PM: suspend entry (deep)'\n")
    cycle = CYCLE.replace("$", "\\$")
    (bin_ / "rtcwake").write_text(
        "#!/bin/sh\n"
        f"sleep {rtcwake_sleep}\n"
        f"n=$(cat {root}/count 2>/dev/null || echo 1); echo $((n + 1)) > {root}/count\n"
        f"t=$((100 + n * 10)); cat >> {t}/trace <<EOF\n"
        + cycle.replace("{t}", "$t") + "EOF\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, DPMLENS_CAPTURE_ROOT=str(root), PATH=f"{bin_}:{os.environ['PATH']}")
    return root, env


def _selected(text: str) -> str:
    text = text.strip()
    if "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    if "(expanded:" in text:
        return text.split("(expanded:", 1)[1].split(")", 1)[0].strip()
    return text.split()[0] if text else ""


def _assert_restored(root: Path) -> None:
    t = root / "sys/kernel/tracing"
    for rel, value in SETTINGS.items():
        assert _selected((t / rel).read_text()) == _selected(value), rel
    for name in ("pm_print_times", "pm_debug_messages", "mem_sleep"):
        assert _selected((root / "sys/power" / name).read_text()) == _selected(POWER[name]), name
    added, removed = [], []
    for line in (t / "kprobe_events").read_text().splitlines():
        if line.startswith("-:"):
            removed.append(line[2:])
        else:
            added.append(line.split()[0].split(":", 1)[1])
    assert added and sorted(added) == sorted(removed)  # every probe it added is removed


def _script(tmp: Path, **opts: object) -> Path:
    path = tmp / "capture.sh"
    path.write_text(render(Options(**opts)))  # type: ignore[arg-type]
    return path


@pytest.mark.skipif(SH is None, reason="no sh")
def test_the_cli_writes_a_script_sh_and_busybox_parse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "capture.sh"
    r = run_cli(capsys, "capture", "-o", str(out), "-n", "4", "--mode", "freeze")
    code, _, err = r.code, r.out, r.err
    assert code == 0, err
    assert os.access(out, os.X_OK)
    text = out.read_text()
    assert "CYCLES=4\n" in text and "MODE=freeze " in text and "@" not in text.split(
        "CYCLES=")[1].split("usage()")[0]
    assert subprocess.run([SH, "-n", str(out)]).returncode == 0  # type: ignore[list-item]
    if BUSYBOX:
        assert subprocess.run([BUSYBOX, "sh", "-n", str(out)]).returncode == 0


def test_bad_options_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "capture", "-o", str(tmp_path / "c.sh"), "-n", "0")
    code, _, err = r.code, r.out, r.err
    assert code == 2 and "--cycles 0" in err
    r = run_cli(capsys, "capture", "-o", str(tmp_path / "no/such/dir/c.sh"))
    code, _, err = r.code, r.out, r.err
    assert code == 2 and "no/such/dir" in err and "Traceback" not in err


@pytest.mark.skipif(SH is None, reason="no sh")
@pytest.mark.parametrize("shell", ["sh", "busybox"])
def test_a_run_on_a_fake_tree_packs_what_the_readers_read(
        tmp_path: Path, shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    if shell == "busybox" and BUSYBOX is None:
        pytest.skip("no busybox")
    root, env = _fake_tree(tmp_path)
    script = _script(tmp_path)
    archive = tmp_path / "out" / "cap.tar.gz"
    archive.parent.mkdir()
    cmd = [BUSYBOX, "sh"] if shell == "busybox" else [SH]
    r = subprocess.run([*cmd, str(script), "-n", "2", "-w", "1", "-i", "0", "-o", str(archive)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "wake by rtcwake" in r.stderr and "overrun 0" in r.stderr
    _assert_restored(root)
    assert list(archive.parent.iterdir()) == [archive]  # no work folder left behind
    with tarfile.open(archive) as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"dmesg.txt", "ftrace.txt", "meta.txt", "devlink.txt", "power-async.txt",
            "kconfig.txt"} <= names
    r = run_cli(capsys, "trace", "report", str(archive), "--format", "json")
    code, out, err = r.code, r.out, r.err
    assert code == 0, err
    rep = json.loads(out)
    assert rep["cycles"] == 2 and rep["skipped_lines"] == 0
    assert rep["device_links"]["links"] == 1 and "cap.tar.gz!" in rep["device_links"]["file"]
    r = run_cli(capsys, "trace", "advise", str(archive), "--format", "json")
    code, out, err = r.code, r.out, r.err
    assert code == 0, err
    adv = json.loads(out)
    assert adv["advice"][0]["kind"] == "usb-fast"  # the 50 ms hub_port_reset sleep
    r = run_cli(capsys, "fleet", "ingest", "--store", str(tmp_path / "store"), "-j", "1", "-q",
                str(archive))
    assert r.code == 0 and "1 captures, 2 cycles" in r.out + r.err, r.err
    assert adv["advice"][0]["knob"] == [
        "echo 2 > /sys/bus/usb/devices/2-0:1.0/usb2-port1/quirks"]


@pytest.mark.skipif(SH is None, reason="no sh")
def test_an_interrupted_run_restores_everything_and_saves_nothing(tmp_path: Path) -> None:
    root, env = _fake_tree(tmp_path, rtcwake_sleep=30)
    script = _script(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    # (SIGINT as a terminal gives it: a CI that starts the tests in the background leaves it
    # ignored, and a shell cannot trap a signal ignored when it started)
    proc = subprocess.Popen([SH, str(script), "-n", "3", "-i", "0",  # type: ignore[list-item]
                             "-o", str(out / "cap.tar.gz")], env=env, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    deadline = time.time() + 60
    for line in proc.stderr:
        if "suspend 1 of 3" in line or time.time() > deadline:
            break
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 130, rest
    assert "settings restored" in rest
    _assert_restored(root)
    assert list(out.iterdir()) == []


def test_refuses_to_run_as_another_user(tmp_path: Path) -> None:
    if SH is None:
        pytest.skip("no sh")
    root, env = _fake_tree(tmp_path)
    (tmp_path / "bin" / "id").write_text("#!/bin/sh\necho 1000\n")
    r = subprocess.run([SH, str(_script(tmp_path)), "-o", str(tmp_path / "c.tar.gz")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "run as root" in r.stderr
    assert (root / "sys/kernel/tracing/tracing_on").read_text().strip() == "1"  # untouched


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_what_an_archives_meta_says_it_lacks_is_warned() -> None:
    from dpmlens.capture.archive import meta_warnings

    ok = {"capture": "dpmlens 0.1.0", "overrun": "0", "sched": "1", "failed_cycles": "0",
          "kprobe_notes": "msleep:ret-without-retval usleep_range:refused"}
    assert meta_warnings(ok, "a.tar.gz") == []
    bad = dict(ok, overrun="12", sched="0", failed_cycles="1",
               kprobe_notes="msleep:entry-only udelay:entry-only")
    assert meta_warnings(bad, "a.tar.gz") == [
        "a.tar.gz: 12 trace events were lost (buffer overrun): phases may lack callbacks; "
        "capture again with a larger -b",
        "a.tar.gz: the kernel refused the return probes of msleep, udelay: those delays have "
        "no duration",
        "a.tar.gz: captured without sched_switch/sched_waking: waits are not told from work",
        "a.tar.gz: 1 cycle(s) failed to suspend (see its dmesg.txt)"]
