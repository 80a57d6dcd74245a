"""The library's modules import each other without cycles, function-local imports included.

A cycle hidden inside a function works until someone moves the import to the top; it also
means two modules that cannot be understood (or tested) one without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str = "galu") -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its body. Importing ``a.b.c``
    runs ``a.b``'s ``__init__`` first, so that is an edge too, except to the importer's own
    packages (Python has already started those when the importer runs)."""
    files = {_module_name(p, root): p for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                wanted = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            else:
                continue
            for target in (t for t in wanted if t in files):
                parts = target.split(".")
                chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
                own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
                graph[name] |= {t for t in chain if t in files} - own - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_detector_finds_a_cycle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub/__init__.py").write_text("from pkg.sub.b import B\n")
    (pkg / "a.py").write_text("def f():\n    from pkg.sub.b import B\n")
    (pkg / "sub/b.py").write_text("from pkg.c import C\nB = 1\n")
    (pkg / "c.py").write_text("import pkg.a\nC = 1\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.sub", "pkg.sub.b"}  # the package's __init__ runs first
    assert "pkg.sub" not in graph["pkg.sub.b"]  # its own package: not an edge
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub", "pkg.sub.b"]]
    (pkg / "c.py").write_text("C = 1\n")
    assert cycles(import_graph(tmp_path, "pkg")) == []


def test_galu_has_no_import_cycle():
    assert cycles(import_graph(REPO)) == []


def _package(module: str) -> str:
    """The part of galu a module belongs to: ``galu.workflow``, ``galu.scm``, ``galu.seeding``."""
    return ".".join(module.split(".")[:2])


def test_no_science_module_imports_the_workflow_machinery():
    """The papers' packages and the shared science import nothing of galu.workflow: a
    result's numbers depend on the science alone, and the science can be read, tested and
    reused without the machinery around it."""
    graph = import_graph(REPO)
    science = [m for m in graph if _package(m) not in ("galu.workflow", "galu")]
    assert {_package(m) for m in science} >= {"galu.scm", "galu.normalization", "galu.ensembles",
                                              "galu.seeding", "galu.declarations"}  # fmt: skip
    wrong = {m: sorted(t for t in graph[m] if _package(t) == "galu.workflow") for m in science}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_the_packages_import_each_other_without_cycles():
    graph = import_graph(REPO)
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(_package(module), set()).update(
            _package(t) for t in targets if _package(t) != _package(module)
        )
    assert cycles(packages) == []
    assert packages["galu.workflow"] >= {"galu.normalization", "galu.declarations"}
    assert not packages["galu.seeding"] and not packages["galu.declarations"]
