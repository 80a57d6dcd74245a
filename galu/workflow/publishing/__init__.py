"""A finished run carried across machines and sittings: ``galu publish`` and ``galu resume``.

:mod:`~galu.workflow.publishing.publish` with the publication's manifest and run state
(:mod:`~galu.workflow.publishing.publication_manifest`), and
:mod:`~galu.workflow.publishing.resume`; where publications live is
:mod:`galu.workflow.publication_folders`, their README section
:mod:`galu.workflow.pages.publication_readme`.
"""
