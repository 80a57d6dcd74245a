"""PCA, standardization and the validation split of the MNIST experiments (Fiat et al. sec. 5)."""

from __future__ import annotations

import numpy as np
import pytest

from galu.generalization.features import (
    fit_pca,
    fit_standardizer,
    flatten_images,
    image_features,
    validation_split,
)


def test_pca_of_a_rectangle_is_exact():
    x = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 2.0], [4.0, 2.0]])
    pca = fit_pca(x, 2)
    np.testing.assert_allclose(pca.mean, [2.0, 1.0])
    np.testing.assert_allclose(pca.variance, [16 / 3, 4 / 3])
    np.testing.assert_allclose(np.abs(pca.components), np.eye(2), atol=1e-15)
    np.testing.assert_allclose(pca.transform(np.array([[4.0, 2.0], [2.0, 1.0]])), [[2, 1], [0, 0]])


def test_pca_signs_are_fixed_and_components_orthonormal():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 6)) @ rng.standard_normal((6, 6))
    pca = fit_pca(x, 4)
    np.testing.assert_allclose(pca.components @ pca.components.T, np.eye(4), atol=1e-12)
    peaks = pca.components[np.arange(4), np.abs(pca.components).argmax(axis=1)]
    assert np.all(peaks > 0)
    assert np.all(np.diff(pca.variance) <= 0)
    # Flipping the data's sign flips no component: the sign rule does not depend on it.
    np.testing.assert_allclose(fit_pca(-x, 4).components, pca.components, atol=1e-10)


def test_standardizer_uses_training_statistics():
    standard = fit_standardizer(np.array([[1.0, 10.0], [3.0, 30.0]]))
    np.testing.assert_allclose(standard.mean, [2.0, 20.0])
    np.testing.assert_allclose(standard.scale, [1.0, 10.0])
    np.testing.assert_allclose(standard.transform(np.array([[5.0, 0.0]])), [[3.0, -2.0]])


def test_constant_column_is_refused_with_its_index():
    with pytest.raises(ValueError, match=r"columns \[1\] are constant"):
        fit_standardizer(np.array([[1.0, 2.0], [3.0, 2.0]]))


def _images(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Small uint8 'images' whose mean brightness pattern depends on the class."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    base = rng.integers(0, 200, size=(10, 4, 5))
    noise = rng.integers(0, 56, size=(n, 4, 5))
    return (base[labels] + noise).astype(np.uint8), labels


def _arrays(test_seed: int = 1) -> dict[str, np.ndarray]:
    x_train, y_train = _images(0, 300)
    x_test, y_test = _images(test_seed, 50)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


def test_features_are_fitted_on_the_training_part_only():
    a = image_features(_arrays(test_seed=1), 8, 0.1, seed=3)
    b = image_features(_arrays(test_seed=2), 8, 0.1, seed=3)
    # A different test set changes neither the projection nor the standardization...
    np.testing.assert_array_equal(a.x_fit, b.x_fit)
    np.testing.assert_array_equal(a.x_val, b.x_val)
    # ...and the same test image maps to the same features under both.
    arrays = _arrays(test_seed=1)
    changed = {**arrays, "x_test": np.concatenate([arrays["x_test"][:10], _images(9, 5)[0]])}
    c = image_features(changed, 8, 0.1, seed=3)
    np.testing.assert_array_equal(c.x_test[:10], a.x_test[:10])
    # Standardized with the fit part's own statistics: exact there, not on held-out parts.
    np.testing.assert_allclose(a.x_fit.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(a.x_fit.std(axis=0), 1.0, atol=1e-5)
    assert np.abs(a.x_val.mean(axis=0)).max() > 1e-3


def test_features_do_not_see_the_validation_part():
    arrays = _arrays()
    base = image_features(arrays, 8, 0.1, seed=3)
    _, val = validation_split(300, 0.1, 3)
    altered = arrays["x_train"].copy()
    altered[val] = 255 - altered[val]
    other = image_features({**arrays, "x_train": altered}, 8, 0.1, seed=3)
    np.testing.assert_array_equal(other.x_fit, base.x_fit)
    np.testing.assert_array_equal(other.x_test, base.x_test)
    assert base.x_fit.shape == (270, 8) and base.x_val.shape == (30, 8)
    assert base.x_fit.dtype == np.float32 and base.y_fit.dtype == np.int64


def test_validation_split_is_disjoint_complete_and_seeded():
    fit, val = validation_split(1000, 0.1, seed=5)
    assert len(val) == 100 and len(fit) == 900
    assert np.intersect1d(fit, val).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([fit, val])), np.arange(1000))
    again_fit, again_val = validation_split(1000, 0.1, seed=5)
    np.testing.assert_array_equal(again_val, val)
    np.testing.assert_array_equal(again_fit, fit)
    assert not np.array_equal(validation_split(1000, 0.1, seed=6)[1], val)


def test_train_subset_is_seeded():
    arrays = _arrays()
    a = image_features(arrays, 4, 0.2, seed=0, train_subset=100)
    b = image_features(arrays, 4, 0.2, seed=0, train_subset=100)
    c = image_features(arrays, 4, 0.2, seed=1, train_subset=100)
    np.testing.assert_array_equal(a.x_fit, b.x_fit)
    assert a.x_fit.shape == (80, 4) and a.x_val.shape == (20, 4)
    assert not np.array_equal(a.y_fit, c.y_fit)


def test_flatten_scales_bytes_to_unit_interval():
    images = np.array([[[0, 255], [51, 102]]], dtype=np.uint8)
    np.testing.assert_allclose(flatten_images(images), [[0.0, 1.0, 0.2, 0.4]])


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: validation_split(10, 1.0, 0), r"validation fraction must be in \(0, 1\), got 1.0"),
        (lambda: validation_split(10, 0.01, 0), "leaves an empty part"),
        (lambda: validation_split(1, 0.5, 0), "n must be an int >= 2, got 1"),
        (lambda: fit_pca(np.ones((5, 3)), 4), r"n_components must be an int in \[1, 3\], got 4"),
        (lambda: fit_pca(np.ones(3), 1), r"x_train must be a \(n >= 2, d\) matrix"),
        (lambda: image_features(_arrays(), 4, 0.1, 0, 1000), r"train_subset must be an int in"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
