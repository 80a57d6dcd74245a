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


# galu.workflow's rooms in layers (galu/workflow/__init__.py): a module imports only its own
# layer and those before it. Layer 0: the package's own modules (the jobs' result code and
# the records every room reads) and the data room.
LAYERS = (
    ("", "data"),
    ("settings",),
    ("planning",),
    ("trust",),
    ("running",),
    ("pages",),
    ("publishing",),
    ("commands",),
)
ROOMS = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def layer(module: str) -> int | None:
    """The layer of a galu.workflow module (the command line's root, cli, with the
    commands), None outside galu.workflow or for the package itself."""
    parts = module.split(".")
    if parts[:2] != ["galu", "workflow"] or len(parts) == 2:
        return None
    if module == "galu.workflow.cli":
        return ROOMS["commands"]
    return ROOMS.get(parts[2], ROOMS[""])


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports from a room into a later layer."""
    return sorted(
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if layer(m) is not None and layer(t) is not None and layer(t) > layer(m)
    )


def test_the_machinery_rooms_import_only_their_own_layer_and_earlier_ones():
    graph = import_graph(REPO)
    rooms = {m.split(".")[2] for m in graph if layer(m) and m != "galu.workflow.cli"}
    assert rooms == {r for rooms in LAYERS[1:] for r in rooms}  # every room has its layer
    assert upward(graph) == []
    # each room opens with what it is for
    for room in rooms:
        doc = (REPO / "galu/workflow" / room / "__init__.py").read_text()
        assert doc.startswith('"""') and len(doc.split('"""')[1]) > 150, room


def test_an_upward_import_is_found():
    graph = {"galu.workflow.provenance": {"galu.workflow.trust.audit"},
             "galu.workflow.pages.compare": {"galu.workflow.claims_text"}}  # fmt: skip
    assert upward(graph) == [("galu.workflow.provenance", "galu.workflow.trust.audit")]
