"""galu: reproduce three papers on how ReLU networks learn.

Library code only: pure functions and small classes, importable without
Snakemake or a GPU. The workflow (``Snakefile``, ``scripts/``) calls into it.
"""

__version__ = "0.1.0"
