"""Delay rules follow a PM callback into a helper of another file when a resolver is given
(as the language server's workspace index does); without one they stay in the file."""

from __future__ import annotations

from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.core.findings import TextEdit
from dpmlens.engine.analyze import analyze_model
from dpmlens.lsp.index_worker import portable_model
from dpmlens.model.build import build_model
from dpmlens.model.types import FileModel, FunctionDef

HELPER = b"""#include <linux/delay.h>
#include "qux.h"

#define QUX_SETTLE_MS 3

void qux_settle(struct device *dev)
{
	msleep(QUX_SETTLE_MS);
}

void qux_spin(struct device *dev)
{
	mdelay(QUX_SPIN_MS);
}
"""

CORE = b"""#include <linux/pm.h>

void qux_settle(struct device *dev);
void qux_spin(struct device *dev);

static int qux_resume(struct device *dev)
{
	qux_settle(dev);
	qux_spin(dev);
	return 0;
}

static int qux_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(qux_pm_ops, qux_suspend, qux_resume);
"""


class _Resolver:
    """Functions of the helper file, as the workspace index resolves them."""

    def __init__(self, model: FileModel) -> None:
        self.model = model

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None:
        fn = self.model.functions.get(name)
        return (self.model, fn) if fn else None


def _models(tmp_path: Path) -> tuple[FileModel, FileModel]:
    helper_path, core_path = tmp_path / "qux_helpers.c", tmp_path / "qux_core.c"
    helper_path.write_bytes(HELPER)
    (tmp_path / "qux.h").write_bytes(b"#define QUX_SPIN_MS 15\n")
    core_path.write_bytes(CORE)
    return (
        build_model(str(helper_path), HELPER),
        build_model(str(core_path), CORE),
    )


def _check(core: FileModel, helper: FileModel) -> None:
    found = [
        f for f in analyze_model(core, Config(), _Resolver(helper)) if f.rule == "msleep-under-20ms"
    ]
    assert len(found) == 1, found
    f = found[0]
    # evaluated in the helper's file: its #define gives the value
    assert f.message.startswith(
        "msleep(QUX_SETTLE_MS) = 3 ms in the resume callback qux_resume() via qux_settle()"
        " can sleep up to 8 ms at HZ=250"
    )
    assert f.path == helper.path and f.line == 8
    assert f.phase is not None and "resume" in f.phase
    assert [(s.function, s.path) for s in f.chain] == [
        ("qux_resume", core.path),
        ("qux_resume", core.path),
        ("qux_settle", helper.path),
    ]
    assert f.fixes, "no quick fix"
    edits: list[TextEdit] = [e for fix in f.fixes for e in fix.edits]
    assert edits and all(e.path == helper.path for e in edits)
    assert f.fixes[0].edits[0].new_text == (
        "usleep_range(QUX_SETTLE_MS * USEC_PER_MSEC, (QUX_SETTLE_MS + 1) * USEC_PER_MSEC)"
    )


def test_msleep_in_a_helper_of_another_file_is_reported(tmp_path: Path) -> None:
    helper, core = _models(tmp_path)
    _check(core, helper)


def test_tree_less_helper_models_are_parsed_on_demand(tmp_path: Path) -> None:
    """The workspace index hands out models without a tree (nor header loader): the helper is
    parsed again, so that its loops, comments and local header's #defines count."""
    helper, core = _models(tmp_path)
    light = portable_model(helper)
    assert light.tree is None
    _check(core, light)
    busy = [
        f
        for f in analyze_model(core, Config(), _Resolver(light))
        if f.rule == "busy-wait-in-pm-callback"
    ]
    assert [(f.path, f.line) for f in busy] == [(helper.path, 13)]


def test_without_a_resolver_the_helper_file_is_not_followed(tmp_path: Path) -> None:
    helper, core = _models(tmp_path)
    rules = {"msleep-under-20ms", "busy-wait-in-pm-callback", "delay-beyond-spec"}
    assert not [f for f in analyze_model(core, Config()) if f.rule in rules]
