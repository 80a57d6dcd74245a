"""The stacked deep-MLP trainer trains each network as it would alone."""

import numpy as np
import pytest
import torch

from galu.normalization.cifar import TensorData
from galu.normalization.lr_sweep import lr_sweep
from galu.normalization.mlp import build_mlp
from galu.normalization.stacked import MomentumSGD, StackedAdam, StackedMLP, train_stacked
from galu.normalization.trainability import train_depth
from galu.normalization.training import TrainSettings, train
from galu.workflow.settings.config import load_yaml

from conftest import REPO


def _data(n: int = 96, dim: int = 48, seed: int = 0) -> TensorData:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=gen)
    y = torch.randint(0, 10, (n,), generator=gen)
    return TensorData(x, y, x[:32], y[:32])


COLUMNS = ["train_loss", "train_error", "test_loss", "test_error"]


@pytest.mark.parametrize("activation", ["relu", "tilted_relu", "tanh", "relu_bn"])
def test_stacked_training_equals_training_each_network_alone(activation):
    data = _data()
    lrs, seeds = [0.01, 0.03, 0.1], [0, 1, 1]  # two seeds share a batch order, one does not
    alone = [
        train(build_mlp(activation, 4, 16, s, input_dim=48), data, TrainSettings(lr, 3, 16), s)
        for lr, s in zip(lrs, seeds, strict=True)
    ]
    models = [build_mlp(activation, 4, 16, s, input_dim=48) for s in seeds]
    together = train_stacked(models, data, lrs, seeds, epochs=3, batch_size=16)
    for one, stacked in zip(alone, together, strict=True):
        assert list(stacked["epoch"]) == [0, 1, 2, 3]
        assert not stacked["diverged"].any()
        np.testing.assert_allclose(stacked[COLUMNS], one[COLUMNS], rtol=0, atol=2e-5)
    # the trained weights are written back: each model now computes its stacked member
    models[0].eval()
    with torch.no_grad():
        logits = models[0](data.x_test)
    loss = torch.nn.functional.cross_entropy(logits, data.y_test).item()
    assert loss == pytest.approx(alone[0]["test_loss"].iloc[-1], abs=2e-5)


def test_stacked_forward_is_each_member_forward():
    models = [build_mlp("relu_bn", 3, 8, s, input_dim=12) for s in range(3)]
    stacked = StackedMLP(models).eval()
    x = torch.randn(5, 12, generator=torch.Generator().manual_seed(0))
    # The stacked product sums in another order than each member's Linear: float32 rounding
    # of a few units in the last place (outputs near 4 differed by 1.2e-6 = 5 ulp on an
    # unseeded input once), where a wrong member or layer would differ by order 1.
    close = {"rtol": 1e-5, "atol": 1e-6}
    with torch.no_grad():
        shared = stacked(x)
        per_member = stacked(x.expand(3, 5, 12))
        for e, model in enumerate(models):
            expected = model.eval()(x)
            torch.testing.assert_close(shared[e], expected, **close)
            torch.testing.assert_close(per_member[e], expected, **close)


def test_a_diverging_member_stops_alone_and_the_others_train_as_alone():
    data = _data()
    lrs = [0.01, 1e6]  # the second blows up in its first epoch
    alone = train(build_mlp("relu", 3, 16, 0, input_dim=48), data, TrainSettings(0.01, 3, 16), 0)
    blown = train(build_mlp("relu", 3, 16, 0, input_dim=48), data, TrainSettings(1e6, 3, 16), 0)
    models = [build_mlp("relu", 3, 16, 0, input_dim=48) for _ in lrs]
    ok, bad = train_stacked(models, data, lrs, [0, 0], epochs=3, batch_size=16)
    assert blown["diverged"].all() and bad["diverged"].all()
    assert list(bad["epoch"]) == list(blown["epoch"])
    assert not ok["diverged"].any()
    np.testing.assert_allclose(ok[COLUMNS], alone[COLUMNS], rtol=0, atol=2e-5)


def test_sweep_and_depth_runs_keep_their_tables():
    data = _data()
    sweep = lr_sweep(
        "tilted_relu", data, [0.001, 0.01], depth=3, width=16, epochs=2, seed=4, batch_size=16
    )
    assert list(sweep["lr"]) == [0.001, 0.01] and sweep["chosen"].sum() == 1
    single = train(
        build_mlp("tilted_relu", 3, 16, 4, input_dim=48), data, TrainSettings(0.01, 2, 16), 4
    )
    assert sweep["final_train_loss"].iloc[1] == pytest.approx(
        single["train_loss"].iloc[-1], abs=2e-5
    )
    runs = train_depth("relu", 3, data, {16: 0.01}, [0, 1], epochs=1, batch_size=16, spectra=True)
    assert sorted(set(runs.curves["seed"])) == [0, 1]
    stages = runs.spectra.drop_duplicates(["seed", "stage"])[["seed", "stage"]]
    assert stages.values.tolist() == [[0, "init"], [0, "trained"], [1, "init"], [1, "trained"]]


