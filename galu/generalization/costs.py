"""Cost formulas of the generalization stage's jobs (Fiat et al., arXiv 1906.05032, sec. 5).

One function per rule that has one, ``(config, wildcards) -> Sizes``: the shape of the
rule's cost in the sizes of its configuration (:class:`galu.declarations.Sizes`; the
constants that turn sizes into seconds and megabytes are fitted per rule by
``workflow/costs/fit.py``). Each rule names its formula in its ``resources:``
(``job_resources`` of workflow/rules/common.smk), which ``galu plan`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from galu.declarations import Config, Sizes, Wildcards, train_sizes
from galu.generalization.layout import pads_widths

SIGMOID_GATED = ("galu0", "galu_sigmoid_prev")
# Scoring a padded ensemble on all 70,000 images is bound by moving every network's hidden
# activations through memory, not by its flops: one scoring flop costs about as much as 4
# training flops (the quick run, where training dominates, against the paper-smoke run,
# where scoring does; refit this with the constants when the scorer changes).
SCORING_WORK = 4.0
IMAGE_PIXELS = 784
IMAGE_COUNT = 70_000


def _image_macs(model: str, width: int, depth: int, inputs: int, classes: int = 10) -> float:
    if model == "linear":
        return inputs * classes
    gates = depth * inputs * width if model == "galu0" else 0  # gates read the input x
    return inputs * width + (depth - 1) * width * width + width * classes + gates


def images(config: Config, wc: Wildcards) -> Sizes:
    """One ensemble per model, widths padded to the largest where the grid pads them
    (:func:`~galu.generalization.layout.pads_widths`), every network scored on every image
    once, and the PCA of the training images."""
    g = config["generalization"]
    im = g["images"]
    n_train = (im["train_subset"] or 60_000) * (1 - im["validation_fraction"])
    total, nets = Sizes(gpu=bool(g["gpu"])), 0
    pad = pads_widths(im["pad_widths"], "cuda" if g["gpu"] else "cpu")
    for model in im["models"]:
        widths = [0] if model == "linear" else im["widths"]
        count = (
            im["seeds"] * len(im["lrs"]) * (len(im["gate_scales"]) if model in SIGMOID_GATED else 1)
        )
        padded = max(im["widths"]) if pad and model != "linear" else None
        macs = sum(
            count * _image_macs(model, padded or w, im["depth"], im["n_components"]) for w in widths
        )
        total += train_sizes(im["steps"], im["batch_size"], macs)
        total += Sizes(work=SCORING_WORK * 2.0 * IMAGE_COUNT * macs)
        nets += count * len(widths)
    pca = Sizes(work=2.0 * n_train * IMAGE_PIXELS**2)
    # the outputs kept for scoring (float32 logits of every network and image) and the images
    held = nets * IMAGE_COUNT * 10 * 4 + IMAGE_COUNT * IMAGE_PIXELS * 8
    return total + pca + Sizes(bytes=held)


def _synthetic_calls(task: str, t: Mapping[str, Any]) -> list[tuple[int, int]]:
    """(training points, networks) of each ensemble the task trains: clusters one per task
    (all noise levels), linear one per training-set size, parity one."""
    trained = len([m for m in t["models"] if m != "galu_exact"]) * t["seeds"]
    if task == "clusters":
        return [(t["n_train"], trained * len(t["sigma_ys"]))] * len(t["tasks"])
    if task == "linear":
        return [(n, trained) for n in t["n_trains"]]
    return [(t["n_train"], trained * len(t["subset_sizes"]))]


def synthetic(config: Config, wc: Wildcards) -> Sizes:
    g = config["generalization"]
    task = wc["gen_task"]
    t = g[task]
    macs = t["dim"] * t["width"] + t["width"]
    total = Sizes(gpu=bool(g["gpu"]))
    if task == "clusters" and "galu_exact" in t["models"] and "regression" in t["tasks"]:
        # the least-squares GaLU optimum of every noise level and seed (SVD of n x width dim)
        members = len(t["sigma_ys"]) * t["seeds"]
        total += Sizes(work=members * 10.0 * t["n_train"] * (t["width"] * t["dim"]) ** 2)
    for n, nets in _synthetic_calls(task, t):
        total += train_sizes(t["steps"], min(t["batch_size"] or n, n), nets * macs)
        total += Sizes(
            work=2.0 * (n + t["n_test"]) * nets * macs,
            bytes=(n + t["n_test"]) * t["dim"] * 8 * nets,
        )
    return total
