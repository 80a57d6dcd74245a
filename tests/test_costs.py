"""The cost model (galu/workflow/planning/costs.py) against our measurements, and `galu plan`."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from galu.workflow.planning.costfit import (
    GPU_MEASUREMENTS,
    MEASUREMENTS,
    REFERENCE_MACHINE,
    fit_constants,
    gpu_speedups,
    measured_jobs,
    misses,
    ratios,
    read_benchmarks,
)
from galu.workflow.planning.costs import CONSTANTS, CostModel
from galu.workflow.planning.dag import planned_jobs
from galu.workflow.planning.jobs import STAGE_ORDER, stage_of
from galu.workflow.planning.plan import (
    cost_preflight,
    job_request,
    make_plan,
    paper_gpu_text,
    problems,
)
from galu.workflow.settings.config import load_yaml
from galu.workflow.settings.runconfig import merged_overrides, run_config

from conftest import REPO, run, tool

CONFIGS = {
    "quick": ([], []),
    "paper": (["config/paper.yaml"], []),
    "paper-smoke": (["config/paper.yaml", "config/paper-smoke.yaml"], []),
    # a run of two stages: no memorization or generalization job, and no MNIST download
    "paper-cpu, two stages": (
        ["config/paper.yaml", "config/paper-cpu.yaml"],
        ["stages=[scm,normalization]"],
    ),
}


@pytest.fixture(scope="module")
def measured():
    table = pd.read_csv(REPO / MEASUREMENTS, sep="\t")
    return measured_jobs(REPO, table)


@pytest.fixture(scope="module")
def model():
    return CostModel.load(REPO / CONSTANTS)


@pytest.fixture(scope="module")
def quick_jobs():
    """The quick configuration's jobs, as Snakemake plans them (galu/workflow/planning/dag.py)."""
    return planned_jobs(REPO)


def _one(planned, rule: str, **wildcards):
    """The planned job of ``rule`` with these wildcards."""
    return next(p for p in planned if p.job.rule == rule and p.job.wildcards == wildcards)


def test_every_quick_job_is_measured_and_predicted_within_a_factor_1_5(measured, model, quick_jobs):
    quick = [m for m in measured if m.run == "quick"]
    labels = {m.job.label for m in quick}
    # but a new rule's, which its rule declares not measured (job_resources(measured=False)):
    # it runs with the default constants until its measurements are added (workflow/costs/fit.py)
    assert labels == {p.job.label for p in quick_jobs if p.cost.measured}
    table = ratios(model, quick)
    assert misses(table).empty, misses(table).to_string()
    # the check has teeth: jobs of a second and more are held to the factor itself
    timed = table[table["measured_s"] >= 1]
    assert len(timed) > 50
    assert (timed["time_ratio"].between(1 / 1.5, 1.5)).all()


def test_only_a_rule_declared_unmeasured_runs_with_the_default_constants(
    measured, model, quick_jobs
):
    """A rule declared not measured (job_resources(measured=False)) has no measurement and
    no constants (a measured one must drop the flag), and is predicted by the stated default
    constants; every other rule has its own constants or a twin's."""
    unmeasured = {p.job.rule for p in quick_jobs if not p.cost.measured}
    measured_rules = {m.job.rule for m in measured} | set(model.rules)
    assert not unmeasured & measured_rules, "measured: drop measured=False from their rules"
    assert all(model.constants(rule) == model.default for rule in unmeasured)
    borrowing = {p.job.rule for p in quick_jobs if p.cost.twin}
    assert {p.job.rule for p in quick_jobs} - unmeasured - borrowing <= set(model.rules)


def test_a_wrong_constant_fails_the_check(measured, model):
    quick = [m for m in measured if m.run == "quick"]
    for rule in ("normalization_train", "memorization_underparam", "scm_simulation"):
        constants = {
            "gpu_speedup": model.gpu_speedup,
            "default": vars(model.default),
            "rules": {name: dict(vars(c)) for name, c in model.rules.items()},
        }
        for key in ("base_s", "rate", "step_s"):
            constants["rules"][rule][key] *= 2
        wrong = misses(ratios(CostModel(constants), quick))
        assert set(wrong["job"].str.split("[").str[0]) == {rule}