# The paper's trainability activations. The paper smoke (config/paper-smoke.yaml) trains one
# of each kind of layer at the paper's shapes; this runs the sweep and the training jobs' code
# for every one of them, at a small size (the activation is all that differs between jobs).
PAPER_ACTIVATIONS = load_yaml(REPO / "config/paper.yaml")["normalization"]["trainability"][
    "activations"
]


@pytest.mark.parametrize("activation", PAPER_ACTIVATIONS)
def test_every_paper_activation_sweeps_and_trains_with_finite_losses(activation):
    data = _data()
    sweep = lr_sweep(activation, data, [0.001, 0.01], depth=4, width=16, epochs=1, seed=0,
                     batch_size=16)  # fmt: skip
    assert sweep["chosen"].sum() == 1 and not sweep["diverged"].any()
    runs = train_depth(activation, 4, data, {16: 0.01}, [0], epochs=2, batch_size=16)
    curves = runs.curves
    assert len(curves) == 3 and set(curves["activation"]) == {activation}  # init, 2 epochs
    assert np.isfinite(curves[COLUMNS].to_numpy(float)).all()
    assert curves["train_loss"].iloc[-1] != curves["train_loss"].iloc[0]  # it took steps


def test_shapes_and_lengths_must_agree():
    with pytest.raises(ValueError, match="share activation, depth and layer sizes"):
        StackedMLP([build_mlp("relu", 3, 8, 0), build_mlp("relu", 3, 16, 0)])
    with pytest.raises(ValueError, match="one lr and seed per model"):
        train_stacked([build_mlp("relu", 2, 8, 0, input_dim=48)], _data(), [0.1, 0.2], [0], 1)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_momentum_sgd_makes_the_very_steps_of_torch_sgd(momentum):
    # Bit for bit, not merely close: the stacked trainer's results must not depend on
    # which of the two made the steps.
    gen = torch.Generator().manual_seed(3)
    start = [torch.randn(5, 4, generator=gen), torch.randn(4, generator=gen)]
    grads = [[torch.randn_like(p, generator=gen) for p in start] for _ in range(4)]
    ours = [p.clone().requires_grad_(True) for p in start]
    theirs = [p.clone().requires_grad_(True) for p in start]
    mine = MomentumSGD(ours, momentum)
    reference = torch.optim.SGD(theirs, lr=1.0, momentum=momentum)
    for step in grads:
        for params, opt in ((ours, mine), (theirs, reference)):
            for p, g in zip(params, step, strict=True):
                p.grad = g.clone()
            opt.step()
            opt.zero_grad()
        for a, b in zip(ours, theirs, strict=True):
            assert torch.equal(a, b)
    assert all(p.grad is None for p in ours)


def test_stacked_adam_makes_the_steps_of_torch_adam_at_each_members_lr():
    # Three members of one stacked tensor, each at its own lr, against torch.optim.Adam on
    # each member's slice alone: the same formula, so equal to float rounding.
    gen = torch.Generator().manual_seed(5)
    lrs = [1e-3, 1e-2, 0.1]
    start = [torch.randn(3, 5, 4, generator=gen), torch.randn(3, 4, generator=gen)]
    grads = [[torch.randn_like(p, generator=gen) for p in start] for _ in range(5)]
    ours = [p.clone().requires_grad_(True) for p in start]
    mine = StackedAdam(ours, lrs)
    alone = [[p[e].clone().requires_grad_(True) for p in start] for e in range(3)]
    references = [torch.optim.Adam(ps, lr=lr) for ps, lr in zip(alone, lrs, strict=True)]
    for step in grads:
        for p, g in zip(ours, step, strict=True):
            p.grad = g.clone()
        mine.step()
        mine.zero_grad()
        for e, (params, opt) in enumerate(zip(alone, references, strict=True)):
            for p, g in zip(params, step, strict=True):
                p.grad = g[e].clone()
            opt.step()
        for e in range(3):
            for a, b in zip(ours, alone[e], strict=True):
                torch.testing.assert_close(a[e], b, rtol=1e-6, atol=1e-7)
    moved = [(a - s).abs().max().item() for a, s in zip(ours, start, strict=True)]
    assert min(moved) > 1e-3  # it took real steps (the largest lr moves by about 0.5)


