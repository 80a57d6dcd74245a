"""Cost model of the workflow's jobs: seconds and peak memory per job, from its sizes.

Every job's cost is a formula in the sizes of its configuration and wildcards::

    seconds = base_s + rate * work + step_s * steps        mem_mb = base_mb + mem_rate * bytes / 1e6

``work`` counts the job's arithmetic in flops (the multiply-adds of the networks it trains,
times 6 for forward and backward, times steps and samples; n^3 of eigendecompositions;
updates of the simulated committee machines; ...), ``steps`` its Python-level iterations
(optimizer steps of each ensemble, simulation steps), which bound small networks more than
their arithmetic, and ``bytes`` what it holds at once. Rules without a formula (plots,
collectors) cost their constants only. The constants are fitted per rule by
``workflow/costs/fit.py`` from our own measurements (``workflow/costs/measurements.tsv``:
the benchmark TSVs of real quick and paper-smoke runs) and stored in
``workflow/costs/constants.yaml``; only the shape of each formula is written here.

Times are for one CPU core (every training rule runs with ``threads: 1``) of the reference
machine the constants were fitted for; other measured machines' speed factors are stored
beside them (:mod:`galu.workflow.costfit`), and ``galu plan --speed`` scales a plan by one. GPU
rules have no stored GPU measurement: their GPU time is the CPU prediction divided by the assumed
``gpu_speedup`` of the constants file, and ``galu plan`` flags it as uncalibrated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from galu.declarations import Job
from galu.generalization.layout import pads_widths
from galu.memorization.grid import underparam_points
from galu.memorization.width_search import search_min_width
from galu.workflow.config import load_yaml
from galu.workflow.data.registry import get_dataset

CONSTANTS = "workflow/costs/constants.yaml"

Config = Mapping[str, Any]
Wildcards = Mapping[str, str]


@dataclass(frozen=True)
class Sizes:
    """What a job's cost formula needs: ``work`` (flops), ``steps`` (Python-level
    iterations), ``bytes`` held at once, and whether it asks for a GPU."""

    work: float = 0.0
    steps: float = 0.0
    bytes: float = 0.0
    gpu: bool = False

    def __add__(self, other: Sizes) -> Sizes:
        return Sizes(
            self.work + other.work,
            self.steps + other.steps,
            max(self.bytes, other.bytes),
            self.gpu or other.gpu,
        )


def _train(steps: int, batch: int, macs: float) -> Sizes:
    """One ensemble trained for ``steps`` steps on ``batch`` samples, ``macs`` being the
    multiply-adds of all its members for one sample (forward + backward: 6 flops each)."""
    return Sizes(work=6.0 * steps * batch * macs, steps=steps)


# -- data ------------------------------------------------------------------------------------


def _download(config: Config, wc: Wildcards) -> Sizes:
    """Verifying (hashing) and linking or copying the archives: their bytes."""
    return Sizes(work=sum(f.size for f in get_dataset(wc["dataset"]).files))


def _prepare(config: Config, wc: Wildcards) -> Sizes:
    """Decompressing and converting every image: its values."""
    data = get_dataset(wc["dataset"])
    values = (data.n_train + data.n_test) * math.prod(data.image_shape)
    return Sizes(work=values, bytes=values * 2)


# -- memorization (Fiat et al., arXiv 1906.05032, sec. 3) ---------------------------------


def _underparam(config: Config, wc: Wildcards) -> Sizes:
    """Every trained network of the (m, d, k) grid (k d <= m), fitted as one ensemble per
    data shape (m, d), and the least-squares GaLU optimum of each point and seed."""
    mem = config["memorization"]
    u = mem["underparam"]
    trained = len([m for m in u["models"] if m != "galu_exact"]) * u["seeds"]
    points = underparam_points(u["ms"], u["ds"], u["ks"])
    total = Sizes(gpu=bool(mem["gpu"]))
    for m, d in {(m, d) for m, d, _ in points}:
        macs = sum(trained * k * (d + 1) for pm, pd, k in points if (pm, pd) == (m, d))
        total += _train(u["steps"], min(u["batch_size"] or m, m), macs)
    if "galu_exact" in u["models"]:
        total += Sizes(work=sum(u["seeds"] * 2.0 * m * (k * d) ** 2 for m, d, k in points))
    nets = trained * len(points)
    return total + Sizes(bytes=nets * max(u["ms"]) * (max(u["ds"]) + 1) * 4 * 8)


def _expected_width(m: int, d: int, out_dim: int, criterion: str) -> int:
    """The width a search is expected to stop at: about m / d neurons (the paper's claim),
    growing like sqrt(out_dim) with the label dimension (what our quick run measured)."""
    scale = math.sqrt(out_dim) if criterion == "mse" else 1.0
    return max(1, round(m / d * scale))


def _search(config: Config, wc: Wildcards) -> Sizes:
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


# -- generalization (sec. 5) --------------------------------------------------------------

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


def _images(config: Config, wc: Wildcards) -> Sizes:
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
        total += _train(im["steps"], im["batch_size"], macs)
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


def _synthetic(config: Config, wc: Wildcards) -> Sizes:
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
        total += _train(t["steps"], min(t["batch_size"] or n, n), nets * macs)
        total += Sizes(
            work=2.0 * (n + t["n_test"]) * nets * macs,
            bytes=(n + t["n_test"]) * t["dim"] * 8 * nets,
        )
    return total


# -- ReLU soft committee machines (Straat & Biehl, arXiv 1903.07378) ----------------------


def _shape(setting: Mapping[str, Any]) -> tuple[int, int]:
    return len(setting["R0"]), len(setting["R0"][0])


# The ReLU order-parameter equations need the four-dimensional Gaussian averages of
# galu/scm/relu_quadruple.py, the erf ones closed forms: relative cost of one evaluation.
ACTIVATION_WORK = {"relu": 3.0, "erf": 1.0}


def _ode_work(K: int, M: int, activation: str, runs: float, alpha_max: float) -> float:
    """``runs`` integrations to ``alpha_max``; the steps grow with alpha and each right-hand
    side couples every pair of the K + M hidden units' fields (K^2 (K + M)^2 terms)."""
    return runs * alpha_max * K**2 * (K + M) ** 2 * ACTIVATION_WORK[activation]


def _ode(config: Config, wc: Wildcards) -> Sizes:
    s = config["scm"][wc["scm_setting"]]
    K, M = _shape(s)
    runs = len(s["etas"]) * len(s["forms"])
    return Sizes(work=_ode_work(K, M, s["activation"], runs, s["alpha_max"]))


def _simulated(sim: Mapping[str, Any], alpha: float, runs: int, units: int) -> Sizes:
    """``runs`` learning rates simulated to ``alpha``: alpha N steps of all seeds at once
    (an O(N K) update each), eps_g measured on the held-out inputs at every recorded point;
    held: weights, a block of inputs and the held-out inputs of every seed, float64, twice."""
    N, seeds = sim["N"], sim["seeds"]
    steps = runs * alpha * N
    work = steps * seeds * 4.0 * N * units
    work += runs * sim["points"] * 2.0 * seeds * sim["n_test"] * N * units
    # every run draws its held-out inputs and at least one block of inputs per seed (about
    # 20 flops per Gaussian number)
    work += runs * seeds * N * (sim["n_test"] + min(sim["block"], alpha * N)) * 20.0
    held = 16.0 * seeds * N * (sim["n_test"] + sim["block"] + 16)
    return Sizes(work=work, steps=steps, bytes=held, gpu=bool(sim["gpu"]))


def _simulation(config: Config, wc: Wildcards) -> Sizes:
    scm = config["scm"]
    s = scm[wc["scm_setting"]]
    return _simulated(scm["simulation"], s["sim_alpha_max"], len(s["sim_etas"]), sum(_shape(s)))


def _schedules(config: Config, wc: Wildcards) -> Sizes:
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


def _stability(config: Config, wc: Wildcards) -> Sizes:
    """A 2 x 2 eigenproblem per perceptron eta; the K = M = 2 plateau's ODE and search."""
    st = config["scm"]["stability"]
    return Sizes(steps=st["eta_points"], work=_ode_work(2, 2, "relu", 1, st["plateau_alpha"]))


# -- static activation normalization (Richemond & Guo, arXiv 1905.01369) ------------------

CIFAR_INPUTS = 3072
CIFAR_IMAGES = 60_000


def _isometry(config: Config, wc: Wildcards) -> Sizes:
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
    return _train(steps, data["batch_size"], macs) + Sizes(work=score + init, steps=steps * depth)


def _cifar_bytes(train: Mapping[str, Any]) -> float:
    """What galu.normalization.cifar.prepare_data holds: the archive as loaded (uint8), the
    picked subsets (a uint8 copy) and their standardized float32 rows (shared with the
    tensors on the CPU; standardize_images makes no float copy of the archive)."""
    subset = (train["n_train"] + train["n_test"]) * CIFAR_INPUTS * (1 + 4)
    return CIFAR_IMAGES * CIFAR_INPUTS + subset


def _lr_sweep(config: Config, wc: Wildcards) -> Sizes:
    t = config["normalization"]["trainability"]
    sw = t["lr_sweep"]
    total = Sizes(bytes=_cifar_bytes(t), gpu=bool(t["gpus"]))
    for width in t["widths"]:
        for _ in sw["lrs"]:
            total += _deep_mlp(sw["depth"], width, t, sw["epochs"])
    return total


def _norm_train(config: Config, wc: Wildcards) -> Sizes:
    norm = config["normalization"]
    t, sp = norm["trainability"], norm["spectra"]
    depth = int(wc["norm_depth"])
    total = Sizes(gpu=bool(t["gpus"]))
    for width in t["widths"]:
        for _ in range(t["seeds"]):
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


def _correlations(config: Config, wc: Wildcards) -> Sizes:
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


FORMULAS: dict[str, Callable[[Config, Wildcards], Sizes]] = {
    "memorization_underparam": _underparam,
    "memorization_search": _search,
    "generalization_images": _images,
    "generalization_synthetic": _synthetic,
    "scm_ode": _ode,
    "scm_simulation": _simulation,
    "scm_schedules": _schedules,
    "scm_stability": _stability,
    "download": _download,
    "prepare": _prepare,
    "normalization_isometry": _isometry,
    "normalization_lr_sweep": _lr_sweep,
    "normalization_train": _norm_train,
    "normalization_correlations": _correlations,
}


def job_sizes(rule: str, config: Config, wildcards: Wildcards) -> Sizes:
    """The sizes of one job; rules without a formula cost only their constant."""
    formula = FORMULAS.get(rule)
    return formula(config, wildcards) if formula else Sizes()


# -- the model: constants fitted to measurements -------------------------------------------


@dataclass(frozen=True)
class RuleConstants:
    """One rule's fitted constants (see the module docstring)."""

    base_s: float
    rate: float = 0.0
    step_s: float = 0.0
    base_mb: float = 0.0
    mem_rate: float = 0.0


@dataclass(frozen=True)
class Prediction:
    """A job's predicted cost: ``seconds`` on one CPU core (GPU rules: on the GPU, from the
    assumed speed-up), peak resident memory in MB, and whether it runs on a GPU."""

    job: Job
    seconds: float
    mem_mb: float
    gpu: bool


class CostModel:
    """Fitted constants per rule (``workflow/costs/constants.yaml``) applied to job sizes."""

    def __init__(self, constants: Mapping[str, Any]):
        self.gpu_speedup = float(constants["gpu_speedup"])
        self.default = RuleConstants(**constants["default"])
        self.rules = {name: RuleConstants(**c) for name, c in constants["rules"].items()}
        # speed factor of each measured machine relative to the one the constants are for
        self.machines = {str(k): float(v) for k, v in constants.get("machines", {}).items()}

    @classmethod
    def load(cls, path: str | Path = CONSTANTS) -> CostModel:
        return cls(load_yaml(path))

    def speed(self, machine: str) -> float:
        """A measured machine's speed factor (1: the reference machine, or one never
        measured)."""
        return self.machines.get(machine, 1.0)

    def constants(self, rule: str) -> RuleConstants:
        """A rule's constants; one never measured (a new rule) gets the default's."""
        return self.rules.get(rule, self.default)

    def cpu_seconds(self, rule: str, sizes: Sizes) -> float:
        c = self.constants(rule)
        return c.base_s + c.rate * sizes.work + c.step_s * sizes.steps

    def predict(self, job: Job, config: Config, gpus: bool = True) -> Prediction:
        """``gpus``: whether the machine has GPUs; a GPU rule without one runs on the CPU
        (as do all rules with ``device: cpu``)."""
        sizes = job_sizes(job.rule, config, job.wildcards)
        c = self.constants(job.rule)
        seconds = self.cpu_seconds(job.rule, sizes)
        gpu = sizes.gpu and gpus and config.get("device") != "cpu"
        if gpu:
            seconds = c.base_s + (seconds - c.base_s) / self.gpu_speedup
        return Prediction(job, seconds, c.base_mb + c.mem_rate * sizes.bytes / 1e6, gpu)


# Requests: a job gets twice its predicted time (plus 5 minutes) and 1.5 times its predicted
# memory (plus 200 MB): shared machines and other CPUs run slower than ours, and a job
# killed at its limit loses everything it computed.
TIME_MARGIN, TIME_SLACK_MIN = 2.0, 5
MEM_MARGIN, MEM_SLACK_MB = 1.5, 200


def runtime_request(prediction: Prediction) -> int:
    """The ``runtime`` resource (minutes) the rule files declare for a job."""
    return math.ceil(TIME_MARGIN * prediction.seconds / 60) + TIME_SLACK_MIN


def mem_request(prediction: Prediction) -> int:
    """The ``mem_mb`` resource the rule files declare for a job."""
    return math.ceil(MEM_MARGIN * prediction.mem_mb) + MEM_SLACK_MB
