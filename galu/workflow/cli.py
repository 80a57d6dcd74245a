"""The ``galu`` command: run and plan the workflow, audit its outputs against their provenance,
explain one claim, compare two runs' claims, publish and resume paper-scale runs, and keep
dvc.yaml and the README in step with the code. ``galu <command> --help`` describes each
command."""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from galu import __version__
from galu.atomic import atomic_write_bytes
from galu.workflow.audit import (
    DEFAULT_FOLDERS,
    STALE,
    audit_tree,
    code_scanner,
    commits,
    count_outputs,
    current_closure,
    equivalent_outputs,
    ledger_of,
    left_out_inputs,
    published_notes,
    published_problems,
    rebuild_command,
    stale_published_text,
    substitutes,
    uncoded,
)
from galu.workflow.equivalence import LEDGER, closure_record
from galu.workflow.ledger_verify import recomputed_problems
from galu.workflow.lineage import explain, summary_lines
from galu.workflow.provenance import git_state
from galu.workflow.publish import (
    PAPER_MARKERS,
    leftover_of,
    paper_section,
    publication_folder,
    publication_scale,
)
from galu.workflow.readme_sections import (
    QUICK_MARKERS,
    describe_differences,
    readme_differences,
    readme_with_section,
)
from galu.workflow.terminal import SafeStream, terminal_text

if TYPE_CHECKING:  # the data stage is imported only by `galu data`
    from galu.workflow.data import DataSettings


class UsageError(Exception):
    """A command line that cannot work as given: exit 2 with the message, no traceback."""


def _checkout(root: str | Path) -> Path:
    """``root`` as a galu checkout (it has ``config/config.yaml``), or a UsageError."""
    root = Path(root)
    if not (root / "config/config.yaml").is_file():
        raise UsageError(
            f"{root.resolve()} is not a galu checkout (no config/config.yaml): run galu from"
            " the repository root, or pass --root PATH"
        )
    return root


def _inside(root: Path, path: str, option: str) -> Path:
    """``path`` (relative to ``root``, or absolute) as a path relative to ``root``, or a
    UsageError when it lies outside: galu reads nothing outside the tree it was given."""
    target = Path(path)
    full = (target if target.is_absolute() else root / target).resolve()
    try:
        return full.relative_to(root.resolve())
    except ValueError:
        tree = "the audited tree" if option in ("--explain", "--folders") else "the checkout"
        example = {
            "--explain": "figures/...",
            "--folders": "results",
            "--results": "results/paper-cpu",
            "--configfile": "config/paper.yaml",
        }.get(option, "results/...")
        raise UsageError(
            f"{option} {path} is outside {tree} {root.resolve()}; give a path inside it (e.g."
            f" {example}), or --root its checkout"
        ) from None


def _read(path: str | Path, what: str, fix: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror}; {fix}") from None


def _explain(args: argparse.Namespace) -> int:
    root = Path(args.root)
    target = Path(args.explain)
    if target.is_absolute() or ".." in target.parts:
        target = _inside(root, args.explain, "--explain")
    if not (root / target).is_file():
        claim = f"; to explain a claim, `galu explain {target}`" if "/" not in str(target) else ""
        raise UsageError(
            f"{target} does not exist under {root.resolve()}: nothing to explain{claim}"
        )
    node = explain(target, root)
    findings = node.findings()
    print("\n".join([*node.lines(), *summary_lines("galu audit --explain", target, findings)]))
    return 1 if findings else 0


def _explain_claim(args: argparse.Namespace) -> int:
    """``galu explain CLAIM``: the claim, its rows, verdict and chain (galu/workflow/explain.py);
    without CLAIM, the run's claim ids."""
    from galu.workflow.explain import ExplainError, explain_claim, listing

    root = _checkout(args.root)
    _inside(root, args.results, "--results")
    _checked_ledger(root)
    try:
        if not args.claim_id:
            print("\n".join(listing(root, args.results)))
            return 0
        lines, findings = explain_claim(args.claim_id, root, args.results)
    except ExplainError as error:
        raise UsageError(str(error)) from None
    print("\n".join(lines))
    return 1 if findings else 0


def _commit_notes(args: argparse.Namespace, without_code: set[str]) -> list[str]:
    """Outputs their commit does not vouch for: made from a modified tree, or made on another
    commit than the checkout's without a code closure to judge them by. (An output that
    records its closure is current when its closure is, whatever commit made it:
    ``galu.workflow.audit.code_problem``. A published run is judged by ``published_notes``.)"""
    head = git_state().get("commit")
    notes = []
    for commit, paths in sorted(commits(args.root, args.folders).items()):
        paths = [p for p in paths if publication_scale(p) is None]
        if commit.endswith("+dirty") and paths:
            notes.append(
                f"{len(paths)} output(s) made from uncommitted changes on commit"
                f" {commit.removesuffix('+dirty')}, e.g. {paths[0]}"
            )
            continue
        old = [p for p in paths if p in without_code]
        if old and (head is None or commit != head):
            notes.append(f"{len(old)} output(s) made on commit {commit}, e.g. {old[0]}")
    return notes


