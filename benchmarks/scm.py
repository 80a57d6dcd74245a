"""Speed of the SCM order-parameter ODEs and simulations.

Times integrating K = 3, M = 2 ReLU from the paper's start to alpha = 3000 in the
small-eta and the exact form (median of repeats), the vectorized right-hand side
against the plain-loop baseline of :mod:`galu.scm.loop_reference` in the same run,
and on-line SGD steps per second; at the paper's N = 10,000, the share of a simulation
step that drawing its inputs takes, a Gaussian number's cost in update units (the cost
model's weight) and the effect of the block of inputs drawn at once. Target: small-eta
integration under 0.2 s.

    python benchmarks/scm.py [--repeats 5] [--exact-repeats 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp

from galu.scm.loop_reference import loop_rhs
from galu.scm.odes import CommitteeODE, integrate, log_alpha_grid, pack, unpack
from galu.scm.simulation import simulate

K, M, ETA, ALPHA_MAX = 3, 2, 0.5, 3000.0
R0 = np.array([[1e-3, 0.0], [0.0, 0.0], [0.0, 0.0]])
Q0 = np.diag([0.2, 0.3, 0.25])


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loop_ode(eta2_term: bool) -> Callable[[float, np.ndarray], np.ndarray]:
    def rhs(alpha: float, y: np.ndarray) -> np.ndarray:
        dR, dQ = loop_rhs(*unpack(y, K, M), "relu", ETA, eta2_term)
        return pack(dR, dQ)

    return rhs


def integration(method: str, repeats: int, exact_repeats: int) -> None:
    grid = log_alpha_grid(ALPHA_MAX, 200, 0.1)
    for eta2_term, reps in ((False, repeats), (True, exact_repeats)):
        ode = CommitteeODE(K, M, "relu", ETA, eta2_term)
        seconds = median_time(lambda ode=ode: integrate(ode, R0, Q0, grid, method=method), reps)
        form = "exact" if eta2_term else "small-eta"
        print(f"integrate K=3 M=2 relu to alpha=3000 ({form}, {method}): {seconds:.3f} s")
    # the same integration with the plain-loop right-hand side (small-eta only: the exact
    # loop calls the 4-unit integral once per index tuple and would take minutes)
    ode = CommitteeODE(K, M, "relu", ETA, False)
    fast = median_time(lambda: integrate(ode, R0, Q0, grid, method=method), repeats)
    slow_rhs = loop_ode(False)

    def run_loop() -> None:
        solve_ivp(
            slow_rhs,
            (0, ALPHA_MAX),
            pack(R0, Q0),
            method=method,
            t_eval=grid,
            rtol=1e-8,
            atol=1e-10,
        )  # the tolerances integrate() uses by default

    slow = median_time(run_loop, 1)
    print(f"  plain-loop small-eta integration: {slow:.3f} s  (vectorized is {slow / fast:.1f}x)")


def rhs_ratios() -> None:
    y = pack(R0 + 0.3, Q0 + 0.2)
    for eta2_term in (False, True):
        ode = CommitteeODE(K, M, "relu", ETA, eta2_term)
        loop = loop_ode(eta2_term)
        fast = median_time(lambda ode=ode: ode.rhs(0.0, y), 50)
        slow = median_time(lambda loop=loop: loop(0.0, y), 3)
        form = "exact" if eta2_term else "small-eta"
        print(
            f"one RHS ({form}): vectorized {fast * 1e3:.2f} ms, loop {slow * 1e3:.1f} ms, "
            f"ratio {slow / fast:.0f}x"
        )


def simulation(device: str) -> None:
    N, seeds, alpha_max = 500, [0, 1, 2, 3], 20.0
    start = time.perf_counter()
    simulate(
        K, M, "relu", ETA, R0, Q0, N, np.array([0.0, alpha_max]), seeds, n_test=100, device=device
    )
    seconds = time.perf_counter() - start
    steps = alpha_max * N
    print(
        f"simulate N={N}, {len(seeds)} seeds on {device}: {steps / seconds:.0f} steps/s "
        f"({steps * len(seeds) / seconds:.0f} example-updates/s)"
    )


def draws_against_updates(N: int = 10_000, steps: int = 4096) -> None:
    """Seconds per Gaussian number drawn (and scaled) against seconds per update unit.

    At the paper's N the inputs' draws, not the updates, take most of a simulation's time;
    the cost model weighs each drawn number by this ratio (galu/scm/costs.py, GAUSSIAN_WORK).
    """
    import torch

    seeds, k, m = 3, 2, 3
    gens = [torch.Generator().manual_seed(s) for s in range(seeds)]

    block = 128  # as config/paper-cpu.yaml draws them

    def draw() -> None:
        for _ in range(steps // block):
            xi = torch.stack(
                [torch.randn(block, N, generator=g, dtype=torch.float64) for g in gens]
            )
            xi.div_(N**0.5)

    torch.set_num_threads(1)
    per_number = median_time(draw, 3) / (seeds * steps * N)
    R0, Q0 = np.zeros((k, m)), 0.2 * np.eye(k)
    alpha = np.array([0.0, steps / N])
    whole = median_time(
        lambda: simulate(k, m, "relu", ETA, R0, Q0, N, alpha, list(range(seeds)), 1, block=block),
        3,
    )
    update_units = steps * seeds * 4.0 * N * (k + m)  # the cost model's update work
    per_unit = (whole - per_number * seeds * steps * N) / update_units
    print(
        f"simulate N={N}, {seeds} seeds, K={k} M={m}: {whole / steps * 1e3:.2f} ms/step, of which"
        f" drawing the inputs {per_number * seeds * N / (whole / steps):.0%}; one Gaussian number"
        f" costs {per_number / per_unit:.0f} update units"
    )


def block_sizes(N: int = 10_000, steps: int = 8192) -> None:
    """Steps per second drawing the inputs 2,048 at a time (config/paper.yaml, for a GPU)
    against 128 (config/paper-cpu.yaml): on a CPU the smaller block stays in cache."""
    k, m, seeds = 3, 2, [0, 1, 2]
    R0, Q0 = np.zeros((k, m)), 0.2 * np.eye(k)
    alpha = np.array([0.0, steps / N])
    times = {
        block: median_time(
            lambda block=block: simulate(
                k, m, "relu", ETA, R0, Q0, N, alpha, seeds, 1, block=block
            ),
            3,
        )
        for block in (2048, 128)
    }
    print(
        f"simulate N={N}, 3 seeds: blocks of 2048 {times[2048] / steps * 1e3:.2f} ms/step, of 128"
        f" {times[128] / steps * 1e3:.2f} ms/step ({times[2048] / times[128]:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--exact-repeats", type=int, default=1)
    parser.add_argument("--method", default="LSODA")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    integration(args.method, args.repeats, args.exact_repeats)
    rhs_ratios()
    simulation(args.device)
    draws_against_updates()
    block_sizes()


if __name__ == "__main__":
    main()
