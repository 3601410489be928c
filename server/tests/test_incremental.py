"""incremental.py: after every edit of a long random sequence, the incremental result is the
full analysis of the same text; and the shortcut is really taken where it should be."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest
import tree_sitter as ts
from kernel_trees import K612
from lsprotocol import types

from dpmlens.config.settings import Config
from dpmlens.core.text_change import changed_region
from dpmlens.engine.analyze import analyze_model
from dpmlens.engine.incremental import IncrementalAnalyzer, Result, _parses_alone, _top_level
from dpmlens.lsp.documents import UTF8, Document
from dpmlens.lsp.index_worker import portable_model
from dpmlens.model import footprint
from dpmlens.model.build import build_model
from dpmlens.model.types import FileModel, FunctionDef
from dpmlens.syntax.parser import parse

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "test-fixtures" / "rules").glob("*.c")) + [
    ROOT / "test-fixtures" / "demo" / "acme_als.c",
    ROOT / "test-fixtures" / "model" / "full_driver.c",
]
KERNEL = K612
REAL = ["drivers/usb/core/hub.c", "drivers/scsi/lpfc/lpfc_init.c",
        "drivers/net/ethernet/intel/e1000e/netdev.c"]

# what a typist adds, plus what makes a function interesting to a rule or breaks the structure
_INSERTS = [b" ", b"x", b"\n", b"\n\n", b";", b"}", b"{", b"/*", b"*/", b"(", b'"', b"#if 0\n",
            b"msleep(20);", b"mdelay(30);", b"spin_lock(&l);", b"pm_runtime_get_sync(dev);",
            b"device_enable_async_suspend(dev);", b"enable_irq_wake(irq);", b"foo_helper(x);",
            b"return 0;", b"static int y;", b"int z = 1;", b"0", b"/* TRSTRCY */ msleep(50);",
            b"usleep_range(100, 200);"]


def _point(text: bytes, offset: int) -> tuple[int, int]:
    return text.count(b"\n", 0, offset), offset - (text.rfind(b"\n", 0, offset) + 1)


def _edit(tree: ts.Tree, old: bytes, start: int, end: int, text: bytes) -> tuple[bytes, ts.Tree]:
    new = old[:start] + text + old[end:]
    tree.edit(start_byte=start, old_end_byte=end, new_end_byte=start + len(text),
              start_point=_point(old, start), old_end_point=_point(old, end),
              new_end_point=_point(new, start + len(text)))
    return new, parse(new, tree)


def _change(
    old: bytes, start: int, end: int, text: bytes
) -> types.TextDocumentContentChangePartial:
    """The LSP change event (UTF-8 columns) replacing old[start:end] by `text` (ASCII)."""
    (l0, c0), (l1, c1) = _point(old, start), _point(old, end)
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=l0, character=c0),
                          end=types.Position(line=l1, character=c1)),
        text=text.decode("ascii"))


class _DirResolver:
    """The workspace index's view for one file: the functions of the other .c files of its
    directory, as tree-less copies (lsp/workspace_index.DirResolver, without the server)."""

    def __init__(self, path: Path) -> None:
        self.functions: dict[str, FileModel] = {}
        for other in sorted(path.parent.glob("*.c")):
            if other != path:
                model = portable_model(build_model(str(other), other.read_bytes()))
                for name in model.functions:
                    self.functions.setdefault(name, model)

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None:
        model = self.functions.get(name)
        return (model, model.functions[name]) if model is not None else None


def _random_edits(
    path: Path, edits: int, seed: int, resolver: object | None = None
) -> tuple[int, int]:
    """Edits applied and reparsed as the server does (lsp/documents.py: an incremental tree
    whose error recovery near the edit could differ from a fresh parse is parsed afresh)."""
    rng = random.Random(seed)
    source = path.read_bytes()
    doc = Document(uri=path.as_uri(), path=str(path), version=0, source=source)
    config = Config()
    analyzer = IncrementalAnalyzer()
    analyzer.analyze(str(path), source, doc.ensure_tree(), config, resolver)
    for i in range(edits):
        if rng.random() < 0.6:
            # inside a statement line most of the time, like typing
            at = rng.randrange(len(doc.source) + 1)
            change = _change(doc.source, at, at, rng.choice(_INSERTS))
        else:
            at = rng.randrange(len(doc.source))
            change = _change(doc.source, at, min(len(doc.source), at + rng.randint(1, 6)), b"")
        doc.apply_change(change, UTF8)
        # as the server does: decided before parsing if it can be, else on the new tree
        got = analyzer.analyze_early(str(path), doc.source, config, resolver, doc.stale()) or (
            analyzer.analyze(str(path), doc.source, doc.ensure_tree(), config, resolver)
        )
        fresh = parse(doc.source)
        want = analyze_model(build_model(str(path), doc.source, fresh), config, resolver)
        assert got.findings == want, f"{path.name}: edit {i} (seed {seed}, {got.how})"
        if got.reused:  # the structure it assumed (or resumed from, with a tree) is the real one
            assert analyzer.state is not None
            items, bodies = _top_level(fresh)
            assert items == analyzer.state.items, f"{path.name}: edit {i} (seed {seed})"
            assert [b[:3] for b in bodies] == [b[:3] for b in analyzer.state.bodies]
    return analyzer.reused, analyzer.full


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_random_edits_match_full_analysis_on_fixtures(path: Path) -> None:
    _random_edits(path, 40, seed=zlib.crc32(path.name.encode()) & 0xFFFF)  # the same each run


@pytest.mark.skipif(not KERNEL.is_dir(), reason=f"needs linux-source-6.12 at {K612}")
@pytest.mark.parametrize("rel", REAL)
def test_random_edits_match_full_analysis_on_real_drivers(rel: str) -> None:
    reused, full = _random_edits(KERNEL / rel, 120, seed=11)
    assert reused > 0, "the shortcut was never taken on a real driver"


@pytest.mark.skipif(not KERNEL.is_dir(), reason=f"needs linux-source-6.12 at {K612}")
@pytest.mark.parametrize("rel", ["drivers/usb/core/hub.c", "drivers/usb/host/xhci.c"])
def test_random_edits_with_the_helpers_of_the_directory(rel: str) -> None:
    # the rules follow callbacks into the other files of the directory, as in the editor
    path = KERNEL / rel
    reused, full = _random_edits(path, 80, seed=5, resolver=_DirResolver(path))
    assert reused > 0


_DRIVER = b"""#include <linux/delay.h>
#include <linux/pm.h>