def test_the_stored_constants_are_the_fit_of_the_stored_measurements(measured, model):
    refit = CostModel(fit_constants(measured))
    for rule, constants in model.rules.items():
        assert refit.rules[rule] == constants, rule
    assert refit.machines == model.machines
    assert gpu_speedups(REPO, model) == model.gpu_speedups


def test_gpu_times_reproduce_the_gpu_measurements(model):
    """Each job timed on a GPU (workflow/costs/gpu.yaml) is predicted within the check's
    factor, from its rule's one measured speed-up (the two deep-MLP depths, 10 and 100, span
    the paper's range); a GPU rule never timed there keeps the assumed speed-up."""
    entries = load_yaml(REPO / GPU_MEASUREMENTS)["jobs"]
    assert (
        {e["rule"] for e in entries}
        == set(model.gpu_speedups)
        == {"normalization_train", "scm_simulation"}
    )
    for entry in entries:
        config = run_config(REPO, entry["configfiles"])
        wildcards = {k: str(v) for k, v in entry["wildcards"].items()}
        planned = _one(planned_jobs(REPO, entry["configfiles"]), entry["rule"], **wildcards)
        job, cost = planned.job, planned.cost
        p = model.predict(job, config, cost, gpus=True)
        assert p.gpu and p.gpu_measured
        work = p.seconds - model.constants(job.rule).base_s
        assert 1 / 1.5 < work / entry["seconds"] < 1.5, (job.label, work, entry["seconds"])
        # the same job on the CPU, or with device: cpu, is not divided at all
        assert model.predict(job, config, cost, gpus=False).seconds > 10 * p.seconds
        cpu = model.predict(job, {**config, "device": "cpu"}, cost, gpus=True)
        assert not cpu.gpu and not cpu.gpu_measured
    config = run_config(REPO, ["config/paper.yaml"])
    paper = planned_jobs(REPO, ["config/paper.yaml"])
    images = next(p for p in paper if p.job.rule == "generalization_images")
    p = model.predict(images.job, config, images.cost)
    c = model.constants("generalization_images")
    assert p.gpu and not p.gpu_measured
    on_cpu = model.predict(images.job, config, images.cost, gpus=False).seconds
    assert (on_cpu - c.base_s) / (p.seconds - c.base_s) == pytest.approx(model.gpu_speedup)


def test_a_gpu_measurement_of_no_job_is_named(repo_copy, model):
    tmp_path = repo_copy
    entry = {"rule": "scm_simulation", "configfiles": ["config/paper.yaml"],
             "wildcards": {"scm_setting": "relu_k9m9"}, "seconds": 1}  # fmt: skip
    (tmp_path / GPU_MEASUREMENTS).write_text(yaml.safe_dump({"jobs": [entry]}))
    with pytest.raises(ValueError, match="no job of rule 'scm_simulation' with wildcards"):
        gpu_speedups(tmp_path, model)


def test_the_paper_cpu_jobs_are_predicted_for_their_own_machine(measured, model):
    """The paper-level jobs that ran (another machine than the quick run's, so with its own
    speed factor): the same check, which most of them pass; the note lists the misses."""
    paper = [m for m in measured if m.run == "paper-cpu"]
    assert {m.machine for m in paper} == {"2-core VM B"}
    assert 1.0 < model.speed("2-core VM B") < 1.5
    table = ratios(model, paper)
    timed = table[table["measured_s"] >= 1]
    assert len(timed) >= 75
    assert len(misses(table)) <= 0.15 * len(table), misses(table).to_string()
    assert 0.9 < timed["time_ratio"].median() < 1.1


