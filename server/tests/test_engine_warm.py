"""A batch check reads what the rules read once per tree before its workers fork."""

from __future__ import annotations

from pathlib import Path

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.engine.analyze import _filter_set, rules_for, warm
from dpmlens.rules import pm_guards
from dpmlens.rules.loader import load_rules


def _tree(root: Path) -> Path:
    for name in ("Kconfig", "Makefile"):
        (root / name).write_text("\n")
    (root / "scripts" / "kconfig").mkdir(parents=True)
    (root / "include" / "linux").mkdir(parents=True)
    (root / "include" / "linux" / "foo.h").write_text(
        "#ifdef CONFIG_PM_SLEEP\nint foo_suspend_all(void);\n#endif\n"
    )
    (root / "drivers").mkdir()
    c = root / "drivers" / "a.c"
    c.write_text("static int a;\n")
    return c


def test_warm_reads_the_tree_headers_once(tmp_path: Path) -> None:
    c = _tree(tmp_path)
    pm_guards.header_config_only.cache_clear()
    warm(str(c), Config())
    info = pm_guards.header_config_only.cache_info()
    assert info.currsize == 1 and info.misses == 1
    assert "foo_suspend_all" in pm_guards.header_config_only(str(tmp_path))
    # a rule turned off reads nothing
    pm_guards.header_config_only.cache_clear()
    warm(str(c), Config(rules={"deprecated-pm-ops-macro": RuleSetting(enabled=False)}))
    assert pm_guards.header_config_only.cache_info().currsize == 0


def test_rules_for_keeps_the_filters_of_the_same_rules() -> None:
    rules = load_rules()
    assert _filter_set(rules) is _filter_set(list(rules))
    ids = {r.id for r in rules_for(b"static SIMPLE_DEV_PM_OPS(pm, a_suspend, a_resume);", rules)}
    assert "deprecated-pm-ops-macro" in ids and "runtime-pm-enable-not-undone" not in ids
