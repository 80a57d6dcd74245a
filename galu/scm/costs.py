"""Cost formulas of the SCM stage's jobs (Straat & Biehl, arXiv 1903.07378).

One function per rule that has one, ``(config, wildcards) -> Sizes``: the shape of the
rule's cost in the sizes of its configuration (:class:`galu.declarations.Sizes`; the
constants that turn sizes into seconds and megabytes are fitted per rule by
``workflow/costs/fit.py``). Each rule names its formula in its ``resources:``
(``job_resources`` of workflow/rules/common.smk), which ``galu plan`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from galu.declarations import Config, Sizes, Wildcards


def _shape(setting: Mapping[str, Any]) -> tuple[int, int]:
    return len(setting["R0"]), len(setting["R0"][0])


# The ReLU order-parameter equations need the four-dimensional Gaussian averages of
# galu/scm/relu_quadruple.py, the erf ones closed forms: relative cost of one evaluation.
ACTIVATION_WORK = {"relu": 3.0, "erf": 1.0}


def _ode_work(K: int, M: int, activation: str, runs: float, alpha_max: float) -> float:
    """``runs`` integrations to ``alpha_max``; the steps grow with alpha and each right-hand
    side couples every pair of the K + M hidden units' fields (K^2 (K + M)^2 terms)."""
    return runs * alpha_max * K**2 * (K + M) ** 2 * ACTIVATION_WORK[activation]


def ode(config: Config, wc: Wildcards) -> Sizes:
    s = config["scm"][wc["scm_setting"]]
    K, M = _shape(s)
    runs = len(s["etas"]) * len(s["forms"])
    return Sizes(work=_ode_work(K, M, s["activation"], runs, s["alpha_max"]))


# A Gaussian number drawn (and scaled) on the CPU costs as much as this many units of the
# update's work (benchmarks/scm.py, draws_against_updates: 79 at N = 5,000, 89 at 10,000).
GAUSSIAN_WORK = 80.0


def _simulated(sim: Mapping[str, Any], alpha: float, runs: int, units: int) -> Sizes:
    """``runs`` learning rates simulated to ``alpha``: alpha N steps of all seeds at once
    (an O(N K) update each), eps_g measured on the held-out inputs at every recorded point;
    held: weights, a block of inputs and the held-out inputs of every seed, float64, twice.

    Every step draws a fresh N-dimensional input per seed, shared by the runs: so a run's
    time grows as N^2 at a fixed alpha, and at the paper's N the draws take most of it.
    """
    N, seeds = sim["N"], sim["seeds"]
    steps = runs * alpha * N
    work = steps * seeds * 4.0 * N * units
    work += runs * sim["points"] * 2.0 * seeds * sim["n_test"] * N * units
    work += seeds * N * (sim["n_test"] + alpha * N) * GAUSSIAN_WORK
    held = 16.0 * seeds * N * (sim["n_test"] + sim["block"] + 16)
    return Sizes(work=work, steps=steps, bytes=held, gpu=bool(sim["gpu"]))


def simulation(config: Config, wc: Wildcards) -> Sizes:
    scm = config["scm"]
    s = scm[wc["scm_setting"]]
    return _simulated(scm["simulation"], s["sim_alpha_max"], len(s["sim_etas"]), sum(_shape(s)))


def schedules(config: Config, wc: Wildcards) -> Sizes:
    """The ODEs under every constant and greedy schedule, and the simulated schedules."""
    scm = config["scm"]
    sc = scm["schedules"]
    total = Sizes()
    for name in sc["settings"]:
        K, M = _shape(scm[name])
        runs = len(sc["constant_etas"]) + 2  # the constants, greedy and greedy_floor
        total += Sizes(work=_ode_work(K, M, scm[name]["activation"], runs, sc["alpha_max"]))
        total += _simulated(scm["simulation"], sc["sim_alpha_max"], len(sc["sim_schedules"]), K + M)
    return total


def stability(config: Config, wc: Wildcards) -> Sizes:
    """A 2 x 2 eigenproblem per perceptron eta; the K = M = 2 plateau's ODE and search."""
    st = config["scm"]["stability"]
    return Sizes(steps=st["eta_points"], work=_ode_work(2, 2, "relu", 1, st["plateau_alpha"]))
