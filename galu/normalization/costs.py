"""Cost formulas of the static-normalization stage's jobs (Richemond & Guo, arXiv 1905.01369).

One function per rule that has one, ``(config, wildcards) -> Sizes``: the shape of the
rule's cost in the sizes of its configuration (:class:`galu.declarations.Sizes`; the
constants that turn sizes into seconds and megabytes are fitted per rule by
``workflow/costs/fit.py``). Each rule names its formula in its ``resources:``
(``job_resources`` of workflow/rules/common.smk), which ``galu plan`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from galu.declarations import Config, Formula, Sizes, Wildcards, train_sizes

CIFAR_INPUTS = 3072
CIFAR_IMAGES = 60_000


def isometry(config: Config, wc: Wildcards) -> Sizes:
    """Per activation, seed and variant (raw, normalized): two n x n products and a
    symmetric eigenproblem (about 9 n^3)."""
    iso = config["normalization"]["isometry"]
    n = iso["n"]
    work = len(iso["activations"]) * iso["seeds"] * 2 * (4.0 + 9.0) * n**3
    return Sizes(work=work, bytes=64.0 * n**2)


def _mlp_macs(depth: int, width: int) -> float:
    return CIFAR_INPUTS * width + (depth - 1) * width * width + width * 10


def _deep_mlp(depth: int, width: int, data: Mapping[str, Any], epochs: int) -> Sizes:
    """SGD epochs over the training subset, a train and test evaluation at every epoch
    (the 0th included), and the orthogonal initialization (a QR per hidden layer)."""
    macs = _mlp_macs(depth, width)
    steps = epochs * (data["n_train"] // data["batch_size"])
    score = (epochs + 1) * 2.0 * (data["n_train"] + data["n_test"]) * macs
    init = depth * 4.0 * width**3
    return train_sizes(steps, data["batch_size"], macs) + Sizes(
        work=score + init, steps=steps * depth
    )


def _cifar_bytes(train: Mapping[str, Any]) -> float:
    """What galu.normalization.cifar.prepare_data holds: the archive as loaded (uint8), the
    picked subsets (a uint8 copy) and their standardized float32 rows (shared with the
    tensors on the CPU; standardize_images makes no float copy of the archive)."""
    subset = (train["n_train"] + train["n_test"]) * CIFAR_INPUTS * (1 + 4)
    return CIFAR_IMAGES * CIFAR_INPUTS + subset


def lr_sweep(config: Config, wc: Wildcards) -> Sizes:
    t = config["normalization"]["trainability"]
    sw = t["lr_sweep"]
    total = Sizes(bytes=_cifar_bytes(t), gpu=bool(t["gpus"]))
    for width in t["widths"]:
        for _ in sw["lrs"]:
            total += _deep_mlp(sw["depth"], width, t, sw["epochs"])
    return total


def ablation(config: Config, wc: Wildcards) -> Sizes:
    """One network per optimizer, learning rate and gain at the ablation's depth and width,
    each trained as a trainability job trains its own (same data, epochs)."""
    norm = config["normalization"]
    t, ab = norm["trainability"], norm["ablation"]
    networks = sum(len(rates) for rates in ab["lrs"].values()) * len(ab["gain_factors"])
    depth, width = ab["depth"], ab["width"]
    weights = networks * depth * width * width * 4 * 4  # weights, gradients, two moments
    total = Sizes(bytes=_cifar_bytes(t) + weights, gpu=bool(t["gpus"]))
    for _ in range(networks):
        total += _deep_mlp(depth, width, t, t["epochs"])
    return total


def training(config: Config, wc: Wildcards) -> Sizes:
    norm = config["normalization"]
    t, sp = norm["trainability"], norm["spectra"]
    depth = int(wc["norm_depth"])
    seeds = t.get("seeds_of", {}).get(wc["norm_activation"], t["seeds"])
    total = Sizes(gpu=bool(t["gpus"]))
    for width in t["widths"]:
        for _ in range(seeds):
            total += _deep_mlp(depth, width, t, t["epochs"])
            if wc["norm_activation"] in sp["activations"]:
                # W W^T spectra at init and after training; the init Jacobian's singular
                # values at jacobian_samples test images (one batched backward pass per row)
                total += Sizes(work=depth * 2 * 9.0 * width**3)
                jac = sp["jacobian_samples"] * (
                    width * 2.0 * _mlp_macs(depth, width) + 9.0 * width**3
                )
                total += Sizes(work=jac)
        weights = depth * width * width * 4 * 4  # weights, gradients, momentum, a copy
        held = _cifar_bytes(t) + weights
        if wc["norm_activation"] in sp["activations"]:
            held += _jacobian_bytes(depth, width, sp["jacobian_samples"])
        total += Sizes(bytes=held)
    return total


# Tensors of samples x width x width float32 that the init Jacobian's batched reverse pass
# keeps per hidden layer (benchmarks/jacobian_memory.py at 128 samples and width 128, depths
# 10 and 30: 1.5 for ReLU, 1.9 for the tilted ReLU and for ReLU with batch norm).
JACOBIAN_TENSORS = 2.0


def _jacobian_bytes(depth: int, width: int, samples: int) -> float:
    """What galu.normalization.spectra.jacobian_squared_singular_values holds at its peak:
    every layer's saved tensors of the samples x width rows it passes back at once."""
    return JACOBIAN_TENSORS * samples * width * width * 4.0 * depth


def correlations(config: Config, wc: Wildcards) -> Sizes:
    """Networks at initialization: a forward pass of the samples and their pairwise
    cosines at every layer, per activation."""
    c = config["normalization"]["correlations"]
    per_act = (
        2.0 * c["samples"] * _mlp_macs(c["depth"], c["width"])
        + c["samples"] ** 2 * c["width"] * c["depth"]
        + c["depth"] * 4.0 * c["width"] ** 3
    )
    held = _cifar_bytes(config["normalization"]["trainability"])
    return Sizes(work=len(c["activations"]) * per_act, bytes=held)


def _at_wide_width(config: Config) -> Config:
    """The configuration the wide jobs (normalization.wide) run: the trainability and
    correlation settings at the wide width, epochs and seeds, no spectra kept."""
    norm = config["normalization"]
    wide = norm["wide"]
    train = {
        **norm["trainability"],
        "widths": [wide["width"]],
        "seeds": wide["seeds"],
        "seeds_of": {},
        "epochs": wide["epochs"],
        "lr_sweep": {**norm["trainability"]["lr_sweep"]},
    }
    if wide["lrs"]:
        train["lr_sweep"]["lrs"] = wide["lrs"]
    correlations = {
        **norm["correlations"],
        "width": wide["width"],
        "activations": wide["activations"],
    }
    spectra = {**norm["spectra"], "activations": []}
    at_width = {**norm, "trainability": train, "correlations": correlations, "spectra": spectra}
    return {**config, "normalization": at_width}


@dataclass(frozen=True)
class AtWideWidth:
    """A wide job's cost: the formula of the rule whose script it runs, at the wide
    settings (its rule names that rule as its ``twin``, whose fitted constants it borrows
    until it is measured itself)."""

    formula: Formula

    def __call__(self, config: Config, wc: Wildcards) -> Sizes:
        return self.formula(_at_wide_width(config), wc)
