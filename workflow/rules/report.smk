# The verdict: every claim of workflow/claims.yaml checked on the CSVs this run produced,
# as a table (results/claims.csv, results/claims.md) and in the report. Included last, so
# ALL_TARGETS already lists every enabled stage's outputs.


from galu.feedback import normalize_zip_modes
from galu.landing import run_summary
from galu.observations import observation_sources

# The figures this run makes, each with its caption template (see report_figure in common.smk).
REPORT_FIGURES = {f: t for f, t in FIGURE_TEMPLATES.items() if f in ALL_TARGETS}


rule claims:
    input:
        claims="workflow/claims.yaml",
        sources=claim_sources,
        templates=sorted(set(REPORT_FIGURES.values())),
        # the CSVs each caption's "what the data show" sentences are computed from
        observed=observation_sources(list(REPORT_FIGURES)),
    output:
        csv="results/claims.csv",
        meta=meta("results/claims.csv"),
        md="results/claims.md",
        md_meta=meta("results/claims.md"),
        # The report's landing page (the Snakefile's `report:`), and the same as HTML.
        landing=LANDING_PAGE,
        landing_meta=meta(LANDING_PAGE),
        html=report(
            "results/claims.html",
            caption="../report/claims.rst",
            category="Verdict",
        ),
        html_meta=meta("results/claims.html"),
        # For `dvc metrics show`: the verdict counts and each claim's measured value.
        summary="results/claims_summary.json",
        summary_meta=meta("results/claims_summary.json"),
        captions=[caption_path(f) for f in REPORT_FIGURES],
        caption_metas=[meta(caption_path(f)) for f in REPORT_FIGURES],
    log:
        "logs/report/claims.log",
    benchmark:
        "logs/benchmarks/report/claims.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("claims"),
        runtime=cost_runtime("claims"),
    params:
        scale=SCALE,
        # figure -> caption template, in the order of output.captions
        figures=REPORT_FIGURES,
    script:
        "../../scripts/report_claims.py"


# Not part of `all`: CI runs it (tests/test_workflow.py) so a stale README fails the build,
# while a user who changes the config is not stopped by the README of the default run.
rule readme_check:
    input:
        md="results/claims.md",
        readme="README.md",
    output:
        touch("logs/report/readme_current.ok"),
    log:
        "logs/report/readme_check.log",
    benchmark:
        "logs/benchmarks/report/readme_check.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("readme_check"),
        runtime=cost_runtime("readme_check"),
    script:
        "../../scripts/report_readme_check.py"


ALL_TARGETS.extend(["results/claims.csv", "results/claims.md", "results/claims.html"])


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
        # Built aside, then renamed into place with its sidecar (galu/report_build.py).
        built = report_build_path()
        shell(
            f"{sys.executable} -m snakemake --nolock --quiet all --report {built} "
            f"--configfile {REPORT_CONFIG}"
        )
        # Snakemake stores the members with mode 0600: unpacked, others could not read them.
        normalize_zip_modes(built)
        publish_report(built, ["results/claims.csv", *rules.claims.output.captions])
    # What the run established, as its last words: verdicts, failures, where the report is.
    print(run_summary("."), file=sys.stderr)