def _print_equivalences(args: argparse.Namespace, found: dict, steps: Iterable) -> None:
    """Outputs current only by a recorded number-neutral change, and the ``steps`` of the
    ledger they rely on: the evidence, once each."""
    if not found:
        return
    steps = list(steps)
    print(
        f"NOTE {len(found)} output(s) were made by earlier code that {LEDGER} records as"
        f" number-neutral (e.g. {next(iter(found))}), by {len(steps)} recorded change(s)"
        + ("; the evidence:" if args.verbose else "; --verbose lists the evidence.")
    )
    if args.verbose:
        for step in steps:
            print(f"  {step.evidence()}")


def _audit_scope(args: argparse.Namespace) -> None:
    """A root that exists, and folders given by hand that exist under it (a misspelt folder
    would otherwise be audited as empty, and pass)."""
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root} is not a folder; give the checkout to audit")
    if list(args.folders) != list(DEFAULT_FOLDERS):
        for folder in args.folders:
            _inside(root, folder, "--folders")
        missing = [f for f in args.folders if not (root / f).is_dir()]
        if missing:
            raise UsageError(
                f"no folder {', '.join(missing)} under {root.resolve()}; the workflow writes"
                f" {', '.join(DEFAULT_FOLDERS)}"
            )


def _checked_ledger(root: str | Path) -> None:
    """Read the checkout's equivalence ledger before anything else: a malformed one is a
    usage error naming the file and the fix (LedgerError, exit 2), not a traceback halfway."""
    ledger_of(Path(root))  # (the audit's cached read: later reads in the command reuse it)


def _audit(args: argparse.Namespace) -> int:
    _audit_scope(args)
    _checked_ledger(args.root)
    if args.explain:
        return _explain(args)
    if count_outputs(args.root, args.folders) == 0:
        print(
            f"galu audit: nothing to check: no output under {', '.join(args.folders)} in"
            f" {Path(args.root).resolve()}. Run the workflow first (snakemake --cores 2), or"
            " pass --root the checkout that holds the results."
        )
        return 1
    findings = audit_tree(args.root, args.folders)
    for finding in findings:
        print(f"PROBLEM {finding}")
    without_code = uncoded(args.root, args.folders)
    notes = _commit_notes(args, set(without_code))
    # A published run's outputs are judged by published_notes below.
    old = [p for p in without_code if publication_scale(p) is None]
    if old:
        notes.append(
            f"{len(old)} output(s) record no code closure (made before galu recorded it), "
            f"e.g. {old[0]}"
        )
    notes += published_notes(args.root, args.folders)
    notes += [
        f"{LEDGER} entry not trusted, so the outputs it vouched for count as made by other"
        f" code: {why}"
        for why in ledger_of(Path(args.root)).untrusted.values()
    ]
    for note in notes:
        print(f"{'PROBLEM' if args.strict else 'NOTE'} {note}")
    relied = equivalent_outputs(args.root, args.folders)
    steps = dict.fromkeys(step for chain in relied.values() for step in chain)
    _print_equivalences(args, relied, steps)
    # The entries these outputs rely on, recomputed from their commits (not read): one whose
    # closures are not its commits' vouches for nothing.
    wrong = recomputed_problems(Path(args.root), steps)
    for why in wrong.values():
        print(f"PROBLEM {LEDGER} entry does not hold: {why}")
    head = git_state().get("commit")
    if notes and head:
        print(f"NOTE the checkout is at commit {head}")
    problems = len(findings) + len(wrong) + (len(notes) if args.strict else 0)
    checked = count_outputs(args.root, args.folders)
    lacking = left_out_inputs(args.root, args.folders)
    if lacking:  # by design after `galu resume`: not a problem, even under --strict
        print(
            f"NOTE {len(lacking)} output(s) were made from a file their run's publication left"
            f" out as too large, which this checkout lacks (e.g. {lacking[0]}): `snakemake`"
            " remakes it and reruns what reads it."
        )
    flagged = substitutes(args.root, args.folders)
    if flagged:
        print(
            f"NOTE {len(flagged)} output(s) descend from substitute data (data_substitute in"
            f" their sidecars; e.g. {flagged[0]}): a non-official dataset copy, see README,"
            " Datasets."
        )
    if problems:
        stale = sum(1 for f in findings if f.problem.startswith(STALE))
        print(
            f"galu audit: {problems} problem(s) in {checked} output(s) under "
            f"{', '.join(args.folders)} ({stale} stale: made with code that changed since). "
            "An output edited by hand has no trustworthy provenance; `galu audit --explain "
            "FILE` shows its chain."
        )
        if any(not leftover_of(f.path) for f in findings):
            print(f"To rebuild them and what depends on them: {rebuild_command(findings)}")
        elif old:
            print(f"To rebuild them: snakemake --cores all --forcerun {' '.join(old)}")
        return 1
    print(f"galu audit: {checked} output(s) consistent with their provenance sidecars.")
    return 0


