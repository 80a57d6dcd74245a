"""What a run is asked to do: the configuration and the command line, checked before any job.

The configuration files and their schema (:mod:`~galu.workflow.settings.config`), the
cross-key checks (:mod:`~galu.workflow.settings.consistency`), the configuration a command
line assembles (:mod:`~galu.workflow.settings.runconfig`), the site's keys
(:mod:`~galu.workflow.settings.sitekeys`), the cluster profiles
(:mod:`~galu.workflow.settings.profiles`) and the Snakemake command line's traps
(:mod:`~galu.workflow.settings.snakemake_args`).
"""
