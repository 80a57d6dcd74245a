"""Deep GaLU/ReLU ensembles and the linear baseline (Fiat et al., arXiv 1906.05032, sec. 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from galu.ensembles.training import EnsembleSettings, cross_entropy_loss, hinge_loss, train_ensemble
from galu.generalization.models import (
    GatedEnsemble,
    LinearEnsemble,
    MemberSpec,
    build_ensemble,
)
from galu.generalization.training import error_rates, train_members

torch.set_num_threads(1)  # tiny tensors: extra threads only contend on a shared machine


def _x(n: int = 7, d: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_galu_with_gates_tied_to_weights_is_relu():
    # Every layer's gate reads that layer's input h, so (u, c) = (w, b) gives the ReLU net.
    kw = dict(in_dim=5, out_dim=3, depth=3, widths=[4, 6], seeds=[1, 2], dtype=torch.float64)
    relu, galu = GatedEnsemble("relu", **kw), GatedEnsemble("galu", **kw)
    with torch.no_grad():
        for layer in range(3):
            galu.biases[layer].normal_()  # non-zero biases, so the gate offsets matter too
            relu.biases[layer].copy_(galu.biases[layer])
            weight, bias = galu.layer(layer)
            getattr(galu, f"gate_{layer}").copy_(weight)
            getattr(galu, f"gate_bias_{layer}").copy_(bias)
    x = _x()
    torch.testing.assert_close(galu(x), relu(x), rtol=0, atol=1e-12)
    # With its own random gates the GaLU net is a different function.
    assert not torch.allclose(GatedEnsemble("galu", **kw)(x), relu(x))


def test_padded_member_computes_what_it_computes_alone():
    x = _x(9, 4, seed=3)
    alone = GatedEnsemble("galu", 4, 2, 2, widths=[3], seeds=[7], dtype=torch.float64)
    padded = GatedEnsemble("galu", 4, 2, 2, widths=[8, 3, 5], seeds=[1, 7, 2], dtype=torch.float64)
    torch.testing.assert_close(padded(x)[1], alone(x)[0], rtol=0, atol=1e-12)


def test_member_draws_depend_on_its_own_seed_only():
    a = GatedEnsemble("galu", 4, 1, 1, widths=[3, 3], seeds=[5, 6])
    b = GatedEnsemble("galu", 4, 1, 1, widths=[3, 3], seeds=[9, 5])
    torch.testing.assert_close(a.weights[0][0], b.weights[0][1], rtol=0, atol=0)
    torch.testing.assert_close(a.gate_0[0], b.gate_0[1], rtol=0, atol=0)
    assert not torch.equal(a.weights[0][0], a.weights[0][1])


def test_sigmoid_gate_on_previous_layer_limits():
    x = _x(6, 4, seed=1)
    kw = dict(in_dim=4, out_dim=2, depth=2, widths=[5], seeds=[3], dtype=torch.float64)
    step = GatedEnsemble("galu", **kw)
    sharp = GatedEnsemble("galu_sigmoid_prev", **kw, gate_scales=[1e-9])
    # Same seed, same draws: a vanishing gate scale a turns sigmoid(g / a) into the step gate.
    torch.testing.assert_close(sharp(x), step(x), rtol=0, atol=1e-9)
    # A huge scale opens every gate halfway: a linear net scaled by 1/2 per layer.
    soft = GatedEnsemble("galu_sigmoid_prev", **kw, gate_scales=[1e12])
    (w1, b1), (w2, b2) = soft.layer(0), soft.layer(1)
    h = 0.5 * (x @ w1[0].T + b1[0])
    h = 0.5 * (h @ w2[0].T + b2[0])
    expected = h @ soft.readout[0] + soft.out_bias[0]
    torch.testing.assert_close(soft(x)[0], expected, rtol=0, atol=1e-12)


def test_gate_vectors_have_unit_scale_per_input_coordinate():
    net = GatedEnsemble("galu", 99, 1, 1, widths=[400], seeds=[0], dtype=torch.float64)
    draws = torch.cat([net.gate_0.flatten(), net.gate_bias_0.flatten()])
    # Each coordinate ~ N(0, 1/(fan_in + 1)): variance 1/100 within a few standard errors.
    assert abs(draws.var().item() * 100 - 1) < 4 * math.sqrt(2 / draws.numel())


def test_linear_baseline_gradient_at_zero_is_analytic():
    # Softmax regression at W = 0, b = 0 predicts 1/C everywhere, so the gradient of the
    # mean cross-entropy is X^T (1/C - Y) / n for W and mean(1/C - Y) for b.
    x = _x(6, 4, seed=2)
    y = torch.tensor([0, 2, 1, 2, 2, 0])
    net = LinearEnsemble(4, 3, members=1, dtype=torch.float64)
    cross_entropy_loss(net(x), y[None]).sum().backward()
    residual = 1.0 / 3 - F.one_hot(y, 3).double()
    torch.testing.assert_close(net.weight.grad[0], x.T @ residual / 6, rtol=0, atol=1e-15)
    torch.testing.assert_close(net.bias.grad[0], residual.mean(dim=0), rtol=0, atol=1e-15)
    assert net(x).abs().max().item() == 0.0


def _adam_weights(members: list[MemberSpec], base_lr: float, steps: int) -> torch.Tensor:
    x = _x(32, 3, seed=4).float()
    y = torch.sign(x[:, 0] - x[:, 1])
    stack = build_ensemble(members, 3, 1, 1, base_lr=base_lr)
    settings = EnsembleSettings(steps=steps, lr=base_lr, batch_size=8)
    train_ensemble(stack, hinge_loss, x, y, [m.seed for m in stack.members], settings)
    block = stack.blocks[0]
    return block.layer(0)[0].detach()


def test_member_learning_rate_by_parameter_scaling_matches_own_optimizer():
    # Alone with Adam at lr 1e-3, and inside an optimizer at lr 1e-2 with scale 0.1.
    alone = _adam_weights([MemberSpec("relu", 6, 3, 1e-3)], 1e-3, 25)
    mixed = _adam_weights(
        [MemberSpec("relu", 6, 3, 1e-3), MemberSpec("relu", 6, 3, 1e-2)], 1e-2, 25
    )
    start = GatedEnsemble("relu", 3, 1, 1, widths=[6], seeds=[3]).layer(0)[0].detach()
    torch.testing.assert_close(mixed[0], alone[0], rtol=1e-4, atol=1e-6)
    # The member at the optimizer's own rate moved further: the scales did differ.
    assert (mixed[1] - start[0]).norm() > 5 * (mixed[0] - start[0]).norm()


@pytest.mark.parametrize("out_dim", [1, 3])
def test_every_model_fits_a_tiny_separable_problem(out_dim):
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(40, 6, generator=gen)
    teacher = torch.randn(6, 3, generator=gen)
    scores = x @ teacher
    if out_dim == 1:
        y, loss = torch.sign(scores[:, 0]), "hinge"
    else:
        y, loss = scores.argmax(dim=1), "cross_entropy"
    members = [
        MemberSpec("relu", 16, 0, 1e-2),
        MemberSpec("galu", 16, 0, 1e-2),
        MemberSpec("galu_sigmoid_prev", 16, 0, 1e-2, 1.0),
        MemberSpec("galu0", 16, 0, 1e-2, 0.1),
        MemberSpec("linear", 0, 0, 1e-2),
    ]
    fit = train_members(members, x, y, loss, 400, None, 2, out_dim)
    errors = error_rates(fit.stack(x), y)
    order = ["relu", "galu0", "galu", "galu_sigmoid_prev", "linear"]
    assert [m.model for m in fit.stack.members] == order
    np.testing.assert_array_equal(errors, np.zeros(5))
    # Before training, the nets got a fair share of this problem wrong.
    fresh = build_ensemble(members, 6, out_dim, 2)
    assert error_rates(fresh(x).detach(), y)[:4].min() > 0.05


def test_stack_splits_per_member_inputs_between_blocks():
    members = [MemberSpec("linear", 0, 0, 1e-2), MemberSpec("relu", 3, 0, 1e-2)]
    stack = build_ensemble(members, 2, 1, 1)
    with torch.no_grad():
        stack.blocks[1].weight.fill_(1.0)
        stack.blocks[1].bias.fill_(0.5)
    x = torch.stack([torch.ones(4, 2), 2 * torch.ones(4, 2)])  # (E=2, B=4, d=2)
    out = stack(x)
    assert [m.model for m in stack.members] == ["relu", "linear"]
    relu_alone = stack.blocks[0](x[:1])
    torch.testing.assert_close(out[0], relu_alone[0])
    torch.testing.assert_close(out[1], torch.full((4, 1), 2 * 2 + 0.5))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(model="tanh", width=3, seed=0, lr=0.1), "model must be one of"),
        (dict(model="linear", width=3, seed=0, lr=0.1), "width of a linear member must be 0"),
        (dict(model="relu", width=0, seed=0, lr=0.1), "width of a relu member"),
        (dict(model="relu", width=3, seed=-1, lr=0.1), "seed must be a non-negative int"),
        (dict(model="relu", width=3, seed=0, lr=0.0), "lr must be a finite number > 0"),
        (dict(model="galu0", width=3, seed=0, lr=0.1), "gate_scale of a galu0 member"),
        (
            dict(model="galu_sigmoid_prev", width=3, seed=0, lr=0.1, gate_scale=math.inf),
            "gate_scale of a galu_sigmoid_prev member must be a finite",
        ),
        (
            dict(model="galu", width=3, seed=0, lr=0.1, gate_scale=1.0),
            "galu0, galu_sigmoid_prev only",
        ),
    ],
)
def test_bad_member_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MemberSpec(**kwargs)


def test_bad_ensemble_arguments_are_named():
    with pytest.raises(ValueError, match="kind must be one of"):
        GatedEnsemble("linear", 2, 1, 1, [3], [0])
    with pytest.raises(ValueError, match="depth must be an int >= 1, got 0"):
        GatedEnsemble("relu", 2, 1, 0, [3], [0])
    with pytest.raises(ValueError, match="gate_scales are required for kind 'galu0'"):
        GatedEnsemble("galu0", 2, 1, 1, [3], [0])
    with pytest.raises(ValueError, match="lr_scales must be 1 finite numbers > 0"):
        GatedEnsemble("relu", 2, 1, 1, [3], [0], lr_scales=[-1.0])
    with pytest.raises(ValueError, match="members must name at least one"):
        build_ensemble([], 2, 1, 1)


# GaLU0, the model of the paper's MNIST experiment (Fiat et al., sec. 5): every layer's gate
# is sigmoid(x·u / (a d)) of the raw input x, with u ~ N(0, I_d) fixed and no offset.
GALU0 = dict(in_dim=8, out_dim=3, depth=2, widths=[5, 7], seeds=[4, 9], dtype=torch.float64)


def test_galu0_gates_are_sigmoid_of_the_input_over_a_d():
    net = GatedEnsemble("galu0", **GALU0, gate_scales=[0.5, 0.01])
    x = _x(11, 8, seed=5)
    _, gates = net.hidden(x)
    a = torch.tensor([0.5, 0.01], dtype=torch.float64)[:, None, None]
    for layer in range(2):
        u, offset = net.gates(layer)
        assert offset is None and u.shape == (2, 7, 8)  # on x (d = 8) in every layer
        expected = torch.sigmoid(torch.einsum("bd,ekd->ebk", x, u) / (a * 8))
        torch.testing.assert_close(gates[layer], expected, rtol=0, atol=1e-13)
    # u ~ N(0, I_d): unit variance per coordinate (not scaled by the fan-in).
    big = GatedEnsemble("galu0", 100, 1, 1, [400], [0], gate_scales=[1.0], dtype=torch.float64)
    assert abs(big.gate_0.var().item() - 1) < 4 * math.sqrt(2 / big.gate_0.numel())


def test_galu0_with_small_a_is_the_step_gate_away_from_the_boundary():
    net = GatedEnsemble("galu0", **GALU0, gate_scales=[1e-4, 1e-4])
    x = _x(200, 8, seed=6)
    _, gates = net.hidden(x)
    for layer in range(2):
        u = net.gates(layer)[0]
        argument = torch.einsum("bd,ekd->ebk", x, u) / 8
        real = net.mask[:, None, :].bool().expand_as(argument)  # not a padded unit
        away = (argument.abs() > 1e-2) & real  # |x·u / (a d)| > 100
        assert away[real].double().mean() > 0.95
        step = (argument >= 0).double()
        # sigmoid(100) rounds to 1; sigmoid(-100) is 4e-44.
        assert (gates[layer] - step)[away].abs().max().item() < 1e-40
    # And a -> inf opens every gate halfway.
    wide = GatedEnsemble("galu0", **GALU0, gate_scales=[1e12, 1e12])
    torch.testing.assert_close(
        wide.hidden(x)[1][1], torch.full((2, 200, 7), 0.5, dtype=torch.float64)
    )


def test_galu0_gates_never_change_during_training():
    members = [MemberSpec("galu0", 6, 3, 1e-2, 0.1), MemberSpec("galu0", 4, 5, 1e-3, 2.0)]
    x = _x(64, 3, seed=7).float()
    y = torch.sign(x[:, 0] * x[:, 1])
    stack = build_ensemble(members, 3, 1, 2)
    fresh = build_ensemble(members, 3, 1, 2)
    start = [p.detach().clone() for p in stack.parameters()]
    settings = EnsembleSettings(steps=30, lr=1e-2, batch_size=16)
    train_ensemble(stack, hinge_loss, x, y, [m.seed for m in stack.members], settings)
    trained, new = stack.blocks[0], fresh.blocks[0]
    for layer in range(2):
        assert torch.equal(trained.gates(layer)[0], new.gates(layer)[0])  # bit-identical
        assert torch.equal(trained.hidden(x)[1][layer], new.hidden(x)[1][layer])
    # ... while every trained weight moved.
    assert all(not torch.equal(p, q) for p, q in zip(stack.parameters(), start, strict=True))
    assert all(not b.requires_grad for b in trained.buffers())


def test_no_gradient_reaches_the_galu0_gates():
    net = GatedEnsemble("galu0", **GALU0, gate_scales=[0.1, 1.0])
    assert not any(name.startswith("gate") for name, _ in net.named_parameters())
    for layer in range(2):
        net.gates(layer)[0].requires_grad_(True)  # even if asked for, none arrives
    net(_x(9, 8, seed=8)).square().sum().backward()
    assert all(net.gates(layer)[0].grad is None for layer in range(2))
    assert net.weights[0].grad.abs().sum() > 0
    # The previous-layer sigmoid ablation does pass gradient through its gate.
    prev = GatedEnsemble("galu_sigmoid_prev", **GALU0, gate_scales=[0.1, 1.0])
    prev.gate_1.requires_grad_(True)
    prev(_x(9, 8, seed=8)).square().sum().backward()
    assert prev.gate_1.grad is not None and prev.gate_1.grad.abs().sum() > 0


def test_galu0_second_layer_gates_are_a_function_of_x_alone():
    x = _x(13, 8, seed=9)
    for kind, depends_on_layer_one in (("galu0", False), ("galu_sigmoid_prev", True)):
        net = GatedEnsemble(kind, **GALU0, gate_scales=[0.1, 0.1])
        with torch.no_grad():
            net.biases[0].normal_()
        before_h, before = net.hidden(x)
        with torch.no_grad():  # permute the first layer's units, and their biases
            perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
            net.weights[0].copy_(net.weights[0][:, perm])
            net.biases[0].copy_(net.biases[0][:, perm])
        after_h, after = net.hidden(x)
        assert torch.equal(before[0], after[0])  # layer 1 reads x in both models
        assert torch.equal(before[1], after[1]) is not depends_on_layer_one
        assert not torch.allclose(before_h, after_h)  # the network did change
