"""`dpmlens cc`: the `make C=1 CHECK=...` checker; the build's configuration decides #ifdef
blocks and IS_ENABLED(), unknown flags are ignored, output is gcc's, exit 0 by default."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import NOIRQ_WAKE, NOIRQ_WAKE_LINE, run_cli, slow_driver, write_driver

from dpmlens.kbuild.flags import parse_flags
from dpmlens.kbuild.kconfig import Kconfig, from_flags
from dpmlens.kbuild.select import select

# The noirq callback compiled only with CONFIG_PM_SLEEP (the usual guard), and a second bug
# that IS_ENABLED() switches off in code.
GUARDED = NOIRQ_WAKE.replace(
    "static int foo_suspend_noirq", "#ifdef CONFIG_PM_SLEEP\nstatic int foo_suspend_noirq"
).replace(
    "static const struct dev_pm_ops",
    "#else\n#define foo_suspend_noirq NULL\n#define foo_resume_noirq NULL\n#endif\n\n"
    "static const struct dev_pm_ops",
)
GUARDED_LINE = NOIRQ_WAKE_LINE + 1


def _kernel_tree(tmp: Path, config: str) -> list[str]:
    """A build's -I/-include flags with a generated autoconf.h holding `config`."""
    (tmp / "include/generated").mkdir(parents=True)
    (tmp / "include/linux").mkdir(parents=True)
    (tmp / "include/generated/autoconf.h").write_text(config)
    (tmp / "include/linux/kconfig.h").write_text(
        "#ifndef __LINUX_KCONFIG_H\n#define __LINUX_KCONFIG_H\n"
        "#include <generated/autoconf.h>\n#define IS_ENABLED(option) __or(1, 2)\n#endif\n"
    )
    # What kbuild passes: CHECKFLAGS (sparse's), then c_flags (gcc's), then the file.
    return ["-D__linux__", "-Dlinux", "-Wbitwise", "-Wno-return-void", "--arch=x86", "-m64",
            "-Wp,-MMD,drivers/.foo.o.d", "-nostdinc", f"-I{tmp}/include", "-include",
            f"{tmp}/include/linux/kconfig.h", "-D__KERNEL__", "-fno-PIE", "-O2", "-o",
            "drivers/foo.o", "-DKBUILD_MODNAME=\"foo\"", "-DMODULE"]  # fmt: skip


def test_config_decides_ifdef_blocks(tmp_path, capsys):
    src = write_driver(tmp_path / "drivers" / "foo.c", GUARDED)
    on = _kernel_tree(tmp_path / "on", "#define CONFIG_PM 1\n#define CONFIG_PM_SLEEP 1\n")
    r = run_cli(capsys, "cc", *on, str(src))
    assert r.code == 0 and r.out == ""  # warnings go to stderr; the build goes on
    assert f"{src}:{GUARDED_LINE}:2: warning: enable_irq_wake() in the suspend_noirq" in r.err
    assert r.err.splitlines()[0].endswith("[dpmlens-wake-setup-in-noirq]")
    off = _kernel_tree(tmp_path / "off", "#define CONFIG_PM 1\n")
    r = run_cli(capsys, "cc", *off, str(src))
    assert r.code == 0 and "enable_irq_wake" not in r.err
    # -U after the -include wins, as in cpp.
    r = run_cli(capsys, "cc", *on, "-UCONFIG_PM_SLEEP", str(src))
    assert "enable_irq_wake" not in r.err
    # No configuration at all: every branch, as `dpmlens check` reads the file.
    r = run_cli(capsys, "cc", "-O2", str(src))
    assert "[dpmlens-wake-setup-in-noirq]" in r.err


def test_is_enabled_in_code_and_fail_level(tmp_path, capsys):
    text = NOIRQ_WAKE.replace(
        "\tenable_irq_wake(foo->irq);", "\tif (!IS_ENABLED(CONFIG_FOO_WAKE))\n\t\treturn 0;\n"
        "\tenable_irq_wake(foo->irq);")  # fmt: skip
    src = write_driver(tmp_path / "foo.c", text)
    r = run_cli(capsys, "cc", "-DCONFIG_PM_SLEEP", str(src))
    assert "enable_irq_wake" not in r.err  # CONFIG_FOO_WAKE is off: the call never runs
    # (a configuration is a closed world: without CONFIG_PM_SLEEP no noirq callback runs)
    r = run_cli(capsys, "cc", "--fail-level", "warning", "-DCONFIG_FOO_WAKE_MODULE=1",
                "-DCONFIG_PM", "-DCONFIG_PM_SLEEP", str(src))  # fmt: skip
    assert r.code == 1 and "[dpmlens-wake-setup-in-noirq]" in r.err


