"""Re-check every workflow output against its provenance sidecar.

For each file under the audited folders: it must have a sidecar, its bytes
must still hash to the recorded sha256, and every input the sidecar lists
must still exist with the recorded hash, and the code that made it (the rule's
code closure: its script and every galu module it imports, see ``galu.workflow.closure``)
must still hash as recorded, else the output is *stale* and the changed modules
are named. Raw dataset archives under
``data/raw/<dataset>/`` have no sidecar of their own: they are checked
against the registry's published checksums (or, for an opted-in substitute,
the pinned sha256 their manifest records). Anything else is a finding.
A published copy of a run (``published/<scale>/``, galu/workflow/publishing/publish.py) keeps its
sidecars: each describes the run's path, and its inputs are checked where they were published too.
It is a record, so code that has changed since is no finding; but it is judged against this
checkout's code all the same (:func:`published_notes`): stale published outputs and those
made from a modified tree are notes, and problems under ``--strict``.
A closure recorded as number-neutral to the one an output records (``galu equivalence``,
galu/workflow/equivalence.py) is current code for it; :func:`equivalent_outputs` names the
evidence. The audit reads files and sidecars only; it never runs the code that made them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from galu.workflow.closure import Closure, CodeScanner, changed_files
from galu.workflow.equivalence import LEDGER, Equivalence, Ledger
from galu.workflow.provenance import SIDECAR_SUFFIX, seal_problem, sha256_file
from galu.workflow.publication_folders import (
    described_path,
    left_out_before,
    leftover_of,
    leftover_problem,
    publication_of,
    publication_scale,
    published_copy,
)
from galu.workflow.scales import SCALED_FOLDERS, unscaled
from galu.workflow.sidecar_shape import shape_problem
from galu.workflow.vouch import elsewhere_problem

__all__ = ["shape_problem"]  # (re-exported: the tests and older callers import it from here)

# The code scanner's parse cache, shared by the workflow parse, the audit and the report.
CODE_CACHE = ".snakemake/galu/code-cache.json"
DEFAULT_FOLDERS = ("results", "figures", "data/processed", "data/raw", "published")
# Set aside by the data stage (a rejected file, a partial download): never used as inputs.
IGNORED_SUFFIXES = (".rejected", ".part")
# The start of the problem of an output made by other code than the tree's (see code_problem).
STALE = "stale:"
STALE_INPUT = f"{STALE} its input"
# The workflow's parse cache of module hashes (run_hooks.code_tracking), read for speed.


@functools.lru_cache(maxsize=8)
def _ledger(path: str, mtime_ns: int) -> Ledger:
    return Ledger.load(Path(path))


def ledger_of(root: Path) -> Ledger:
    """The checkout's equivalence ledger, read once per audit (and again if it changes)."""
    file = root / LEDGER
    return _ledger(str(root.resolve()), file.stat().st_mtime_ns if file.is_file() else 0)


def code_scanner(root: Path) -> CodeScanner:
    """A scanner of the tree under ``root`` as it is now (one per audit: it caches)."""
    return CodeScanner(root, cache=root / CODE_CACHE)


def code_problem(root: Path, record: dict[str, Any], scanner: CodeScanner | None) -> str | None:
    """Why an output is stale: the current code closure of the rule that made it differs
    from the one its sidecar records (None when equal, or when none is recorded)."""
    code = record.get("code")
    if not code:
        return None
    scanner = scanner or code_scanner(root)
    if not (root / code["script"]).is_file():
        return f"{STALE} its script {code['script']} no longer exists"
    current = current_closure(scanner, code)
    if isinstance(current, str):
        return f"{STALE} {current}"
    if ledger_of(root).evidence(code.get("sha256", ""), current.sha256) is not None:
        return None  # the same closure, or one recorded as number-neutral to it
    changed = changed_files(code.get("files", {}), current.files)
    return f"{STALE} made with older code; changed since: {', '.join(changed)}"


def current_closure(scanner: CodeScanner, code: dict[str, Any]) -> Closure | str:
    """The current closure of a recorded one, or why there is none (a module it imports is
    gone, its script is no Python any more)."""
    try:
        return scanner.closure_of(code)
    except (ValueError, SyntaxError, OSError) as error:
        return f"its code cannot be followed now ({error})"


