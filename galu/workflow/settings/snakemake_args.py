"""Check a Snakemake command line before Snakemake sees it (``galu run``).

Two mistakes make Snakemake itself print a traceback before any workflow code runs, so the
workflow's own configuration check cannot catch them: a ``--config`` entry without ``=``
(``--config seed``) and a ``--configfile`` that does not exist or is not YAML. ``galu run``
checks both here, then hands the unchanged command line to Snakemake; every other check
(types, ranges, unknown keys) stays with the workflow, which reports it while it is parsed.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from galu.workflow.settings.config import ConfigError, read_config_file

# Snakemake's options whose values are config entries and config files (argparse nargs="*":
# every following token that is not an option).
CONFIG_OPTIONS = ("--config", "-C")
CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")


def _values(args: Sequence[str], options: tuple[str, ...]) -> Iterator[str]:
    """The values given to any of ``options``, as ``--opt a b`` or ``--opt=a``."""
    taking = False
    for token in args:
        name, equals, value = token.partition("=")
        if token.startswith("-"):
            taking = token in options
            if equals and name in options:
                yield value
            continue
        if taking:
            yield token


# Options that only print or inspect (no job runs): the pre-flight only reports under them.
INFORMATIONAL = frozenset(
    "--list-rules --list -l --list-target-rules --lt --lint --summary -S --detailed-summary -D"
    " --dag --rulegraph --filegraph --d3dag --list-changes --lc --list-input-changes --li"
    " --list-params-changes --lp --list-code-changes --list-untracked --lu --print-compilation"
    " --archive --containerize --export-cwl --generate-unit-tests --unlock --cleanup-metadata"
    " --cm --cleanup-shadow --report --version -v --help -h --list-conda-envs".split()
)


def informational(args: Sequence[str]) -> bool:
    """Whether a Snakemake command line only prints or inspects (``--list-rules``, ``--dag``,
    ``--report``, ...): nothing may be moved or deleted under it."""
    return any(token.partition("=")[0] in INFORMATIONAL for token in args)


def _option_count(args: Sequence[str], options: tuple[str, ...]) -> int:
    return sum(token.partition("=")[0] in options for token in args)


def check(args: Sequence[str], cwd: Path = Path()) -> None:
    """Raise a ConfigError naming the entry or file and the fix; return when Snakemake can
    take the command line's config entries and config files as the user meant them."""
    if _option_count(args, CONFIGFILE_OPTIONS) > 1:
        raise ConfigError(
            "--configfile is given more than once: Snakemake keeps only the last, so the run"
            " would lose the earlier files (a paper-cpu run planned with the quick settings);"
            " name them all after one, e.g. --configfile config/paper.yaml config/paper-cpu.yaml"
        )
    for entry in _values(args, CONFIG_OPTIONS):
        key, equals, _ = entry.partition("=")
        if not equals or not key:
            raise ConfigError(
                f"--config {entry}: entries are KEY=VALUE pairs, e.g. --config seed=3; nested"
                " settings belong in a file given with --configfile"
            )
        if "." in key:
            raise ConfigError(
                f"--config {entry}: Snakemake would set a top-level key named {key!r}, not the"
                " nested setting; put nested settings in a file given with --configfile"
            )
    for name in _values(args, CONFIGFILE_OPTIONS):
        path = cwd / name
        if not path.is_file():
            target = "" if Path(name).suffix else (
                f"; if {name} is a target, put it before --configfile (or after --), since"
                " every word after --configfile is taken for a file"
            )  # fmt: skip
            raise ConfigError(
                f"--configfile {name}: no such file under {cwd.resolve()}; give the path of a"
                f" YAML file (e.g. config/paper.yaml){target}"
            )
        if not read_config_file(path, fix="fix it, or leave it out of the command line"):
            raise ConfigError(
                f"--configfile {name} sets nothing (every line is a comment or it is empty);"
                " leave it out, or give it the keys it should change"
            )


def snakemake_executable() -> str:
    """The Snakemake of this Python environment (beside its interpreter), else the PATH's."""
    beside = Path(sys.executable).parent / "snakemake"
    if beside.is_file():
        return str(beside)
    found = shutil.which("snakemake")
    if found is None:
        raise ConfigError("snakemake is not installed here: run `make setup` first")
    return found


def run(args: Sequence[str]) -> None:
    """Check ``args``, then replace this process with Snakemake (its exit code, its
    signals: Ctrl-C reaches Snakemake directly)."""
    check(args)
    executable = snakemake_executable()
    os.execv(executable, [executable, *args])
