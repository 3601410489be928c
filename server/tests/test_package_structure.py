"""dpmlens/'s root shows the pipeline: syntax -> model -> rules -> engine -> faces (cli,
commands, lsp, report, patches, kbuild, fleet, traces, capture), with what every stage shares in
core/ and the settings in config/. The root holds no loose modules but the entry point
(cli.py); the lower stages import only what is below them (read with `ast`: module-level,
TYPE_CHECKING and function-local imports all count).

Allowed: core -> nothing; config -> core; syntax -> core; model -> core, config, syntax.
(Above model, rules reach kbuild's Kconfig facts and the engine reaches the traces' and the
fleet's measured delays for --traces/--fleet: those stages are not checked here.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_traces_structure import imports_of

ROOT = Path(__file__).resolve().parents[1] / "dpmlens"
ALLOWED = {
    "core": set(),
    "config": {"core"},
    "syntax": {"core"},
    "model": {"core", "config", "syntax"},
}


def test_the_root_holds_only_the_entry_point() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py") if p.name not in ("__init__.py", "cli.py"))
    assert not loose, f"modules at dpmlens/'s root (put them in a stage): {loose}"


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_a_lower_stage_imports_only_what_is_below_it(stage: str) -> None:
    wrong = []
    for path in sorted((ROOT / stage).rglob("*.py")):
        for name in imports_of(path, ROOT, "dpmlens"):
            target = name.split(".")[1] if name.count(".") >= 1 else ""
            if target and target != stage and target not in ALLOWED[stage]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_the_check_can_fail() -> None:
    """The walk sees imports at all (a stage importing a higher one would be caught)."""
    names = imports_of(ROOT / "model" / "build.py", ROOT, "dpmlens")
    assert any(n.startswith("dpmlens.syntax") for n in names)
