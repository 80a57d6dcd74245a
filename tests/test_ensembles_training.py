"""The ensemble trainer (galu.ensembles.training): batched training equals training
members alone."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from galu.ensembles import fused_adam, training
from galu.ensembles.networks import make_model
from galu.ensembles.training import (
    EnsembleSettings,
    MemberBatches,
    cross_entropy_loss,
    hinge_loss,
    loss_function,
    member_losses,
    mse_loss,
    outputs_and_losses,
    padded_mse_loss,
    plan_ensembles,
    predict,
    train_ensemble,
)
from galu.seeding import derive_seed

F64 = torch.float64


def _data(members: int, n: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(members, n, d, generator=gen, dtype=F64)
    return x, torch.randn(members, n, 1, generator=gen, dtype=F64)


WIDTHS, SEEDS = [3, 7, 5], [10, 11, 12]


@pytest.mark.parametrize("kind", ["relu", "galu"])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_ensemble_trajectories_equal_members_trained_alone(kind: str, optimizer: str) -> None:
    x, y = _data(3, 40, 4)
    settings = EnsembleSettings(
        steps=30,
        lr=0.02,
        batch_size=16,
        optimizer=optimizer,
        momentum=0.5 if optimizer == "sgd" else 0.0,
        record_every=1,
    )
    net = make_model(kind, 4, WIDTHS, SEEDS, dtype=F64)
    together = train_ensemble(net, mse_loss, x, y, SEEDS, settings)
    assert together.history_loss.shape == (30, 3)
    for e, (k, s) in enumerate(zip(WIDTHS, SEEDS, strict=True)):
        one = make_model(kind, 4, [k], [s], dtype=F64)
        alone = train_ensemble(one, mse_loss, x[e : e + 1], y[e : e + 1], [s], settings)
        np.testing.assert_allclose(
            together.history_loss[:, e], alone.history_loss[:, 0], rtol=1e-10, atol=1e-12
        )
        np.testing.assert_allclose(together.final_loss[e], alone.final_loss[0], rtol=1e-10)
        # The padded member's real units end where the unpadded member's do ...
        torch.testing.assert_close(net.weight[e, :k], one.weight[0], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(net.readout[e, :k], one.readout[0], rtol=1e-10, atol=1e-12)
        # ... and its padding never moved from exact zero.
        assert torch.count_nonzero(net.weight[e, k:]) == 0
        assert torch.count_nonzero(net.readout[e, k:]) == 0
    # Training changed something: the loss went down for every member.
    assert np.all(together.history_loss[-5:].mean(0) < together.history_loss[:5].mean(0))


@pytest.mark.parametrize("kind", ["relu", "galu"])
def test_members_padded_in_samples_inputs_and_outputs_train_as_if_alone(kind: str) -> None:
    # (n, d, out_dim) per member; the ensemble pads all three to (30, 5, 4).
    shapes, widths, seeds = [(20, 3, 2), (30, 5, 4), (25, 4, 1)], [6, 3, 4], [1, 2, 3]
    gen = torch.Generator().manual_seed(9)
    data = [
        (torch.randn(n, d, generator=gen, dtype=F64), torch.randn(n, o, generator=gen, dtype=F64))
        for n, d, o in shapes
    ]
    x = torch.zeros(3, 30, 5, dtype=F64)
    y = torch.zeros(3, 30, 4, dtype=F64)
    for e, (xe, ye) in enumerate(data):
        x[e, : len(xe), : xe.shape[1]], y[e, : len(ye), : ye.shape[1]] = xe, ye
    x[0, 25:] = 7.0  # junk in padded rows ...
    x[2, :, 4] = -3.0  # ... and in padded input columns must not matter
    settings = EnsembleSettings(steps=40, lr=0.02, batch_size=8, record_every=1)
    dims = {"in_dims": [d for _, d, _ in shapes], "out_dims": [o for _, _, o in shapes]}
    net = make_model(kind, 5, widths, seeds, out_dim=4, dtype=F64, **dims)
    loss = padded_mse_loss(dims["out_dims"])
    padded = train_ensemble(net, loss, x, y, seeds, settings, n_samples=[n for n, _, _ in shapes])
    for e, ((xe, ye), k, s) in enumerate(zip(data, widths, seeds, strict=True)):
        one = make_model(kind, xe.shape[1], [k], [s], out_dim=ye.shape[1], dtype=F64)
        alone = train_ensemble(one, mse_loss, xe[None], ye[None], [s], settings)
        np.testing.assert_allclose(
            padded.history_loss[:, e], alone.history_loss[:, 0], rtol=1e-10, atol=1e-13
        )
        np.testing.assert_allclose(padded.final_loss[e], alone.final_loss[0], rtol=1e-10)
        d, o = xe.shape[1], ye.shape[1]
        torch.testing.assert_close(net.weight[e, :k, :d], one.weight[0])
        torch.testing.assert_close(net.readout[e, :k, :o], one.readout[0])
        assert torch.count_nonzero(net.weight[e, :, d:]) == 0
        assert torch.count_nonzero(net.readout[e, :, o:]) == 0
    with pytest.raises(ValueError, match="full-batch training needs every member"):
        full = EnsembleSettings(steps=1, lr=0.1)
        train_ensemble(net, loss, x, y, seeds, full, n_samples=[20, 30, 25])
    with pytest.raises(ValueError, match=r"n_samples must give one count in \[1, 30\]"):
        train_ensemble(net, loss, x, y, seeds, settings, n_samples=[20, 31, 25])


def test_same_seeds_reproduce_and_other_seeds_differ() -> None:
    x, y = _data(2, 30, 3)
    settings = EnsembleSettings(steps=25, lr=0.01, batch_size=8, record_every=5)

    def run(seeds: list[int]) -> np.ndarray:
        net = make_model("galu", 3, [4, 4], seeds)
        return train_ensemble(net, mse_loss, x.float(), y.float(), seeds, settings).history_loss

    assert np.array_equal(run([1, 2]), run([1, 2]))
    assert not np.allclose(run([1, 2])[:, 0], run([3, 2])[:, 0])


def test_float32_ensemble_matches_alone_to_float_tolerance() -> None:
    x, y = _data(3, 64, 6, seed=4)
    x, y = x.float(), y.float()
    settings = EnsembleSettings(steps=40, lr=0.01, batch_size=32, record_every=4)
    together = train_ensemble(make_model("relu", 6, WIDTHS, SEEDS), mse_loss, x, y, SEEDS, settings)
    for e in range(3):
        one = make_model("relu", 6, [WIDTHS[e]], [SEEDS[e]])
        alone = train_ensemble(one, mse_loss, x[e : e + 1], y[e : e + 1], [SEEDS[e]], settings)
        np.testing.assert_allclose(together.history_loss[:, e], alone.history_loss[:, 0], rtol=2e-4)


def test_shared_data_equals_per_member_copies() -> None:
    x, y = _data(1, 50, 3)
    settings = EnsembleSettings(steps=30, lr=0.01, batch_size=20, record_every=1)
    shared = train_ensemble(
        make_model("galu", 3, [2, 6], [0, 1], dtype=F64), mse_loss, x[0], y[0], [0, 1], settings
    )
    copies = train_ensemble(
        make_model("galu", 3, [2, 6], [0, 1], dtype=F64),
        mse_loss,
        x.expand(2, 50, 3),
        y.expand(2, 50, 1),
        [0, 1],
        settings,
    )
    np.testing.assert_allclose(shared.history_loss, copies.history_loss, rtol=1e-12)


def _one_op_at_a_time(net: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The network's forward from the raw rows: mask and augment the input, gate, mask
    the units, read out; the order of operations before inputs were encoded."""
    h = net.hidden(net.prepare(x)) * net.mask[:, None, :]
    return (torch.bmm(h, net.readout) + net.out_bias[:, None, :]) * net.out_mask[:, None, :]


