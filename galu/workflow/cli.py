"""The ``galu`` command: run and plan the workflow, audit its outputs against their provenance,
explain one claim, compare two runs' claims, publish and resume paper-scale runs, and keep
dvc.yaml and the README in step with the code. ``galu <command> --help`` describes each
command."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import sys
import textwrap
from collections.abc import Sequence

from galu import __version__
from galu.workflow.commands import COMMANDS
from galu.workflow.commands import run as run_command
from galu.workflow.commands.common import UsageError
from galu.workflow.terminal import SafeStream, terminal_text


def plain_text(doc: str) -> str:
    """A docstring as ``--help`` shows it: reStructuredText literals and roles (double
    backquotes, ``:func:``) become plain words."""
    return re.sub(r"(?::\w+:)?`+([^`]+)`+", r"\1", doc).strip()


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
    for module in COMMANDS:  # galu/workflow/commands/: one module per subcommand
        command = module.add_parser(sub)
        if module is not run_command:  # main() hands `galu run` to Snakemake, unparsed
            command.set_defaults(func=module.run)
    for name, command in sub.choices.items():
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.epilog = f"example:\n  {EXAMPLES[name]}\n\n{EXIT_STATUS}"
    parser.epilog = f"{_examples(list(sub.choices))}\n\n{EXIT_STATUS}"
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Usage and configuration errors exit 2 with one message naming the
    problem and the fix (argparse's own errors too); a finding exits 1."""
    from galu.workflow.equivalence import LedgerError
    from galu.workflow.settings.config import ConfigError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # Snakemake's own output is its own; galu's commands print what files say: as data.
        command, call = "run", lambda: run_command.run(argv[1:])
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
