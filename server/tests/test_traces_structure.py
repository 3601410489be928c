"""dpmlens/traces/ has the pipeline's shape: read -> model -> analysis -> source -> report, one
subpackage per stage, with no import circle and no upward import (read from the source with
`ast`: module-level, TYPE_CHECKING and function-local imports all count).

Allowed: read -> model; analysis -> model; source -> model, analysis; report -> everything
below. Nothing inside traces/ imports report except report itself, and no stage module imports
the package's top level (`dpmlens.traces`, whose __init__ re-exports from every stage)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_lsp_structure import find_circle

import dpmlens.traces

TRACES = Path(__file__).resolve().parents[1] / "dpmlens" / "traces"
PKG = "dpmlens.traces"
ALLOWED = {
    "model": set(),
    "read": {"model"},
    "analysis": {"model"},
    "source": {"model", "analysis"},
    "report": {"model", "read", "analysis", "source"},
}


def module_name(path: Path, root: Path, package: str) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([package, *parts])


def imports_of(path: Path, root: Path, package: str) -> set[str]:
    """Every dotted name under `package` that the module at `path` imports, anywhere in it
    (`from pkg.a import b` gives pkg.a and pkg.a.b: b may be a module)."""
    here = module_name(path, root, package)
    cur = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = cur.split(".")[: len(cur.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base]).rstrip(".")
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        out.update(n for n in names if (n == package or n.startswith(package + "."))
                   and n != here)
    return out


def graph_of(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (names that are not modules, such as
    a function in `from pkg.a import f`, are dropped)."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(p, root, package): p for p in files}
    return {m: {n for n in imports_of(p, root, package) if n in modules and n != package}
            for m, p in modules.items()}


def violations(root: Path, package: str) -> list[str]:
    """Upward or sideways imports between stages, and imports of the package's top level."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        me = module_name(path, root, package)
        rel = path.relative_to(root).parts
        if len(rel) < 2:
            continue  # the package's own __init__: the public face, may import any stage
        stage = rel[0]
        for name in sorted(imports_of(path, root, package)):
            if name == package:
                bad.append(f"{me} imports the package top level {package}")
                continue
            other = name[len(package) + 1:].split(".")[0]
            if other == stage or other not in ALLOWED:
                if other not in ALLOWED and other != stage:
                    bad.append(f"{me} imports {name}, outside the stages")
                continue
            if other not in ALLOWED.get(stage, set()):
                bad.append(f"{me} ({stage}) imports {other}: {name}")
    # one line per (module, stage it must not import): `from pkg.a import b` names both
    seen: set[str] = set()
    return [b for b in bad if not (b.split(":")[0] in seen or seen.add(b.split(":")[0]))]


def test_traces_is_split_by_stage() -> None:
    loose = sorted(p.name for p in TRACES.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"modules outside the stage subpackages: {loose}"
    assert sorted(p.name for p in TRACES.iterdir() if p.is_dir() and p.name != "__pycache__") \
        == sorted(ALLOWED)
    graph = graph_of(TRACES, PKG)
    assert len(graph) > 30 and graph[f"{PKG}.read.ftrace"], graph  # it read the real package


def test_no_import_circle_in_traces() -> None:
    circle = find_circle(graph_of(TRACES, PKG))
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_no_upward_import_in_traces() -> None:
    assert violations(TRACES, PKG) == []


def test_the_checks_fail_on_a_bad_tree(tmp_path: Path) -> None:
    """An upward import (model -> analysis, also function-local), an import of report from
    analysis, and a circle closed under TYPE_CHECKING are all found."""
    root = tmp_path / "pkg"
    for stage in ALLOWED:
        (root / stage).mkdir(parents=True)
        (root / stage / "__init__.py").write_text("")
    (root / "__init__.py").write_text("from pkg.report.out import f\n")
    (root / "model" / "a.py").write_text("def g():\n    from pkg.analysis.b import h\n")
    (root / "analysis" / "b.py").write_text("from pkg.model import a\nfrom pkg.report import out\n")
    (root / "report" / "out.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..analysis.b import x\n")
    (root / "read" / "r.py").write_text("import pkg\n")
    bad = violations(root, "pkg")
    assert "pkg.model.a (model) imports analysis: pkg.analysis.b" in bad
    assert "pkg.analysis.b (analysis) imports report: pkg.report" in bad
    assert "pkg.read.r imports the package top level pkg" in bad
    assert len(bad) == 3, bad
    circle = find_circle(graph_of(root, "pkg"))
    assert circle is not None and "pkg.analysis.b" in circle
    (root / "model" / "a.py").write_text("import os\n")
    (root / "read" / "r.py").write_text("from pkg.model import a\n")
    (root / "analysis" / "b.py").write_text("from pkg.model import a\n")
    assert violations(root, "pkg") == [] and find_circle(graph_of(root, "pkg")) is None


@pytest.mark.parametrize("name", dpmlens.traces.__all__)
def test_public_names_import_from_the_top_level(name: str) -> None:
    assert getattr(dpmlens.traces, name) is not None
