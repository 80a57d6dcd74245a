"""What a reader sees beside the run's own pages: comparisons, explanations, the README's
generated parts, the report's build and the DVC views.

:mod:`~galu.workflow.pages.compare`, :mod:`~galu.workflow.pages.explain`,
:mod:`~galu.workflow.pages.claims_table`, :mod:`~galu.workflow.pages.readme_pages`,
:mod:`~galu.workflow.pages.readme_sections`, :mod:`~galu.workflow.pages.publication_readme`
(the paper-level section, from ``published/``), :mod:`~galu.workflow.pages.scale_table`,
:mod:`~galu.workflow.pages.report_build`, :mod:`~galu.workflow.pages.dvcplots` and
:mod:`~galu.workflow.pages.dvcstages`. The verdict table, the captions and the landing page
themselves are written by the claims job, from the result code at the package's top.
"""