def test_the_scm_simulations_at_the_papers_n_are_predicted(measured, model):
    """Short simulations at N = 5,000 and 10,000 (workflow/costs/scm-large-n.yaml): where the
    inputs' draws take most of a step, the model predicts them, and that a run to a fixed
    alpha costs about 4 times as much at twice the N (the estimate before this measurement
    counted one block of draws per run and grew about 2 times)."""
    large = [m for m in measured if m.run in ("scm-n5000", "scm-n10000")]
    assert len(large) == 10
    table = ratios(model, large)
    assert misses(table).empty, misses(table).to_string()
    by_n = {m.run: m for m in large if m.job.wildcards == {"scm_setting": "relu_k3m2"}}
    growth = model.cpu_seconds("scm_simulation", by_n["scm-n10000"].sizes) / model.cpu_seconds(
        "scm_simulation", by_n["scm-n5000"].sizes
    )
    measured_growth = by_n["scm-n10000"].seconds / by_n["scm-n5000"].seconds
    assert 3.0 < measured_growth < 5.0
    assert 1 / 1.5 < growth / measured_growth < 1.5


def test_the_fit_recovers_a_machine_twice_as_fast(measured):
    """The quick run's jobs measured again on a machine whose cores take half the time: the
    fit names that machine's factor 2, and the reference machine's constants stay as they
    were fitted from the quick run alone."""
    quick = [m for m in measured if m.run == "quick"]
    fast = [replace(m, run="fast", seconds=m.seconds / 2, machine="fast VM") for m in quick]
    alone, both = fit_constants(quick), fit_constants(quick + fast)
    assert both["machines"]["fast VM"] == pytest.approx(2 * _median_ratio(alone, quick), rel=0.02)
    assert both["machines"][REFERENCE_MACHINE] == 1.0
    # (not scm_simulation: at the quick scale's N its work and steps grow together, so the
    # prior, which twice the measurements weigh half as much, splits the time between them)
    for rule in ("normalization_train", "memorization_underparam", "generalization_images"):
        assert both["rules"][rule]["rate"] == pytest.approx(alone["rules"][rule]["rate"], rel=0.02)
    # and each machine's jobs are predicted for that machine
    table = ratios(CostModel(both), quick + fast)
    by_run = table[table["measured_s"] >= 2].groupby("run")["time_ratio"].median()
    assert by_run["fast"] == pytest.approx(by_run["quick"], rel=0.02)


def _median_ratio(constants, measured) -> float:
    model = CostModel(constants)
    return float(
        pd.Series(
            [model.cpu_seconds(m.job.rule, m.sizes) / m.seconds for m in measured if m.seconds >= 1]
        ).median()
    )


def _planned_by_snakemake(root: Path, files: list[str], overrides: list[str]) -> dict[str, str]:
    """Job label -> its benchmark file, as the dry run of the command prints them."""
    args = (["--configfile", *files] if files else []) + (
        ["--config", *overrides] if overrides else []
    )
    proc = run([tool("snakemake"), "-n", "-F", "--cores", "2", *args], root)
    out = proc.stdout + proc.stderr
    jobs = {}
    for block in re.split(r"^(?=\s*(?:local)?rule \w+:)", out, flags=re.M):
        rule = re.match(r"\s*(?:local)?rule (\w+):", block)
        if rule and rule.group(1) != "all":
            head = block.split("\n[")[0]
            wc = re.search(r"^\s+wildcards: (.*)$", head, re.M)
            inner = ",".join(wc.group(1).split(", ")) if wc else ""
            bench = re.search(r"^\s+benchmark: (.*)$", head, re.M)
            label = f"{rule.group(1)}[{inner}]" if inner else rule.group(1)
            jobs[label] = bench.group(1) if bench else ""
    return jobs


@pytest.mark.parametrize("scale", sorted(CONFIGS))
def test_the_job_list_read_in_process_is_the_one_the_snakemake_command_plans(repo_copy, scale):
    """galu/workflow/planning/dag.py builds the DAG in this process: the same jobs as the command's
    dry run prints, each with the benchmark name the cost model keys it by."""
    files, overrides = CONFIGS[scale]
    planned = planned_jobs(REPO, files, merged_overrides(overrides))
    printed = _planned_by_snakemake(repo_copy, files, overrides)
    assert set(printed) == {p.job.label for p in planned}
    assert len(printed) == len(planned)  # no job twice
    for p in planned:
        assert printed[p.job.label].endswith(f"benchmarks/{p.job.benchmark}.tsv"), p.job.label
        assert p.job.stage == stage_of(p.job.rule)
    if overrides:
        assert {p.job.rule for p in planned} >= {"scm_ode", "normalization_train"}
        assert not any(p.job.rule.startswith(("memorization", "generaliz")) for p in planned)


