"""syntax/parts.py and engine/parted.py: a large C text analysed in parts, each read with
what it uses from the rest, gives the findings of the whole text (real drivers split small)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K612

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.engine.analyze import analyze_model, prefilter, rules_for
from dpmlens.engine.check import check_file
from dpmlens.engine.parted import analyze_parts
from dpmlens.model.build import build_model
from dpmlens.rules.loader import load_rules
from dpmlens.syntax.parts import split

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures"

# three "files" of one amalgamation: a helper with its other caller, a PM table in another part
# calling it, an exported API, a local variable named like a function, a pointer call
TEXT = b"""#include <linux/module.h>
#include "foo_regs.h"

#define FOO_SETTLE_MS 20

static void foo_hw_reset(struct foo *foo)
{
\tmsleep(FOO_SETTLE_MS);
}

static int foo_probe(struct platform_device *pdev)
{
\tfoo_hw_reset(platform_get_drvdata(pdev));
\treturn 0;
}

int foo_api(void)
{
\treturn 0;
}
EXPORT_SYMBOL_GPL(foo_api);

static int result(int x)
{
\treturn x;
}

static int bar_start(struct bar *bar)
{
\treturn 0;
}

static const struct bar_ops bar_ops = {
\t.start = bar_start,
};

/* ---- second file ---- */

static int baz_count(struct baz *baz)
{
\tint result = 0;

\treturn result + foo_api();
}

static int foo_resume(struct device *dev)
{
\tstruct bar *bar = dev_get_drvdata(dev);

\tfoo_hw_reset(dev_get_drvdata(dev));
\treturn bar->ops->start(bar);
}

static DEFINE_SIMPLE_DEV_PM_OPS(foo_pm, NULL, foo_resume);
"""


def _blocks_of(text: bytes, target: int) -> list[list[bytes]]:
    """Per part: the first line of each of its context pieces."""
    out = []
    for part in split(text, target):
        out.append([text[c.start : c.end].split(b"\n", 1)[0] for c in part.context])
    return out


def test_parts_cover_the_text_and_cut_only_at_top_level() -> None:
    for target in (1, 64, 4096):
        parts = split(TEXT, target)
        assert parts[0].own.start == 0 and parts[-1].own.end == len(TEXT)
        assert all(a.own.end == b.own.start for a, b in zip(parts, parts[1:], strict=False))
        for part in parts:
            own = TEXT[part.own.start : part.own.end]
            assert part.own.line == TEXT.count(b"\n", 0, part.own.start)
            # no function, table or #if cut
            assert own.count(b"{") == own.count(b"}"), own
            assert own.count(b"#if") == own.count(b"#endif"), own


def test_context_holds_what_the_part_uses_and_the_helpers_other_callers() -> None:
    parts = split(TEXT, 1)  # every block a part of its own
    resume = next(p for p in parts if b"foo_resume(struct" in TEXT[p.own.start : p.own.end])
    heads = [TEXT[c.start : c.end] for c in resume.context]
    joined = b"".join(heads)
    assert b"static void foo_hw_reset(" in joined  # the helper it calls
    assert b"static int foo_probe(" in joined  # the helper's other caller
    assert b".start = bar_start" in joined and b"static int bar_start(" in joined  # ops->start
    assert b'#include "foo_regs.h"' in joined  # a local header the model reads
    assert b"int foo_api(void)" not in joined  # exported: a call out of the file
    baz = next(p for p in parts if b"baz_count" in TEXT[p.own.start : p.own.end])
    assert b"static int result(" not in b"".join(TEXT[c.start : c.end] for c in baz.context)
    table = next(p for p in parts if b"DEFINE_SIMPLE_DEV_PM_OPS" in TEXT[p.own.start : p.own.end])
    assert b"static int foo_resume(" in b"".join(TEXT[c.start : c.end] for c in table.context)


def test_a_parts_text_maps_its_lines_back() -> None:
    for part in split(TEXT, 1):
        text_lines = part.text(TEXT).split(b"\n")
        whole_lines = TEXT.split(b"\n")
        for first, whole in part.lines(TEXT):
            assert text_lines[first - 1] == whole_lines[whole - 1]


def _key(f: Finding) -> tuple[str, int, int, int, str, tuple[int, ...]]:
    return (f.rule, f.span.line, f.span.column, f.span.end_line, f.message,
            tuple(c.span.line for c in f.chain))


def _agree(path: Path, target: int) -> tuple[set[object], set[object]]:
    config, rules = Config(), load_rules()
    source = path.read_bytes()
    whole = analyze_model(build_model(str(path), source), config, None, rules_for(source, rules))
    parted = analyze_parts(str(path), source, config, rules, prefilter(config, rules), target)
    return {_key(f) for f in whole}, {_key(f) for f in parted}


@pytest.mark.parametrize("path", sorted((FIXTURES / "rules").rglob("*.c")), ids=lambda p: p.name)
def test_real_and_fixture_drivers_in_4k_parts_agree_with_the_whole(path: Path) -> None:
    # test-fixtures/rules/history holds real drivers as maintainers fixed them
    whole, parted = _agree(path, 4096)
    assert whole == parted


def test_check_splits_a_source_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "rules" / "get-sync-without-put-on-error-callbacks.c"
    config = Config()
    whole = check_file(str(path), config)
    monkeypatch.setenv("DPMLENS_WHOLE_SOURCE_BYTES", "1k")  # parts of 4 KiB
    assert len(split(path.read_bytes(), 4096)) > 1
    parted = check_file(str(path), config)
    assert whole.error is None and parted.error is None
    assert [_key(f) for f in whole.findings] == [_key(f) for f in parted.findings]
    assert whole.lines == parted.lines and whole.findings


REAL = ["sound/pci/es1968.c", "drivers/scsi/fdomain.c", "drivers/iio/pressure/bmp280-core.c",
        "drivers/net/ethernet/atheros/atlx/atl2.c", "drivers/usb/core/hub.c"]


@pytest.mark.parametrize("rel", REAL)
def test_kernel_drivers_in_16k_parts_agree_with_the_whole(rel: str) -> None:
    # each once lost a finding to a part that lacked what it reads (a helper's other caller,
    # a pointer call's setters, a body after a header's prototype, a cut at `#if 0`)
    path = K612 / rel
    if not path.is_file():
        pytest.skip(f"no kernel tree at {K612} (set DPMLENS_LINUX)")
    whole, parted = _agree(path, 16384)
    assert whole == parted


def test_cc_splits_a_source_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpmlens.kbuild.cc import analyze

    path = FIXTURES / "rules" / "get-sync-without-put-on-error-callbacks.c"
    source, config, rules = path.read_bytes(), Config(), load_rules()
    whole = analyze(str(path), source, None, config, rules)
    monkeypatch.setenv("DPMLENS_WHOLE_SOURCE_BYTES", "1k")
    parted = analyze(str(path), source, None, config, rules)
    assert whole and [_key(f) for f in whole] == [_key(f) for f in parted]