@dataclass(frozen=True)
class Finding:
    """One inconsistency: which file, and what is wrong with it."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The sidecar record of ``path``; None when there is none. Raises ValueError if it is
    unreadable or malformed (:func:`shape_problem`)."""
    side = Path(f"{path}{SIDECAR_SUFFIX}")
    if not side.is_file():
        return None
    try:
        record = json.loads(side.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"sidecar {side.name} is unreadable ({error})") from None
    problem = shape_problem(record)
    if problem:
        raise ValueError(f"sidecar {side.name} {problem}")
    return record


def is_caption_page(contract: str) -> bool:
    """Whether a publication's file (a contract path) is one of its caption pages
    (``figures/<stage>/<name>.html``, galu/workflow/publishing/caption_pages.py): an HTML file
    among the figures, which a run never makes (its figures are PNG and PDF). Like the
    publication's ``claims.html``, ``galu publish`` makes it from the published files, so its
    sidecar describes it where it lies, not a run's path."""
    parts = PurePosixPath(contract).parts
    return len(parts) > 2 and parts[0] == "figures" and contract.endswith(".html")


def described_elsewhere(root: Path, path: Path, record: dict[str, Any]) -> str | None:
    """A sidecar that describes another file: an output copied with its sidecar (an array of
    one dataset passed off as another) must not inherit that provenance."""
    rel = path.relative_to(root).as_posix()
    published = publication_scale(rel)
    here = rel if published and is_caption_page(published[1]) else described_path(rel)
    return elsewhere_problem(record["output"]["path"], here)


