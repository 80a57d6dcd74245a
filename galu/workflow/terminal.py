"""Text from files (claims, tables, ledgers, configuration) as it reaches a terminal: control
characters shown as escapes (``\\x1b``), never sent raw, so that a claim id or a table cell
cannot move the cursor, retitle the window or hide a line of the verdict."""

from __future__ import annotations

import re
from typing import TextIO

# C0 controls but tab and newline, DEL, and the C1 controls (ESC's 8-bit forms).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """``text`` with each control character (tab and newline kept) written as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class SafeStream:
    """A text stream that passes everything written through :func:`terminal_text`
    (``galu``'s standard output: every command's report is data read from files)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_text(text))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
