# Shared by every stage: configuration check, sidecar paths, the conda environment.
import sys
from pathlib import Path

import yaml

from galu.claims import caption_path
from galu.config import ConfigError, validate_files
from galu.integrity import announce, check_consistency, preflight
from galu.profiles import check_placeholders
from galu.provenance import sidecar_path

# Only the main Snakemake process checks: a cluster job step re-parses this file with the same
# configuration (already checked), possibly on a node without the GPU or the data mirrors.
if workflow.is_main_process:
    try:
        # On a cluster the main process runs on a login node without the jobs' GPUs.
        validate_files(
            config,
            workflow.source_path("../schemas/config.schema.yaml"),
            check_cuda=workflow.local_exec,
        )
        check_consistency(config)
        # profiles/slurm ships EDIT-partition / EDIT-account: stop before submitting jobs.
        check_placeholders(
            workflow.resource_settings.default_resources,
            workflow.resource_settings.overwrite_resources,
        )
    except ConfigError as error:
        # One readable message and a non-zero exit, before any job runs (no traceback).
        print(f"galu: {error}", file=sys.stderr)
        sys.exit(2)
    # Raw archives and processed arrays whose bytes fail their checks are set aside (never
    # used), so the jobs that make them run again; a dry run only reports them.
    DRY_RUN = workflow.output_settings.dryrun
    announce(
        preflight(Path("."), dry_run=DRY_RUN),
        lambda line: print(line, file=sys.stderr),
        Path("."),
        record=not DRY_RUN,
    )

SCALE = config["scale"]
# The configuration of this run, handed to the report built on success (report.smk).
REPORT_CONFIG = Path(".snakemake/galu/report_config.yaml")
ENV = "../../environment.yml"


with open(workflow.source_path("../claims.yaml")) as handle:
    CLAIMS = yaml.safe_load(handle)


def claim_sources(wildcards):
    """CSVs the claims read that this configuration produces (others become not_run).

    Evaluated when the DAG is built, after every stage has extended ALL_TARGETS."""
    return sorted({c["source"] for c in CLAIMS if c["source"] in ALL_TARGETS})


def meta(path):
    """The provenance sidecar of an output (written by galu.provenance.Run)."""
    return str(sidecar_path(path))


# Figures in the report: figure path -> its caption template under workflow/report/. For each
# figure, `claims` in report.smk writes the full caption to results/captions/ (the template
# followed by the verdicts of the claims the figure shows).
FIGURE_TEMPLATES = {}


def report_figure(figure, template, **report_args):
    """``report(figure, ...)`` with its caption: the one with verdicts once `claims` has
    written it (the report is built after a full run), else the bare template
    ``workflow/report/<template>``. ``report_args``: category, subcategory, ..."""
    FIGURE_TEMPLATES[figure] = f"workflow/report/{template}"
    generated = Path(caption_path(figure))
    caption = (
        str(generated.resolve()) if generated.is_file() else f"../report/{template}"
    )
    return report(figure, caption=caption, **report_args)
