"""Per paper, one line (galu/workflow/verdict_lines.py): its own claims in one sentence, what
reproduces and what does not by how much, our own checks counted apart."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from galu.workflow.verdict_lines import (
    NAMED_FAILURES,
    failure_text,
    paper_lines,
    paper_sentence,
    quantity_short,
)


def claim(claim_id, verdict, measured=1.0, compare="within", expected=1.0, tolerance=0.1,
          paper="normalization", statement="A claim.", quantity="", precision=0.1):  # fmt: skip
    return dict(claim_id=claim_id, verdict=verdict, measured=measured, compare=compare,
                expected=expected, tolerance=tolerance, paper=paper, statement=statement,
                quantity=quantity, precision=precision)  # fmt: skip


DEPTHS = pd.DataFrame(
    [
        claim("moments", "pass", 0.0, expected=0.0, tolerance=1e-9, precision=1e-10),
        claim(
            "relu_30",
            "fail",
            60,
            "within",
            30,
            10,
            quantity="deepest depth ReLU trains (0: none does)",
            precision=1,
        ),  # fmt: skip
        claim(
            "tilted_60",
            "fail",
            10,
            "at_least",
            60,
            0,
            quantity="deepest depth the tilted ReLU trains",
            precision=1,
        ),  # fmt: skip
        claim("spectra_flat", "fail", math.nan, "at_most", 0.01, 0, quantity="drift"),
        claim("abs_deep", "fail", 20, "at_least", 30, 0, quantity="deepest depth of |x|"),
        claim("others", "not_run", math.nan),
        claim("ours", "pass", statement="Ours, not from the paper: decorrelation."),
        claim("g1", "pass", paper="galu"),
    ]
)


def test_the_sentence_counts_reproduced_claims_and_names_the_first_failures_with_their_bounds():
    assert paper_sentence(DEPTHS, "normalization") == (
        "1 of its 6 claims reproduce, 1 is not run and 4 do not: deepest depth ReLU trains: 60,"
        " bound 30 ± 10; deepest depth the tilted ReLU trains: 10, bound ≥ 60; and 2 more."
        " Our own checks: 1 pass."
    )
    assert paper_sentence(DEPTHS, "galu") == "1 of its 1 claims reproduce."


def test_a_failure_that_measured_no_number_is_named_after_those_that_did():
    nan_first = DEPTHS.iloc[[3, 1, 0]]  # spectra_flat (NaN) before relu_30 in the table
    assert paper_sentence(nan_first, "normalization") == (
        "1 of its 3 claims reproduce and 2 do not: deepest depth ReLU trains: 60, bound 30 ± 10;"
        " drift: no number (NaN), bound ≤ 0.01."
    )
    assert NAMED_FAILURES == 2


def test_one_failure_one_indicative_claim_read_in_the_singular():
    table = pd.DataFrame(
        [claim("a", "fail", 0.5, "at_most", 0.0, 0.25, quantity="gap"), claim("b", "indicative")]
    )
    assert paper_sentence(table, "normalization") == (
        "0 of its 2 claims reproduce, 1 is indicative (measured at this scale's reduced"
        " settings, not judged) and 1 does not: gap: 0.5, bound ≤ 0.25."
    )


@pytest.mark.parametrize(
    ("quantity", "short"),
    [
        (
            "deepest tested depth at which ReLU trains (0: none does)",
            "deepest tested depth at which ReLU trains",
        ),  # fmt: skip
        ("|beta| of tanh", "|beta| of tanh"),
        ("(all in brackets)", "(all in brackets)"),
        ("", "the_id"),
        (math.nan, "the_id"),
    ],
)
def test_the_quantity_is_named_without_its_asides(quantity, short):
    row = pd.DataFrame([claim("the_id", "fail", quantity=quantity)]).iloc[0]
    assert quantity_short(row) == short


def test_failure_text_folds_the_tolerance_into_the_bound():
    (row,) = pd.DataFrame(
        [claim("x", "fail", 0.4, "at_least", 0.9, 0.1, quantity="q")]
    ).itertuples()
    assert failure_text(row) == "q: 0.4, bound ≥ 0.8"


def test_papers_come_in_the_pages_order_with_their_names():
    assert [name for name, _ in paper_lines(DEPTHS)] == ["GaLU", "static activation normalization"]