def _is_temporary(path: Path) -> bool:
    """galu.atomic.atomic_path's in-flight files: '.<name>.<random>.tmp'."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def _outputs(root: Path, folders: Iterable[str]) -> Iterator[Path]:
    for folder in folders:
        base = root / folder
        if base.is_dir():
            yield from sorted(p for p in base.rglob("*") if p.is_file())


def raw_archive_problem(root: Path, path: Path) -> str | None | bool:
    """For a registered raw archive: None when it verifies, else the problem.

    False when ``path`` is not a registered raw archive (then it needs a sidecar).
    """
    from galu.workflow.data.errors import ChecksumMismatchError
    from galu.workflow.data.registry import DATASETS
    from galu.workflow.data.verify import verify_official

    rel = path.relative_to(root).parts
    if len(rel) != 4 or rel[:2] != ("data", "raw") or rel[2] not in DATASETS:
        return False
    specs = {f.name: f for f in DATASETS[rel[2]].files}
    if path.name not in specs:
        return False
    try:
        verify_official(path, specs[path.name], str(path))
        return None
    except ChecksumMismatchError as official:
        pinned = _pinned_substitute(path)
        if pinned and sha256_file(path) == pinned:
            return None
        return f"does not match the published checksums ({official.actual})"


def _pinned_substitute(path: Path) -> str | None:
    """The sha256 the dataset's manifest pinned for ``path`` when it came from a substitute."""
    manifest = path.parent / "sources.json"
    try:
        files = json.loads(manifest.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    for entry in files:
        if entry.get("name") == path.name and entry.get("substitute"):
            return entry.get("sha256")
    return None


def check_output(root: Path, path: Path, scanner: CodeScanner | None = None) -> Iterator[str]:
    """Every problem of one output (empty when it is consistent)."""
    raw = raw_archive_problem(root, path)
    if raw is not False:
        if raw:
            yield raw
        return
    try:
        record = read_sidecar(path)
    except ValueError as error:
        yield str(error)
        return
    if (
        record is None
    ):  # every output has one, the report included (galu/workflow/pages/report_build.py)
        yield "no provenance sidecar (made outside the workflow, or its job was killed)"
        return
    side = Path(f"{path}{SIDECAR_SUFFIX}")
    sealed = seal_problem(side.read_bytes())
    if sealed:
        yield f"sidecar {side.relative_to(root).as_posix()} {sealed}"
    elsewhere = described_elsewhere(root, path, record)
    if elsewhere:
        yield elsewhere
    actual = sha256_file(path)
    recorded = record["output"]["sha256"]
    if actual != recorded:
        yield f"changed after it was written (sha256 {actual[:12]}…, recorded {recorded[:12]}…)"
    rel = path.relative_to(root).as_posix()
    for item in record.get("inputs", []):
        where = input_location(root, rel, item["path"])
        if where is None:
            continue  # an input of a published run that was not published (data, runs/)
        source = root / where
        if not source.is_file():
            if not left_out_input(root, where):  # (that one: a note, left_out_inputs)
                yield f"input {where} is missing"
        elif sha256_file(source) != item["sha256"]:
            yield f"input {where} changed since this output was made"
    stale = None if publication_scale(rel) else code_problem(root, record, scanner)
    if stale:
        yield stale


def left_out_input(root: Path, path: str) -> bool:
    """Whether ``path`` (relative to ``root``) is a file of a run that its scale's publication
    left out as too large: a run put back by `galu resume` lacks it by design, and its job
    (with what reads it) reruns; the outputs made from it are still checked byte for byte."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] not in SCALED_FOLDERS:
        return False
    return unscaled(path, parts[1]) in left_out_before(parts[1], root)


def left_out_inputs(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[str]:
    """Outputs made from a file that this checkout lacks because their run's publication left
    it out as too large (:func:`left_out_input`), each as ``output (input, ...)``."""
    root = Path(root)
    found = []
    for rel, record in _records(root, folders):
        if publication_of(rel) is not None:
            continue  # a published copy's inputs are its publication's (input_location)
        lacking = [
            item["path"]
            for item in record.get("inputs", [])
            if not (root / item["path"]).is_file() and left_out_input(root, item["path"])
        ]
        if lacking:
            found.append(f"{rel} ({', '.join(lacking)})")
    return found


def input_location(root: Path, output: str, recorded: str) -> str | None:
    """Where the audit finds input ``recorded`` of ``output`` (paths relative to ``root``):
    where it was recorded, or for a published copy its published copy (None when that
    input was not published)."""
    published = publication_of(output)
    if published is None or recorded.startswith(f"{published[0]}/"):
        return recorded  # (the manifest's inputs are the published tables themselves)
    copy = published_copy(recorded, published[1], published[0])
    return copy if (root / copy).is_file() else None


def is_output(path: Path) -> bool:
    """An output the audit checks: not a sidecar, a temporary or a set-aside file."""
    return not (
        path.name.endswith(SIDECAR_SUFFIX)
        or _is_temporary(path)
        or path.name.endswith(IGNORED_SUFFIXES)
    )


def audit_tree(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[Finding]:
    """Every inconsistency between outputs, their sidecars and their inputs under ``root``."""
    root = Path(root)
    scanner = code_scanner(root)
    findings: list[Finding] = []
    leftovers: dict[str, None] = {}
    for path in _outputs(root, folders):
        rel = path.relative_to(root).as_posix()
        leftover = leftover_of(rel)
        if leftover:
            leftovers.setdefault(leftover)
        elif path.name.endswith(SIDECAR_SUFFIX):
            if not Path(str(path)[: -len(SIDECAR_SUFFIX)]).is_file():
                findings.append(Finding(rel, "sidecar without its output"))
        elif is_output(path):
            problems = check_output(root, path, scanner)
            findings.extend(Finding(rel, problem) for problem in problems)
    findings += [Finding(folder, leftover_problem(folder)) for folder in leftovers]
    return findings + _stale_downstream(root, folders, findings)


def _stale_downstream(root: Path, folders: Iterable[str], findings: list[Finding]) -> list[Finding]:
    """Outputs made from a stale output (a figure drawn from a CSV of older code), in turn."""
    stale = {f.path for f in findings if f.problem.startswith(STALE)}
    inputs = {
        rel: [input_location(root, rel, item["path"]) for item in record.get("inputs", [])]
        for rel, record in _records(root, folders)
    }
    found: list[Finding] = []
    grew = True
    while grew:
        grew = False
        for rel, sources in inputs.items():
            upstream = next((s for s in sources if s in stale), None)
            if rel not in stale and upstream is not None:
                stale.add(rel)
                found.append(Finding(rel, f"{STALE_INPUT} {upstream} is stale"))
                grew = True
    return sorted(found, key=lambda f: f.path)


def rebuild_command(findings: Iterable[Finding]) -> str:
    """The command that remakes every output with a finding, and what depends on them.

    A plain ``snakemake`` remakes only what it considers out of date: not an output edited
    by hand (it is newer than its inputs) nor one made before Snakemake kept its metadata.
    ``--forcerun`` reruns the jobs that make the named files, and every job downstream.
    A sidecar is named by its output (one job makes both).
    """
    paths = []
    for finding in findings:
        if finding.problem.startswith(STALE_INPUT) or leftover_of(finding.path):
            continue  # --forcerun of what it was made from reruns it; publish cleans up
        path = finding.path
        if path.endswith(SIDECAR_SUFFIX) and finding.problem == "sidecar without its output":
            path = path[: -len(SIDECAR_SUFFIX)]
        if path.startswith("data/raw/"):
            path = f"{path.rsplit('/', 1)[0]}/sources.json"  # raw files: the download job
        paths.append(path)
    return "snakemake --cores all --forcerun " + " ".join(dict.fromkeys(paths))


def uncoded(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[str]:
    """Outputs whose sidecar records no code closure (made before galu recorded it)."""
    return [rel for rel, record in _records(Path(root), folders) if not record.get("code")]


def _records(root: Path, folders: Iterable[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(relative path, sidecar record) of every output with a readable sidecar."""
    for path in _outputs(root, folders):
        if not is_output(path) or leftover_of(path.relative_to(root).as_posix()):
            continue
        try:
            record = read_sidecar(path)
        except ValueError:
            continue
        if record is not None:
            yield path.relative_to(root).as_posix(), record


def count_outputs(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> int:
    """How many outputs (not sidecars, not temporaries) the audit looks at."""
    return sum(1 for p in _outputs(Path(root), folders) if is_output(p))


def commits(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> dict[str, list]:
    """Outputs grouped by the git commit (with ``+dirty``) their sidecars record."""
    groups: dict[str, list] = {}
    for rel, record in _records(Path(root), folders):
        git = record.get("git") or {}
        key = f"{git.get('commit') or 'unknown'}{'+dirty' if git.get('dirty') else ''}"
        groups.setdefault(key, []).append(rel)
    return groups


def substitutes(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[str]:
    """Outputs whose sidecars say they descend from substitute data (``data_substitute``)."""
    records = _records(Path(root), folders)
    return sorted(rel for rel, record in records if record.get("data_substitute") is True)


def equivalent_outputs(
    root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS
) -> dict[str, list[Equivalence]]:
    """Outputs made by an earlier closure that the ledger records as number-neutral to the
    current one, with the recorded steps between them (the evidence)."""
    root = Path(root)
    scanner, ledger = code_scanner(root), ledger_of(root)
    found = {}
    for rel, record in _records(root, folders):
        code = record.get("code") or {}
        if not code.get("script") or not (root / code["script"]).is_file():
            continue
        current = current_closure(scanner, code)
        if isinstance(current, str):
            continue  # stale: the audit says why
        steps = ledger.evidence(code.get("sha256", ""), current.sha256)
        if steps:
            found[rel] = steps
    return found


def _first_files(problem: str, keep: int = 3) -> str:
    """A stale problem with its list of changed files cut to the first ``keep``."""
    head, sep, files = problem.partition("changed since: ")
    names = files.split(", ")
    if not sep or len(names) <= keep:
        return problem
    return f"{head}{sep}{', '.join(names[:keep])} and {len(names) - keep} more"


def published_problems(
    root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """A published run's outputs that owe something to code other than this checkout's, per
    publication folder (``published/<scale>``): the stale ones (each with why, its changed
    files cut short) and those made from a modified tree."""
    root = Path(root)
    scanner = code_scanner(root)
    stale: dict[str, list[str]] = {}
    dirty: dict[str, list[str]] = {}
    for rel, record in _records(root, folders):
        published = publication_of(rel)
        if published is None:
            continue
        problem = code_problem(root, record, scanner)
        if problem:
            stale.setdefault(published[0], []).append(f"{rel} ({_first_files(problem)})")
        if (record.get("git") or {}).get("dirty"):
            dirty.setdefault(published[0], []).append(rel)
    return stale, dirty


def stale_published_text(paths: list[str]) -> str:
    """How many published outputs are stale, with the first as an example."""
    return f"{len(paths)} output(s) stale against this checkout's code, e.g. {paths[0]}"


def published_notes(root: str | Path = ".", folders: Iterable[str] = DEFAULT_FOLDERS) -> list[str]:
    """:func:`published_problems` as the audit's notes, one line per publication and kind."""
    stale, dirty = published_problems(root, folders)
    notes = [f"{folder}: {stale_published_text(paths)}" for folder, paths in sorted(stale.items())]
    notes += [
        f"{folder}: {len(paths)} output(s) made from a modified tree (uncommitted"
        f" changes), e.g. {paths[0]}"
        for folder, paths in sorted(dirty.items())
    ]
    return notes
