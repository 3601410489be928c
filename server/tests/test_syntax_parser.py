"""The tree-sitter wrapper: parse, incremental reparse equivalence, queries, prefilter."""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_sitter as ts

from dpmlens.engine.analyze import prefilter
from dpmlens.model.build import build_model
from dpmlens.model.keywords import index_filter
from dpmlens.syntax import parser as sp
from dpmlens.syntax.prefilter import WordFilter

SRC = b"""#define DELAY 10
static int foo_suspend(struct device *dev)
{
\tmsleep(DELAY);
\treturn 0;
}
static DEFINE_SIMPLE_DEV_PM_OPS(foo_pm, foo_suspend, NULL);
"""


def _point(src: bytes, offset: int) -> tuple[int, int]:
    line = src.count(b"\n", 0, offset)
    return line, offset - (src.rfind(b"\n", 0, offset) + 1)


def _edit(tree: ts.Tree, old: bytes, start: int, old_end: int, new_text: bytes) -> bytes:
    new = old[:start] + new_text + old[old_end:]
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=start + len(new_text),
        start_point=_point(old, start),
        old_end_point=_point(old, old_end),
        new_end_point=_point(new, start + len(new_text)),
    )
    return new


@pytest.mark.parametrize(
    ("find", "replacement"),
    [
        (b"msleep(DELAY)", b"msleep(DELAY + 40)"),
        (b"foo_suspend(struct", b"foo_suspend_noirq(struct"),
        (b"return 0;", b"return foo_helper(dev);\n\treturn 0;"),
        (b"DEFINE_SIMPLE_DEV_PM_OPS", b"DEFINE_NOIRQ_DEV_PM_OPS"),
    ],
)
def test_incremental_reparse_equals_fresh_parse(find: bytes, replacement: bytes) -> None:
    tree = sp.parse(SRC)
    start = SRC.index(find)
    new = _edit(tree, SRC, start, start + len(find), replacement)
    incremental = sp.parse(new, tree)
    fresh = sp.parse(new)
    assert str(incremental.root_node) == str(fresh.root_node)
    a = build_model("a.c", new, incremental)
    b = build_model("a.c", new, fresh)
    assert a.functions == b.functions and a.pm_tables == b.pm_tables
    assert a.calls == b.calls


def test_node_span_is_one_based_end_exclusive() -> None:
    tree = sp.parse(b"int x;\nint foo(void) { return 1; }\n")
    fn = tree.root_node.children[1]
    span = sp.node_span(fn)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 1, 2, 28)


def test_line_index_matches_tree_points() -> None:
    idx = sp.LineIndex(SRC)
    for off in (0, 5, SRC.index(b"msleep"), len(SRC) - 1, 3):  # also a backwards jump
        line, col = idx.point(off)
        row, c = _point(SRC, off)
        assert (line, col) == (row + 1, c + 1)


def test_captures_sorted_in_document_order() -> None:
    src = b"void f(void) { a(b(c(1)), d()); e(); }"
    found = sp.captures(sp.load_query("calls"), sp.parse(src).root_node)
    starts = [n.start_byte for n in found["call"]]
    assert starts == sorted(starts) and len(starts) == 5


def test_bad_query_file_is_a_one_line_error(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "grammars").mkdir()
    (tmp_path / "rules").mkdir()
    (tmp_path / "grammars" / "broken.scm").write_text("(call_expression @x")
    monkeypatch.setenv("DPMLENS_DATA_DIR", str(tmp_path))
    sp.load_query.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"broken\.scm: invalid tree-sitter query"):
            sp.load_query("broken")
        with pytest.raises(ValueError, match=r"missing\.scm: cannot read"):
            sp.load_query("missing")
    finally:
        sp.load_query.cache_clear()


def test_repository_queries_compile() -> None:
    for name in ("calls", "model"):
        assert sp.load_query(name).pattern_count >= 1


@pytest.mark.parametrize(
    "text",
    [
        b"static const struct dev_pm_ops x = {};",
        b"static SIMPLE_DEV_PM_OPS(a, b, c);",
        b"static struct pci_driver d = { .suspend = x };",
        b"static struct platform_driver d __initdata = {\n\t.resume = x,\n};",
        b"ret = pm_runtime_get_sync(dev);",
        b"msleep(USB_RESUME_TIMEOUT);",
        b"/* TRSTRCY = 10 ms; plus some extra */ msleep(50);",  # spec words: next to a delay
        b"/* TRSMRCY */\n\tmdelay(20);",
    ],
)
def test_prefilter_keeps_pm_files(text: bytes) -> None:
    assert prefilter().matches(b"int a;\n" + text + b"\n")


def test_prefilter_drops_files_without_pm() -> None:
    pf = prefilter()
    assert not pf.matches(b"static int add(int a, int b) { return a + b; }\n")
    assert not pf.matches(b"")
    # .suspend in a non-driver ops struct: not a legacy bus callback
    ops = b"static const struct snd_soc_component_driver c = { .suspend = x };"
    assert not pf.matches(ops)
    put = b"pm_runtime_put(dev);"
    assert not pf.matches(put) and index_filter().matches(put)
    # a subsystem ops struct of rules/tables/subsystem-ops.yaml holds callbacks
    assert pf.matches(b"static const struct tb_cm_ops icm_ops = { .suspend_noirq = f };")


def test_word_filter_anchored_words_and_union() -> None:
    f = WordFilter(words=(b"my_special_delay", b"dev_pm_ops", b"PLAIN", b"a_b"))
    assert f.matches(b"x = my_special_delay;") and f.matches(b"PLAIN") and f.matches(b"a_b")
    assert not f.matches(b"my_special_dela") and not f.matches(b"_pm_ops")
    g = f.union(WordFilter(words=(b"other",)))
    assert g.matches(b"other") and g.matches(b"dev_pm_ops") and not f.matches(b"other")
    # a word containing another is redundant: the shorter one decides
    assert WordFilter(words=(b"USB_RESUME_TIMEOUT", b"RESUME_TIMEOUT")).matches(b"RESUME_TIMEOUT")


def test_line_index_after_many_lookups_uses_the_full_index() -> None:
    idx = sp.LineIndex(SRC)
    offsets = list(range(0, len(SRC), 3)) + [len(SRC)]
    assert len(offsets) > 16
    for off in offsets + offsets[::-1]:
        row, c = _point(SRC, off)
        assert idx.point(off) == (row + 1, c + 1)


def test_parse_from_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    sources = [SRC.replace(b"DELAY", f"D{i}".encode()) for i in range(16)]
    with ThreadPoolExecutor(4) as pool:
        trees = list(pool.map(sp.parse, sources))
    assert [str(t.root_node) for t in trees] == [str(sp.parse(s).root_node) for s in sources]


def test_prefilter_spec_words_need_a_delay_call() -> None:
    gate = (b"msleep", b"mdelay", b"usleep_range")
    words = WordFilter(words=(b"PM_OPS",), gated=(b"D3HOT",), gate=gate)
    header = b"#define NBIO_PMI_STATUS__D3HOT_MASK 0x4\n#define ATS_Resp_delay_timer 0x8\n"
    assert not words.matches(header)
    assert words.matches(b"/* D3HOT */\nmsleep(10);\n")
    assert words.matches(b"/* D3HOT */\nusleep_range (10, 20);\n")
    # PM constructs do not need a delay
    assert words.matches(b"static DEFINE_SIMPLE_DEV_PM_OPS(a, b, c);")
    assert not words.matches(b"msleep(10);")
    pf = prefilter()
    assert pf.matches(b"static struct pci_driver d = { .suspend = x };")
    assert not pf.matches(header)
