"""Static activation normalization (Richemond & Guo, *Static Activation Function
Normalization*, arXiv 1905.01369).

- :mod:`~galu.normalization.coefficients`: the Gaussian moments alpha, beta, gamma of an
  activation (by :mod:`~galu.normalization.quadrature`) and the normalized activation;
- :mod:`~galu.normalization.isometry`: static isometry, spectra of ``(1/n) f(Z) f(Z)^T``
  against Marchenko-Pastur;
- :mod:`~galu.normalization.mlp`, :mod:`~galu.normalization.stacked`,
  :mod:`~galu.normalization.lr_sweep`, :mod:`~galu.normalization.trainability`: deep plain
  MLPs on CIFAR-10 (:mod:`~galu.normalization.cifar`), trained side by side, and the
  maximal trainable depth;
- :mod:`~galu.normalization.ablation`: optimizers, learning rates and gains at one depth;
- :mod:`~galu.normalization.spectra`, :mod:`~galu.normalization.correlation`: layer and
  Jacobian spectra, correlation propagation; :mod:`~galu.normalization.mean_field`: their
  mean-field maps, fixed points and depth scales;
- :mod:`~galu.normalization.stage`: what the stage declares (its figures and their tables);
  :mod:`~galu.normalization.figures`: the figures drawn from those tables.

Nothing is imported here, so a job (or the workflow reading the stage's declaration)
depends only on the modules it imports.
"""