static int helper_used(struct device *dev)
{
\tmsleep(5);
\treturn 0;
}

static int unrelated(int a, int b)
{
\tint c = a + b;
\treturn c * 2;
}

static int foo_suspend(struct device *dev)
{
\treturn helper_used(dev);
}

static int foo_resume(struct device *dev)
{
\tmdelay(25);
\treturn 0;
}

static SIMPLE_DEV_PM_OPS(foo_pm_ops, foo_suspend, foo_resume);
"""


def _offset_in(source: bytes, marker: bytes) -> int:
    at = source.index(marker)
    return at + len(marker)


def test_edit_in_a_function_no_rule_reads_reuses_and_moves_the_findings() -> None:
    config = Config()
    tree = parse(_DRIVER)
    analyzer = IncrementalAnalyzer()
    first = analyzer.analyze("foo.c", _DRIVER, tree, config)
    assert first.findings and not first.reused
    at = _offset_in(_DRIVER, b"int c = a + b;")
    source, tree = _edit(tree, _DRIVER, at, at, b"\n\tc += 3;\n")
    got = analyzer.analyze("foo.c", source, tree, config)
    assert got.reused and got.model is None
    want = analyze_model(build_model("foo.c", source, parse(source)), config)
    assert got.findings == want
    edited = _DRIVER.count(b"\n", 0, at) + 1
    assert [f.span.line for f in got.findings] == [
        f.span.line + 2 if f.span.line > edited else f.span.line for f in first.findings
    ]
    assert any(f.span.line > edited for f in first.findings)


def _second_analysis(after: bytes, removed: int, text: bytes) -> tuple[Result, bytes]:
    """Analyse _DRIVER, edit it just after `after` (remove `removed` bytes, insert `text`),
    analyse again with the same analyzer."""
    config = Config()
    tree = parse(_DRIVER)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", _DRIVER, tree, config)
    at = _offset_in(_DRIVER, after)
    source, tree = _edit(tree, _DRIVER, at, at + removed, text)
    return analyzer.analyze("foo.c", source, tree, config), source


def test_edit_in_a_function_a_walk_entered_reruns_the_per_function_checkers() -> None:
    # only the delay rules read helper_used() (foo_suspend()'s walk entered it): they run
    # again on the new text, the other rules' findings are kept
    got, source = _second_analysis(b"\tmsleep(", 1, b"50")
    assert b"\tmsleep(50);" in source  # msleep(5) -> msleep(50), still C
    assert got.reused and got.how == "rerun helper_used()" and got.model is not None
    assert got.findings == analyze_model(build_model("foo.c", source, parse(source)), Config())


def test_edit_in_a_function_another_rule_reads_runs_in_full() -> None:
    # wake-not-gated-by-may-wakeup reads the suspend callback that enables wake
    driver = _DRIVER.replace(b"\treturn helper_used(dev);",
                             b"\tenable_irq_wake(5);\n\treturn helper_used(dev);")
    config = Config()
    tree = parse(driver)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", driver, tree, config)
    at = _offset_in(driver, b"enable_irq_wake(5);")
    source, tree = _edit(tree, driver, at, at, b" x++;")
    got = analyzer.analyze("foo.c", source, tree, config)
    assert not got.reused and "foo_suspend" in got.why
    assert got.findings == analyze_model(build_model("foo.c", source, parse(source)), config)


def test_run_rules_keeps_the_per_function_checkers_reads_apart() -> None:
    # what the delay rules read for the callbacks' walks is in their own unit, not the root's
    model = build_model("foo.c", _DRIVER, parse(_DRIVER))
    with footprint.record(model) as fp:
        analyze_model(model, Config())
    assert "helper_used" not in fp.functions
    # (each callback's walk in a unit of its own: foo_resume() reaches only its own mdelay())
    assert "helper_used" in fp.units[footprint.WALK + "foo_suspend"].functions
    assert "helper_used" not in fp.units[footprint.WALK + "foo_resume"].functions
    assert footprint.NAMES not in fp.units and footprint.CHECKER_NAMES in fp.units


def test_a_function_with_a_parse_error_is_decided_before_parsing() -> None:
    # the kernel's container_of(x, struct foo, member): an ERROR node tree-sitter recovers
    # from inside the body; the same error before and after the edit: no reparse
    source = _DRIVER.replace(
        b"\tint c = a + b;",
        b"\tstruct foo *f = container_of(p, struct foo, work);\n\tint c = a + b;")
    assert not _parses_alone(source[source.index(b"static int unrelated"):
                                    source.index(b"static int foo_suspend") - 1])
    tree = parse(source)
    doc = Document(uri="file:///x.c", path="/x.c", version=0, source=source, tree=tree)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("/x.c", source, doc.ensure_tree(), Config())
    at = _offset_in(source, b"int c = a + b;")
    doc.apply_change(_change(source, at, at, b" c++;"), UTF8)
    got = analyzer.analyze_early("/x.c", doc.source, Config())
    assert got is not None and got.how == "reused before parsing"
    want = analyze_model(build_model("/x.c", doc.source, parse(doc.source)), Config())
    assert got.findings == want
    # an edit that changes the error (here: inside it) is parsed
    at = _offset_in(doc.source, b"container_of(p, struct f")
    source = doc.source
    doc.apply_change(_change(source, at, at, b"x"), UTF8)
    assert analyzer.analyze_early("/x.c", doc.source, Config()) is None


def test_a_delay_typed_into_an_unread_function_is_evaluated_there() -> None:
    # no callback reaches unrelated(): its delays are evaluated alone, nothing to report
    got, source = _second_analysis(b"int c = a + b;", 0, b" mdelay(40);")
    assert got.reused
    assert got.findings == analyze_model(build_model("foo.c", source, parse(source)), Config())


def test_a_reported_delay_typed_into_an_unread_function_is_reported() -> None:
    # beyond the TRSTRCY minimum: reported wherever it is; found by judging unrelated() again
    got, source = _second_analysis(b"int c = a + b;", 0, b" /* TRSTRCY */ msleep(50);")
    want = analyze_model(build_model("foo.c", source, parse(source)), Config())
    assert got.reused and got.findings == want
    assert any(f.rule == "delay-beyond-spec" and f.function == "unrelated" for f in want)
    # and an edit elsewhere in that function moves it (the finding is found again)
    analyzer = IncrementalAnalyzer()
    tree = parse(source)
    analyzer.analyze("foo.c", source, tree, Config())
    at = _offset_in(source, b"int c = a + b;")
    source2, tree = _edit(tree, source, at, at, b"\n\tc++;\n")
    got = analyzer.analyze("foo.c", source2, tree, Config())
    assert got.reused
    assert got.findings == analyze_model(build_model("foo.c", source2, parse(source2)), Config())


def test_a_delay_typed_where_no_walk_ran_is_found_by_running_the_checkers_again() -> None:
    # a file without a delay follows no callback: a delay typed into one must be seen (the
    # delay rules searched every function for one: they run again, alone)
    driver = _DRIVER.replace(b"\tmsleep(5);\n", b"").replace(b"\tmdelay(25);\n", b"")
    config = Config()
    tree = parse(driver)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", driver, tree, config)
    at = _offset_in(driver, b"foo_resume(struct device *dev)\n{")
    source, tree = _edit(tree, driver, at, at, b" mdelay(40);")
    got = analyzer.analyze("foo.c", source, tree, config)
    want = analyze_model(build_model("foo.c", source, parse(source)), config)
    assert got.how == "rerun foo_resume()" and got.findings == want
    assert any(f.rule == "busy-wait-in-pm-callback" for f in want)


def test_changed_region() -> None:
    assert changed_region(b"abcdef", b"abXcdef") == (2, 2, 3)
    assert changed_region(b"abcdef", b"abef") == (2, 4, 2)
    assert changed_region(b"aaaa", b"aaaaa") == (4, 4, 5)
    assert changed_region(b"", b"x") == (0, 0, 1)


_WRAPPED = b"""#include <linux/delay.h>
#include <linux/pm.h>

