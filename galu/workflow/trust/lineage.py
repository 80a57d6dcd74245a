"""The audit chain of one output: figure -> CSVs -> processed data -> raw archives.

``galu audit --explain FILE`` prints, for an output and recursively for every
input its sidecar records, the rule, commit and time that made it, the values of its
parameters, the code closure it was made with (stale when a module changed since,
naming it) and whether its bytes still match. Processed datasets continue to the raw
archives they were converted from, which are checked against the registry's
published checksums. Each file is described once: a file that several outputs read (a
dataset, a learning-rate sweep) is printed with its own chain where it is first met, and
later only named, ``(see above)``. ``galu explain CLAIM`` prints the same chain for a
claim's table and figure (galu/workflow/pages/explain.py).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from galu.workflow.closure import CodeScanner, code_label
from galu.workflow.provenance import sha256_file
from galu.workflow.trust.audit import (
    Finding,
    check_output,
    code_scanner,
    input_location,
    raw_archive_problem,
    read_sidecar,
    rebuild_command,
)


@dataclass
class Node:
    """One file of the chain, its provenance summary, parameters and problems. A node that
    ``repeats`` a file described earlier in the chain carries only its path."""

    path: str
    summary: str
    problems: list[str]
    inputs: list[Node] = field(default_factory=list)
    params: str = ""
    repeats: bool = False
    # An output whose inputs are those of an earlier one (a table and its sibling table):
    # that output's path, and how many inputs, instead of the list again.
    same_inputs_as: tuple[str, int] | None = None
    # What made it, for the chain's one-line summary: its job (rule and wildcards) and
    # commit; or ``raw``: a raw data file.
    job: str = ""
    commit: str = ""
    raw: bool = False

    def lines(self, depth: int = 0) -> list[str]:
        pad = "  " * depth + ("<- " if depth else "")
        if self.repeats:
            return [f"{pad}{self.path}  (see above)"]
        state = "ok" if not self.problems else "PROBLEM: " + "; ".join(self.problems)
        indent = f"{'  ' * depth}   "
        out = [f"{pad}{self.path}  [{state}]", f"{indent}{self.summary}"]
        if self.params:
            out += textwrap.wrap(
                self.params,
                width=max(100, len(indent) + 40),
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        if self.same_inputs_as:
            first, count = self.same_inputs_as
            out.append(f"{'  ' * (depth + 1)}<- the {count} inputs of {first}  (see above)")
        for child in self.inputs:
            out.extend(child.lines(depth + 1))
        return out

    def walk(self) -> list[Node]:
        """This node and every node below it (a file met again is its repeating node)."""
        return [self, *(n for child in self.inputs for n in child.walk())]

    def findings(self) -> list[Finding]:
        """Every problem of the chain, as the audit's findings (this node's first; a file
        met again is counted once)."""
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
    wildcards = record.get("wildcards") or {}
    where = (
        " ".join(f"{k}={v}" for k, v in wildcards.items()) if isinstance(wildcards, dict) else ""
    )
    return (
        f"rule {record.get('rule')} {where} on commit {commit}, {code_text}, "
        f"device {record.get('device')}, finished {record.get('finished')}{extra}"
        f"{_functions(record)}"
    ).replace("  ", " ")


def _value(value: Any) -> str:
    """A parameter's value as one word: strings as they are, the rest as compact JSON."""
    if isinstance(value, str) and value and not any(c in value for c in " ,="):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def _flat(params: dict[str, Any], prefix: str = "") -> list[str]:
    """``key=value`` for every leaf of a nested mapping (``settings.lr=0.01``)."""
    out = []
    for key, value in params.items():
        if isinstance(value, dict) and value:
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={_value(value)}")
    return out


def params_text(record: dict) -> str:
    """The values of the parameters a sidecar records (``params: settings.lr=0.01, ...``);
    the plot rules' ``computed_by`` is left to :func:`_functions`. A sidecar without them
    says so: its params_sha256 alone does not say what they were."""
    params = record.get("params")
    if not isinstance(params, dict):
        return "params: not recorded in the sidecar (only their sha256)"
    shown = _flat({k: v for k, v in params.items() if k != "computed_by"})
    return f"params: {', '.join(shown) if shown else 'none'}"


def _functions(record: dict) -> str:
    """The library functions a figure's sidecar names: what drew it (``drawn_by``) and what
    computed each of its tables (the plot rule's ``computed_by`` param), where recorded."""
    parts = []
    if record.get("drawn_by"):
        parts.append(f"drawn by {record['drawn_by']}")
    params = record.get("params")
    computed = params.get("computed_by") if isinstance(params, dict) else None
    if isinstance(computed, dict) and computed:
        tables = "; ".join(
            f"{table} by {', '.join(map(str, fns)) if isinstance(fns, list) else fns}"
            for table, fns in computed.items()
        )
        parts.append(f"tables computed: {tables}")
    return "".join(f", {part}" for part in parts)


