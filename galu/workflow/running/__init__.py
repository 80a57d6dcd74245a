"""A run while it happens: the hooks the Snakefile calls and what they call.

The run's hooks (:mod:`~galu.workflow.running.run_hooks`): the pre-flight that sets damaged
files aside (:mod:`~galu.workflow.running.preflight` and its findings and repairs), outputs
kept when their inputs kept their bytes (:mod:`~galu.workflow.running.mtimes`), the last good
outputs put back after a failure (:mod:`~galu.workflow.running.lastgood`), the warm job
interpreters (:mod:`~galu.workflow.running.warm_jobs`) and Snakemake's own records
(:mod:`~galu.workflow.running.snakemake_metadata`).
"""
