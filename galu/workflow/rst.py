"""reStructuredText helpers shared by the claims table and the figure captions (kept apart
from both so that a figure script's code closure does not pull in the claims code)."""

from __future__ import annotations

import re

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "how text is escaped into the report's reStructuredText and Jinja"

RAW_OPEN = "{% raw %}"
RAW_CLOSE = "{% endraw %}"


# What docutils (str.splitlines) takes for the end of a line: text from data stays on one
# line, so it can never open a block of its own (a directive at a line's start).
_LINE_BREAKS = re.compile("[ \t]*[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+[ \t]*")


def rst_escape(text: str) -> str:
    """``text`` as literal inline reStructuredText: ``|x|``, ``*``, ``_`` and backquotes
    lose their markup meaning (``|x|`` would otherwise be an undefined substitution); line
    breaks become spaces and a leading ``..`` is escaped, so that no text from a claim or a
    table can become a directive (``.. raw::`` writes HTML, ``.. include::`` reads a file)."""
    text = _LINE_BREAKS.sub(" ", str(text))
    text = re.sub(r"([\\`*_|])", r"\\\1", text)
    return "\\" + text if text.lstrip().startswith("..") else text


def jinja_raw(body: str) -> str:
    """``body`` (reStructuredText, whose text may come from claims, tables or configuration)
    as literal text of a Jinja template: Snakemake renders every report caption and the
    landing page as a template, and text that came from data must never become code.

    Inside ``{% raw %}`` only an ``endraw`` tag ends the literal text, and every Jinja tag
    opens with ``{%``: each ``{%`` of ``body`` becomes ``{\\%``, which no tag can start and
    which reStructuredText renders as ``{%`` again (a backslash escapes the next character).
    ``{{``, ``{#`` and LaTeX braces are plain text inside the block."""
    return RAW_OPEN + body.replace("{%", "{\\%") + RAW_CLOSE


def strip_raw(text: str) -> str:
    """The reStructuredText of :func:`jinja_raw` blocks, for a reader without Jinja
    (docutils renders ``{\\%`` as ``{%``): the blocks' own tags removed, nothing else."""
    return text.replace(RAW_OPEN, "").replace(RAW_CLOSE, "")