def _readme(args: argparse.Namespace) -> int:
    """Both generated sections of the README: the quick verdict (from ``--claims``) and
    "What reproduces at the paper level" (from ``published/``)."""
    readme = _read(args.readme, "the README", "run galu from the repository root or pass --readme")
    quick = _read(
        args.claims, "the generated claims table", "run the workflow first (snakemake --cores 2)"
    )
    sections = [
        (QUICK_MARKERS, quick, args.claims),
        # the published runs beside the quick run whose table is the first section
        (PAPER_MARKERS, _paper_section(args), "published/"),
    ]
    for markers, _, _ in sections:
        if markers[0] not in readme or markers[1] not in readme:
            raise UsageError(f"{args.readme} lacks the markers {markers[0]} and {markers[1]}")
    if args.verdicts:
        return _readme_verdicts(readme, sections)
    status = 0
    for markers, section, source in sections:
        status = max(status, _readme_section(args, markers, section, source))
    return status


def _readme_verdicts(readme: str, sections: list[tuple[tuple[str, str], str, str]]) -> int:
    """The end of ``make reproduce``: how this run's sections differ from the README's (a
    verdict change is a finding, exit 1; numbers past the precision shown and wording are
    NOTEs), then this run's verdict summary as the last lines."""
    from galu.workflow.landing import run_summary
    from galu.workflow.readme_sections import compare_section, describe_comparison

    status, lines = 0, []
    names = {QUICK_MARKERS: "quick-scale section", PAPER_MARKERS: "paper-level section"}
    for markers, section, _ in sections:
        comparison = compare_section(readme, section, markers)
        status = max(status, int(bool(comparison.verdicts)))
        lines += describe_comparison(names[markers], comparison)
    if not lines:
        lines.append("README.md's verdicts and numbers are this run's (at the precision shown).")
    elif not status:
        lines.append("README.md's verdicts are this run's.")
    print("\n".join([*lines, run_summary(".")]))
    return status


def _paper_section(args: argparse.Namespace) -> str:
    """README's paper-level section, beside the quick run of ``--claims`` (its claims.csv)."""
    from galu.workflow.compare import CompareError

    try:
        return paper_section(Path(args.readme).parent, Path(args.claims).with_suffix(".csv"))
    except (CompareError, ValueError) as error:
        raise UsageError(str(error)) from None


def _readme_section(
    args: argparse.Namespace, markers: tuple[str, str], section: str, source: str
) -> int:
    """Check (or with --update rewrite) the README section between ``markers``."""
    readme = Path(args.readme).read_text()
    differences = readme_differences(readme, section, markers)
    exact = readme_with_section(readme, section, markers) == readme
    if args.update and not exact:  # asked to: take the run's section, digits included
        atomic_write_bytes(args.readme, readme_with_section(readme, section, markers).encode())
        print(f"updated the section of {args.readme} generated from {source}.")
        return 0
    if not differences:
        print(
            f"{args.readme} is current with {source}"
            + ("." if exact else " at the precision shown (numbers within one unit of their"
               " last digit).")
        )  # fmt: skip
        return 0
    print(
        f"{args.readme} differs from {source} in {len(differences)} line(s):\n"
        f"{describe_differences(differences)}\nRun `galu readme --update` to take the run's."
    )
    return 1


def _equivalence(args: argparse.Namespace) -> int:
    from galu.workflow.equivalence import LedgerError
    from galu.workflow.equivalence_check import DEFAULT_SCALES, EquivalenceError, check

    root = _checkout(args.root)
    try:
        outcome = check(
            root, args.base, args.scales or DEFAULT_SCALES, args.cores, stages=args.stages
        )
    except (EquivalenceError, LedgerError) as error:
        raise UsageError(str(error)) from None
    untested = [c.script for c in outcome.changes if not outcome.compared.get(c.script)]
    for step in outcome.recorded:
        print(f"recorded {step.evidence()}")
    if untested:
        print(f"not recorded (no output at the scales run, so no evidence): {', '.join(untested)}")
    if outcome.different:
        print(
            f"galu equivalence: {len(outcome.different)} output(s) differ: no evidence for"
            f" {', '.join(sorted(outcome.unproven))} (an output differs, or was made from"
            " inputs that differ), nothing recorded for them, their jobs rerun as usual:"
        )
        print("\n".join(f"  {path}" for path in outcome.different))
    if outcome.recorded:
        print(f"galu equivalence: commit {LEDGER} with the code it vouches for.")
    return 1 if outcome.different else 0


