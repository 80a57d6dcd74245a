"""One-hidden-layer GaLU/ReLU ensembles (galu.ensembles.networks): outputs, gates, masking, init."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from galu.ensembles.networks import GaLUNet, ReLUNet, make_model, readout_product
from galu.seeding import derive_seed

F64 = torch.float64


def _inputs(shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _by_hand(net: GaLUNet | ReLUNet, x: torch.Tensor, e: int) -> np.ndarray:
    """Member e's outputs with an explicit loop over units (the paper's formulas)."""
    xs = x.numpy()
    if net.bias:
        xs = np.hstack([xs, np.ones((len(xs), 1))])
    w, a = net.weight[e].detach().numpy(), net.readout[e].detach().numpy()
    out = np.zeros((len(xs), net.out_dim))
    for j in range(net.member_widths[e]):
        z = xs @ w[j]
        if isinstance(net, GaLUNet):
            h = (xs @ net.gates[e, j].numpy() >= 0) * z
        else:
            h = np.maximum(z, 0.0)
        out += h[:, None] * a[j][None, :]
    if net.bias:
        out += net.out_bias[e].detach().numpy()
    return out


@pytest.mark.parametrize("kind", ["relu", "galu"])
@pytest.mark.parametrize("bias", [False, True])
def test_forward_matches_the_formula_unit_by_unit(kind: str, bias: bool) -> None:
    net = make_model(kind, 3, widths=[2, 5], seeds=[7, 8], out_dim=2, bias=bias, dtype=F64)
    if bias:
        with torch.no_grad():
            net.out_bias.copy_(torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=F64))
    x = _inputs((6, 3))
    out = net(x)
    assert out.shape == (2, 6, 2)
    for e in range(2):
        np.testing.assert_allclose(out[e].detach().numpy(), _by_hand(net, x, e), atol=1e-12)


@pytest.mark.parametrize("bias", [False, True])
def test_galu_with_gates_equal_to_weights_is_exactly_the_relu_network(bias: bool) -> None:
    relu = ReLUNet(4, [3, 6], [1, 2], out_dim=3, bias=bias, dtype=F64)
    galu = GaLUNet(4, [3, 6], [1, 2], out_dim=3, bias=bias, dtype=F64)
    with torch.no_grad():
        galu.gates.copy_(relu.weight)
        galu.weight.copy_(relu.weight)
        galu.readout.copy_(relu.readout)
        if bias:
            relu.out_bias.fill_(0.3)
            galu.out_bias.fill_(0.3)
    x = _inputs((50, 4), seed=3)
    assert torch.equal(galu(x), relu(x))
    # With their own random gates the two networks differ.
    assert not torch.allclose(GaLUNet(4, [3, 6], [1, 2], 3, bias, F64)(x), relu(x))


def test_gates_are_fixed_buffers_and_get_no_gradient() -> None:
    net = GaLUNet(3, [4], [0])
    assert "gates" in dict(net.named_buffers())
    assert "gates" not in dict(net.named_parameters())
    net(_inputs((5, 3)).float()).sum().backward()
    assert net.weight.grad is not None and net.gates.grad is None


def test_padded_narrow_member_computes_what_it_computes_alone() -> None:
    x = _inputs((20, 5), seed=1)
    for kind in ("relu", "galu"):
        alone = make_model(kind, 5, [3], [11], out_dim=2, dtype=F64)
        padded = make_model(kind, 5, [3, 9, 1], [11, 12, 13], out_dim=2, dtype=F64)
        # Same initial numbers for the real units, exact zeros in the padding.
        assert torch.equal(padded.weight[0, :3], alone.weight[0])
        assert torch.equal(padded.readout[0, :3], alone.readout[0])
        assert torch.count_nonzero(padded.weight[0, 3:]) == 0
        torch.testing.assert_close(padded(x)[0], alone(x)[0], rtol=0, atol=1e-14)


def test_mask_silences_padded_units_even_if_their_weights_are_nonzero() -> None:
    net = GaLUNet(3, [2, 4], [0, 1], dtype=F64)
    x = _inputs((7, 3))
    before = net(x)
    with torch.no_grad():
        net.weight[0, 2:] = 5.0
        net.readout[0, 2:] = 5.0
    assert torch.equal(net(x), before)
    assert net.mask.tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]


def test_shared_and_per_member_inputs_agree() -> None:
    net = ReLUNet(3, [2, 3], [0, 1], dtype=F64)
    x = _inputs((4, 3))
    torch.testing.assert_close(net(x), net(x.expand(2, 4, 3)), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_readout_product_gradients_are_bit_identical_to_bmm(dtype: torch.dtype) -> None:
    # The single-output backward of wide ensembles is a broadcast product; it must give
    # autograd's bmm numbers exactly, signed zeros included (zero readouts of padded
    # units, zero errors).
    gen = torch.Generator().manual_seed(4)
    h = torch.randn(9, 33, 12, generator=gen, dtype=dtype)
    readout = torch.randn(9, 12, 1, generator=gen, dtype=dtype)
    readout[:, 8:] = 0.0
    grad = torch.randn(9, 33, 1, generator=gen, dtype=dtype)
    grad[:, :4], grad[:, 4:8] = 0.0, -0.0
    grads = []
    for product in (torch.bmm, readout_product):
        leaves = (h.clone().requires_grad_(), readout.clone().requires_grad_())
        product(*leaves).backward(grad)
        grads.append([leaf.grad for leaf in leaves])
    for ours, reference in zip(grads[1], grads[0], strict=True):
        assert torch.equal(ours, reference)
        assert torch.equal(ours.signbit(), reference.signbit())


def test_initialization_is_he_for_weights_and_fan_in_for_readout() -> None:
    # Monte Carlo over 400k weights: sample variances within 4 standard errors.
    d, k = 50, 8000
    net = ReLUNet(d, [k], [5], out_dim=1, dtype=F64)
    w, a = net.weight.detach().numpy().ravel(), net.readout.detach().numpy().ravel()
    assert abs(w.var() - 2 / d) < 4 * (2 / d) * np.sqrt(2 / w.size)
    assert abs(a.var() - 1 / k) < 4 * (1 / k) * np.sqrt(2 / a.size)
    assert abs(w.mean()) < 4 * np.sqrt(2 / d / w.size)
    gates = GaLUNet(d, [k], [5], dtype=F64).gates.numpy().ravel()
    assert abs(gates.var() - 1.0) < 4 * np.sqrt(2 / gates.size)
    # The ReLU keeps E h^2 = |x|^2 / d at the He scale: here E [x.w]_+^2 = 1 for |x|^2 = d.
    x = _inputs((200, d), seed=9)
    h2 = torch.relu(x @ net.weight[0].T).pow(2).mean().item()
    assert abs(h2 - 1.0) < 0.05


def test_same_seed_same_network_and_members_do_not_see_each_other() -> None:
    a = GaLUNet(4, [3, 5], [1, 2])
    b = GaLUNet(4, [5, 3, 6], [2, 1, 9])
    assert torch.equal(a.weight[0, :3], b.weight[1, :3])
    assert torch.equal(a.gates[1], b.gates[0, :5])
    assert torch.equal(a.readout[1], b.readout[0, :5])
    assert not torch.equal(a.weight[0, :3], a.weight[1, :3])


def test_derive_seed_is_deterministic_and_separates_streams() -> None:
    assert derive_seed(3, "init") == derive_seed(3, "init")
    seeds = {derive_seed(s, t) for s in range(20) for t in ("weight", "gates", "batches")}
    assert len(seeds) == 60
    assert all(0 <= s < 2**63 for s in seeds)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: make_model("tanh", 3, [2], [0]), "model kind must be one of"),
        (lambda: GaLUNet(3, [2, 3], [0]), "one entry per member"),
        (lambda: GaLUNet(3, [], []), "at least one member"),
        (lambda: GaLUNet(3, [0], [0]), "widths must be integers >= 1"),
        (lambda: GaLUNet(0, [2], [0]), "in_dim must be an integer >= 1, got 0"),
        (lambda: ReLUNet(3, [2], [0], out_dim=0), "out_dim must be an integer >= 1"),
        (lambda: derive_seed(-1, "x"), "seed must be a non-negative integer, got -1"),
        (lambda: GaLUNet(3, [2], [0], in_dims=[4]), r"in_dims must give one size in \[1, 3\]"),
        (lambda: ReLUNet(3, [2, 2], [0, 1], out_dim=2, out_dims=[1]), "out_dims must give"),
        (lambda: GaLUNet(3, [2], [0])(torch.zeros(4, 2)), r"x must have shape \(batch, 3\)"),
        (lambda: GaLUNet(3, [2], [0])(torch.zeros(2, 4, 3)), "x has 2 members"),
    ],
)
def test_bad_arguments_raise_clear_errors(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