def _not_encoded(net: torch.nn.Module, model: torch.nn.Module, x, y, members: int) -> tuple:
    """Stand-in for training._encoded: raw rows through :func:`_one_op_at_a_time`."""
    return x, y, functools.partial(_one_op_at_a_time, net)


@pytest.mark.parametrize("kind", ["relu", "galu"])
@pytest.mark.parametrize("shared", [True, False])
def test_encoded_data_train_bit_for_bit_like_the_plain_forward(
    kind: str, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The trainer samples rows of model.encode(x) (GaLU: input and gates, computed once);
    # in float32, where rounding shows, it must take exactly the steps of model(rows of x).
    x, y = (t.float() for t in _data(9, 40, 5, seed=3))
    y = torch.cat([y, y.square()], dim=-1)  # two outputs: the readout's GEMM backward
    x, y = (x[0], y[0]) if shared else (x, y)
    settings = EnsembleSettings(steps=25, lr=0.01, batch_size=8, record_every=1)
    runs = []
    for encoded in (True, False):
        widths, in_dims = [3, 7, 5] * 3, [5, 3, 4] * 3
        net = make_model(kind, 5, widths, list(range(9)), 2, bias=True, in_dims=in_dims)
        if not encoded:
            monkeypatch.setattr(training, "_encoded", functools.partial(_not_encoded, net))
        result = train_ensemble(net, mse_loss, x, y, list(range(9)), settings)
        runs.append([result.history_loss, *(p.detach().numpy() for p in net.parameters())])
    for ours, plain in zip(*runs, strict=True):
        assert ours.tobytes() == plain.tobytes()


def test_a_diverging_member_is_recorded_and_the_others_train_on() -> None:
    x, y = _data(3, 32, 4, seed=2)
    x[1] *= 1e3  # member 1's gradient steps blow up under plain SGD
    settings = EnsembleSettings(steps=40, lr=0.05, batch_size=8, optimizer="sgd", record_every=1)
    result = train_ensemble(
        make_model("relu", 4, WIDTHS, SEEDS, dtype=F64), mse_loss, x, y, SEEDS, settings
    )
    assert result.diverged.tolist() == [False, True, False]
    step = result.diverged_step[1]
    assert 0 < step < 40
    assert np.isfinite(result.history_loss[:step, 1]).all()
    assert not np.isfinite(result.history_loss[step, 1])
    assert np.isnan(result.final_loss[1])
    for e in (0, 2):
        one = make_model("relu", 4, [WIDTHS[e]], [SEEDS[e]], dtype=F64)
        alone = train_ensemble(one, mse_loss, x[e : e + 1], y[e : e + 1], [SEEDS[e]], settings)
        np.testing.assert_allclose(result.history_loss[:, e], alone.history_loss[:, 0], rtol=1e-10)
        assert alone.diverged_step[0] == -1


def test_full_batch_gradient_descent_takes_the_exact_gradient_step() -> None:
    # One SGD step on the full batch: w <- w - lr * grad, checked against autograd by hand.
    x, y = _data(2, 12, 3)
    net = make_model("relu", 3, [4, 2], [0, 1], dtype=F64)
    ref = make_model("relu", 3, [4, 2], [0, 1], dtype=F64)
    train_ensemble(net, mse_loss, x, y, [0, 1], EnsembleSettings(steps=1, lr=0.1, optimizer="sgd"))
    mse_loss(ref(x), y).sum().backward()
    torch.testing.assert_close(net.weight, ref.weight - 0.1 * ref.weight.grad)
    torch.testing.assert_close(net.readout, ref.readout - 0.1 * ref.readout.grad)


def test_member_batches_walk_through_permutations_from_each_members_seed() -> None:
    batches = iter(MemberBatches(10, 4, [5, 6], torch.device("cpu"), steps=3))
    stream = torch.cat([next(batches) for _ in range(5)], dim=1)  # 20 indices = 2 epochs
    for e in range(2):
        assert sorted(stream[e, :10].tolist()) == list(range(10))
        assert sorted(stream[e, 10:].tolist()) == list(range(10))
    assert not torch.equal(stream[0], stream[1])
    alone = iter(MemberBatches(10, 4, [6], torch.device("cpu")))
    assert torch.equal(torch.cat([next(alone) for _ in range(5)], dim=1)[0], stream[1])


@pytest.mark.parametrize("steps", [1, 3, 50])
def test_member_batches_are_each_members_permutations_back_to_back(steps: int) -> None:
    # The stream is fixed: member e's permutations of range(n[e]) from its own generator,
    # cut into batches, whatever the chunking (steps sets the refill size) and however a
    # batch straddles two permutations or a refill (n = 7 and 12 against batch 5).
    ns, seeds, batch = [7, 12], [3, 4], 5
    batches = iter(MemberBatches(ns, batch, seeds, torch.device("cpu"), steps=steps))
    stream = torch.cat([next(batches) for _ in range(40)], dim=1)
    for e, (n, seed) in enumerate(zip(ns, seeds, strict=True)):
        gen = torch.Generator().manual_seed(derive_seed(seed, "batches"))
        perms = torch.cat([torch.randperm(n, generator=gen) for _ in range(40 * batch // n + 1)])
        assert torch.equal(stream[e], perms[: 40 * batch])


def test_losses_on_tiny_inputs() -> None:
    out = torch.tensor([[[1.0], [2.0]], [[0.0], [-1.0]]])
    target = torch.tensor([[[0.0], [0.0]], [[1.0], [1.0]]])
    assert mse_loss(out, target).tolist() == [2.5, 2.5]
    signs = torch.tensor([[1.0, -1.0], [1.0, 1.0]])
    # margins: (1, -2) -> hinge (0, 3); (0, -1) -> (1, 2)
    assert hinge_loss(out, signs).tolist() == [1.5, 1.5]
    logits = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([[0, 1, 2, 1, 0], [2, 2, 1, 0, 1]])
    expected = [F.cross_entropy(logits[e], labels[e]).item() for e in range(2)]
    np.testing.assert_allclose(cross_entropy_loss(logits, labels).numpy(), expected, rtol=1e-6)
    assert loss_function("hinge") is hinge_loss


def test_member_losses_and_predict_cover_all_samples_in_chunks() -> None:
    x, y = _data(2, 23, 3)
    net = make_model("galu", 3, [3, 5], [0, 1], dtype=F64)
    full = mse_loss(net(x), y)
    torch.testing.assert_close(member_losses(net, mse_loss, x, y, batch_size=5), full)
    torch.testing.assert_close(predict(net, x, batch_size=4), net(x))
    torch.testing.assert_close(
        member_losses(net, mse_loss, x[0], y[0], batch_size=7),
        mse_loss(net(x[0]), y[0].expand(2, 23, 1)),
    )


def test_one_scoring_pass_gives_both_results_bit_for_bit() -> None:
    # float32 and chunks that do not divide the samples: the one-pass scores must be the
    # very numbers of predict and member_losses, not merely close to them.
    x, y = _data(3, 37, 4)
    x, y = x.float(), y.float()
    net = make_model("relu", 4, [2, 6, 9], [0, 1, 2])
    for data, labels in ((x, y), (x[0], y[0])):
        outputs, losses = outputs_and_losses(net, mse_loss, data, labels, batch_size=10)
        assert torch.equal(outputs, predict(net, data, batch_size=10))
        assert torch.equal(losses, member_losses(net, mse_loss, data, labels, batch_size=10))
    assert outputs_and_losses(net, mse_loss, x, y, keep_outputs=False)[0] is None


def test_progress_bar_can_be_shown(capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _data(1, 8, 2)
    settings = EnsembleSettings(steps=3, lr=0.01, progress=True, description="probe")
    train_ensemble(make_model("relu", 2, [2], [0], dtype=F64), mse_loss, x, y, [0], settings)
    assert "probe" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": -1, "lr": 0.1}, "steps must be >= 0"),
        ({"steps": 1, "lr": 0.0}, "lr must be > 0"),
        ({"steps": 1, "lr": 0.1, "batch_size": 0}, "batch_size must be >= 1 or None"),
        ({"steps": 1, "lr": 0.1, "optimizer": "rmsprop"}, r"optimizer must be one of \('adam'"),
    ],
)
def test_bad_settings_raise(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EnsembleSettings(**kwargs)


def test_bad_data_and_loss_raise() -> None:
    x, y = _data(2, 8, 3)
    net = make_model("relu", 3, [2, 2], [0, 1], dtype=F64)
    settings = EnsembleSettings(steps=2, lr=0.1)
    with pytest.raises(ValueError, match="x must be"):
        train_ensemble(net, mse_loss, torch.zeros(3, 8, 3, dtype=F64), y, [0, 1], settings)
    with pytest.raises(ValueError, match="shared x has 8 samples but y has 7"):
        train_ensemble(net, mse_loss, x[0], y[0, :7], [0, 1], settings)
    with pytest.raises(ValueError, match=r"loss_fn must return shape \(2,\)"):
        train_ensemble(net, lambda o, t: mse_loss(o, t).sum(), x, y, [0, 1], settings)
    with pytest.raises(ValueError, match="loss must be one of"):
        loss_function("l1")


def _partitions(items: list[int]):
    """Every split of an ordered list into contiguous non-empty runs."""
    if not items:
        yield []
        return
    for cut in range(1, len(items) + 1):
        for rest in _partitions(items[cut:]):
            yield [items[:cut], *rest]


def _plan_cost(plan: list[list[int]], sizes: list[tuple[int, int]], overhead: float) -> float:
    return sum(
        overhead + len(b) * max(sizes[e][0] for e in b) * max(sizes[e][1] for e in b) for b in plan
    )


@pytest.mark.parametrize("overhead", [0.0, 30.0, 500.0, 1e6])
def test_plan_ensembles_is_optimal_for_one_dimension(overhead: float) -> None:
    rng = np.random.default_rng(int(overhead))
    sizes = [(int(w), 1) for w in rng.integers(1, 60, size=7)]
    plan = plan_ensembles(sizes, overhead)
    assert sorted(e for bucket in plan for e in bucket) == list(range(7))
    order = sorted(range(7), key=lambda e: sizes[e])
    best = min(_plan_cost(p, sizes, overhead) for p in _partitions(order))
    assert _plan_cost(plan, sizes, overhead) == pytest.approx(best)


def _set_partitions(items: list[int]):
    """Every split of a set into non-empty blocks."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _set_partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1 :]]


def test_plan_ensembles_groups_by_shape_when_equal_work_differs_in_shape() -> None:
    # Narrow networks on many inputs and wide ones on few have about the same work, so in
    # the order of work they alternate: no contiguous cut of that order groups the two
    # narrow and the two wide ones (cost 1102 + 2 * 500), which is the optimum over
    # all 15 partitions; padding all four together costs 4216 + 500.
    sizes = [(8, 33), (30, 9), (8, 34), (31, 9)]
    plan = plan_ensembles(sizes, 500.0)
    assert sorted(plan) == [[0, 2], [1, 3]]
    best = min(_plan_cost(p, sizes, 500.0) for p in _set_partitions([0, 1, 2, 3]))
    assert _plan_cost(plan, sizes, 500.0) == best == 1102 + 2 * 500


def test_plan_ensembles_extremes() -> None:
    sizes = [(8, 9), (32, 33), (8, 9), (16, 17)]
    assert plan_ensembles(sizes, 1e9) == [[0, 1, 2, 3]]  # overhead dominates: one ensemble
    assert plan_ensembles(sizes, 0.0) == [[0, 2], [3], [1]]  # no overhead: no padding
    assert plan_ensembles([], 5.0) == []
    with pytest.raises(ValueError, match="overhead must be >= 0, got -1"):
        plan_ensembles(sizes, -1)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_fused_adam_updates_bit_for_bit_as_torchs_fused_adam(weight_decay: float) -> None:
    # Same start, same gradients for 5 steps; the readout gets none in step 3 (torch
    # skips it then, and so must we). Every parameter and moment must be equal exactly.
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 4, 5, generator=gen), torch.randn(3, 5, 1, generator=gen)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]
    mine = fused_adam.adam(ours, lr=0.01, weight_decay=weight_decay)
    assert isinstance(mine, fused_adam.FusedAdam)
    torch_adam = torch.optim.Adam(theirs, lr=0.01, weight_decay=weight_decay, fused=True)
    for step in range(5):
        grads = [torch.randn(t.shape, generator=gen) for t in start]
        for params, optimizer in ((ours, mine), (theirs, torch_adam)):
            optimizer.zero_grad()
            for p, g in zip(params, grads, strict=True):
                p.grad = None if (step == 3 and p.shape[-1] == 1) else g.clone()
            optimizer.step()
    for i, (p, q) in enumerate(zip(ours, theirs, strict=True)):
        assert torch.equal(p, q)
        state = torch_adam.state[q]
        assert torch.equal(mine.exp_avgs[i], state["exp_avg"])
        assert torch.equal(mine.exp_avg_sqs[i], state["exp_avg_sq"])
        assert torch.equal(mine.steps[i], state["step"])


def test_adam_falls_back_to_torchs_for_tensors_the_kernel_does_not_take() -> None:
    mixed = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2, dtype=F64))]
    assert isinstance(fused_adam.adam(mixed, lr=0.1), torch.optim.Adam)
