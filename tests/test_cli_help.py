"""``galu --help`` reads as plain text, not reStructuredText."""

from __future__ import annotations

import subprocess
import sys

from galu.workflow.cli import plain_text


def test_plain_text_drops_literal_and_role_markup():
    assert plain_text("The ``galu`` command: see :func:`audit_tree` and `x`.\n") == (
        "The galu command: see audit_tree and x."
    )


def test_galu_help_has_no_backquotes():
    done = subprocess.run(
        [sys.executable, "-m", "galu.workflow.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "audit" in done.stdout and "`" not in done.stdout
