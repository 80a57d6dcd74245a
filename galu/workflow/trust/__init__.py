"""The trust chain's checks: whether a file is what its sidecar says, where it came from,
and whether the ledger's evidence holds.

The audit and the lineage of an output (:mod:`~galu.workflow.trust.audit`,
:mod:`~galu.workflow.trust.lineage`), and the checks of the ledger of number-neutral code
changes (:mod:`galu.workflow.equivalence`): running both commits' rules
(:mod:`~galu.workflow.trust.equivalence_check`), recomputing an entry's closures
(:mod:`~galu.workflow.trust.ledger_verify`) and shortening it to what is still recorded
(:mod:`~galu.workflow.trust.ledger_compact`). No module here is in a job's code closure.
"""
