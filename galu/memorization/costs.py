"""Cost formulas of the memorization stage's jobs (Fiat et al., arXiv 1906.05032, sec. 3).

One function per rule that has one, ``(config, wildcards) -> Sizes``: the shape of the
rule's cost in the sizes of its configuration (:class:`galu.declarations.Sizes`; the
constants that turn sizes into seconds and megabytes are fitted per rule by
``workflow/costs/fit.py``). Each rule names its formula in its ``resources:``
(``job_resources`` of workflow/rules/common.smk), which ``galu plan`` reads back.
"""

from __future__ import annotations

import math

from galu.declarations import Config, Sizes, Wildcards, train_sizes
from galu.memorization.grid import underparam_points
from galu.memorization.width_search import search_min_width


def underparam(config: Config, wc: Wildcards) -> Sizes:
    """Every trained network of the (m, d, k) grid (k d <= m), fitted as one ensemble per
    data shape (m, d), and the least-squares GaLU optimum of each point and seed."""
    mem = config["memorization"]
    u = mem["underparam"]
    trained = len([m for m in u["models"] if m != "galu_exact"]) * u["seeds"]
    points = underparam_points(u["ms"], u["ds"], u["ks"])
    total = Sizes(gpu=bool(mem["gpu"]))
    for m, d in {(m, d) for m, d, _ in points}:
        macs = sum(trained * k * (d + 1) for pm, pd, k in points if (pm, pd) == (m, d))
        total += train_sizes(u["steps"], min(u["batch_size"] or m, m), macs)
    if "galu_exact" in u["models"]:
        total += Sizes(work=sum(u["seeds"] * 2.0 * m * (k * d) ** 2 for m, d, k in points))
    nets = trained * len(points)
    return total + Sizes(bytes=nets * max(u["ms"]) * (max(u["ds"]) + 1) * 4 * 8)


def _expected_width(m: int, d: int, out_dim: int, criterion: str) -> int:
    """The width a search is expected to stop at: about m / d neurons (the paper's claim),
    growing like sqrt(out_dim) with the label dimension (what our quick run measured)."""
    scale = math.sqrt(out_dim) if criterion == "mse" else 1.0
    return max(1, round(m / d * scale))


def search(config: Config, wc: Wildcards) -> Sizes:
    """The probes each search of this job's part would make if its minimal width were the
    expected one, replayed through the workflow's own search
    (:func:`galu.memorization.width_search.search_min_width`); the part's searches advance in
    lock-step, one ensemble per round and data shape. Searches are dealt to the ``parts``
    jobs in the grid's order (model, m, d, out_dim, seed), as
    :func:`galu.memorization.search_parts.search_part`."""
    mem = config["memorization"]
    s = mem["min_width"][wc["criterion"]]
    mse = wc["criterion"] == "mse"
    parts, part = s.get("parts", 1), int(wc.get("part", 0))
    ms, ds = ([s["m"]], [s["d"]]) if mse else (s["ms"], s["ds"])
    total, rounds, index, mine, shapes = Sizes(gpu=bool(mem["gpu"])), 0, 0, 0, set()
    for model in s["models"]:
        for m in ms:
            for d in ds:
                for out in s["out_dims"] if mse and model != "galu_exact" else [1]:
                    for _ in range(s["seeds"]):
                        index += 1
                        if (index - 1) % parts != part:
                            continue
                        mine, shapes = mine + 1, shapes | {(m, d)}
                        total, done = _one_search(s, model, m, d, out, wc["criterion"], total)
                        rounds = max(rounds, done)
    outs = max(s["out_dims"]) if mse else 1
    held = s["probes_per_round"] * s["seeds"] * s["probe_seeds"] * max(ms) * (max(ds) + outs)
    held *= 4 * 8 * len(s["models"]) * len(ms) * len(ds) * (len(s["out_dims"]) if mse else 1)
    held *= mine / max(index, 1)
    return total + Sizes(steps=s["steps"] * rounds * len(shapes), bytes=held)


def _one_search(
    s: Config, model: str, m: int, d: int, out: int, criterion: str, total: Sizes
) -> tuple[Sizes, int]:
    """``total`` plus one search's probes (``probe_seeds`` networks per probed width), and
    the search's number of rounds."""
    target = _expected_width(m, d, out, criterion)
    start = min(s["width_max"], max(s["width_min"], int(s["ladder_start"] * m / d)))
    result = search_min_width(
        lambda widths, t=target: [w >= t for w in widths],
        s["width_min"], s["width_max"], start, s["probes_per_round"],
    )  # fmt: skip
    widths = sum(w for w, _ in result.probes)
    nets = s["probe_seeds"]
    if model == "galu_exact":
        return total + Sizes(work=nets * 2.0 * m * (widths * d) ** 2), result.rounds
    batch = min(s["batch_size"] or m, m)
    work = 6.0 * s["steps"] * batch * nets * widths * (d + out)
    return total + Sizes(work=work), result.rounds
