# Every stage's figures, one plot rule each, from the stages' declarations
# (galu/workflow/stages.py: galu/<paper>/stage.py lists a stage's figures, the tables each
# reads and the functions that computed them; Stage.plot_job names each figure's rule). A
# plot rule reads only its tables, never trains, and runs scripts/plot.py, which draws with
# DRAW[figure] of galu.<stage>.figures; that module is named in the rule's `module` param,
# so it is part of the rule's code closure (track_code) and an edit to one stage's figures
# redraws that stage's figures only. A figure's `references` (committed tables of the paper's
# authors' numbers, workflow/reference/) are inputs too, unscaled: every scale reads the same.


def plot_rule_params(stage, figure):
    """The params of a figure's plot rule: what it draws and how (scripts/plot.py)."""
    return {
        "figure": figure.name,
        "module": stage.figures_module,
        "draw": dict(figure.draw),
        "scale": SCALE,
        "seeds": list(figure.seeds) if figure.seeds is not None else None,
        "computed_by": {
            t: list(table.computed_by) for t, table in figure.tables.items()
        },
    }


for plot_stage in STAGES:
    plot_figures = plot_stage.figures(config)
    for plot_figure in plot_figures:
        plot_png = out(plot_stage.figure_path(plot_figure, "png"))
        plot_job = plot_stage.plot_job(plot_figure)

        rule:
            name:
                plot_job.rule
            input:
                **{t: out(table.path) for t, table in plot_figure.tables.items()},
                **plot_figure.references,
            output:
                **with_sidecars(
                    png=report_figure(
                        plot_png,
                        plot_figure.caption,
                        category=plot_stage.category,
                        subcategory=plot_figure.subcategory,
                    ),
                    pdf=out(plot_stage.figure_path(plot_figure, "pdf")),
                ),
            log:
                job_log(plot_job.benchmark),
            benchmark:
                job_benchmark(plot_job.benchmark)
            group:
                "plots"
            conda:
                ENV
            threads: 1
            # a new figure's rule: the default constants until a run measures it
            resources:
                **job_resources(measured=plot_job.rule in COSTS.rules),
            params:
                **plot_rule_params(plot_stage, plot_figure),
            script:
                "../../scripts/plot.py"

    stage_targets(
        plot_stage.name,
        [out(plot_stage.figure_path(f, "png")) for f in plot_figures],
    )
