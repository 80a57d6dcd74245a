"""The workflow machinery around the papers' science: what runs, records and checks the
experiments, never part of a result's numbers except through the code it calls.

Its rooms, each opening with what it is for, in layers (a room imports only its own layer
and those before it; ``tests/test_import_cycles.py``):

1. this package's own modules and :mod:`galu.workflow.data`: what a job's code closure may
   hold (the modules declaring ``RESULT_CODE``: how tables, figures, captions, the verdict
   and the prepared datasets are written and read, :mod:`~galu.workflow.output`,
   :mod:`~galu.workflow.claims`, :mod:`~galu.workflow.landing`, ...), and the records every
   room reads: :mod:`~galu.workflow.provenance` (sidecars, sealed by
   :mod:`~galu.workflow.sidecar_seal` and shaped by :mod:`~galu.workflow.sidecar_shape`),
   :mod:`~galu.workflow.closure` (code closures), :mod:`~galu.workflow.equivalence` (the
   ledger of number-neutral changes), :mod:`~galu.workflow.tables` (column contracts),
   :mod:`~galu.workflow.vouch`, :mod:`~galu.workflow.feedback`,
   :mod:`~galu.workflow.terminal`, :mod:`~galu.workflow.publication_folders`;
2. :mod:`galu.workflow.settings`: the configuration and the command line;
3. :mod:`galu.workflow.planning`: costs, the jobs read back from Snakemake's DAG, the plan;
4. :mod:`galu.workflow.trust`: the audit, the lineage, the ledger's checks;
5. :mod:`galu.workflow.running`: the run's hooks, the pre-flight, warm jobs;
6. :mod:`galu.workflow.pages`: comparisons, explanations, the README's generated parts, the
   report's build, the DVC views;
7. :mod:`galu.workflow.publishing`: ``galu publish`` and ``galu resume``;
8. the command line: :mod:`~galu.workflow.cli` and one module per command in
   :mod:`galu.workflow.commands`.

The science (the paper packages, :mod:`galu.ensembles`, :mod:`galu.activations`,
:mod:`galu.seeding`, :mod:`galu.plotting`, ...) never imports this package
(``tests/test_import_cycles.py`` checks it).
"""
