"""``galu plan``: predict a configuration's cost per stage and rule before running it, and
judge its jobs' memory against a machine (galu/workflow/planning/plan.py)."""

from __future__ import annotations

import argparse
import math
import os

from galu.workflow.commands.common import UsageError, checkout, root_option


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``galu plan`` to the subcommands ``sub`` and return its parser."""
    parser = sub.add_parser(
        "plan", help="predict a configuration's cost per stage and rule before running it"
    )
    root_option(parser)
    parser.add_argument(
        "--configfile", nargs="*", default=[], metavar="FILE",
        help="overlays merged over config/config.yaml, as for snakemake (e.g. config/paper.yaml)",
    )  # fmt: skip
    parser.add_argument(
        "--config", nargs="*", default=[], metavar="KEY=VALUE",
        help="overrides, as for snakemake (e.g. device=cpu)",
    )  # fmt: skip
    parser.add_argument("--cores", type=int, default=2, help="CPU cores to run on (default: 2)")
    parser.add_argument("--gpus", type=int, default=0, help="GPUs to run on (default: 0)")
    parser.add_argument(
        "--speed", type=float, default=1.0, metavar="FACTOR",
        help="how many times faster this machine's cores are than the reference machine's"
        " (default: 1). The plan prints the factors fitted for the machines measured so far;"
        " `python workflow/costs/fit.py --add RUN_DIR --run NAME --machine NAME` fits yours"
        " from a finished run's benchmarks (e.g. the quick run's)",
    )  # fmt: skip
    parser.add_argument(
        "--mem-gb", type=float, default=None,
        help="judge the jobs' memory against a machine with this many GB",
    )  # fmt: skip
    parser.add_argument(
        "--this-machine",
        action="store_true",
        help="judge the jobs' memory against this machine's (or GALU_MACHINE_MEM_GB)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from galu.workflow.planning.costs import CONSTANTS, CostModel
    from galu.workflow.planning.plan import (
        format_problems,
        machine_memory_gb,
        make_plan,
        memory_gb,
        problems,
        speed_line,
        table,
    )
    from galu.workflow.settings.runconfig import run_config

    root = checkout(args.root)
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
    # Checked here first, so that a bad setting is named as for any galu command.
    config = run_config(root, args.configfile, args.config)
    from galu.workflow.planning.dag import planned_jobs
    from galu.workflow.settings.consistency import overlay_problems
    from galu.workflow.settings.runconfig import merged_overrides

    for problem in overlay_problems(config):  # it would plan another run than the one named
        raise UsageError(problem)
    model = CostModel.load(root / CONSTANTS)
    planned = planned_jobs(root, args.configfile, merged_overrides(args.config))
    plan = make_plan(config, planned, model, args.cores, args.gpus, args.speed)
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
