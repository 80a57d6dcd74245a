"""Image features for the MNIST experiments: PCA to 64 dims, standardized, with a validation split.

Fiat, Malach & Shalev-Shwartz (arXiv 1906.05032), section 5: the networks see MNIST and
Fashion-MNIST projected on their first 64 principal components. Every statistic here
(the PCA mean and directions, the per-component mean and scale) is fitted on the
training part only and then applied unchanged to validation and test images, so
nothing about held-out data leaks into the inputs. The validation part is cut from the
training set *before* fitting, for the same reason: hyper-parameters chosen on it are
chosen on data the features never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galu.seeding import derive_seed


@dataclass(frozen=True)
class Pca:
    """Projection ``(x - mean) @ components.T`` on the top principal directions.

    ``components`` ``(k, d)`` are orthonormal rows sorted by decreasing ``variance``;
    each row's sign is fixed so that its largest-magnitude entry is positive, which
    makes the projection independent of the eigensolver's sign choice.
    """

    mean: np.ndarray
    components: np.ndarray
    variance: np.ndarray

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = _as_matrix(x, "x")
        if x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"x must have {self.mean.shape[0]} columns, got {x.shape[1]}")
        return (x - self.mean) @ self.components.T


def _as_matrix(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"{name} must be a (n >= 2, d) matrix, got shape {x.shape}")
    return x


def fit_pca(x_train: np.ndarray, n_components: int) -> Pca:
    """Principal components of ``x_train`` (rows are samples), from its covariance.

    Eigen-decomposition of the ``d x d`` covariance in float64: cheaper than an SVD of
    the data for ``n >> d`` and exact to rounding.
    """
    x = _as_matrix(x_train, "x_train")
    if not (isinstance(n_components, int) and 1 <= n_components <= x.shape[1]):
        raise ValueError(f"n_components must be an int in [1, {x.shape[1]}], got {n_components!r}")
    mean = x.mean(axis=0)
    centred = x - mean
    cov = centred.T @ centred / (x.shape[0] - 1)
    values, vectors = np.linalg.eigh(cov)
    top = np.argsort(values)[::-1][:n_components]
    components = vectors[:, top].T
    signs = np.sign(components[np.arange(n_components), np.abs(components).argmax(axis=1)])
    return Pca(mean=mean, components=components * signs[:, None], variance=values[top])


@dataclass(frozen=True)
class Standardizer:
    """``(z - mean) / scale`` per column, with training-set ``mean`` and ``scale``."""

    mean: np.ndarray
    scale: np.ndarray

    def transform(self, z: np.ndarray) -> np.ndarray:
        return (np.asarray(z, dtype=np.float64) - self.mean) / self.scale


def fit_standardizer(z_train: np.ndarray) -> Standardizer:
    """Column means and standard deviations of ``z_train``; a constant column is an error."""
    z = _as_matrix(z_train, "z_train")
    scale = z.std(axis=0)
    flat = np.flatnonzero(scale <= 1e-12 * max(1.0, float(np.abs(z).max())))
    if flat.size:
        raise ValueError(
            f"z_train columns {flat.tolist()} are constant on the training set and cannot be "
            "standardized; use fewer principal components"
        )
    return Standardizer(mean=z.mean(axis=0), scale=scale)


def validation_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted index arrays ``(fit, validation)`` covering ``range(n)``.

    ``round(fraction * n)`` indices, chosen uniformly from the seed's own stream, go to
    validation; the same ``(n, fraction, seed)`` always gives the same split.
    """
    if not (isinstance(n, int) and n >= 2):
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    if not 0 < fraction < 1:
        raise ValueError(f"validation fraction must be in (0, 1), got {fraction!r}")
    n_val = round(fraction * n)
    if not 0 < n_val < n:
        raise ValueError(f"validation fraction {fraction} of n={n} leaves an empty part")
    rng = np.random.default_rng(derive_seed(seed, "validation_split"))
    order = rng.permutation(n)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def flatten_images(images: np.ndarray) -> np.ndarray:
    """Images ``(n, ...)`` of uint8 pixels -> ``(n, pixels)`` floats in [0, 1]."""
    images = np.asarray(images)
    if images.ndim < 2:
        raise ValueError(f"images must be (n, ...) with n samples, got shape {images.shape}")
    scale = 255.0 if images.dtype == np.uint8 else 1.0
    return images.reshape(images.shape[0], -1).astype(np.float64) / scale


@dataclass(frozen=True)
class ImageFeatures:
    """Standardized PCA features (float32) and integer labels of the three parts."""

    x_fit: np.ndarray
    y_fit: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def in_dim(self) -> int:
        return int(self.x_fit.shape[1])


def image_features(
    arrays: dict[str, np.ndarray],
    n_components: int,
    validation_fraction: float,
    seed: int,
    train_subset: int | None = None,
) -> ImageFeatures:
    """Split, fit PCA + standardization on the fit part, and transform all three parts.

    ``arrays`` holds ``x_train, y_train, x_test, y_test`` (a processed ``.npz``).
    ``train_subset`` keeps a seeded random subset of that many training images first
    (the quick scale); None keeps all. The test set is always used whole.
    """
    x, y = np.asarray(arrays["x_train"]), np.asarray(arrays["y_train"], dtype=np.int64)
    if train_subset is not None:
        if not (isinstance(train_subset, int) and 2 <= train_subset <= x.shape[0]):
            raise ValueError(
                f"train_subset must be an int in [2, {x.shape[0]}], got {train_subset!r}"
            )
        rng = np.random.default_rng(derive_seed(seed, "train_subset"))
        keep = np.sort(rng.choice(x.shape[0], size=train_subset, replace=False))
        x, y = x[keep], y[keep]
    # Subset before converting: the float64 copy of all 60,000 images is 376 MB.
    x = flatten_images(x)
    fit, val = validation_split(x.shape[0], validation_fraction, seed)
    pca = fit_pca(x[fit], n_components)
    standard = fit_standardizer(pca.transform(x[fit]))

    def features(part: np.ndarray) -> np.ndarray:
        return standard.transform(pca.transform(part)).astype(np.float32)

    x_test = flatten_images(arrays["x_test"])
    return ImageFeatures(
        x_fit=features(x[fit]),
        y_fit=y[fit],
        x_val=features(x[val]),
        y_val=y[val],
        x_test=features(x_test),
        y_test=np.asarray(arrays["y_test"], dtype=np.int64),
    )
