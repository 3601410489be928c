"""dmesg importer: three generations of pm_print_times lines, all prefixes, phases, units."""

from __future__ import annotations

import math

import pytest
from traces_helpers import FIXTURES, by_key

from dpmlens.traces import load_traces
from dpmlens.traces.read.dmesg import strip_prefix


@pytest.mark.parametrize(
    ("line", "ts", "msg"),
    [
        ("[   12.345678] foo 0-0055: PM: calling x @ 1, parent: i2c-0", 12.345678,
         "foo 0-0055: PM: calling x @ 1, parent: i2c-0"),
        ("[   12.345678][ T123] msg", 12.345678, "msg"),
        ("[   12.345678] [  T123] msg", 12.345678, "msg"),
        ("[   12.345678][    C1] msg", 12.345678, "msg"),
        ("<6>[    1.000000] msg", 1.0, "msg"),
        ("kern  :info  : [    2.500000] msg", 2.5, "msg"),
        ("Mar  3 10:00:01 myhost kernel: msg", math.nan, "msg"),
        # a wall stamp with a fraction is the time when the kernel's own is missing
        ("2026-11-22T04:21:07.123456+00:00 myhost kernel: msg", 1795321267.123456, "msg"),
        ("Nov 28 10:00:01.123456 host kernel: msg", 36001.123456, "msg"),
        ("2022-06-20T16:42:31,123456+02:00 usb 1-1: msg", 1655743351.123456, "usb 1-1: msg"),
        # pasted forms: LAVA, Qubes, svlogd, journalctl -o short-monotonic, dmesg -T
        ("2020-10-05 16:45:59.342000  <6>[   26.868299] PM: suspend entry (deep)", 26.868299,
         "PM: suspend entry (deep)"),
        ("[2022-03-20 22:59:10] [  256.243014] INFO: task", 256.243014, "INFO: task"),
        ("2015-10-01T18:25:37.34135 kern.debug: [    0.520776] pci x", 0.520776, "pci x"),
        ("[   12.345678] myhost kernel: msg", 12.345678, "msg"),
        ("[Mon Jun 20 16:42:31 2022] msg", math.nan, "msg"),
        ("[  T27] msg", math.nan, "msg"),
        # a user-space line of a syslog paste is no kernel message
        ("Aug 01 20:50:01 pop-os systemd[1]: Starting System Suspend...", math.nan, ""),
        ("Aug 01 20:50:01 pop-os kernel: PM: suspend entry (deep)", math.nan,
         "PM: suspend entry (deep)"),
        ("Feb 11 22:13:20 h kernel:  0-0056: calling f @ 1, parent: none", math.nan,
         " 0-0056: calling f @ 1, parent: none"),
        ("Nov 22 04:21:07 myhost kernel: [   7.000001] msg", 7.000001, "msg"),
        # an empty driver name keeps its leading space after the separator
        ("[    3.000000]  0-0056: calling f @ 1, parent: none", 3.0,
         " 0-0056: calling f @ 1, parent: none"),
        ("no prefix at all", math.nan, "no prefix at all"),
    ],
)
def test_strip_prefix(line: str, ts: float, msg: str) -> None:
    got_ts, got_msg = strip_prefix(line)
    assert got_msg == msg
    assert (math.isnan(got_ts) and math.isnan(ts)) or got_ts == pytest.approx(ts, abs=1e-6)


def test_old_format_converts_ns_shift_and_takes_drivers_from_other_lines() -> None:
    t = load_traces([FIXTURES / "dmesg_old.txt"])
    assert t.files[0].format == "dmesg"
    # "usecs" on these kernels are ns >> 10: 1000 -> 1024 us, 10000 -> 10240 us
    assert by_key(t) == {
        ("foo", "0-0055", "suspend"): [1024.0],
        ("bar", "0000:00:1f.0", "suspend"): [10240.0],
        ("bar", "0000:00:1f.0", "suspend_late"): [512.0],
        ("bar", "0000:00:1f.0", "resume_early"): [256.0],
        ("foo", "0-0055", "resume"): [2048.0],
    }
    assert t.incomplete == 1  # "calling  3-1+" never returns
    assert any("ns >> 10" in n for n in t.files[0].notes)
    errs = {(s.device, s.phase): s.error for s in t.samples()}
    assert errs[("0000:00:1f.0", "suspend")] == -16
    walls = {p.phase: p.wall_us for p in t.phase_times}
    assert walls == {"suspend": 11700.0, "suspend_late": 600.0, "resume_early": 400.0,
                     "resume": 2200.0}