def _publish(args: argparse.Namespace) -> int:
    from galu.workflow.config import SCHEMA_PATH, load_yaml
    from galu.workflow.publish import (
        PublishError,
        check_scale_name,
        commits_text,
        counted,
        previous_machine,
        publication_lock,
        publish,
        recover_interrupted,
        this_machine,
    )

    root = _checkout(".")
    _checked_ledger(root)
    try:
        check_scale_name(args.scale)
    except PublishError as error:
        raise UsageError(str(error)) from None
    schema = root / SCHEMA_PATH
    known = load_yaml(schema)["properties"]["scale"]["enum"] if schema.is_file() else [args.scale]
    if args.scale not in known:
        raise UsageError(
            f"unknown scale {args.scale!r}: the configuration's scales are {', '.join(known)}"
            f" (key scale, {SCHEMA_PATH.as_posix()}); nothing was published"
        )
    configfiles = args.configfile or default_configfiles(args.scale)
    for configfile in configfiles:
        _inside(root, configfile, "--configfile")
    missing = [c for c in configfiles if not (root / c).is_file()]
    if missing:
        raise UsageError(
            f"no configuration file {', '.join(missing)}; name the run's with --configfile"
        )
    try:
        with publication_lock():
            for note in recover_interrupted(Path(publication_folder(args.scale, args.in_progress))):
                print(f"NOTE {note}")
            manifest = publish(
                args.scale,
                configfiles=configfiles,
                # a republished run keeps the machine it was recorded on
                machine=args.machine or previous_machine(args.scale) or this_machine(),
                allow_dirty=args.allow_dirty,
                in_progress=args.in_progress,
            )
    except PublishError as error:
        raise UsageError(str(error)) from None
    print(
        f"published {counted(manifest['files'])} of the {args.scale} run"
        f" ({commits_text(manifest).replace('`', '')}, wall time"
        f" {manifest['wall_hours']:.1f} h) to"
        f" {publication_folder(args.scale, args.in_progress)}/"
        + (
            f"; left out as too large: {', '.join(manifest['left_out'])}"
            if manifest["left_out"]
            else ""
        )
        + (
            ".\nNext: `galu audit` verifies them; `galu resume --in-progress` continues the"
            " run elsewhere; README's 'What reproduces at the paper level' does not show a run"
            " in progress."
            if args.in_progress
            else ".\nNext: `galu audit` verifies them; `galu readme --update` writes README's"
            " 'What reproduces at the paper level'; `galu resume` continues the run elsewhere."
        )
    )
    return 0


def _resume(args: argparse.Namespace) -> int:
    from galu.workflow.resume import ResumeError, resume

    _checked_ledger(_checkout(args.root))  # before a file is copied
    try:
        done = resume(args.scale, _checkout(args.root), args.in_progress)
    except ResumeError as error:
        raise UsageError(str(error)) from None
    configfiles = " ".join(args.configfile or default_configfiles(args.scale))
    print(
        f"{len(done.restored)} file(s) of the published {args.scale} run put back"
        f" ({len(done.present)} already there), {done.records} Snakemake record(s) and"
        f" {done.benchmarks} benchmark table(s) written"
        + (f", {done.checkpoints} checkpoint(s) of cut-off jobs" if done.checkpoints else "")
        + f". Snakemake reruns only what changed since: `galu run --configfile {configfiles}`."
    )
    if done.missing_data:
        print(
            f"NOTE the run was made from {', '.join(done.missing_data)}, missing here: prepare"
            " them (`galu data prepare <dataset>`) and resume again, or their jobs rerun."
        )
    if done.left_out:
        print(
            f"Left out of the publication as too large: {', '.join(done.left_out)}; a job"
            " that needs one reruns its job and what reads it (`snakemake -n` names them)."
        )
    folder = publication_folder(args.scale, args.in_progress)
    stale, _ = published_problems(args.root, [folder])
    if stale:
        print(
            f"Will rerun: {stale_published_text(stale[folder])}; no"
            f" number-neutral evidence in {LEDGER}"
            " covers the change (`galu equivalence --base <commit>` records it when it holds);"
            " what reads them; and any job whose parameters differ from the run's"
            " (`snakemake -n` gives each reason)."
        )
    else:
        print(
            "Will rerun: any job whose parameters differ from the run's; none for its code"
            " (every published output's code is this checkout's, or recorded as equivalent"
            " to it)."
        )
    return 0


def default_configfiles(scale: str) -> list[str]:
    """The configuration files of a run of ``scale``: config/paper.yaml, and the scale's own
    overlay over it when there is one (config/paper-cpu.yaml)."""
    return ["config/paper.yaml"] + ([f"config/{scale}.yaml"] if scale != "paper" else [])


