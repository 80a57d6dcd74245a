"""The code a job runs: its script and every project module and data file that reaches.

A rule's result depends on more than its own script: ``scripts/scm_ode.py`` imports
``galu.scm.odes``, which imports ``galu.scm.averages``, and so on. :class:`CodeScanner`
finds that *closure* statically, by parsing the imports with :mod:`ast` (no code runs):

- ``import a.b.c`` and ``from a.b import c`` (absolute), ``from . import x`` and
  ``from ..y import z`` (relative to the importing module's package), anywhere in a
  module (function-local and ``if TYPE_CHECKING:`` imports count too);
- importing ``a.b.c`` executes ``a/__init__.py`` and ``a/b/__init__.py`` first, so
  those are part of the closure;
- only the project's own packages count (``galu``: torch, numpy, ... are versions, which
  the provenance sidecar records separately);
- a non-Python file inside a package (the matplotlib style ``galu/styles/galu.mplstyle``)
  belongs to every module that names it in a string constant (``"galu.mplstyle"`` or
  ``"styles/galu.mplstyle"``). Files outside the packages (``workflow/claims.yaml``,
  the caption templates) are rule inputs and tracked as such.

The machinery (``galu/workflow/``: provenance records, audit, pre-flight, publishing, the
command line, ...) decides what runs and what is recorded, never a result's bytes, so it is
outside every closure by construction: the scanner does not enter a module under
:data:`MACHINERY` unless the module declares, at its top level, ``RESULT_CODE = "<why>"``:
the small, named set that writes a result's bytes (how a table or figure is written, how a
processed array is made and read, how the verdict and captions are worded). Editing any
other machinery module reruns nothing; each declared module is listed with its reason in
docs/design.md and pinned by a golden-bytes test (tests/test_result_code.py).

Imports the parser cannot see (``importlib.import_module(name)`` with a computed name)
are not followed. The one place the project uses one, the plot script (it imports the
figure's ``galu.<stage>.figures`` by the name its rule gives), names that module to the
scanner instead: ``closure(script, imports=[module])`` starts from both, and the closure
records the ``imports`` so that the audit recomputes the same one.

Each file gets a hash: data files the sha256 of their bytes; Python files the sha256 of
their syntax tree *without docstrings* (comments are not in the tree). So an edit that
only touches comments, docstrings or formatting changes no hash and reruns nothing, and
any edit to the code itself does (a rule's own script also keeps Snakemake's trigger,
which reruns the rule when the script file is newer than its outputs). The tree is
serialized field by field, leaving out empty fields, so the hash does not depend on how a
Python version prints its trees.
The closure's own hash covers the sorted (path, hash) pairs.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes

DEFAULT_PACKAGES = ("galu",)
_CACHE_VERSION = 2
# The machinery's package: its modules enter a closure only by declaring RESULT_CODE.
MACHINERY = "galu/workflow/"
_DECLARATION = "RESULT_CODE"
_DOCSTRING_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Remove the docstring of the module and of every class and function, in place."""
    for node in ast.walk(tree):
        if not isinstance(node, _DOCSTRING_OWNERS):
            continue
        body = node.body
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _canonical(node: Any, out: list[str]) -> None:
    """Append a version-independent serialization of an AST (no positions, no empty fields)."""
    if isinstance(node, ast.AST):
        out.append(type(node).__name__ + "(")
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            out.append(name + "=")
            _canonical(value, out)
            out.append(",")
        out.append(")")
    elif isinstance(node, list):
        out.append("[")
        for item in node:
            _canonical(item, out)
            out.append(",")
        out.append("]")
    else:  # constants: keep the type, so 1 and 1.0 and "1" differ
        out.append(f"{type(node).__name__}:{node!r}")


def _tree_hash(tree: ast.AST) -> str:
    out: list[str] = []
    _canonical(_strip_docstrings(tree), out)
    return hashlib.sha256("".join(out).encode()).hexdigest()


def source_hash(source: str | bytes, filename: str = "<source>") -> str:
    """sha256 of a Python source's syntax tree without docstrings (see the module doc)."""
    return _tree_hash(ast.parse(source, filename=filename))


def _looks_like_file(text: str) -> bool:
    """A string constant that could name a data file: short, one word, with a suffix."""
    return 0 < len(text) < 200 and "." in text and not any(c.isspace() for c in text)


def _bytes_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class ModuleInfo:
    """What one Python file contributes: its hash, the modules it imports, its strings."""

    sha256: str
    imports: tuple[str, ...]
    strings: frozenset[str]
    result_code: bool = False