static void foo_msleep(unsigned int ms)
{
\tif (in_atomic())
\t\tmdelay(ms);
\telse
\t\tmsleep(ms);
}

static void other(int a)
{
\tmsleep(2);
}

static int foo_resume(struct device *dev)
{
\tmdelay(25);
\treturn 0;
}

static SIMPLE_DEV_PM_OPS(foo_pm_ops, NULL, foo_resume);
"""


@pytest.mark.parametrize(
    ("after", "removed", "text", "reused"),
    [
        (b"msleep(2", 0, b"0", True),  # the sleep wrapper found is still foo_msleep()
        (b"\t\tmsleep(m", 1, b"x", False),  # foo_msleep() no longer passes its time on
    ],
)
def test_a_file_wide_answer_is_computed_again(
    after: bytes, removed: int, text: bytes, reused: bool
) -> None:
    config = Config()
    tree = parse(_WRAPPED)
    analyzer = IncrementalAnalyzer()
    first = analyzer.analyze("foo.c", _WRAPPED, tree, config)
    # the busy-wait's message names the driver's own wrapper (delays._sleep_helper)
    assert any("foo_msleep()" in f.message for f in first.findings)
    at = _offset_in(_WRAPPED, after)
    source, tree = _edit(tree, _WRAPPED, at, at + removed, text)
    got = analyzer.analyze("foo.c", source, tree, config)
    assert got.reused == reused and (reused or "sleep helper" in got.why), got.why
    assert got.findings == analyze_model(build_model("foo.c", source, parse(source)), config)


def test_a_comment_opened_in_a_function_and_closed_after_it_is_not_decided_early() -> None:
    # alone, `PCIE / *p` is a division; in the file, a `*/` further on makes it a comment
    # that swallows the rest of the function and the next one
    source = (b"static int a(int *p)\n{\n\treturn 4 / 2;\n}\n\n"
              b"static int b(void)\n{\n\t/* two */\n\treturn 2;\n}\n")  # fmt: skip
    assert _parses_alone(source[: source.index(b"}\n") + 1])
    tree = parse(source)
    doc = Document(uri="file:///x.c", path="/x.c", version=0, source=source, tree=tree)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("/x.c", source, doc.ensure_tree(), Config())
    at = source.index(b"/ 2") + 1
    doc.apply_change(_change(source, at, at, b"*"), UTF8)  # `4 /* 2;`: alone, `4 / (*2)`
    assert _parses_alone(doc.source[: doc.source.index(b"}\n") + 1]) is False
    assert analyzer.analyze_early("/x.c", doc.source, Config()) is None
    got = analyzer.analyze("/x.c", doc.source, doc.ensure_tree(), Config())
    assert got.findings == analyze_model(build_model("/x.c", doc.source, parse(doc.source)),
                                         Config())  # fmt: skip


_UNREACHED = _DRIVER.replace(b"\tint c = a + b;", b"\tint c = a + b;\n\t/* TRSTRCY */ msleep(50);")


def test_a_rerun_keeps_the_findings_of_the_delays_no_walk_reaches() -> None:
    # helper_used() is entered by foo_suspend()'s walk: an edit there reruns the delay rules,
    # which evaluate neither the delay of unrelated() (no walk reaches it) nor report it: its
    # last finding is kept, as a full analysis finds it
    config = Config()
    tree = parse(_UNREACHED)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", _UNREACHED, tree, config)
    at = _offset_in(_UNREACHED, b"\tmsleep(")
    source, tree = _edit(tree, _UNREACHED, at, at + 1, b"40")  # msleep(5) -> msleep(40)
    got = analyzer.analyze("foo.c", source, tree, config)
    want = analyze_model(build_model("foo.c", source, parse(source)), config)
    assert got.how == "rerun helper_used()" and got.findings == want
    assert analyzer.kept == 1
    assert any(f.rule == "delay-beyond-spec" and f.function == "unrelated" for f in want)
    # and again (the kept function's own reads carried over), with lines added above it
    at = _offset_in(source, b"\tmsleep(40);")
    source2, tree = _edit(tree, source, at, at, b"\n\tmsleep(1);")
    got = analyzer.analyze("foo.c", source2, tree, config)
    assert got.how == "rerun helper_used()" and analyzer.kept == 2
    assert got.findings == analyze_model(build_model("foo.c", source2, parse(source2)), config)


def test_a_kept_function_that_a_walk_reaches_now_is_evaluated_again() -> None:
    # helper_used() now calls unrelated(): foo_suspend()'s walk reaches its delay, which is
    # then reported in the suspend callback (not kept as it was, unreached)
    config = Config()
    tree = parse(_UNREACHED)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", _UNREACHED, tree, config)
    at = _offset_in(_UNREACHED, b"\tmsleep(5);")
    source, tree = _edit(tree, _UNREACHED, at, at, b"\n\tunrelated(1, 2);")
    got = analyzer.analyze("foo.c", source, tree, config)
    want = analyze_model(build_model("foo.c", source, parse(source)), config)
    assert got.reused and got.findings == want
    assert analyzer.kept == 0
    assert any(f.function == "unrelated" and f.chain for f in want)


@pytest.mark.skipif(not KERNEL.is_dir(), reason=f"needs linux-source-6.12 at {K612}")
def test_a_rerun_on_hub_c_keeps_the_delays_the_resume_walks_do_not_reach() -> None:
    # both resume callbacks' walks enter hub_activate(); 13 other functions hold delays no
    # walk reaches: an edit in hub_activate() evaluates only the reached ones again
    path = KERNEL / "drivers/usb/core/hub.c"
    source = path.read_bytes()
    config = Config()
    tree = parse(source)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze(str(path), source, tree, config)
    fn = source.index(b"\nstatic void hub_activate(")
    at = source.index(b"\n\tif (type == HUB_INIT2", fn) + 1
    edited, tree = _edit(tree, source, at, at, b" ")
    got = analyzer.analyze(str(path), edited, tree, config)
    assert got.how == "rerun hub_activate()" and analyzer.kept > 5
    want = analyze_model(build_model(str(path), edited, parse(edited)), config)
    assert got.findings == want


def test_a_rerun_does_not_walk_again_a_callback_whose_walk_reached_nothing() -> None:
    # foo_resume() reaches no delay: an edit in helper_used() (foo_suspend()'s walk) leaves
    # its walk as it was; an edit in foo_resume() that makes it reach one walks it again
    driver = _UNREACHED.replace(b"\tmdelay(25);\n", b"")
    config = Config()
    tree = parse(driver)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("foo.c", driver, tree, config)
    at = _offset_in(driver, b"\tmsleep(")
    source, tree = _edit(tree, driver, at, at + 1, b"40")
    got = analyzer.analyze("foo.c", source, tree, config)
    assert got.how == "rerun helper_used()" and (analyzer.unwalked, analyzer.kept) == (1, 1)
    assert got.findings == analyze_model(build_model("foo.c", source, parse(source)), config)
    at = _offset_in(source, b"foo_resume(struct device *dev)\n{")
    source2, tree = _edit(tree, source, at, at, b"\n\thelper_used(dev);")
    got = analyzer.analyze("foo.c", source2, tree, config)
    want = analyze_model(build_model("foo.c", source2, parse(source2)), config)
    assert got.how == "rerun foo_resume()" and got.findings == want and analyzer.unwalked == 1
    assert analyzer.state is not None
    assert footprint.WALK + "foo_resume" in analyzer.state.footprint.units


# -- judged without parsing the document (model/spliced.py) ---------------------------------

_GUARDED = b"""#include <linux/delay.h>
#include <linux/pm.h>

