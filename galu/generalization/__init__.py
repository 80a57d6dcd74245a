"""Do GaLU networks generalize like ReLU networks? (Fiat et al., arXiv 1906.05032, sec. 5)

- :mod:`~galu.generalization.models`: ensembles of deep relu, galu0 (the paper's model)
  and the ablations galu (step gates) and galu_sigmoid_prev nets
  and the linear baseline, with member-wise learning rates;
- :mod:`~galu.generalization.layout`: how a grid's networks are grouped into ensembles;
- :mod:`~galu.generalization.features`: PCA + standardization fitted on training data,
  the validation split;
- :mod:`~galu.generalization.tasks`: Gaussian clusters, linearly separable data, parity;
- :mod:`~galu.generalization.training`: train a member list as one ensemble, score it;
- :mod:`~galu.generalization.selection`: validation- vs test-selected hyper-parameters;
- :mod:`~galu.generalization.experiments`: the four experiments as tidy tables;
- :mod:`~galu.generalization.accuracy`: the ``accuracy.csv`` layout they are stacked into;
- :mod:`~galu.generalization.figures`: the figures drawn from those tables.

The package imports nothing itself: the jobs that only read tables (the accuracy table,
the figures) then start without torch. Import from the submodules.
"""