@dataclass(frozen=True)
class Closure:
    """One script's code closure: repository-relative path -> hash of every file in it.
    ``imports``: modules the script imports by a name its rule gives (see the module doc)."""

    script: str
    files: Mapping[str, str] = field(default_factory=dict)
    imports: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        text = json.dumps(sorted(self.files.items()), separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def modules(self) -> list[str]:
        return sorted(self.files)

    @property
    def label(self) -> str:
        """The script, with the modules it imports by name: how the ledger names the unit."""
        return code_label({"script": self.script, "imports": self.imports})

    def record(self) -> dict[str, Any]:
        """The JSON-able form a sidecar (and a rule's ``params.code``) carries."""
        record: dict[str, Any] = {"script": self.script}
        if self.imports:
            record["imports"] = list(self.imports)
        record.update(sha256=self.sha256, files=dict(sorted(self.files.items())))
        return record


def code_label(code: Mapping[str, Any]) -> str:
    """A recorded closure's unit as one string: ``scripts/x.py``, or for a script that imports
    modules by name, ``scripts/plot.py (galu.scm.figures)``."""
    imports = code.get("imports") or ()
    return f"{code['script']} ({', '.join(imports)})" if imports else str(code["script"])


def changed_files(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Files whose hash differs, that were added or that were removed, each with how."""
    changes = []
    for path in sorted(set(recorded) | set(current)):
        if path not in current:
            changes.append(f"{path} (no longer used)")
        elif path not in recorded:
            changes.append(f"{path} (newly used)")
        elif recorded[path] != current[path]:
            changes.append(path)
    return changes


class CodeScanner:
    """Closures of scripts under ``root``, each file parsed once per scanner.

    Make one scanner per workflow parse (or audit): it caches every file it reads, so
    later edits are seen only by a new scanner.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        packages: Iterable[str] = DEFAULT_PACKAGES,
        cache: str | os.PathLike[str] | None = None,
    ):
        self.root = Path(root)
        self.packages = tuple(p for p in packages if (self.root / p / "__init__.py").is_file())
        self._info: dict[Path, ModuleInfo] = {}
        self._closures: dict[tuple[str, tuple[str, ...]], Closure] = {}
        self._data_files: list[Path] | None = None
        self._names: dict[str, Path | None] = {}
        self._edges: dict[Path, tuple[list[Path], dict[str, str]]] = {}
        self._cache_path = Path(cache) if cache is not None else None
        self._cache = self._load_cache()
        self._cache_dirty = False

    # -- the parse cache ----------------------------------------------------------------
    # Parsing every module costs a few hundred ms per workflow parse; the cache maps the
    # sha256 of a file's bytes (and the Python version, whose parser makes the tree) to
    # what parsing it gave, so only edited files are parsed again.
    def _load_cache(self) -> dict[str, Any]:
        if self._cache_path is None:
            return {}
        try:
            loaded = json.loads(self._cache_path.read_text())
        except (OSError, ValueError):
            return {}
        return loaded.get("entries", {}) if loaded.get("version") == _CACHE_VERSION else {}

    def save_cache(self) -> None:
        """Write the parse cache (atomically) when this scanner parsed something new."""
        if self._cache_path is None or not self._cache_dirty:
            return
        body = {"version": _CACHE_VERSION, "entries": self._cache}
        try:
            atomic_write_bytes(self._cache_path, json.dumps(body, sort_keys=True).encode())
        except OSError:  # a read-only checkout only loses the speed-up
            return
        self._cache_dirty = False

    # -- files --------------------------------------------------------------------------
    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def module_file(self, name: str) -> Path | None:
        """The file of a project module or package ``a.b.c``; None for anything else."""
        if name not in self._names:
            parts = name.split(".")
            found = None
            if parts[0] in self.packages:
                base = self.root.joinpath(*parts)
                for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                    if candidate.is_file():
                        found = candidate
                        break
            self._names[name] = found
        return self._names[name]

    def _module_name(self, path: Path) -> tuple[str, bool] | None:
        """(dotted name, is a package) of a file inside a project package, else None."""
        parts = path.relative_to(self.root).with_suffix("").parts
        if not parts or parts[0] not in self.packages:
            return None
        if parts[-1] == "__init__":
            return ".".join(parts[:-1]), True
        return ".".join(parts), False

    def data_files(self) -> list[Path]:
        """Non-Python files inside the project packages (style sheets, templates, ...)."""
        if self._data_files is None:
            found = []
            for package in self.packages:
                for path in sorted((self.root / package).rglob("*")):
                    if (
                        path.is_file()
                        and path.suffix not in (".py", ".pyc")
                        and "__pycache__" not in path.parts
                    ):
                        found.append(path)
            self._data_files = found
        return self._data_files

    # -- parsing ------------------------------------------------------------------------
    def info(self, path: Path) -> ModuleInfo:
        """Hash, imported module names and string constants of one Python file (cached)."""
        if path not in self._info:
            source = path.read_bytes()
            named = self._module_name(path)
            # relative imports resolve against the module's name: part of the key
            key = f"{hashlib.sha256(source).hexdigest()}:{named}:{sys.version_info[:2]}"
            cached = self._cache.get(key)
            if cached is None:
                cached = self._parse(source, path, named)
                self._cache[key] = cached
                self._cache_dirty = True
            self._info[path] = ModuleInfo(
                cached["sha256"],
                tuple(cached["imports"]),
                frozenset(cached["strings"]),
                cached["result_code"],
            )
        return self._info[path]

    def _parse(self, source: bytes, path: Path, named: tuple[str, bool] | None) -> dict:
        tree = ast.parse(source, filename=str(path))
        imports: list[str] = []
        strings: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imports.extend(self._from_import(node, named))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _looks_like_file(node.value):
                    strings.add(node.value)
        declared = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == _DECLARATION for t in node.targets)
            for node in tree.body
        )
        return {
            "sha256": _tree_hash(tree),
            "imports": imports,
            "strings": sorted(strings),
            "result_code": declared,
        }

    def _from_import(self, node: ast.ImportFrom, named: tuple[str, bool] | None) -> list[str]:
        """Candidate module names of ``from X import a, b`` (``X.a`` may be a module)."""
        if node.level:
            if named is None:  # a relative import outside a package: nothing to follow
                return []
            name, is_package = named
            package = name.split(".") if is_package else name.split(".")[:-1]
            keep = len(package) - (node.level - 1)
            if keep <= 0:
                return []
            base = ".".join(package[:keep] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        return [base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]

    def _files_of_import(self, name: str) -> list[Path]:
        """The files executed by importing ``name`` (each package ``__init__`` on the way)
        that can change a result: the machinery's are left out but for result code."""
        parts = name.split(".")
        found = []
        for end in range(1, len(parts) + 1):
            path = self.module_file(".".join(parts[:end]))
            if path is None:
                break
            if self.is_result_code(path):
                found.append(path)
        return found

    def is_machinery(self, path: Path) -> bool:
        """A file of the machinery package (see the module doc)."""
        return self._rel(path).startswith(MACHINERY)

    def is_result_code(self, path: Path) -> bool:
        """Whether a project file can change a result's bytes: any file outside the
        machinery; inside it, a module that declares ``RESULT_CODE``."""
        return not self.is_machinery(path) or (path.suffix == ".py" and self.info(path).result_code)

    def _data_of(self, info: ModuleInfo) -> list[Path]:
        found = []
        for path in self.data_files():
            rel = self._rel(path)
            if any(s and (rel == s or rel.endswith("/" + s)) for s in info.strings):
                found.append(path)
        return found

    # -- closures -----------------------------------------------------------------------
    def _edges_of(self, path: Path) -> tuple[list[Path], dict[str, str]]:
        """The project files ``path`` imports, and its own and its data files' hashes."""
        if path not in self._edges:
            info = self.info(path)
            imported = [p for name in info.imports for p in self._files_of_import(name)]
            hashes = {self._rel(path): info.sha256}
            hashes.update({self._rel(d): _bytes_hash(d) for d in self._data_of(info)})
            self._edges[path] = (list(dict.fromkeys(imported)), hashes)
        return self._edges[path]

    def closure(self, script: str | os.PathLike[str], imports: Iterable[str] = ()) -> Closure:
        """The script and every project module and package data file it reaches, and those
        the modules ``imports`` (dotted names the script imports at run time) reach."""
        start = Path(script)
        start = start if start.is_absolute() else self.root / start
        start = Path(os.path.normpath(start))
        imports = tuple(imports)
        key = self._rel(start)
        if (key, imports) in self._closures:
            return self._closures[key, imports]
        missing = [name for name in imports if self.module_file(name) is None]
        if missing:
            raise ValueError(f"{key} imports {', '.join(missing)}: no such project module")
        named = [p for name in imports for p in self._files_of_import(name)]
        files: dict[str, str] = {}
        todo = [start, *named]
        seen: set[Path] = set()
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            imported, data = self._edges_of(path)
            files.update(data)
            todo.extend(p for p in imported if p not in seen)
        closure = Closure(key, files, imports)
        self._closures[key, imports] = closure
        return closure

    def closure_of(self, code: Mapping[str, Any]) -> Closure:
        """The current closure of a recorded one (a sidecar's or a rule's ``code``)."""
        return self.closure(code["script"], code.get("imports", ()))