# Not relu_bn: a bias before batch norm has no gradient but rounding noise, which Adam scales
# up to a step of size lr whose sign depends on the summation order (stacked or alone).
@pytest.mark.parametrize("activation", ["relu", "tilted_relu"])
def test_stacked_adam_trains_each_network_as_torch_adam_alone(activation):
    data = _data()
    lrs, seeds = [1e-3, 3e-3], [0, 1]
    settings = [TrainSettings(lr, 3, 16, optimizer="adam") for lr in lrs]
    alone = [
        train(build_mlp(activation, 4, 16, s, input_dim=48), data, st, s)
        for st, s in zip(settings, seeds, strict=True)
    ]
    models = [build_mlp(activation, 4, 16, s, input_dim=48) for s in seeds]
    together = train_stacked(models, data, lrs, seeds, epochs=3, batch_size=16, optimizer="adam")
    for one, stacked in zip(alone, together, strict=True):
        np.testing.assert_allclose(stacked[COLUMNS], one[COLUMNS], rtol=0, atol=5e-5)
        assert stacked["train_loss"].iloc[-1] < stacked["train_loss"].iloc[0]


def test_an_unknown_optimizer_is_named():
    with pytest.raises(ValueError, match="unknown optimizer 'rmsprop'; choose one of: sgd, adam"):
        train_stacked([build_mlp("relu", 2, 8, 0, input_dim=48)], _data(), [0.1], [0], 1,
                      optimizer="rmsprop")  # fmt: skip


class _Killed(Exception):
    """The job's end, as a sitting's end or a cluster's time limit brings it."""


@pytest.mark.parametrize(
    ("activation", "optimizer", "seeds"),
    [("relu", "sgd", [0, 1, 1]), ("relu_bn", "sgd", [0, 1]), ("tanh", "adam", [3])],
)
def test_a_training_killed_after_a_checkpoint_goes_on_to_the_same_bits(
    tmp_path, monkeypatch, activation, optimizer, seeds
):
    """Killed during epoch 3 of 4 after a checkpoint of epoch 2, then started again: the
    curves and trained weights are bit for bit those of a training never interrupted (the
    momentum or Adam buffers, batch norm's running statistics, the batch orders and the
    curves so far all come back)."""
    import galu.normalization.stacked as stacked
    from galu.checkpoints import Checkpoint

    data = _data()
    lrs = [0.01, 0.05, 0.1][: len(seeds)]

    def fresh():
        return [build_mlp(activation, 4, 16, s, input_dim=48) for s in seeds]

    def train(models, checkpoint=None):
        return train_stacked(
            models, data, lrs, seeds, 4, 16, optimizer=optimizer, checkpoint=checkpoint
        )

    whole_models = fresh()
    whole = train(whole_models)
    saved_at = []
    real_save = Checkpoint.save

    def save(self, state):
        saved_at.append(state["epoch"])
        real_save(self, state)

    monkeypatch.setattr(Checkpoint, "save", save)
    epochs_run = []
    real_epoch = stacked._train_epoch

    def epoch_then_kill(*args):
        epochs_run.append(len(epochs_run) + 1)
        if len(epochs_run) == 3:
            raise _Killed
        real_epoch(*args)

    monkeypatch.setattr(stacked, "_train_epoch", epoch_then_kill)
    path = tmp_path / "ck.pt"
    with pytest.raises(_Killed):
        train(fresh(), Checkpoint(path, "job", every_s=0))
    assert saved_at == [0, 1, 2] and path.is_file()  # after epochs 0 to 2; none after the last
    monkeypatch.setattr(stacked, "_train_epoch", real_epoch)
    resumed_models = fresh()
    resumed = train(resumed_models, Checkpoint(path, "job", every_s=3600))
    for one, two in zip(whole, resumed, strict=True):
        assert one.equals(two)
    for one, two in zip(whole_models, resumed_models, strict=True):
        for (name, a), (_, b) in zip(
            one.state_dict().items(), two.state_dict().items(), strict=True
        ):
            assert torch.equal(a, b), name
    # another job's checkpoint (another key) is ignored: a full training from the start
    other_models = fresh()
    assert all(
        a.equals(b)
        for a, b in zip(whole, train(other_models, Checkpoint(path, "other")), strict=True)
    )
