"""The language server's modules form layers: no import circle inside dpmlens/lsp/ (read from
the source with `ast`: module-level, TYPE_CHECKING and function-local imports all count), and
no feature or server is typed `Any`."""

from __future__ import annotations

import ast
from pathlib import Path

LSP = Path(__file__).resolve().parents[1] / "dpmlens" / "lsp"


def imports_of(path: Path, package: str) -> set[str]:
    """The modules of `package` that the module at `path` imports, anywhere in it."""
    here = f"{package}.{path.stem}"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x / from .x import y
                base = ".".join([package, base]).rstrip(".")
            # `from pkg import mod` imports pkg.mod when mod is a module of the package
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        out.update(n for n in names if n.startswith(package + ".") and n != here)
    return out


def import_graph(directory: Path, package: str) -> dict[str, set[str]]:
    modules = {f"{package}.{p.stem}" for p in directory.glob("*.py")}
    return {f"{package}.{p.stem}": imports_of(p, package) & modules
            for p in sorted(directory.glob("*.py"))}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (a -> b -> a) if the graph has any, else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (circle := visit(nxt)) is not None:
                return circle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (circle := visit(node)) is not None:
            return circle
    return None


def test_no_import_circle_in_lsp() -> None:
    graph = import_graph(LSP, "dpmlens.lsp")
    assert len(graph) > 15 and graph["dpmlens.lsp.server"], graph  # it read the real package
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_a_circle_is_found(tmp_path: Path) -> None:
    """The check fails on a circle, also one closed by a function-local import."""
    (tmp_path / "a.py").write_text("from pkg.b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from pkg import c\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\n"
                                   "if TYPE_CHECKING:\n    from pkg.a import x\n")
    (tmp_path / "d.py").write_text("import pkg.a\n")
    graph = import_graph(tmp_path, "pkg")
    assert find_circle(graph) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    (tmp_path / "c.py").write_text("import os\n")
    assert find_circle(import_graph(tmp_path, "pkg")) is None


def test_no_server_or_feature_typed_any() -> None:
    bad = []
    for path in sorted(LSP.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    ann = ast.unparse(arg.annotation) if arg.annotation else ""
                    if arg.arg in ("server", "ls", "feature") and "Any" in ann:
                        bad.append(f"{path.name}:{node.lineno} {node.name}({arg.arg}: {ann})")
    assert not bad, bad
