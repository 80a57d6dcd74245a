"""One-hidden-layer GaLU and ReLU networks trained many at a time, shared by the GaLU
paper's memorization and generalization studies (Fiat, Malach & Shalev-Shwartz,
*Decoupling Gating from Linearity*, arXiv 1906.05032, sections 3 and 5).

- :mod:`~galu.ensembles.networks`: the GaLU (fixed random gates) and ReLU networks, each
  parameter with a leading member dimension so that many networks run as one;
- :mod:`~galu.ensembles.training`: trains every member of such an ensemble on its own loss,
  exactly as if alone (:func:`~galu.ensembles.training.train_ensemble`);
- :mod:`~galu.ensembles.least_squares`: the exact squared-loss optimum of a GaLU network
  with its gates fixed, a least-squares problem over random features.

Nothing is imported here, so a job depends only on the modules it uses.
"""
