# ReLU soft committee machines (Straat & Biehl, arXiv 1903.07378). Per setting: the
# order-parameter ODEs (exact in eta and/or the paper's small-eta form) and finite-N on-line
# SGD simulations across seeds; the perceptron's and the K = M = 2 plateau's fixed points and
# eigenvalues; figures like the paper's Figs. 1-4. Plot rules read the per-setting tables;
# the aggregate trajectories.csv and stability.csv are the contract the claims read.

from galu.scm import costs as scm_costs
from galu.scm.stage import SETTINGS as SCM_STAGE_SETTINGS

SCM = config["scm"]
SCM_SETTINGS = list(SCM_STAGE_SETTINGS)  # galu/scm/stage.py
SCM_RUN = out("results/scm/runs/{setting}_{source}.csv")
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
        **with_sidecars(csv=SCM_RUN.format(setting="{scm_setting}", source="ode")),
    log:
        job_log("scm/{scm_setting}_ode"),
    benchmark:
        job_benchmark("scm/{scm_setting}_ode")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(scm_costs.ode),
    params:
        setting=lambda wc: SCM_PARAMS["ode"][wc.scm_setting],
        ode=SCM["ode"],
    script:
        "../../scripts/scm_ode.py"


rule scm_simulation:
    output:
        **with_sidecars(csv=SCM_RUN.format(setting="{scm_setting}", source="sim")),
    log:
        job_log("scm/{scm_setting}_sim"),
    benchmark:
        job_benchmark("scm/{scm_setting}_sim")
    conda:
        ENV
    # One example per step: per-operation overhead dominates and extra threads only contend.
    threads: 1
    resources:
        **job_resources(
            scm_costs.simulation,
            runtime_min=SCM["simulation"]["runtime_min"],
            gpu=1 if SCM["simulation"]["gpu"] else 0,
        ),
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
        **with_sidecars(csv=out("results/scm/trajectories.csv")),
    log:
        job_log("scm/trajectories"),
    benchmark:
        job_benchmark("scm/trajectories")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(),
    script:
        "../../scripts/scm_trajectories.py"


rule scm_stability:
    output:
        **with_sidecars(csv=out("results/scm/stability.csv")),
    log:
        job_log("scm/stability"),
    benchmark:
        job_benchmark("scm/stability")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(scm_costs.stability),
    params:
        stability=SCM["stability"],
        plateau=SCM_PARAMS["ode"]["relu_k2m2"],
        ode=SCM["ode"],
    script:
        "../../scripts/scm_stability.py"


# Learning-rate schedules from the exact-eta ODEs (ours, beyond the paper): constant etas, the greedy
# eta(R, Q) and the greedy floored at the best constant; simulations follow them open-loop.
SCM_SCHEDULES = SCM["schedules"]


rule scm_schedules:
    output:
        **with_sidecars(
            csv=out("results/scm/schedules.csv"),
            runs=out("results/scm/schedule_runs.csv"),
        ),
    log:
        job_log("scm/schedules"),
    benchmark:
        job_benchmark("scm/schedules")
    conda:
        ENV
    threads: 1
    resources:
        **job_resources(
            scm_costs.schedules,
            runtime_min=SCM["simulation"]["runtime_min"],
            gpu=1 if SCM["simulation"]["gpu"] else 0,
        ),
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


stage_targets(
    "scm",
    [
        rules.scm_trajectories.output.csv,
        rules.scm_stability.output.csv,
        rules.scm_schedules.output.csv,
    ],
)