def test_resources_follow_the_model_and_runtime_min_overrides_it(model, quick_jobs):
    quick = run_config(REPO)
    under = _one(quick_jobs, "memorization_underparam")
    runtime, mem = job_request(model, quick, under.job.rule, {}, under.cost)
    p = model.predict(under.job, quick, under.cost)
    assert runtime == int(2 * p.seconds / 60 + 0.999) + 5
    assert mem == int(1.5 * p.mem_mb + 0.999) + 200
    paper = run_config(REPO, ["config/paper.yaml"])
    jobs = planned_jobs(REPO, ["config/paper.yaml"])
    under = _one(jobs, "memorization_underparam")
    assert job_request(model, paper, under.job.rule, {}, under.cost)[0] == 720
    wc = {"norm_activation": "relu", "norm_depth": "100"}
    train = _one(jobs, "normalization_train", **wc)
    assert job_request(model, paper, "normalization_train", wc, train.cost)[0] == 720
    # a section chosen by the job's wildcards: each search its criterion's runtime_min
    minutes = ["memorization.min_width.mse.runtime_min=7"]
    jobs = planned_jobs(REPO, [], merged_overrides(minutes))
    searches = {
        p.job.wildcards["criterion"]: p for p in jobs if p.job.rule == "memorization_search"
    }
    assert searches["mse"].cost.runtime_override(searches["mse"].job.wildcards) == 7
    assert searches["zero_error"].cost.runtime_override(searches["zero_error"].job.wildcards) == 0


def test_plan_totals_and_problems(model, quick_jobs):
    quick = run_config(REPO)
    plan = make_plan(quick, quick_jobs, model, cores=2, gpus=0)
    assert len(plan.predictions) == len(quick_jobs)
    total = sum(p.seconds for p in plan.predictions)
    # two cores: at least half the work, at least the longest job, at most all of it
    assert max(total / 2, max(p.seconds for p in plan.predictions)) <= plan.wall_hours() * 3600
    assert plan.wall_hours() * 3600 <= total
    errors, warnings = problems(plan, mem_gb=1000)
    assert errors == [] and warnings == []
    # cores twice as fast: every CPU job takes half the time, and declares what it did
    faster = make_plan(quick, quick_jobs, model, cores=2, gpus=0, speed=2.0)
    assert [f.seconds for f in faster.predictions] == pytest.approx(
        [p.seconds / 2 for p in plan.predictions]
    )
    assert faster.declared == plan.declared
    errors, _ = problems(plan, mem_gb=0.5)
    too_big = [p for p in plan.predictions if p.mem_mb > 500]
    # one line per rule, each naming its jobs' count and the machine's memory
    assert len(errors) == len({p.job.rule for p in too_big}) > 0
    assert all("GB of host memory; this machine has 0.5 GB: pass --mem-gb" in e for e in errors)
    counts = [int(e.split()[0]) if e.split()[0].isdigit() else 1 for e in errors]
    assert sum(counts) == len(too_big)
    # a runtime override below the prediction is named with the estimate
    overrides = ["memorization.underparam.runtime_min=1", "memorization.underparam.steps=100000"]
    short = run_config(REPO, overrides=overrides)
    job = _one(planned_jobs(REPO, [], merged_overrides(overrides)), "memorization_underparam")
    _, warnings = cost_preflight(model, short, [(job, 1)], mem_gb=1000)
    assert len(warnings) == 1 and "declared runtime of 1 min" in warnings[0]