#define FOO_WAIT 30

static int foo_probe_hw(struct device *dev)
{
\tmdelay(FOO_WAIT);
\treturn 0;
}

#ifdef CONFIG_PM_SLEEP
static int foo_settle(struct device *dev)
{
\tint x = 1;
\tmdelay(40);
\treturn x;
}
#else
static int foo_settle_off(struct device *dev)
{
\tudelay(10);
\treturn 0;
}
#endif

#ifdef CONFIG_PM
static int foo_twice(void) { mdelay(5); return 0; }
#else
static int foo_twice(void) { mdelay(6); return 0; }
#endif

static int foo_suspend(struct device *dev)
{
\treturn 0;
}

static SIMPLE_DEV_PM_OPS(foo_pm_ops, foo_suspend, NULL);
"""


def _typed(source: bytes, marker: bytes, text: bytes) -> tuple[Document, IncrementalAnalyzer]:
    """A document of `source` analysed once, then `text` typed after `marker` (not parsed)."""
    doc = Document(uri="file:///x.c", path="/x.c", version=0, source=source)
    analyzer = IncrementalAnalyzer()
    analyzer.analyze("/x.c", source, doc.ensure_tree(), Config())
    at = _offset_in(doc.source, marker)
    doc.apply_change(_change(doc.source, at, at, text), UTF8)
    return doc, analyzer


def _full(source: bytes) -> list[object]:
    return list(analyze_model(build_model("/x.c", source, parse(source)), Config()))


@pytest.mark.parametrize(("marker", "text"), [
    (b"mdelay(FOO_WAIT);", b"\n\tmdelay(20);"),  # a function at the top level
    (b"int x = 1;", b"\n\tmsleep(25);"),  # in an #ifdef CONFIG_PM_SLEEP block
    (b"udelay(10);", b"\n\tmdelay(15);"),  # in its #else
    (b"int x = 1;", b" x++;"),  # judged, nothing found
])
def test_an_edit_is_judged_without_parsing_the_document(marker: bytes, text: bytes) -> None:
    doc, analyzer = _typed(_GUARDED, marker, text)
    got = analyzer.analyze_early("/x.c", doc.source, Config(), None, doc.stale())
    assert got is not None and got.how.endswith("() without parsing the document"), got
    assert doc.dirty and analyzer.spliced == 1  # the document was not parsed again
    assert got.findings == _full(doc.source)


def test_a_judgement_reading_beyond_the_edited_function_parses_the_document() -> None:
    # foo_twice() has a second definition: its delays are read there too, from the old tree
    doc, analyzer = _typed(_GUARDED, b"mdelay(5);", b" mdelay(7);")
    assert analyzer.analyze_early("/x.c", doc.source, Config(), None, doc.stale()) is None
    got = analyzer.analyze("/x.c", doc.source, doc.ensure_tree(), Config())
    assert got.how == "judged foo_twice()" and analyzer.spliced == 0
    assert got.findings == _full(doc.source)


def test_without_the_last_tree_the_judgement_waits_for_a_parse() -> None:
    doc, analyzer = _typed(_GUARDED, b"int x = 1;", b"\n\tmsleep(25);")
    assert analyzer.analyze_early("/x.c", doc.source, Config()) is None  # (no stale tree)
    got = analyzer.analyze("/x.c", doc.source, doc.ensure_tree(), Config())
    assert got.how == "judged foo_settle()" and analyzer.spliced == 0
    assert got.findings == _full(doc.source)


def test_a_function_parsed_alone_has_its_subtree_and_blocks_as_in_the_document() -> None:
    from dpmlens.model.spliced import NotSpliced, spliced_model

    doc, _ = _typed(_GUARDED, b"udelay(10);", b"\n\tmdelay(15);")
    stale = doc.stale()
    assert stale is not None
    real = parse(doc.source)
    at = doc.source.index(b"udelay(10);")
    want = real.root_node.descendant_for_byte_range(at, at + 1)
    while want is not None and want.type != "function_definition":
        want = want.parent
    assert want is not None
    model = spliced_model("/x.c", doc.source, stale.tree, want.start_byte, want.end_byte, [],
                          True)
    assert model is not None
    root = model.tree.root_node  # type: ignore[attr-defined]
    got = root.descendant_for_byte_range(want.start_byte, want.end_byte)
    assert str(got) == str(want)  # the same subtree
    path_got, path_want = [], []
    while got is not None:
        path_got.append(got.type)
        got = got.parent
    while want is not None:
        path_want.append(want.type)
        want = want.parent
    assert path_got == path_want == [
        "function_definition", "preproc_else", "preproc_ifdef", "translation_unit"]
    with pytest.raises(NotSpliced):  # a node of the old tree: its text is gone
        root.descendant_for_byte_range(0, 5)
    with pytest.raises(NotSpliced):
        model.calls  # noqa: B018  (every call of the file)


@pytest.mark.skipif(not KERNEL.is_dir(), reason=f"needs linux-source-6.12 at {K612}")
def test_typing_in_hub_c_is_judged_without_parsing_the_document() -> None:
    # the bench's keystrokes (a space typed and deleted on statement lines of functions with
    # delays, spread over the file: earlier edits pile up in other functions unparsed)
    path = KERNEL / "drivers/usb/core/hub.c"
    doc = Document(uri=path.as_uri(), path=str(path), version=0, source=path.read_bytes())
    config = Config()
    analyzer = IncrementalAnalyzer()
    analyzer.analyze(str(path), doc.source, doc.ensure_tree(), config)
    lines = doc.source.split(b"\n")
    spots = [i for i, ln in enumerate(lines) if ln.startswith(b"\t") and b"msleep(" in ln][:12]
    for line in spots:
        for text, width in ((" ", 0), ("", 1)):
            doc.apply_change(types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=1),
                                  end=types.Position(line=line, character=1 + width)),
                text=text), UTF8)
            got = analyzer.analyze_early(str(path), doc.source, config, None, doc.stale()) or (
                analyzer.analyze(str(path), doc.source, doc.ensure_tree(), config))
            model = build_model(str(path), doc.source, parse(doc.source))
            want = analyze_model(model, config)
            assert got.findings == want, (line, got.how)
            # the top level carried over the edits is the one read from a tree of the text
            top = analyzer.state.top if analyzer.state is not None else None
            if top is not None:
                moved = top.moved(analyzer.state.shifts)  # type: ignore[union-attr]
                assert moved is not None and moved.funcs == model.functions, (line, got.how)
                assert moved.ranges == model.loader.func_ranges  # type: ignore[union-attr]
                assert moved.defs == model.defines
    assert analyzer.spliced >= 6, analyzer.spliced


def test_a_rerun_is_made_without_parsing_the_document() -> None:
    # helper_used() is entered by foo_suspend()'s walk: its edit reruns the per-function
    # checkers, on a model whose other functions are each parsed alone when read
    doc, analyzer = _typed(_DRIVER, b"\tmsleep(5", b"0")
    got = analyzer.analyze_early("/x.c", doc.source, Config(), None, doc.stale())
    assert got is not None and got.how == "rerun helper_used() without parsing the document"
    assert doc.dirty and analyzer.spliced == 1 and analyzer.rerun == 1
    assert got.findings == _full(doc.source)


_FIELD = b"""#include <linux/delay.h>
#include <linux/pm.h>

struct foo_data { unsigned int reset_ms; };

static const struct foo_data foo_a = { .reset_ms = 300, };

static int foo_reset(struct foo_priv *priv)
{
\tint x = 0;
\tmsleep(priv->data->reset_ms);
\treturn x;
}
"""


def test_a_delay_valued_by_a_file_scope_initializer_is_judged_on_the_document() -> None:
    # its value is read from `.reset_ms = 300` outside the function: a spliced model has no
    # node there (a function parsed alone has only itself under its root), so the judgement
    # is made on the reparsed document
    doc, analyzer = _typed(_FIELD, b"int x = 0;", b" x++;")
    assert analyzer.analyze_early("/x.c", doc.source, Config(), None, doc.stale()) is None
    got = analyzer.analyze("/x.c", doc.source, doc.ensure_tree(), Config())
    assert got.reused and analyzer.spliced == 0
    assert got.findings == _full(doc.source)
