"""`dpmlens cc`'s quick exit (kbuild/quick.py): it answers for a file without PM words before
the rules are loaded, and never for a file a rule could flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_helpers import NOIRQ_WAKE, write_driver

from dpmlens.engine.analyze import prefilter
from dpmlens.kbuild.quick import PM_WORDS, nothing_to_check, source_args

CLEAN = "int foo_add(int a, int b)\n{\n\treturn a + b;\n}\n"


def test_pm_words_cover_every_word_the_rules_prefilter_keeps_a_file_for() -> None:
    """Every word, gated word or legacy word of the prefilter (all rules enabled) holds one of
    PM_WORDS: a file none of them is in is rejected by the prefilter as well. A new rule
    keyword that is not covered fails here."""
    f = prefilter(None, None)
    for word in (*f.words, *f.gated, *f.legacy):
        assert any(w in word for w in PM_WORDS), f"{word!r} is not covered by kbuild/quick.py"


def test_quick_exit_decisions(tmp_path: Path) -> None:
    clean = tmp_path / "clean.c"
    clean.write_text(CLEAN)
    pm = write_driver(tmp_path / "pm.c", NOIRQ_WAKE)
    flags = ["-Wp,-MMD,x.d", "-nostdinc", "-I", "include", "-include", "include/linux/kconfig.h",
             "-D__KERNEL__", "-o", "out.o", "--fail-level", "warning"]  # fmt: skip
    assert source_args([*flags, str(clean)]) == [str(clean)]
    assert nothing_to_check([*flags, str(clean)])
    assert not nothing_to_check([*flags, str(pm)])
    assert not nothing_to_check([*flags, str(clean), str(pm)])
    assert not nothing_to_check([*flags, str(tmp_path / "missing.c")])  # the full path says why
    assert not nothing_to_check(flags)  # no source: the full path says so
    assert not nothing_to_check(["--help"])


def test_the_quick_exit_imports_neither_rules_nor_tree_sitter(tmp_path: Path) -> None:
    clean = tmp_path / "clean.c"
    clean.write_text(CLEAN)
    code = ("import sys\nfrom dpmlens.cli import main\n"
            f"rc = main(['cc', '-O2', {str(clean)!r}])\n"
            "heavy = [m for m in sys.modules if m.startswith(('tree_sitter', 'yaml', "
            "'dpmlens.rules', 'dpmlens.model', 'argparse', 'dataclasses'))]\n"
            "print(rc, heavy)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.strip() == "0 []", done.stdout + done.stderr