def test_galu_plan_prints_every_stage_and_refuses_too_little_memory(quick_jobs):
    ok = run([tool("galu"), "plan", "--cores", "2", "--mem-gb", "64"], REPO)
    for stage in STAGE_ORDER:
        assert re.search(rf"^{stage} ", ok.stdout, re.M)
    jobs = len(quick_jobs)
    assert f"{jobs} jobs" in ok.stdout and "ERROR" not in ok.stdout
    assert (
        "as fast as the reference machine's (--speed; measured machines: 2-core VM 1," in ok.stdout
    )
    paper = run(
        [tool("galu"), "plan", "--configfile", "config/paper.yaml", "--gpus", "1", "--mem-gb", "1"],
        REPO,
        check=False,
    )
    assert paper.returncode == 1
    # one line per rule and kind of problem, with readable units
    assert re.search(
        r"^ERROR \d+ normalization_train jobs \(norm_activation [^)]*; norm_depth \d+ to 100\)"
        r" need [\d.]+ to [\d.]+ GB of host memory; this machine has 1.0 GB",
        paper.stdout,
        re.M,
    ), paper.stdout
    assert len(re.findall(r"^ERROR ", paper.stdout, re.M)) == len(
        set(re.findall(r"^ERROR (?:\d+ )?(\w+)", paper.stdout, re.M))
    )
    assert "e+0" not in paper.stdout and "host GB" in paper.stdout
    # measured GPU speed-ups for the deep MLPs and simulations, the assumed one elsewhere
    rows = {line.split()[1]: line.split() for line in paper.stdout.splitlines() if " GPU" in line}
    assert rows["normalization_train"][5] == "GPU" and rows["scm_simulation"][5] == "GPU"
    assert rows["generalization_images"][5] == "GPU*"
    assert "* GPU times uncalibrated" in paper.stdout
    bad_args = (["--cores", "0"], ["--configfile", "config/nope.yaml"], ["--config", "x"],
                ["--speed", "0"], ["--speed", "inf"], ["--mem-gb", "nan"], ["--mem-gb", "-1"],
                ["--mem-gb", "inf"])  # fmt: skip
    for bad in bad_args:
        proc = run([tool("galu"), "plan", *bad], REPO, check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith("galu plan: ")
    # The machine's memory from the environment: a value that is not a size is named (NaN
    # used to switch the memory check off), for the plan and for a run alike.
    for value in ("nan", "lots", "0"):
        proc = run([tool("galu"), "plan"], REPO, check=False, env={"GALU_MACHINE_MEM_GB": value})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"GALU_MACHINE_MEM_GB={value} is not a memory size" in proc.stderr


def test_a_memory_setting_that_is_not_a_size_starts_nothing(repo_copy):
    proc = run(
        [tool("snakemake"), "--cores", "1", "results/normalization/coefficients.csv"],
        repo_copy,
        check=False,
        env={"GALU_MACHINE_MEM_GB": "nan"},
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "galu: GALU_MACHINE_MEM_GB=nan is not a memory size" in proc.stderr
    assert not (repo_copy / "results/normalization").exists()


def test_a_run_whose_job_cannot_fit_in_memory_starts_nothing(repo_copy):
    target = "results/normalization/coefficients.csv"
    proc = run(
        [tool("snakemake"), "--cores", "1", target],
        repo_copy,
        check=False,
        env={"GALU_MACHINE_MEM_GB": "0.01"},
    )
    assert proc.returncode == 2
    assert re.search(
        r"normalization_coefficients needs [\d.]+ GB of host memory; this machine has 0.0 GB",
        proc.stderr,
    )
    assert "Traceback" not in proc.stderr
    assert not (repo_copy / target).exists()


def test_benchmarks_are_read_from_the_runs_own_scale(tmp_path):
    """A paper-cpu run's benchmarks are under logs/paper-cpu/, except the shared data rules';
    a quick run's files in the same checkout are not mixed into it."""

    def bench(path: str, seconds: float) -> None:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"s\tcpu_time\tmax_rss\n{seconds}\t{seconds}\t10\n")

    bench("logs/benchmarks/data/prepare_mnist.tsv", 1.0)
    bench("logs/benchmarks/scm/trajectories.tsv", 2.0)
    bench("logs/paper-cpu/benchmarks/scm/trajectories.tsv", 3.0)
    bench("logs/paper-cpu/benchmarks/scm/stability.tsv", 4.0)
    quick = read_benchmarks(tmp_path)
    assert {k: v[0] for k, v in quick.items()} == {
        "data/prepare_mnist": 1.0,
        "scm/trajectories": 2.0,
    }
    paper = read_benchmarks(tmp_path, "paper-cpu")
    assert {k: v[0] for k, v in paper.items()} == {
        "data/prepare_mnist": 1.0,
        "scm/trajectories": 3.0,
        "scm/stability": 4.0,
    }


def test_the_paper_gpu_sentence_sums_the_plan(model):
    """README's paper-level section states what the paper's own settings need on one GPU:
    the plan's GPU total, per stage, a star on each stage with a job of assumed speed-up."""
    text = paper_gpu_text(REPO)
    paper = ["config/paper.yaml"]
    plan = make_plan(run_config(REPO, paper), planned_jobs(REPO, paper), model, cores=2, gpus=1)
    gpu = [p for p in plan.predictions if p.gpu]
    hours = sum(p.seconds for p in gpu) / 3600
    assert f"plans {hours:.1f} h of one GPU (" in text
    for stage in {p.job.stage for p in gpu}:  # the stages with a GPU job
        ps = [p for p in gpu if p.job.stage == stage]
        starred = re.search(rf"\b{stage} [\d.]+ (?:h|min|s)(\*?)[,)]", text).group(1) == "*"
        assert starred == (not all(p.gpu_measured for p in ps)), stage
    share = sum(p.seconds for p in gpu if p.gpu_measured) / sum(p.seconds for p in gpu)
    assert 0.5 < share < 1 and f"{share:.0%} of the GPU time from speed-ups measured" in text


def test_the_makespan_of_more_workers_than_jobs_is_the_longest_job_in_bounded_memory():
    from galu.workflow.planning.plan import _makespan

    assert _makespan([3.0, 2.0, 1.0], 3_000_000_000) == 3.0  # was a list of 3e9 floats
    assert _makespan([3.0, 2.0, 1.0], 2) == 3.0 and _makespan([3.0, 2.0, 2.0], 2) == 4.0
    assert _makespan([], 5) == 0.0


def test_galu_plan_judges_memory_only_against_a_machine_it_is_given(capsys, quick_jobs):
    """A plan made on a login node is for another machine: without --mem-gb (or
    --this-machine, or the site's GALU_MACHINE_MEM_GB) it prints each job's needs and judges
    nothing; given a machine too small, it refuses."""
    from galu.workflow.cli import main
    from galu.workflow.planning.plan import problems

    model = CostModel.load(REPO / CONSTANTS)
    plan = make_plan(run_config(REPO), quick_jobs, model, cores=2, gpus=0)
    assert problems(plan, None)[0] == []
    assert problems(plan, 0.001)[0] != []
    assert main(["plan", "--root", str(REPO)]) == 0
    assert "memory not judged against a machine" in capsys.readouterr().out
    assert main(["plan", "--root", str(REPO), "--mem-gb", "0.001"]) == 1


def test_an_activation_with_its_own_seed_count_costs_in_proportion():
    """normalization.trainability.seeds_of: paper-cpu trains the raw ELU at 1 seed and tanh
    at 2 (neither keeps spectra), so at one depth the ELU job is exactly half the work."""
    from galu.normalization.costs import training

    cfg = run_config(REPO, ["config/paper.yaml", "config/paper-cpu.yaml"])
    train = cfg["normalization"]["trainability"]
    assert train["seeds"] == 2 and train["seeds_of"]["elu"] == 1 and "tanh" not in train["seeds_of"]
    work = {
        act: training(cfg, {"norm_activation": act, "norm_depth": "30"}).work
        for act in ("tanh", "elu")
    }
    assert work["tanh"] == pytest.approx(2 * work["elu"], rel=1e-12)
