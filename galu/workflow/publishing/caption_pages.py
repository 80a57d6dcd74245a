"""A published figure's page: the figure beside its caption, rendered, readable on its own.

The claims rule writes each figure's caption (``results/captions/<stage>/<name>.rst``) for
Snakemake's report, which renders it as a Jinja template with the plot job's context
(``snakemake.config``, ``snakemake.params``) and then as reStructuredText. The parts written
from data (the verdicts, what the data show) are inside Jinja ``raw`` blocks
(:func:`galu.workflow.rst.jinja_raw`); the caption template between them
(``workflow/report/<template>.rst``) is Jinja that reads the run's configuration. A publication
shows no Snakemake report, so :func:`caption_page` does the same rendering for each published
figure that has a published caption, into ``figures/<stage>/<name>.html`` beside its PNG:

- the Jinja, in a sandbox (:class:`jinja2.sandbox.SandboxedEnvironment`: a template reads
  values, it calls nothing), with the run's configuration as the publication records it
  (``publication.json``'s ``config``, :func:`published_config`) and the figure's parameters and
  wildcards from its PNG's sidecar; a name the configuration lacks stops the publication
  (:class:`CaptionError`), never a caption with a hole;
- the reStructuredText by docutils with raw HTML and file insertion disabled
  (``raw_enabled``, ``file_insertion_enabled``), so no text from a table or a claim can
  become markup or read a file; a problem docutils finds is shown in the page, as the
  report would show it;
- the page: a viewport meta tag (it reads on a phone), the figure, a link to its PDF and back
  to the publication's verdict page (``claims.html``), then the caption.

Every page is made from the publication's own files (the caption, the PNG and its sidecar, the
PDF, ``publication.json``), which its sidecar lists as its inputs, so ``galu audit`` checks
the set and a test remakes each page from a publication alone (``tests/test_publish_pages.py``).
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from docutils.core import publish_parts
from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from galu.workflow.claims_text import caption_path
from galu.workflow.provenance import SIDECAR_SUFFIX
from galu.workflow.publication_folders import (
    MANIFEST,
    VIEW,
    PublishError,
    json_record,
    png_figures,
)

# The keys of the run's configuration a publication leaves out of publication.json: the
# site's (data mirrors, local paths, download settings: config/local.yaml's), which no caption
# reads and which belong to one machine.
SITE_KEYS = ("data",)
# docutils, as the report's captions but safe for text from data: no raw HTML, no file read,
# no configuration file of the machine's, every message in the page and none on stderr.
DOCUTILS_SETTINGS = {
    "raw_enabled": False,
    "file_insertion_enabled": False,
    "_disable_config": True,
    "doctitle_xform": False,
    "halt_level": 5,
    "warning_stream": False,
}
PAGE_CSS = (
    "body{max-width:60rem;margin:0 auto;padding:0 1rem;font-family:sans-serif;"
    "line-height:1.45}img{max-width:100%;height:auto}"
    "pre,code{white-space:pre-wrap;overflow-wrap:anywhere}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:0.2em 0.4em}"
)


class CaptionError(PublishError):
    """A caption cannot be rendered with the configuration the publication records."""


def page_of(figure: str) -> str:
    """The caption page of a figure (contract paths): ``figures/scm/k3m2.png`` ->
    ``figures/scm/k3m2.html``, where the audit knows it as one
    (:func:`galu.workflow.trust.audit.is_caption_page`)."""
    return PurePosixPath(figure).with_suffix(".html").as_posix()


def captioned(files: list[str]) -> list[str]:
    """The PNG figures among a publication's files whose caption is published too."""
    published = set(files)
    return [f for f in png_figures(files) if caption_path(f) in published]


def published_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """What ``publication.json`` keeps of the run's configuration: all but :data:`SITE_KEYS`."""
    return {k: v for k, v in config.items() if k not in SITE_KEYS}


def rendered_caption(
    text: str, config: Mapping[str, Any], params: Mapping[str, Any], wildcards: Mapping[str, Any]
) -> str:
    """A caption's reStructuredText: its Jinja rendered as Snakemake's report renders it
    (``snakemake.config``, ``.params``, ``.wildcards``), in a sandbox, a missing name an error."""
    environment = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
    context = {"config": config, "params": params, "wildcards": wildcards}
    return environment.from_string(text).render(snakemake=context)


def caption_html(rst: str) -> str:
    """A caption's reStructuredText as an HTML fragment (see :data:`DOCUTILS_SETTINGS`)."""
    parts = publish_parts(rst, writer="html5", settings_overrides=DOCUTILS_SETTINGS)
    return parts["body"]


def caption_page(folder: Path, figure: str, view: bool) -> tuple[bytes, list[str]]:
    """The page of ``figure`` (a PNG's contract path) in the publication ``folder``, and the
    publication's files it is made from (its inputs). ``view``: the publication has its verdict
    page, which the page links back to. Raises :class:`CaptionError` when the caption's Jinja
    cannot be rendered."""
    caption = caption_path(figure)
    png = folder / figure
    drawn = json_record(Path(f"{png}{SIDECAR_SUFFIX}"))
    config = json_record(folder / MANIFEST).get("config") or {}
    try:
        rst = rendered_caption(
            (folder / caption).read_text(),
            config,
            drawn.get("params") or {},
            drawn.get("wildcards") or {},
        )
    except TemplateError as error:
        raise CaptionError(
            f"the caption {caption} cannot be rendered with the run's configuration ({error});"
            " name the run's configuration files with --configfile. Nothing was published"
        ) from None
    here = posixpath.dirname(figure)
    pdf = PurePosixPath(figure).with_suffix(".pdf").as_posix()
    links = []
    if view:
        links.append(f'<a href="{html.escape(posixpath.relpath(VIEW, here))}">Every claim</a>')
    if (folder / pdf).is_file():
        links.append(f'<a href="{html.escape(posixpath.basename(pdf))}">PDF</a>')
    title = html.escape(figure)
    page = "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title}</title>",
            f"<style>{PAGE_CSS}</style>",
            "</head>",
            "<body>",
            f"<p>{' · '.join(links)}</p>" if links else "",
            f"<h1>{title}</h1>",
            f'<img src="{html.escape(posixpath.basename(figure))}" alt="{title}">',
            caption_html(rst),
            "</body>",
            "</html>",
            "",
        ]
    )
    inputs = [caption, figure, f"{figure}{SIDECAR_SUFFIX}"]
    inputs += [pdf] if (folder / pdf).is_file() else []
    return page.encode(), [*inputs, MANIFEST]