def _dvc(args: argparse.Namespace) -> int:
    from galu.workflow.dvcstages import differences, read_deps, rewrite, wanted_deps

    path = _checkout(args.root) / "dvc.yaml"
    text = _read(path, "the DVC stages", "run galu from the repository root, or pass --root PATH")
    written = read_deps(text)
    wanted = wanted_deps(Path(args.root), written)
    if args.update:
        updated = rewrite(text, wanted)
        if updated != text:
            atomic_write_bytes(path, updated.encode())
        print(f"{path}: deps of {len(wanted)} stage(s) generated from the code closures.")
        return 0
    lines = differences(written, wanted)
    for line in lines:
        print(f"PROBLEM {line}")
    if lines:
        print(f"{path} is out of date with the rules' code closures; run `galu dvc --update`.")
        return 1
    print(f"{path}: the deps of {len(wanted)} stage(s) match the rules' code closures.")
    return 0


def _site_config(root: Path) -> dict:
    """config/config.yaml with config/local.yaml merged over it, as the Snakefile does, and
    validated like the workflow's (a ConfigError names every bad key)."""
    from galu.workflow.config import load_yaml, read_site_file, validate_files

    config = load_yaml(root / "config/config.yaml")
    local = root / "config/local.yaml"
    for key, value in read_site_file(local).items() if local.is_file() else ():
        both = isinstance(value, dict) and isinstance(config.get(key), dict)
        config[key] = {**config[key], **value} if both else value
    validate_files(config, root / "workflow/schemas/config.schema.yaml", check_cuda=False)
    return config


def _data(args: argparse.Namespace) -> int:
    from galu.workflow.data import DataSettings, dataset_names

    root = _checkout(args.root)
    unknown = [name for name in args.datasets if name not in dataset_names()]
    if unknown:
        raise UsageError(
            f"unknown dataset(s) {', '.join(unknown)}; choose from {', '.join(dataset_names())}"
        )
    settings = DataSettings.from_config(_site_config(root)["data"])
    # Sidecars record paths relative to the checkout, as the workflow's jobs do.
    with contextlib.chdir(root):
        return _fetch_datasets(args, settings)


def _fetch_datasets(args: argparse.Namespace, settings: DataSettings) -> int:
    """``galu data fetch|prepare`` from the checkout's root."""
    from galu.workflow.data import DataError, fetch, prepare
    from galu.workflow.provenance import Run, stamp_manifest

    raw, processed = Path("data/raw"), Path("data/processed")
    try:
        for name in args.datasets:
            report = fetch(name, raw, settings)
            # The manifest gets its sidecar here too: the pre-flight and the prepare job
            # accept only a manifest that one vouches for.
            stamp_manifest(
                report.manifest,
                report.substitute,
                rule="galu data fetch",
                params={"dataset": name},
                code=_rule_code("scripts/data_download.py"),
            )
            print(f"{name}: {len(report.files)} raw file(s) verified in data/raw/{name}/")
            if args.action == "prepare":
                run = Run(
                    "galu data prepare",
                    params={"dataset": name},
                    inputs=[report.manifest],
                    code=_rule_code("scripts/data_prepare.py"),
                )
                done = prepare(name, raw, processed, settings.substitutes, run=run)
                print(f"{name}: wrote {done.path}")
    except (DataError, ValueError) as error:
        print(f"galu data: {error}", file=sys.stderr)
        return 1
    return 0


def _rule_code(script: str) -> dict | None:
    """The code closure a workflow job running ``script`` (the rule that does the same step)
    would record, for the sidecar of an output this command makes with that same code, so
    that the audit judges it like the job's (stale when that code changes); None where the
    checkout lacks the script."""
    root = Path(".")
    if not (root / script).is_file():
        return None
    closure = current_closure(code_scanner(root), {"script": script})
    if isinstance(closure, str):
        return None
    return closure_record(closure, ledger_of(root))