def _raw_nodes(root: Path, record: dict) -> list[Node]:
    """Raw archives a processed dataset was converted from (its sidecar's raw_files)."""
    wildcards = record.get("wildcards")
    dataset = (wildcards if isinstance(wildcards, dict) else {}).get("dataset") or record.get(
        "dataset"
    )  # a plain folder name, and each raw file's a plain file name (sidecar_shape)
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
            Node(
                rel,
                f"raw archive, checked against the {how}",
                [problem] if problem else [],
                raw=True,
            )
        )
    return nodes


@dataclass
class Walk:
    """What the chains printed together have described so far: the files (``seen``; one met
    again is only named), per rule the first file with each set of parameter values (a
    sibling job with the same values names it instead of repeating them), and the first
    output of each list of several inputs (another output of that list names it)."""

    root: Path
    scanner: CodeScanner
    seen: set[str] = field(default_factory=set)
    first_with: dict[str, str] = field(default_factory=dict)
    inputs_first: dict[tuple[str, ...], str] = field(default_factory=dict)

    def params_of(self, rel: str, record: dict) -> str:
        """:func:`params_text` of ``record``, or a pointer to the earlier file with the same."""
        text = params_text(record)
        first = self.first_with.setdefault(f"{record.get('rule')} {text}", rel)
        if first == rel or len(text) < 60:
            return text
        return f"params: the same as {first}'s"


def explain(path: str | Path, root: str | Path = ".", walk: Walk | None = None) -> Node:
    """The provenance chain of ``path`` (relative to ``root``). A file the ``walk`` has
    described already (earlier in this chain, or in another chain sharing the walk) is a
    node that only ``repeats`` it."""
    root = Path(root)
    walk = walk or Walk(root, code_scanner(root))
    rel = Path(path).as_posix()
    if rel in walk.seen:
        return Node(rel, "", [], repeats=True)
    walk.seen.add(rel)
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
    problems = list(check_output(root, full, walk.scanner))
    node = Node(rel, _describe(record), problems, params=walk.params_of(rel, record))
    wildcards = record.get("wildcards")
    wildcards = wildcards if isinstance(wildcards, dict) else {}
    node.job = " ".join([str(record.get("rule")), *(f"{k}={v}" for k, v in wildcards.items())])
    node.commit = str((record.get("git") or {}).get("commit") or "")
    # A published copy's chain runs through the published copies of its inputs (and stops
    # at inputs that were not published: galu.workflow.trust.audit.input_location).
    located = [input_location(root, rel, item["path"]) for item in record.get("inputs", [])]
    located = [where for where in located if where]
    first = walk.inputs_first.setdefault(tuple(located), rel)
    if first != rel and len(located) > 2:
        node.same_inputs_as = (first, len(located))
    else:
        node.inputs = [explain(where, root, walk) for where in located]
    node.inputs.extend(_raw_nodes(root, record))
    return node


def chain_summary(nodes: list[Node]) -> str:
    """The chains of ``nodes`` in one sentence: how many files, made by how many jobs of how
    many rules on how many commits, from how many raw data files, and whether every check
    passed (each file counted once)."""
    every = {n.path: n for node in nodes for n in node.walk() if not n.repeats}
    made = [n for n in every.values() if n.job]
    rules = {n.job.split()[0] for n in made}
    commits = {n.commit for n in made if n.commit}
    raw = sum(n.raw for n in every.values())
    problems = sum(len(n.problems) for n in every.values())
    checks = "every file checked against its record" if not problems else (f"{problems} problem(s)")
    raw_text = f", from {raw} raw data file(s)" if raw else ""
    on = f"on {len(commits)} commit(s)" if commits else "on no recorded commit"
    return (
        f"{len(every)} file(s), {len(made)} made by {len({n.job for n in made})} job(s) of"
        f" {len(rules)} rule(s) {on}{raw_text}; {checks}"
    )


def summary_lines(command: str, what: str, findings: list[Finding]) -> list[str]:
    """The closing lines of a printed chain: how many problems ``command`` found in the
    chain of ``what`` and, when any, the command that rebuilds it from where it broke."""
    lines = [f"{command}: {len(findings)} problem(s) in the chain of {what}."]
    if findings:
        lines.append(f"To rebuild the chain from where it broke: {rebuild_command(findings)}")
    return lines
