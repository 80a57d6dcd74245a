"""GaLU capacity: how many neurons memorize m random examples (Fiat, Malach &
Shalev-Shwartz, *Decoupling Gating from Linearity*, arXiv 1906.05032, sec. 3).

- :mod:`~galu.memorization.fitting`: random tasks and many small networks fitted at once
  (trained ReLU/GaLU ensembles, the exact least-squares GaLU optimum);
- :mod:`~galu.memorization.width_search`: lock-step searches for the smallest width at
  which a success oracle holds;
- :mod:`~galu.memorization.grid`: the under-parameterized grid ``k d <= m``;
- :mod:`~galu.memorization.search_parts`: a search grid split into jobs and stacked back;
- :mod:`~galu.memorization.experiments`: the under-parameterized loss and the minimal
  widths as tidy tables (``underparam.csv``, ``min_width.csv``);
- :mod:`~galu.memorization.figures`: the stage's figures drawn from those tables.

The networks, their trainer and the exact solver are shared with the generalization study
and live in :mod:`galu.ensembles`. Nothing is imported here, so a job that needs one module
(the stacking job: :mod:`~galu.memorization.search_parts`) depends on that module alone.
"""