def test_middle_format_with_version_before_5_14_is_ns_shift() -> None:
    t = load_traces([FIXTURES / "dmesg_middle.txt"])
    got = {(s.driver, s.device, s.phase): (s.duration_us, s.symbol, s.parent)
           for s in t.samples()}
    assert got == {
        ("i2c", "0-0055", "suspend"): (1024.0, "i2c_device_pm_suspend", "i2c-0"),
        ("", "0-0056", "resume_noirq"): (102.4, "dev_pm_fn", "none"),
    }
    assert t.cycles == 1


def test_middle_format_units_decided_from_timestamps(tmp_path) -> None:
    # No version line: 3 long callbacks whose timestamps span 1.024x the printed value.
    lines = []
    t0 = 10.0
    for i, n in enumerate((50000, 80000, 30000)):
        lines.append(f"[{t0:12.6f}] i2c 0-00{i}0: calling cb+0x0/0x10 @ 1, parent: i2c-0")
        t1 = t0 + n * 1.024 / 1e6
        lines.append(f"[{t1:12.6f}] i2c 0-00{i}0: cb+0x0/0x10 returned 0 after {n} usecs")
        t0 = t1 + 0.001
    lines.append(f"[{t0:12.6f}] PM: suspend of devices complete after 200.000 msecs")
    p = tmp_path / "m.txt"
    p.write_text("\n".join(lines) + "\n")
    t = load_traces([p])
    assert sorted(s.duration_us for s in t.samples()) == [30720.0, 51200.0, 81920.0]
    assert any("from the timestamps" in n for n in t.files[0].notes)


def test_current_format_prefixes_symbols_and_entry_lines() -> None:
    t = load_traces([FIXTURES / "dmesg_current.txt"])
    assert t.cycles == 2  # two "PM: suspend entry" lines
    got = {(s.driver, s.phase, s.cycle): (s.duration_us, s.symbol) for s in t.samples()}
    # no "of devices complete" lines (pm_debug_messages off): phases from the symbols
    assert got == {
        ("foo", "suspend", 0): (3000.0, "foo_suspend"),
        ("pci", "suspend_noirq", 0): (500.0, "pci_pm_suspend_noirq"),
        ("foo", "resume", 0): (1500.0, "foo_resume"),
        ("foo", "suspend", 1): (5000.0, "foo_suspend"),
    }
    # phase wall times estimated from the callback spans, marked as such
    assert {(p.phase, p.cycle): (p.wall_us, p.measured) for p in t.phase_times} == {
        ("suspend", 0): (3000.0, False), ("suspend_noirq", 0): (500.0, False),
        ("suspend", 1): (5000.0, False)}


def test_phase_follows_the_last_closed_phase_when_log_is_cut(tmp_path) -> None:
    p = tmp_path / "cut.txt"
    p.write_text(
        "[ 1.000000] calling  a+ @ 1, parent: none\n"
        "[ 1.000100] call a+ returned 0 after 100 usecs\n"
        "[ 1.000200] PM: suspend of devices complete after 0.200 msecs\n"
        "[ 1.000300] calling  a+ @ 1, parent: none\n"
        "[ 1.000400] call a+ returned 0 after 50 usecs\n")
    t = load_traces([p])
    assert {s.phase for s in t.samples()} == {"suspend", "suspend_late"}


def test_callbacks_without_any_phase_are_counted_not_guessed(tmp_path) -> None:
    p = tmp_path / "nophase.txt"
    p.write_text("[ 1.000000] calling  a+ @ 1, parent: none\n"
                 "[ 1.000100] call a+ returned 0 after 100 usecs\n")
    t = load_traces([p])
    assert t.sample_count == 0
    assert t.skip_reasons() == {"callback with no phase line and no phase in its symbol": 1}


def test_initcalls_at_boot_are_not_device_callbacks(tmp_path) -> None:
    p = tmp_path / "boot.txt"
    p.write_text("[ 0.100000] calling  init_foo+0x0/0x40 @ 1\n"
                 "[ 0.100100] initcall init_foo+0x0/0x40 returned 0 after 97 usecs\n"
                 "[ 1.000000] PM: suspend entry (deep)\n")
    t = load_traces([p])
    assert t.sample_count == 0 and t.errors == []
