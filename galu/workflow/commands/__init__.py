"""The ``galu`` command line, one module per subcommand: ``galu audit`` is
:mod:`~galu.workflow.commands.audit`, ``galu plan`` :mod:`~galu.workflow.commands.plan`, and so
on. :mod:`galu.workflow.cli` builds the parser from them and runs the one asked for; the work
itself is done by the machinery module each command calls (galu/workflow/trust/audit.py,
galu/workflow/planning/plan.py, ...).

Each command module defines ``add_parser(sub)``, which adds its subparser (options, help) to
the subcommands ``sub`` and returns it, and ``run(args) -> int``, the command itself (the
parser's ``func``): it prints its results and returns the exit status (0 done, 1 a finding); a
usage or configuration error raises :class:`~galu.workflow.commands.common.UsageError`
(exit 2). What several commands share is in :mod:`~galu.workflow.commands.common`.
``galu run`` is the exception: ``main`` hands its ``run`` the command line after ``run``
untouched, for Snakemake. :data:`COMMANDS` lists the modules in the order of ``galu --help``.
"""

from __future__ import annotations

from galu.workflow.commands import (
    audit,
    compare,
    data,
    dvc,
    equivalence,
    explain,
    plan,
    plots,
    publish,
    readme,
    resume,
    run,
)

# The order of `galu --help` (and of its examples).
COMMANDS = (
    audit,
    compare,
    explain,
    data,
    dvc,
    plots,
    publish,
    equivalence,
    resume,
    plan,
    readme,
    run,
)
