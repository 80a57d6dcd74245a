"""The audit chain of one output: figure -> CSVs -> processed data -> raw archives.

``galu audit --explain FILE`` prints, for an output and recursively for every
input its sidecar records, the rule, commit, parameter hash and time that made
it, the code closure it was made with (stale when a module changed since,
naming it) and whether its bytes still match. Processed datasets continue to the raw
archives they were converted from, which are checked against the registry's
published checksums.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from galu.workflow.audit import (
    Finding,
    check_output,
    code_scanner,
    input_location,
    raw_archive_problem,
    read_sidecar,
)
from galu.workflow.closure import CodeScanner, code_label
from galu.workflow.provenance import sha256_file


@dataclass
class Node:
    """One file of the chain, its provenance summary and its problems."""

    path: str
    summary: str
    problems: list[str]
    inputs: list[Node] = field(default_factory=list)

    def lines(self, depth: int = 0) -> list[str]:
        state = "ok" if not self.problems else "PROBLEM: " + "; ".join(self.problems)
        pad = "  " * depth + ("<- " if depth else "")
        out = [f"{pad}{self.path}  [{state}]", f"{'  ' * depth}   {self.summary}"]
        for child in self.inputs:
            out.extend(child.lines(depth + 1))
        return out

    def findings(self) -> list[Finding]:
        """Every problem of the chain, as the audit's findings (this node's first)."""
        found = [Finding(self.path, p) for p in self.problems]
        for child in self.inputs:
            found.extend(child.findings())
        return found


def _describe(record: dict) -> str:
    git = record.get("git") or {}
    commit = (git.get("commit") or "unknown")[:12] + ("+dirty" if git.get("dirty") else "")
    extra = "; data substitute" if record.get("data_substitute") else ""
    code = record.get("code")
    code_text = (
        f"code {code['sha256'][:12]} ({code_label(code)} + {len(code['files']) - 1} file(s))"
        if code
        else "code not recorded"
    )
    return (
        f"rule {record.get('rule')} {record.get('wildcards') or ''} on commit {commit}, "
        f"params sha256 {str(record.get('params_sha256'))[:12]}, {code_text}, "
        f"device {record.get('device')}, finished {record.get('finished')}{extra}"
        f"{_functions(record)}"
    ).replace("  ", " ")


def _functions(record: dict) -> str:
    """The library functions a figure's sidecar names: what drew it (``drawn_by``) and what
    computed each of its tables (the plot rule's ``computed_by`` param), where recorded."""
    parts = []
    if record.get("drawn_by"):
        parts.append(f"drawn by {record['drawn_by']}")
    computed = (record.get("params") or {}).get("computed_by") or {}
    if isinstance(computed, dict) and computed:
        tables = "; ".join(
            f"{table} by {', '.join(fns) if isinstance(fns, list) else fns}"
            for table, fns in computed.items()
        )
        parts.append(f"tables computed: {tables}")
    return "".join(f", {part}" for part in parts)


def _raw_nodes(root: Path, record: dict) -> list[Node]:
    """Raw archives a processed dataset was converted from (its sidecar's raw_files)."""
    dataset = (record.get("wildcards") or {}).get("dataset") or record.get("dataset")
    nodes = []
    for raw in record.get("raw_files", []):
        path = root / "data" / "raw" / str(dataset) / raw["name"]
        rel = path.relative_to(root).as_posix()
        if not path.is_file():
            nodes.append(Node(rel, "raw archive", ["missing"]))
            continue
        problem = raw_archive_problem(root, path)
        how = "pinned substitute" if raw.get("substitute") else "published checksums"
        nodes.append(
            Node(rel, f"raw archive, checked against the {how}", [problem] if problem else [])
        )
    return nodes


def explain(
    path: str | Path,
    root: str | Path = ".",
    _seen: set[str] | None = None,
    scanner: CodeScanner | None = None,
) -> Node:
    """The provenance chain of ``path`` (relative to ``root``)."""
    root = Path(root)
    seen = set() if _seen is None else _seen
    scanner = scanner or code_scanner(root)
    rel = Path(path).as_posix()
    full = root / rel
    if not full.is_file():
        return Node(rel, "not on disk", ["missing"])
    try:
        record = read_sidecar(full)
    except ValueError as error:
        return Node(rel, "unreadable sidecar", [str(error)])
    if record is None:
        raw = raw_archive_problem(root, full)
        if raw is not False:
            return Node(rel, "raw archive, checked against the registry", [raw] if raw else [])
        return Node(rel, f"no sidecar (source file, sha256 {sha256_file(full)[:12]})", [])
    node = Node(rel, _describe(record), list(check_output(root, full, scanner)))
    if rel in seen:
        return node
    seen.add(rel)
    # A published copy's chain runs through the published copies of its inputs (and stops
    # at inputs that were not published: galu.workflow.audit.input_location).
    located = (input_location(root, rel, item["path"]) for item in record.get("inputs", []))
    node.inputs = [explain(where, root, seen, scanner) for where in located if where]
    node.inputs.extend(_raw_nodes(root, record))
    return node
