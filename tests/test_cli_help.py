"""``galu --help`` reads as plain text, not reStructuredText."""

from __future__ import annotations

import sys

from galu.workflow.cli import plain_text

from conftest import REPO, run


def test_plain_text_drops_literal_and_role_markup():
    assert plain_text("The ``galu`` command: see :func:`audit_tree` and `x`.\n") == (
        "The galu command: see audit_tree and x."
    )


def test_galu_help_has_no_backquotes():
    done = run([sys.executable, "-m", "galu.workflow.cli", "--help"], REPO, timeout=60)
    assert done.returncode == 0
    assert "audit" in done.stdout and "`" not in done.stdout


def test_every_subcommand_has_an_example_that_parses():
    from galu.workflow.cli import EXAMPLES, build_parser

    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    assert set(EXAMPLES) == commands
    main_help = parser.format_help()
    for command, example in EXAMPLES.items():
        assert example in main_help and example.startswith(f"galu {command} ")
        assert example in parser._subparsers._group_actions[0].choices[command].format_help()
        if command != "run":  # `run` hands its arguments to Snakemake unparsed
            assert parser.parse_args(example.split()[1:]).command == command
    assert "exit status: 0 done; 1 a finding" in main_help
