"""The Hyperscan prefilter decides exactly as the Python passes do (syntax/fast_filter.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dpmlens.engine.analyze import prefilter
from dpmlens.model.keywords import index_filter
from dpmlens.syntax.prefilter import WordFilter

pytest.importorskip("hyperscan")

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures"


def _filters() -> list[WordFilter]:
    return [prefilter(), index_filter()]


def test_hyperscan_is_used_where_installed() -> None:
    assert all(f._fast is not None for f in _filters())


def test_same_decision_on_every_fixture() -> None:
    sources = [p.read_bytes() for p in sorted(FIXTURES.rglob("*.[ch]"))]
    assert len(sources) > 30
    for f in _filters():
        decisions = [(f.matches(s), f.matches_by_passes(s)) for s in sources]
        assert all(a == b for a, b in decisions)
        assert any(a for a, _ in decisions) and not all(a for a, _ in decisions)


def _pieces(f: WordFilter) -> list[bytes]:
    return [
        *f.words, *f.gated, *f.gate, *f.legacy, *(w for c in f.clauses for g in c for w in g),
        b"struct platform_driver foo_driver = {", b"struct pci_driver x\n=\n{",
        b"x", b"_", b"(", b";", b" ", b"\n", b"1", b"#", b"\xe9",
    ]  # fmt: skip


def test_same_decision_on_random_mixtures_of_the_words() -> None:
    rng = random.Random(20261123)
    for f in _filters():
        pieces = _pieces(f)
        for _ in range(3000):
            parts = [rng.choice(pieces) for _ in range(rng.randint(0, 6))]
            # a word glued to another may stop being whole: both paths must agree on that too
            text = (b"" if rng.random() < 0.3 else b" ").join(parts)
            assert f.matches(text) == f.matches_by_passes(text), text


def test_gated_words_need_a_whole_word_delay_call() -> None:
    f = prefilter()
    assert f.matches(b"msleep(PCIE_T_PVPERL_MS); /* PERST# */")
    assert not f.matches(b"my_msleep(10); /* PERST# */")
    assert not f.matches(b"msleep(10);")


def test_without_hyperscan_the_passes_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPMLENS_NO_HYPERSCAN", "1")
    f = WordFilter(words=(b"dev_pm_ops",))
    assert f._fast is None and f.matches(b"struct dev_pm_ops") and not f.matches(b"pm_ops")


def test_clauses_need_a_word_of_every_group() -> None:
    f = prefilter()
    assert f.clauses, "the balance rules ask for a driver's .probe beside their set-up words"
    enable = b"static int p(struct device *d) { pm_runtime_enable(d); return 0; }\n"
    driver = b"static struct platform_driver drv = { .probe = p };\n"
    for decide in (f.matches, f.matches_by_passes):
        assert not decide(enable)  # no driver of the file: the balance rules read nothing
        assert decide(enable + driver)
        assert decide(b"device_init_wakeup(d, true);" + driver)
    g = WordFilter(clauses=(((b"pm_runtime_enable",), (b".probe", b".add"), (b"_get",)),))
    for decide in (g.matches, g.matches_by_passes):
        assert decide(b"pm_runtime_enable(); x_get(); .add = f")
        assert not decide(b"pm_runtime_enable(); .add = f") and not decide(b".probe _get")


def _rule_filters() -> tuple[WordFilter, ...]:
    from dpmlens.engine.analyze import _prefilter
    from dpmlens.rules.loader import load_rules

    return tuple(_prefilter((r,)) for r in load_rules())


def test_filter_set_decides_each_rule_as_its_own_filter() -> None:
    from dpmlens.syntax.filter_set import FilterSet

    filters = _rule_filters()
    fs = FilterSet(filters)
    assert fs._fast is not None
    sources = [p.read_bytes() for p in sorted(FIXTURES.rglob("*.[ch]"))]
    rng = random.Random(20261129)
    pieces = [p for f in filters for p in _pieces(f)]
    for _ in range(2000):
        parts = [rng.choice(pieces) for _ in range(rng.randint(0, 8))]
        sources.append((b"" if rng.random() < 0.3 else b" ").join(parts))
    seen = set()
    for s in sources:
        got = fs.which(s)
        assert got == tuple(f.matches_by_passes(s) for f in filters), s[:200]
        seen.add(got)
    assert len(seen) > 10  # the mixtures tell the rules apart


def test_filter_set_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpmlens.syntax.filter_set import FilterSet

    monkeypatch.setenv("DPMLENS_NO_HYPERSCAN", "1")
    fs = FilterSet((WordFilter(words=(b"dev_pm_ops",)), WordFilter(words=(b"msleep",))))
    assert fs._fast is None
    assert fs.which(b"msleep(1);") == (False, True)
