"""What a configuration will cost, before it runs.

The cost model and its fit (:mod:`~galu.workflow.planning.costs`,
:mod:`~galu.workflow.planning.costfit`), the jobs read back from Snakemake's DAG
(:mod:`~galu.workflow.planning.dag`), the stages' order (:mod:`~galu.workflow.planning.jobs`)
and ``galu plan`` (:mod:`~galu.workflow.planning.plan`).
"""
