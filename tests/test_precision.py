"""Numbers at a reproducible precision, and the README check (its verdict pages) that compares
at that precision."""

import math
import sys

import pytest
from readme_support import write_claims, write_readme

from galu.workflow.pages.publication_readme import NO_PUBLICATION, PAPER_MARKERS
from galu.workflow.pages.readme_sections import README_END, README_START, readme_differences
from galu.workflow.precision import differing_lines, display_step, format_measured, lines_agree

from conftest import run


@pytest.mark.parametrize(
    ("expected", "tolerance", "measured", "step", "shown"),
    [
        (0.02, 0.0, 0.0663, 0.001, "0.066"),  # a test-error gap: the 4th digit is noise
        (0.52, 0.01, 0.5246, 0.01, "0.52"),
        (30, 0, 30.0, 1, "30"),  # integers stay integers
        (1, 0.25, 1.15, 0.1, "1.1"),  # 1.15 is 1.1499... in binary
        (0.1, 0.0, 0.119, 0.01, "0.12"),
        (0.0, 1e-3, 1.04e-6, 1e-4, "< 1e-4"),  # a residual below the step is not a digit
        (0.0, 1e-9, 5e-17, 1e-10, "< 1e-10"),
        (0.0, 1e-6, 1.44e-7, 1e-7, "1e-7"),  # small steps in scientific notation
        (0.0, 1e-6, 2.5e-6, 1e-7, "2.5e-6"),
        (0.0, 0.0, 0.0375, 0.001, "0.038"),  # no scale stated: two significant digits
        (0.0, 0.0, 0.0, 0.1, "0"),
    ],
)
def test_display_step_and_format(expected, tolerance, measured, step, shown):
    assert display_step(expected, tolerance, measured) == pytest.approx(step)
    assert format_measured(measured, display_step(expected, tolerance, measured)) == shown


def test_a_stated_precision_wins_and_special_values_are_words():
    assert display_step(0.02, 0.0, 0.0663, precision=0.0001) == 0.0001
    assert format_measured(0.0663, 0.0001) == "0.0663"
    assert format_measured(math.nan, 0.1) == "–"
    assert format_measured(math.inf, 0.1) == "inf"


def test_lines_agree_within_one_unit_of_the_last_digit_only():
    assert lines_agree("| `a` | 0.066 | **pass** |", "| `a` | 0.067 | **pass** |")
    assert not lines_agree("| `a` | 0.066 | **pass** |", "| `a` | 0.068 | **pass** |")
    assert lines_agree("gap 0.07", "gap 0.066")  # the coarser side sets the unit
    assert not lines_agree("| `a` | 0.066 | **pass** |", "| `a` | 0.066 | **fail** |")
    assert not lines_agree("< 1e-4", "0.0002")  # a bound is not a digit
    assert lines_agree("1.4e-7", "1.5e-7") and not lines_agree("1.4e-7", "1.6e-7")
    assert not lines_agree("`scm_k2m2` 1", "`scm_k2m3` 1")  # digits inside names are words


def test_differing_lines_pairs_by_words_so_an_insertion_is_one_difference():
    old = "a 1\nb 2\nc 3\n"
    assert differing_lines(old, "a 1\nnew row\nb 2\nc 3.4\n") == [("", "new row")]
    assert differing_lines(old, "a 1\nb 2\nc 5\n") == [("c 3", "c 5")]


def readme(section):
    """A README with both generated sections; no paper-level run published
    (galu.workflow.pages.publication_readme)."""
    paper = f"{PAPER_MARKERS[0]}\n{NO_PUBLICATION}{PAPER_MARKERS[1]}\n"
    return f"# T\n\n{README_START}\n{section}{README_END}\n{paper}rest\n"


def test_readme_check_names_the_rows_that_differ(tmp_path):
    section = "| `a` | 0.066 | **pass** |\n| `b` | 30 | **pass** |\n"
    assert readme_differences(readme(section), section.replace("0.066", "0.067")) == []
    drifted = section.replace("30", "10").replace("**pass** |\n| `b`", "**pass** |\n| `b`")
    assert readme_differences(readme(section), drifted) == [
        ("| `b` | 30 | **pass** |", "| `b` | 10 | **pass** |")
    ]
    # The command line says which row of the page differs, and exits 1; within precision it
    # exits 0.
    write_readme(tmp_path, section, NO_PUBLICATION)
    write_claims(tmp_path / "claims.csv", {"a": "pass", "b": "pass"})
    (tmp_path / "claims.md").write_text(section)
    galu = [sys.executable, "-m", "galu.workflow.cli", "readme", "--claims", "claims.md"]
    run([*galu, "--update"], tmp_path)  # README's counts of the claims table
    (tmp_path / "claims.md").write_text(drifted)
    out = run(galu, tmp_path, check=False)
    assert out.returncode == 1, out.stderr
    assert "page: | `b` | 30 | **pass** |\n  run:  | `b` | 10 | **pass** |" in out.stdout
    (tmp_path / "claims.md").write_text(section.replace("0.066", "0.065"))
    out = run(galu, tmp_path, check=False)
    assert out.returncode == 0 and "at the precision shown" in out.stdout, out.stdout
