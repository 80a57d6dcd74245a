"""galu: reproduce three papers on how ReLU networks learn.

- the papers, one package each: :mod:`galu.memorization` and :mod:`galu.generalization`
  (GaLU, Fiat, Malach & Shalev-Shwartz), :mod:`galu.scm` (ReLU soft committee machines,
  Straat & Biehl), :mod:`galu.normalization` (static activation normalization, Richemond
  & Guo); each declares its workflow stage in its ``stage.py`` (:mod:`galu.declarations`);
- the shared science: :mod:`galu.ensembles` (networks trained side by side, exact least
  squares), :mod:`galu.activations`, :mod:`galu.seeding`, :mod:`galu.device`,
  :mod:`galu.plotting` (the house style), :mod:`galu.progress`, :mod:`galu.atomic`;
- :mod:`galu.workflow`: the machinery (configuration, data, provenance, claims, report,
  costs, publication, the command line), which the science never imports.

Library code: pure functions and small classes, importable without Snakemake or a GPU. The
workflow (``Snakefile``, ``scripts/``) calls into it.
"""

__version__ = "0.1.0"
