# ReLU soft committee machines (Straat & Biehl, arXiv 1903.07378). Per setting: the
# order-parameter ODEs (exact in eta and/or the paper's small-eta form) and finite-N on-line
# SGD simulations across seeds; the perceptron's and the K = M = 2 plateau's fixed points and
# eigenvalues; figures like the paper's Figs. 1-4. Plot rules read the per-setting tables;
# the aggregate trajectories.csv and stability.csv are the contract the claims read.

SCM = config["scm"]
SCM_SETTINGS = ["perceptron", "relu_k2m2", "relu_k3m2", "erf_k3m2", "relu_k2m3"]
SCM_RUN = out("results/scm/runs/{setting}_{source}.csv")
SCM_FIGURE = out("figures/scm/{name}.png")
# figure -> settings it shows; stability.csv is read by the figures that mark fixed points
SCM_FIGURES = {
    "perceptron": ["perceptron"],
    "relu_k2m2": ["relu_k2m2"],
    "k3m2": ["relu_k3m2", "erf_k3m2"],
    "relu_k2m3": ["relu_k2m3"],
}
SCM_SUBCATEGORY = {
    "perceptron": "K = M = 1 (Fig. 1)",
    "relu_k2m2": "K = M = 2 (Fig. 2)",
    "k3m2": "K = 3, M = 2 (Fig. 3)",
    "relu_k2m3": "K = 2, M = 3 (Fig. 4)",
}
# Each job gets only the keys it uses, so a change reruns only the jobs it affects.
SCM_ODE_KEYS = ("activation", "etas", "forms", "R0", "Q0", "alpha_max")
SCM_SIM_KEYS = ("activation", "sim_etas", "R0", "Q0", "sim_alpha_max")
SCM_PARAMS = {
    source: {name: {k: SCM[name][k] for k in keys} for name in SCM_SETTINGS}
    for source, keys in (("ode", SCM_ODE_KEYS), ("sim", SCM_SIM_KEYS))
}
SCM_SIM = {
    k: v for k, v in SCM["simulation"].items() if k not in ("gpu", "runtime_min")
}


wildcard_constraints:
    scm_setting="|".join(SCM_SETTINGS),