def test_flags_ignore_what_they_do_not_know():
    flags = parse_flags(["-I", "inc", "-Iarch/x86/include", "-isystem", "/usr/lib/gcc/x",
                         "-include", "k.h", "-DA=2", "-D", "B", "-UC", "-MF", "x.d",
                         "-fno-strict-aliasing", "--param=ssp-buffer-size=4",
                         "drivers/a.c"])  # fmt: skip
    assert flags.include_dirs == ["inc", "arch/x86/include"]
    assert flags.includes == ["k.h"] and flags.sources == ["drivers/a.c"]
    assert flags.macros == [("D", "A=2"), ("D", "B"), ("U", "C")]
    config = from_flags(flags)
    assert config.macros == {"A": "2", "B": "1"} and not config.closed


def _sel(text: str, **macros: str) -> str:
    return select(text.encode(), Kconfig(dict(macros), closed=True)).decode()


def test_select_keeps_lines_and_columns():
    text = "#ifdef CONFIG_A\nint a;\n#elif defined(CONFIG_B) && X\nint b;\n#else\nint c;\n#endif\n"
    out = _sel(text, CONFIG_B="1")
    assert out.splitlines() == ["#ifdef CONFIG_A", "      ", "#elif defined(CONFIG_B) && X",
                                "int b;", "#else", "int c;", "#endif"]  # fmt: skip
    assert len(out) == len(text)
    # X unknown: both the #elif and the #else may be compiled; the #if branch is not.
    out = _sel(text, CONFIG_A="1")
    assert "int a;" in out and "int b;" not in out and "int c;" not in out
    nested = "#if 0\n#ifdef CONFIG_A\nint a;\n#endif\n#endif\nint z;\n"
    assert _sel(nested, CONFIG_A="1").split() == ["#if", "0", "#endif", "int", "z;"]
    comment = ("/*\n#ifdef CONFIG_A\n*/\nint a;\n"
               "#if IS_ENABLED(CONFIG_A) || \\\n  LINUX_X\nint b;\n#endif\n")
    assert "int a;" in _sel(comment) and "int b;" in _sel(comment)
    assert "int b;" not in _sel("#if IS_ENABLED(CONFIG_A) && \\\n  LINUX_X\nint b;\n#endif\n")
    code = "if (IS_ENABLED(CONFIG_PM) && IS_MODULE(CONFIG_X))"
    assert _sel(code, CONFIG_PM="1") == "if (1" + " " * 21 + "&& 0" + " " * 18 + ")"


def test_never_fails_the_build(tmp_path, capsys, monkeypatch):
    src = write_driver(tmp_path / "foo.c")
    r = run_cli(capsys, "cc", "-O2", str(tmp_path / "missing.c"), str(src))
    assert r.code == 0 and "missing.c: cannot read" in r.err and "[dpmlens-" in r.err

    def boom(*_args: object) -> None:
        raise RuntimeError("checker bug")

    monkeypatch.setattr("dpmlens.kbuild.cc.select", boom)
    r = run_cli(capsys, "cc", "-DCONFIG_PM", str(src))
    assert r.code == 0 and "internal error: RuntimeError: checker bug" in r.err


def test_a_file_over_a_limit_is_skipped_and_the_build_goes_on(tmp_path, capsys, monkeypatch):
    """`dpmlens cc` runs inside the kernel build, one file per invocation, with no worker to
    kill: too deep a file is refused before parsing, a slow one stopped at the time budget."""
    import time

    deep = write_driver(tmp_path / "deep.c", NOIRQ_WAKE + "int x = " + "(" * 600 + "1"
                        + ")" * 600 + ";\n")
    r = run_cli(capsys, "cc", str(deep))
    assert r.code == 0 and "dpmlens: skipped: " in r.err and "too deeply nested" in r.err
    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "0.3")
    slow = slow_driver(tmp_path / "slow.c", functions=12_000)  # ~2 s to analyze here
    # CPU, not wall: on a loaded machine the wall clock says nothing about where it stopped
    t0 = time.process_time()
    r = run_cli(capsys, "cc", str(slow))
    took = time.process_time() - t0
    assert r.code == 0 and f"dpmlens: skipped: {slow}: analysis: over the 0.3 seconds" in r.err
    assert "DPMLENS_FILE_TIMEOUT" in r.err and took < 1.5, (took, r.err)
    monkeypatch.delenv("DPMLENS_FILE_TIMEOUT")
    r = run_cli(capsys, "cc", str(write_driver(tmp_path / "ok.c")))  # the next file: analysed
    assert "wake-setup-in-noirq" in r.err
