# The verdict: every claim of workflow/claims.yaml checked on the CSVs this run produced,
# as a table (results/claims.csv, results/claims.md) and in the report. Included last, so
# ALL_TARGETS already lists every enabled stage's outputs.


import glob
import sys

import yaml

from galu.workflow.feedback import normalize_zip_modes
from galu.workflow.landing import run_summary
from galu.workflow.observations import observation_sources
from galu.workflow.pages.report_build import REPORT
from galu.workflow.pages.report_build import build_path as report_build_path
from galu.workflow.pages.report_build import install_report
from galu.workflow.scales import OutputRoot
from galu.workflow.stages import sentence_modules

# The configuration of this run, handed to the report built on success.
REPORT_CONFIG = Path(".snakemake/galu/report_config.yaml")


# The figures this run makes, each with its caption template (see report_figure in common.smk).
# Keyed by contract path (what claims.yaml and the observations name); outputs go through out().
REPORT_FIGURES = {f: t for f, t in FIGURE_TEMPLATES.items() if out(f) in ALL_TARGETS}
# Each figure's full caption (verdicts, template, what the data show), as `claims` writes it.
REPORT_CAPTIONS = [out(caption_path(f)) for f in REPORT_FIGURES]


rule claims:
    input:
        claims="workflow/claims.yaml",
        sources=claim_sources,
        templates=sorted(set(REPORT_FIGURES.values())),
        # the CSVs each caption's "what the data show" sentences are computed from
        observed=[out(s) for s in observation_sources(list(REPORT_FIGURES))],
    output:
        # The report's landing page (the Snakefile's `report:`), and the same as HTML; the
        # summary: the verdict counts and each claim's measured value; the counts alone, for
        # `dvc metrics show` (dvc.yaml's metrics).
        **with_sidecars(
            csv=out("results/claims.csv"),
            md=out("results/claims.md"),
            landing=out(LANDING_PAGE),
            html=report(
                out("results/claims.html"),
                caption="../report/claims.rst",
                category="Verdict",
            ),
            summary=out("results/claims_summary.json"),
            counts=out("results/claims_counts.json"),
        ),
        captions=REPORT_CAPTIONS,
        caption_metas=[str(sidecar_path(c)) for c in REPORT_CAPTIONS],
    log:
        job_log("report/claims"),
    benchmark:
        job_benchmark("report/claims")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        scale=SCALE,
        # what this scale reduces from the paper's settings, printed in captions and landing
        reductions=config["reductions"],
        # the stages this run makes; the other stages' claims are not_run
        stages=config["stages"],
        # figure -> caption template, in the order of output.captions
        figures=REPORT_FIGURES,
        # the caption-sentence modules galu.workflow.observations imports by name (part of
        # this rule's code closure, see track_code)
        modules=list(sentence_modules()),
    script:
        "../../scripts/report_claims.py"


# Not part of `all`: `make reproduce` runs it after the default (quick) run and reports a stale
# README or verdict page (docs/verdicts-*.md) without failing, so a user who changes the config
# is not stopped by the README of the default run; tests/test_workflow.py checks that it names
# a stale section.
rule readme_check:
    input:
        md=rules.claims.output.md,
        csv=rules.claims.output.csv,
        readme="README.md",
        # the pages that hold the generated claim tables (galu/workflow/pages/readme_pages.py)
        quick_page="docs/verdicts-quick.md",
        paper_page="docs/verdicts-paper.md",
        # the published paper-level runs the second page quotes and README counts
        # (galu/workflow/pages/publication_readme.py) and the notes on where they and the quick
        # scale disagree (scale_table.py)
        published=glob.glob("published/*/publication.json"),
        published_claims=glob.glob("published/*/results/claims.csv"),
        notes="workflow/scale-notes.yaml",
        # what the paper's own settings need on a GPU, which that section states
        # (galu.workflow.planning.plan.paper_gpu_text): the cost model's constants and the paper's config
        costs="workflow/costs/constants.yaml",
        paper_config="config/paper.yaml",
    output:
        touch(out("logs/report/readme_current.ok")),
    log:
        job_log("report/readme_check"),
    benchmark:
        job_benchmark("report/readme_check")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    params:
        # The generated sections are the quick scale's to judge: another scale checks none.
        scale=SCALE,
    script:
        "../../scripts/report_readme_check.py"


ALL_TARGETS.extend(
    [rules.claims.output.csv, rules.claims.output.md, rules.claims.output.html]
)


# The report is made by Snakemake itself (`--report`), not by a job: after a successful run
# that left every output of `all` in place, rebuild it with this run's merged configuration,
# so captions show the scale and parameters the figures were made with.
onsuccess:
    if config["report"]["on_success"] and all(
        Path(t).exists() for t in ALL_TARGETS
    ):
        REPORT_CONFIG.parent.mkdir(parents=True, exist_ok=True)
        REPORT_CONFIG.write_text(
            yaml.safe_dump({**config, "device": DEVICE_SETTING})
        )
        # Built aside, then renamed into place with its sidecar (galu/workflow/pages/report_build.py).
        built = report_build_path()
        shell(
            f"{sys.executable} -m snakemake --nolock --quiet all --report {built} "
            f"--configfile {REPORT_CONFIG}"
        )
        # Snakemake stores the members with mode 0600: unpacked, others could not read them.
        normalize_zip_modes(built)
        install_report(
            built,
            [rules.claims.output.csv, *rules.claims.output.captions],
            out(REPORT.as_posix()),
        )
    # What the run established, as its last words: verdicts, failures, where the report is.
    print(run_summary(OutputRoot(scale=SCALE)), file=sys.stderr)