rule scm_ode:
    output:
        csv=SCM_RUN.format(setting="{scm_setting}", source="ode"),
        meta=meta(SCM_RUN.format(setting="{scm_setting}", source="ode")),
    log:
        out("logs/scm/{scm_setting}_ode.log"),
    benchmark:
        out("logs/benchmarks/scm/{scm_setting}_ode.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("scm_ode"),
        runtime=cost_runtime("scm_ode"),
    params:
        setting=lambda wc: SCM_PARAMS["ode"][wc.scm_setting],
        ode=SCM["ode"],
    script:
        "../../scripts/scm_ode.py"


rule scm_simulation:
    output:
        csv=SCM_RUN.format(setting="{scm_setting}", source="sim"),
        meta=meta(SCM_RUN.format(setting="{scm_setting}", source="sim")),
    log:
        out("logs/scm/{scm_setting}_sim.log"),
    benchmark:
        out("logs/benchmarks/scm/{scm_setting}_sim.tsv")
    conda:
        ENV
    # One example per step: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        mem_mb=cost_mem("scm_simulation"),
        runtime=cost_runtime("scm_simulation"),
        gpu=1 if SCM["simulation"]["gpu"] else 0,
    params:
        setting=lambda wc: SCM_PARAMS["sim"][wc.scm_setting],
        simulation=SCM_SIM,
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/scm_simulation.py"


rule scm_trajectories:
    input:
        expand(SCM_RUN, setting=SCM_SETTINGS, source=["ode", "sim"]),
    output:
        csv=out("results/scm/trajectories.csv"),
        meta=meta(out("results/scm/trajectories.csv")),
    log:
        out("logs/scm/trajectories.log"),
    benchmark:
        out("logs/benchmarks/scm/trajectories.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("scm_trajectories"),
        runtime=cost_runtime("scm_trajectories"),
    script:
        "../../scripts/scm_trajectories.py"


rule scm_stability:
    output:
        csv=out("results/scm/stability.csv"),
        meta=meta(out("results/scm/stability.csv")),
    log:
        out("logs/scm/stability.log"),
    benchmark:
        out("logs/benchmarks/scm/stability.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("scm_stability"),
        runtime=cost_runtime("scm_stability"),
    params:
        stability=SCM["stability"],
        plateau=SCM_PARAMS["ode"]["relu_k2m2"],
        ode=SCM["ode"],
    script:
        "../../scripts/scm_stability.py"


for scm_name, scm_shown in SCM_FIGURES.items():

    rule:
        name:
            f"scm_plot_{scm_name}"
        input:
            runs=expand(SCM_RUN, setting=scm_shown, source=["ode", "sim"]),
            stability=out("results/scm/stability.csv"),
        output:
            png=report_figure(
                SCM_FIGURE.format(name=scm_name),
                f"scm_{scm_name}.rst",
                category="ReLU SCM dynamics",
                subcategory=SCM_SUBCATEGORY[scm_name],
            ),
            pdf=out(f"figures/scm/{scm_name}.pdf"),
            png_meta=meta(SCM_FIGURE.format(name=scm_name)),
            pdf_meta=meta(out(f"figures/scm/{scm_name}.pdf")),
        log:
            out(f"logs/scm/plot_{scm_name}.log"),
        benchmark:
            out(f"logs/benchmarks/scm/plot_{scm_name}.tsv")
        group:
            "plots"
        conda:
            ENV
        threads: 1
        resources:
            mem_mb=cost_mem(f"scm_plot_{scm_name}"),
            runtime=cost_runtime(f"scm_plot_{scm_name}"),
        params:
            figure=scm_name,
            settings=scm_shown,
            scale=SCALE,
        script:
            "../../scripts/scm_plot.py"


# Learning-rate schedules from the exact-eta ODEs (ours, beyond the paper): constant etas, the greedy
# eta(R, Q) and the greedy floored at the best constant; simulations follow them open-loop.
SCM_SCHEDULES = SCM["schedules"]


rule scm_schedules:
    output:
        csv=out("results/scm/schedules.csv"),
        meta=meta(out("results/scm/schedules.csv")),
        runs=out("results/scm/schedule_runs.csv"),
        runs_meta=meta(out("results/scm/schedule_runs.csv")),
    log:
        out("logs/scm/schedules.log"),
    benchmark:
        out("logs/benchmarks/scm/schedules.tsv")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("scm_schedules"),
        runtime=cost_runtime("scm_schedules"),
        gpu=1 if SCM["simulation"]["gpu"] else 0,
    params:
        schedules=SCM_SCHEDULES,
        settings={
            name: {k: SCM[name][k] for k in ("activation", "R0", "Q0")}
            for name in SCM_SCHEDULES["settings"]
        },
        ode=SCM["ode"],
        simulation=SCM_SIM,
        seed=config["seed"],
        device=config["device"],
    script:
        "../../scripts/scm_schedules.py"


rule scm_plot_schedules:
    input:
        csv=out("results/scm/schedules.csv"),
        runs=out("results/scm/schedule_runs.csv"),
    output:
        png=report_figure(
            SCM_FIGURE.format(name="schedules"),
            "scm_schedules.rst",
            category="ReLU SCM dynamics",
            subcategory="Learning-rate schedules (ours)",
        ),
        pdf=out("figures/scm/schedules.pdf"),
        png_meta=meta(SCM_FIGURE.format(name="schedules")),
        pdf_meta=meta(out("figures/scm/schedules.pdf")),
    log:
        out("logs/scm/plot_schedules.log"),
    benchmark:
        out("logs/benchmarks/scm/plot_schedules.tsv")
    group:
        "plots"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=cost_mem("scm_plot_schedules"),
        runtime=cost_runtime("scm_plot_schedules"),
    params:
        scale=SCALE,
        seeds=[config["seed"] + k for k in range(SCM_SIM["seeds"])],
    script:
        "../../scripts/scm_plot_schedules.py"


ALL_TARGETS.extend(
    [
        out("results/scm/trajectories.csv"),
        out("results/scm/stability.csv"),
        out("results/scm/schedules.csv"),
        *expand(SCM_FIGURE, name=[*SCM_FIGURES, "schedules"]),
    ]
)
