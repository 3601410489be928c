"""`dpmlens cc`'s first decision, taken before anything else is loaded: can the file hold
anything a rule looks at? kbuild runs the checker on every file it compiles, and most have no
PM code; for them the whole run is Python's start-up plus this module (no rules, no
tree-sitter, no configuration), a few milliseconds over a bare interpreter.

`PM_WORDS` covers the rules' prefilter (`engine.prefilter` with every rule enabled): every file
that prefilter keeps holds one of them (test_kbuild_quick.py checks it against the rules). A
file holding none cannot produce a finding, under any configuration, since a configuration
only removes code and rules.

Imports: nothing heavier than `argv_options` (no dataclasses, no re): keep it so.
"""

from __future__ import annotations

from dpmlens.kbuild.argv_options import OWN_OPTIONS, WITH_VALUE

PM_WORDS: tuple[bytes, ...] = (
    b".suspend", b".resume", b"PM_OPS", b"dev_pm_ops", b"pm_runtime_get_sync",
    # what probe sets up and must undo (rules/lifetime.py: the balance rules' words)
    b"pm_runtime_enable", b"pm_runtime_use_autosuspend", b"pm_runtime_get",
    b"pm_runtime_resume_and_get", b"device_init_wakeup", b"device_wakeup_enable",
    b"dev_pm_set_wake_irq", b"dev_pm_set_dedicated_wake_irq",
    # the subsystems' own PM operation tables (model/keywords.py, subsystem_ops)
    b"mmc_bus_ops", b"pcie_port_service_driver", b"sdhci_pci_fixes", b"tb_cm_ops",
    b"tb_nhi_ops", b"tegra_xusb_padctl_ops",
    # the spec delays' names and constants (rules/tables/spec-delays.yaml)
    b"D3 hot", b"D3COLD", b"D3HOT", b"D3cold", b"D3hot", b"PCIE_RESET_CONFIG_WAIT_MS",
    b"PCI_PM_D2_DELAY", b"PERST", b"TATTDB", b"TDRSMDN", b"TDRST", b"TPVPERL", b"TRSMRCY",
    b"TRSTRCY", b"T_PVPERL", b"T_RRS", b"Tpvperl", b"Trhfa", b"USB_RESUME_TIMEOUT",
)  # fmt: skip

_SOURCE_SUFFIXES = (".c", ".h")
_SPLIT_VALUE = frozenset({"-include", "-imacros", "-D", "-U", "-I"})


def source_args(argv: list[str]) -> list[str]:
    """The source files of a `dpmlens cc` command line (what flags.parse_flags would find)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in OWN_OPTIONS or arg in WITH_VALUE or arg in _SPLIT_VALUE:
            i += 1  # the option's value is the next argument
        elif arg == "-" or not arg.startswith("-"):
            out.append(arg)
    return out


def nothing_to_check(argv: list[str]) -> bool:
    """True when every source on the line is a readable .c/.h file without any PM word: the
    checker can exit 0 at once. Anything unusual (no source, stdin, an unreadable file, help)
    goes the full way, which reports it."""
    if any(a in ("--help", "-h") for a in argv):
        return False
    sources = source_args(argv)
    if not sources:
        return False
    for path in sources:
        if path == "-" or not path.endswith(_SOURCE_SUFFIXES):
            return False
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return False
        if any(word in data for word in PM_WORDS):
            return False
    return True
