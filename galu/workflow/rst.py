"""reStructuredText helpers shared by the claims table and the figure captions (kept apart
from both so that a figure script's code closure does not pull in the claims code)."""

from __future__ import annotations

import re


def rst_escape(text: str) -> str:
    """``text`` as literal reStructuredText: ``|x|``, ``*``, ``_`` and backquotes lose
    their markup meaning (``|x|`` would otherwise be an undefined substitution)."""
    return re.sub(r"([\\`*_|])", r"\\\1", str(text))