def _plan(args: argparse.Namespace) -> int:
    from galu.workflow.costs import CONSTANTS, CostModel
    from galu.workflow.plan import (
        format_problems,
        machine_memory_gb,
        make_plan,
        memory_gb,
        problems,
        speed_line,
        table,
    )
    from galu.workflow.runconfig import run_config

    root = _checkout(args.root)
    for name in ("cores", "gpus"):
        if getattr(args, name) < (1 if name == "cores" else 0):
            raise UsageError(f"--{name} must be at least {1 if name == 'cores' else 0}")
    if not math.isfinite(args.speed) or not args.speed > 0:
        raise UsageError("--speed must be positive, e.g. --speed 1.2 for cores 1.2x as fast")
    # Memory is judged against a machine only when asked (--mem-gb, --this-machine, or the
    # GALU_MACHINE_MEM_GB a site sets): a plan made on a login node is for another machine.
    asked = args.this_machine or "GALU_MACHINE_MEM_GB" in os.environ
    try:
        if args.mem_gb is not None:
            memory_gb(args.mem_gb, f"--mem-gb {args.mem_gb}")
        mem_gb = args.mem_gb if args.mem_gb is not None else (
            machine_memory_gb() if asked else None
        )  # fmt: skip
    except ValueError as error:
        raise UsageError(str(error)) from None
    config = run_config(root, args.configfile, args.config)
    from galu.workflow.consistency import overlay_problems

    for problem in overlay_problems(config):  # it would plan another run than the one named
        raise UsageError(problem)
    model = CostModel.load(root / CONSTANTS)
    plan = make_plan(config, model, args.cores, args.gpus, args.speed)
    files = " ".join(args.configfile) or "config/config.yaml"
    print(f"plan for scale {config['scale']!r} ({files}):")
    print(speed_line(model, args.speed))
    print("\n".join(table(plan)))
    errors, warnings = problems(plan, mem_gb)
    for line in format_problems(errors, warnings):
        print(line)
    if mem_gb is None:
        print(
            "memory not judged against a machine (the largest job's need is above): pass"
            " --mem-gb for the machine it will run on, or --this-machine"
        )
    return 1 if errors else 0


def _compare(args: argparse.Namespace) -> int:
    """Exit 1 when a claim's verdict differs between the runs (or only one run has the
    claim): the difference is the finding, as for ``galu readme``; 0 when every verdict
    agrees."""
    from galu.workflow.compare import CompareError, compare, lines, read_run

    try:
        a, b = read_run(args.a), read_run(args.b)
    except CompareError as error:
        raise UsageError(str(error)) from None
    rows = compare(a, b)
    print("\n".join(lines(a, b, rows)))
    return 1 if any(row.flag for row in rows) else 0


def plain_text(doc: str) -> str:
    """A docstring as ``--help`` shows it: reStructuredText literals and roles (double
    backquotes, ``:func:``) become plain words."""
    return re.sub(r"(?::\w+:)?`+([^`]+)`+", r"\1", doc).strip()


def _plots(args: argparse.Namespace) -> int:
    import subprocess

    from galu.workflow.dvcplots import show

    root = _checkout(args.root)
    try:
        page = show(root, args.output)
    except subprocess.CalledProcessError as error:
        print(f"galu plots: dvc plots show failed:\n{error.stderr.strip()}", file=sys.stderr)
        return 1
    print(f"wrote {page} (offline: the Vega libraries are inlined); open it in a browser.")
    return 0


# One example per subcommand, shown by `galu --help` and `galu <command> --help` (a test
# parses each one).
EXAMPLES = {
    "run": "galu run --cores 2 --configfile config/paper.yaml",
    "plan": "galu plan --configfile config/paper.yaml --gpus 1 --mem-gb 80",
    "audit": "galu audit --explain figures/normalization/max_depth.png",
    "compare": "galu compare results published/paper-cpu/results",
    "explain": "galu explain mem_random_signs_need_about_m_over_d_neurons",
    "data": "galu data prepare mnist fashion_mnist",
    "dvc": "galu dvc --update",
    "plots": "galu plots --output dvc_plots",
    "publish": "galu publish --scale paper-cpu",
    "resume": "galu resume --scale paper-cpu --in-progress",
    "equivalence": "galu equivalence --base HEAD~1 --scale tiny",
    "readme": "galu readme --update",
}
EXIT_STATUS = textwrap.fill(
    "exit status: 0 done; 1 a finding (an audit problem, a plan that will not fit this"
    " machine, runs whose verdicts differ, a stale README); 2 a usage or configuration"
    " error, named with its fix",
    width=79,
)


