"""The workflow machinery around the papers' science: what runs, records and checks the
experiments, never part of a result's numbers except through the code it calls.

- configuration: :mod:`~galu.workflow.config` (schema), :mod:`~galu.workflow.consistency`,
  :mod:`~galu.workflow.runconfig`, :mod:`~galu.workflow.scales`, :mod:`~galu.workflow.sitekeys`,
  :mod:`~galu.workflow.profiles`;
- the stages: :mod:`~galu.workflow.stages` (every paper's ``stage.py`` declaration),
  :mod:`~galu.workflow.dag` (the jobs read back from Snakemake's DAG),
  :mod:`~galu.workflow.jobs`, :mod:`~galu.workflow.plot_job`, :mod:`~galu.workflow.cifar_job`,
  :mod:`~galu.workflow.warm_jobs`, :mod:`~galu.workflow.feedback`;
- data: :mod:`galu.workflow.data` (registry, download, verification, mirrors, preparation);
- provenance and trust: :mod:`~galu.workflow.provenance` (sidecars), :mod:`~galu.workflow.closure`
  (code closures), :mod:`~galu.workflow.equivalence`,
  :mod:`~galu.workflow.equivalence_check`, :mod:`~galu.workflow.ledger_verify` and
  :mod:`~galu.workflow.ledger_compact`, :mod:`~galu.workflow.audit`,
  :mod:`~galu.workflow.lineage`, :mod:`~galu.workflow.lastgood`, :mod:`~galu.workflow.preflight`
  (with :mod:`~galu.workflow.preflight_findings` and :mod:`~galu.workflow.preflight_repair`),
  :mod:`~galu.workflow.tables` (column contracts);
- the verdict and the report: :mod:`~galu.workflow.claims`, :mod:`~galu.workflow.claims_text`,
  :mod:`~galu.workflow.observations`, :mod:`~galu.workflow.precision`,
  :mod:`~galu.workflow.landing`, :mod:`~galu.workflow.report_build`,
  :mod:`~galu.workflow.readme_sections`, :mod:`~galu.workflow.readme_pages`,
  :mod:`~galu.workflow.publication_readme`,
  :mod:`~galu.workflow.rst`,
  :mod:`~galu.workflow.dvcplots`, :mod:`~galu.workflow.dvcstages`;
- costs and plans: :mod:`~galu.workflow.costs`, :mod:`~galu.workflow.costfit`,
  :mod:`~galu.workflow.plan`;
- carrying runs: :mod:`~galu.workflow.publish` (with :mod:`~galu.workflow.publication_folders`
  and :mod:`~galu.workflow.publication_manifest`), :mod:`~galu.workflow.resume`,
  :mod:`~galu.workflow.commits`, :mod:`~galu.workflow.snakemake_args`,
  :mod:`~galu.workflow.snakemake_metadata`; the command line: :mod:`~galu.workflow.cli` and
  one module per command in :mod:`galu.workflow.commands`.

The science (the paper packages, :mod:`galu.ensembles`, :mod:`galu.activations`,
:mod:`galu.seeding`, :mod:`galu.plotting`, ...) never imports this package
(``tests/test_import_cycles.py`` checks it).
"""
