"""Do GaLU networks generalize like ReLU networks? (Fiat et al., arXiv 1906.05032, sec. 5)

- :mod:`~galu.generalization.models`: ensembles of deep relu, galu0 (the paper's model)
  and the ablations galu (step gates) and galu_sigmoid_prev nets
  and the linear baseline, with member-wise learning rates;
- :mod:`~galu.generalization.features`: PCA + standardization fitted on training data,
  the validation split;
- :mod:`~galu.generalization.tasks`: Gaussian clusters, linearly separable data, parity;
- :mod:`~galu.generalization.training`: train a member list as one ensemble, score it;
- :mod:`~galu.generalization.selection`: validation- vs test-selected hyper-parameters;
- :mod:`~galu.generalization.experiments`: the four experiments as tidy tables.
"""

from galu.generalization.experiments import (
    CONTRACT_COLUMNS,
    DATASETS,
    IMAGE_DATASETS,
    SYNTHETIC_DATASETS,
    ClusterSettings,
    ImageSettings,
    LinearSettings,
    ParitySettings,
    SyntheticSettings,
    accuracy_table,
    clusters_table,
    image_accuracy,
    image_experiment,
    linear_table,
    parity_table,
)
from galu.generalization.models import MODELS, MemberSpec, build_ensemble

__all__ = [
    "CONTRACT_COLUMNS",
    "DATASETS",
    "IMAGE_DATASETS",
    "MODELS",
    "SYNTHETIC_DATASETS",
    "ClusterSettings",
    "ImageSettings",
    "LinearSettings",
    "MemberSpec",
    "ParitySettings",
    "SyntheticSettings",
    "accuracy_table",
    "build_ensemble",
    "clusters_table",
    "image_accuracy",
    "image_experiment",
    "linear_table",
    "parity_table",
]