def _examples(commands: Sequence[str]) -> str:
    return "examples:\n" + "\n".join(f"  {EXAMPLES[c]}" for c in commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="galu",
        description=plain_text(__doc__ or ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"galu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    audit = sub.add_parser("audit", help="check every output against its provenance sidecar")
    audit.add_argument("--root", default=".", help="repository root (default: .)")
    audit.add_argument(
        "--folders",
        nargs="+",
        default=list(DEFAULT_FOLDERS),
        help=f"folders to audit, relative to the root (default: {' '.join(DEFAULT_FOLDERS)})",
    )
    audit.add_argument(
        "--explain",
        metavar="FILE",
        help="print the provenance chain of one output, down to the raw archives",
    )
    audit.add_argument(
        "--strict",
        action="store_true",
        help="also fail when outputs were made on another commit or from a modified tree",
    )
    audit.add_argument(
        "--verbose",
        action="store_true",
        help="list the evidence of every recorded number-neutral change the outputs rely on",
    )
    audit.set_defaults(func=_audit)
    compare = sub.add_parser(
        "compare",
        help="two runs' claims side by side (measured value and verdict), flagging the verdicts"
        " that differ; exit 1 when one does",
        description="Two runs' claims side by side. A run is a results folder (results,"
        " results/<scale>, published/<scale>/results), its claims.csv, or REV:FOLDER for that"
        " folder at commit REV (e.g. HEAD~1:published/paper-cpu/results). Exit 0 when every"
        " verdict agrees, 1 when a verdict differs or only one run has a claim, 2 when a run"
        " cannot be read.",
    )
    compare.add_argument("a", metavar="A", help="the first run, e.g. results")
    compare.add_argument("b", metavar="B", help="the second run, e.g. published/paper-cpu/results")
    compare.set_defaults(func=_compare)
    explain_claim = sub.add_parser(
        "explain",
        help="one claim: statement, the rows it selects, expected value, tolerance, verdict,"
        " figure and how those files were made (parameter values included)",
    )
    explain_claim.add_argument(
        "claim_id", nargs="?", help="a claim id of workflow/claims.yaml (none: list them)"
    )
    explain_claim.add_argument("--root", default=".", help="repository root (default: .)")
    explain_claim.add_argument(
        "--results",
        default="results",
        help="the run's results folder, relative to the root (default: results; e.g."
        " results/paper-cpu, published/paper-cpu/results)",
    )
    explain_claim.set_defaults(func=_explain_claim)
    data = sub.add_parser("data", help="fetch (and prepare) datasets outside the workflow")
    data.add_argument(
        "action", choices=("fetch", "prepare"), help="fetch raw files, or also convert"
    )
    data.add_argument("datasets", nargs="+", help="mnist, fashion_mnist, cifar10")
    data.add_argument("--root", default=".", help="repository root (default: .)")
    data.set_defaults(func=_data)
    dvc = sub.add_parser(
        "dvc", help="check (or --update) dvc.yaml's stage deps against the code closures"
    )
    dvc.add_argument("--root", default=".", help="repository root (default: .)")
    dvc.add_argument("--update", action="store_true", help="rewrite the deps in place")
    dvc.set_defaults(func=_dvc)
    plots = sub.add_parser("plots", help="dvc plots show, working offline (no CDN)")
    plots.add_argument("--root", default=".", help="repository root (default: .)")
    plots.add_argument("--output", default="dvc_plots", help="folder of the page (git-ignored)")
    plots.set_defaults(func=_plots)
    publish = sub.add_parser(
        "publish", help="copy a finished run's result tables to published/<scale>/"
    )
    publish.add_argument("--scale", required=True, help="the run's scale, e.g. paper-cpu")
    publish.add_argument(
        "--configfile",
        nargs="+",
        help="the run's configuration files (default: config/paper.yaml config/<scale>.yaml)",
    )
    publish.add_argument(
        "--machine",
        help="the machine it ran on (default: the one its last publication records, else this"
        " machine)",
    )
    publish.add_argument(
        "--allow-dirty",
        action="store_true",
        help="publish although the checkout or the run's jobs had uncommitted changes (the"
        " publication says so)",
    )
    publish.add_argument(
        "--in-progress",
        action="store_true",
        help="keep an unfinished run in published/in-progress/<scale>/ for a later sitting"
        " (`galu resume --in-progress`), not as the scale's publication",
    )
    publish.set_defaults(func=_publish)
    equivalence = sub.add_parser(
        "equivalence",
        help="run the rules whose code changed since --base at both commits and, when every"
        " output is byte-identical, record the change as number-neutral",
    )
    equivalence.add_argument(
        "--base", required=True, help="the commit whose outputs should stay current"
    )
    equivalence.add_argument(
        "--scale", action="append", dest="scales", metavar="NAME",
        help="a configuration to run (tiny, paper-smoke, quick; repeat it; default: all three)",
    )  # fmt: skip
    equivalence.add_argument(
        "--stage", action="append", dest="stages", metavar="NAME",
        help="run only this stage (repeat it; default: the configuration's stages)",
    )  # fmt: skip
    equivalence.add_argument("--cores", type=int, default=2, help="cores per run (default: 2)")
    equivalence.add_argument("--root", default=".", help="repository root (default: .)")
    equivalence.set_defaults(func=_equivalence)
    resume = sub.add_parser(
        "resume", help="put a published run back into results/<scale>/ to continue it"
    )
    resume.add_argument("--scale", required=True, help="the published run's scale")
    resume.add_argument("--root", default=".", help="repository root (default: .)")
    resume.add_argument(
        "--configfile", nargs="+", help="the run's configuration files (for the next command)"
    )
    resume.add_argument(
        "--in-progress",
        action="store_true",
        help="the run kept by `galu publish --in-progress` (published/in-progress/<scale>/)",
    )
    resume.set_defaults(func=_resume)
    plan = sub.add_parser(
        "plan", help="predict a configuration's cost per stage and rule before running it"
    )
    plan.add_argument("--root", default=".", help="repository root (default: .)")
    plan.add_argument(
        "--configfile", nargs="*", default=[], metavar="FILE",
        help="overlays merged over config/config.yaml, as for snakemake (e.g. config/paper.yaml)",
    )  # fmt: skip
    plan.add_argument(
        "--config", nargs="*", default=[], metavar="KEY=VALUE",
        help="overrides, as for snakemake (e.g. device=cpu)",
    )  # fmt: skip
    plan.add_argument("--cores", type=int, default=2, help="CPU cores to run on (default: 2)")
    plan.add_argument("--gpus", type=int, default=0, help="GPUs to run on (default: 0)")
    plan.add_argument(
        "--speed", type=float, default=1.0, metavar="FACTOR",
        help="how many times faster this machine's cores are than the reference machine's"
        " (default: 1). The plan prints the factors fitted for the machines measured so far;"
        " `python workflow/costs/fit.py --add RUN_DIR --run NAME --machine NAME` fits yours"
        " from a finished run's benchmarks (e.g. the quick run's)",
    )  # fmt: skip
    plan.add_argument(
        "--mem-gb", type=float, default=None,
        help="judge the jobs' memory against a machine with this many GB",
    )  # fmt: skip
    plan.add_argument(
        "--this-machine",
        action="store_true",
        help="judge the jobs' memory against this machine's (or GALU_MACHINE_MEM_GB)",
    )
    plan.set_defaults(func=_plan)
    readme = sub.add_parser(
        "readme", help="compare (or --update) README's generated claims sections"
    )
    readme.add_argument("--claims", default="results/claims.md", help="the generated table")
    readme.add_argument("--readme", default="README.md", help="the README to check")
    readme.add_argument("--update", action="store_true", help="rewrite the section in place")
    readme.add_argument(
        "--verdicts",
        action="store_true",
        help="fail only where a verdict differs (numbers past the precision shown and wording"
        " are notes), then print this run's verdict summary (the end of make reproduce)",
    )
    readme.set_defaults(func=_readme)
    # Listed for --help only: main() hands everything after `run` to Snakemake untouched.
    sub.add_parser(
        "run",
        help="snakemake with its command line checked first (--config KEY=VALUE entries,"
        " --configfile files), e.g. galu run --cores 2",
        add_help=False,
    )
    for name, command in sub.choices.items():
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.epilog = f"example:\n  {EXAMPLES[name]}\n\n{EXIT_STATUS}"
    parser.epilog = f"{_examples(list(sub.choices))}\n\n{EXIT_STATUS}"
    return parser


def _run(snakemake_args: list[str]) -> int:
    from galu.workflow.snakemake_args import run

    run(snakemake_args)  # replaces this process with Snakemake; returns only by raising
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Usage and configuration errors exit 2 with one message naming the
    problem and the fix (argparse's own errors too); a finding exits 1."""
    from galu.workflow.config import ConfigError
    from galu.workflow.equivalence import LedgerError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # Snakemake's own output is its own; galu's commands print what files say: as data.
        command, call = "run", lambda: _run(argv[1:])
    else:
        args = build_parser().parse_args(argv)
        command, call = args.command, lambda: args.func(args)
    try:
        with contextlib.redirect_stdout(SafeStream(sys.stdout)):
            return call()
    except (UsageError, ConfigError, LedgerError) as error:
        print(terminal_text(f"galu {command}: {error}"), file=sys.stderr)
    except OSError as error:  # a wrong place: a read-only folder, a full disk, a missing file
        if os.environ.get("GALU_TRACEBACK"):
            raise
        print(terminal_text(f"galu {command}: {os_error_text(error)}"), file=sys.stderr)
    return 2


def os_error_text(error: OSError) -> str:
    """An operating-system error as one line: the file, what went wrong, and the fix."""
    name = os.path.abspath(error.filename) if isinstance(error.filename, str) else "a file"
    fixes = {
        errno.EACCES: "make it writable (or run galu where you may write)",
        errno.EPERM: "make it writable (or run galu where you may write)",
        errno.EROFS: "run galu in a checkout on a writable file system",
        errno.ENOSPC: "free some space and run it again",
        errno.ENOENT: "check the path (run galu from the repository root, or pass --root)",
    }
    fix = fixes.get(error.errno or 0, "fix that and run it again")
    return (
        f"{name}: {error.strerror or error}; {fix}. Nothing it had written is left half-done"
        " (set GALU_TRACEBACK=1 to see where it happened)"
    )


if __name__ == "__main__":
    sys.exit(main())
