"""Synthetic tasks: Gaussian clusters, linearly separable data, parity (Fiat et al. sec. 5)."""

from __future__ import annotations

import numpy as np
import pytest

from galu.generalization.tasks import (
    gaussian_clusters,
    linearly_separable,
    parity,
    parity_labels,
)


def test_parity_labels_of_a_tiny_matrix():
    x = np.array([[1, -1, 1], [-1, -1, 1], [-1, 1, -1]])
    np.testing.assert_array_equal(parity_labels(x, np.array([0, 1])), [-1, 1, -1])
    np.testing.assert_array_equal(parity_labels(x, np.array([2])), [1, 1, -1])


@pytest.mark.parametrize("s", [1, 2, 4, 8])
def test_parity_labels_are_the_product_of_the_chosen_bits(s):
    task = parity(200, 100, 30, s, seed=4)
    subset = task.info["subset"]
    assert len(subset) == s and len(set(subset.tolist())) == s
    for x, y in ((task.x_train, task.y_train), (task.x_test, task.y_test)):
        assert set(np.unique(x)) == {-1.0, 1.0}
        np.testing.assert_array_equal(y, np.prod(x[:, subset], axis=1))
    # Flipping one chosen bit flips every label; flipping another bit changes none.
    x = task.x_train.copy()
    x[:, subset[0]] *= -1
    np.testing.assert_array_equal(parity_labels(x, subset), -task.y_train)
    other = np.setdiff1d(np.arange(30), subset)[0]
    x = task.x_train.copy()
    x[:, other] *= -1
    np.testing.assert_array_equal(parity_labels(x, subset), task.y_train)


def test_parity_subsets_are_nested_and_inputs_shared_across_sizes():
    small, large = parity(50, 10, 30, 2, seed=1), parity(50, 10, 30, 8, seed=1)
    assert set(small.info["subset"]) < set(large.info["subset"])
    np.testing.assert_array_equal(small.x_train, large.x_train)
    assert not np.array_equal(parity(50, 10, 30, 2, seed=2).x_train, small.x_train)


def test_clusters_without_noise_label_each_centre_consistently():
    for task in ("regression", "classification"):
        data = gaussian_clusters(task, 0.0, seed=3, n_train=300, n_test=100, n_centres=5, dim=4)
        centre = data.info["centre"]
        labels = np.concatenate([data.y_train, data.y_test])
        for c in range(5):
            assert np.unique(labels[centre == c]).size == 1
        assert data.x_train.shape == (300, 4) and data.x_test.shape == (100, 4)


def test_cluster_noise_is_the_only_change_along_sigma():
    clean = gaussian_clusters("regression", 0.0, seed=2, n_train=4000, n_test=1000)
    noisy = gaussian_clusters("regression", 0.5, seed=2, n_train=4000, n_test=1000)
    np.testing.assert_array_equal(clean.x_train, noisy.x_train)
    noise = np.concatenate([noisy.y_train - clean.y_train, noisy.y_test - clean.y_test])
    assert abs(noise.std() - 0.5) < 0.5 * 4 / np.sqrt(2 * noise.size)
    assert abs(noise.mean()) < 4 * 0.5 / np.sqrt(noise.size)


def test_cluster_label_flips_happen_with_probability_half_sigma():
    clean = gaussian_clusters("classification", 0.0, seed=2, n_train=8000, n_test=2000)
    noisy = gaussian_clusters("classification", 0.6, seed=2, n_train=8000, n_test=2000)
    flipped = np.mean(
        np.concatenate([clean.y_train != noisy.y_train, clean.y_test != noisy.y_test])
    )
    assert abs(flipped - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 10000)
    # Inputs sit within a few `spread` of their centre: x = c + 0.1 xi.
    x = np.concatenate([clean.x_train, clean.x_test])
    same = clean.info["centre"] == clean.info["centre"][0]
    assert np.abs(x[same] - x[same].mean(axis=0)).max() < 0.6


def test_linear_labels_are_the_teachers_signs_and_sizes_nest():
    small = linearly_separable(20, 500, 30, seed=7)
    large = linearly_separable(80, 500, 30, seed=7)
    teacher = small.info["teacher"]
    np.testing.assert_array_equal(small.y_train, np.where(small.x_train @ teacher >= 0, 1.0, -1.0))
    np.testing.assert_array_equal(large.x_train[:20], small.x_train)
    np.testing.assert_array_equal(large.x_test, small.x_test)
    assert 0.3 < np.mean(small.y_test > 0) < 0.7


def test_same_seed_same_data():
    a = gaussian_clusters("classification", 0.4, seed=9, n_train=50, n_test=20)
    b = gaussian_clusters("classification", 0.4, seed=9, n_train=50, n_test=20)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    np.testing.assert_array_equal(a.y_train, b.y_train)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: gaussian_clusters("ranking", 0.1, 0), "task must be one of"),
        (lambda: gaussian_clusters("classification", 2.5, 0), r"sigma_y for classification"),
        (lambda: gaussian_clusters("regression", -0.1, 0), r"sigma_y for regression"),
        (lambda: gaussian_clusters("regression", 0.1, 0, n_train=0), "n_train must be"),
        (lambda: parity(10, 10, 5, 6, 0), r"subset_size must be an int in \[1, dim=5\], got 6"),
        (lambda: linearly_separable(10, 10, 0, 0), "dim must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
