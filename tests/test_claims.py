"""Claims: measurement, verdicts, not_run reasons, the markdown table and the README section."""

import math

import jinja2
import pandas as pd
import pytest
from docutils.core import publish_parts

from galu.claims import (
    README_END,
    README_START,
    caption_path,
    caption_verdicts,
    evaluate,
    markdown_table,
    parse_claims,
    readme_with_section,
)
from galu.config import load_yaml

from conftest import REPO

BASE = {
    "paper": "galu",
    "statement": "s",
    "figure": "figures/x.png",
    "source": "results/t.csv",
}


def claim(**fields):
    entry = {**BASE, "id": "c", "expression": "y", "reduce": "mean", "expected": 0.0, **fields}
    return parse_claims([entry], "quick")[0]


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "results").mkdir()
    pd.DataFrame({"x": [1, 2, 3, 4], "y": [0.9, 0.5, 0.2, 0.1], "m": list("aabb")}).to_csv(
        tmp_path / "results/t.csv", index=False
    )
    return tmp_path


def run_one(tree, **fields):
    return evaluate([claim(**fields)], tree, "quick").iloc[0]


def test_reductions_on_a_tiny_table(tree):
    assert run_one(tree, reduce="mean").measured == pytest.approx(0.425)
    assert run_one(tree, reduce="max", where="m == 'b'").measured == pytest.approx(0.2)
    assert run_one(tree, expression="y < 0.6", reduce="fraction").measured == 0.75
    assert run_one(tree, expression="y < 0.6", reduce="count").measured == 3
    assert run_one(tree, expression="y < 0.3", reduce="first_x", x="x").measured == 3
    assert run_one(tree, expression="y < 0", reduce="first_x", x="x").measured == math.inf
    assert run_one(tree, expression="y * 10", reduce="last_x", x="x").measured == pytest.approx(1)
    assert run_one(tree, expression="abs(y - 1)", reduce="min").measured == pytest.approx(0.1)


def test_pivot_compares_columns_of_different_rows(tree):
    # Two galu rows at width 8 are averaged before the difference is taken.
    frame = pd.DataFrame(
        {
            "w": [8, 8, 16, 16, 8],
            "model": ["relu", "galu", "relu", "galu", "galu"],
            "err": [0.10, 0.20, 0.05, 0.09, 0.30],
        }
    )
    frame.to_csv(tree / "results/t.csv", index=False)
    pivot = {"index": "w", "columns": "model", "values": "err"}
    gap = run_one(tree, pivot=pivot, expression="galu - relu", reduce="mean")
    assert gap.measured == pytest.approx(((0.25 - 0.10) + (0.09 - 0.05)) / 2)
    widest = run_one(tree, pivot=pivot, expression="galu - relu", reduce="last_x", x="w")
    assert widest.measured == pytest.approx(0.04)


def test_comparisons_decide_the_verdict(tree):
    assert run_one(tree, expected=0.4, tolerance=0.03).verdict == "pass"
    assert run_one(tree, expected=0.4, tolerance=0.02).verdict == "fail"
    assert run_one(tree, expected=0.4, tolerance=0.02, compare="at_least").verdict == "pass"
    assert run_one(tree, expected=0.4, tolerance=0.02, compare="at_most").verdict == "fail"
    assert run_one(tree, expected=0.5, tolerance=0.0, compare="at_most").verdict == "pass"


def test_missing_source_or_rows_is_not_run_with_a_reason(tree):
    missing = run_one(tree, source="results/none.csv")
    assert missing.verdict == "not_run" and "was not produced" in missing.reason
    empty = run_one(tree, where="m == 'zzz'")
    assert empty.verdict == "not_run" and "no rows" in empty.reason
    paper_only = run_one(tree, scales=["paper"])
    assert paper_only.verdict == "not_run" and "paper scale" in paper_only.reason


def test_section_is_parsed_and_reported(tree):
    row = run_one(tree, section="Sec. 4,  Fig. 2")
    assert row.section == "Sec. 4, Fig. 2"
    assert run_one(tree).section == ""


def test_nan_measurement_fails(tree):
    pd.DataFrame({"y": [float("nan")]}).to_csv(tree / "results/t.csv", index=False)
    assert run_one(tree).verdict == "fail"


def test_tolerance_per_scale_and_bad_fields():
    entry = {**BASE, "id": "c", "expression": "y", "reduce": "mean", "expected": 0}
    tolerances = {"quick": 0.1, "paper": 0.01}
    assert parse_claims([{**entry, "tolerance": tolerances}], "paper")[0].tolerance == 0.01
    # A scale without a stated tolerance (e.g. `test`) leaves the claim unchecked there.
    assert parse_claims([{**entry, "tolerance": tolerances}], "test")[0].scales == (
        "quick",
        "paper",
    )
    with pytest.raises(ValueError, match="reduce 'median_x' is not one of"):
        parse_claims([{**entry, "reduce": "median_x"}], "quick")
    with pytest.raises(ValueError, match="lacks expected"):
        parse_claims([{k: v for k, v in entry.items() if k != "expected"}], "quick")
    with pytest.raises(ValueError, match="duplicate claim ids: c"):
        parse_claims([entry, entry], "quick")


def test_markdown_escapes_pipes_and_counts_verdicts(tree):
    table = evaluate([claim(statement="|x| is fine", expected=0.4, tolerance=0.1)], tree, "quick")
    text = markdown_table(table)
    assert "1 pass, 0 fail, 0 not_run" in text
    assert "\\|x\\| is fine" in text
    assert "explains each failure" not in text and "Not run" not in text
    skipped = markdown_table(evaluate([claim(source="results/none.csv")], tree, "quick"))
    assert skipped.endswith(
        "Not run, and why:\n\n- `c`: results/none.csv was not produced (stage disabled or its"
        " data missing).\n"
    )


def test_a_failed_claims_finding_is_shown_only_when_it_fails(tree):
    claims = [
        claim(id="ok", expected=0.4, tolerance=0.1, finding="never shown"),
        claim(id="bad", expected=5, finding="why."),
    ]
    table = evaluate(claims, tree, "quick")
    assert list(table["finding"]) == ["", "why."]
    text = markdown_table(table)
    assert text.endswith("What we believe explains each failure:\n\n- `bad`: why.\n")
    assert "never shown" not in text
    caption = caption_verdicts(table, "figures/x.png")
    assert (
        "Expected 5, measured 0.425 (tolerance 0). *What we believe explains it:* why." in caption
    )


def test_readme_section_is_replaced_between_markers():
    readme = f"# T\n{README_START}\nold\n{README_END}\nrest\n"
    assert readme_with_section(readme, "new\n") == f"# T\n{README_START}\nnew\n{README_END}\nrest\n"
    with pytest.raises(ValueError, match="lacks the markers"):
        readme_with_section("# T\n", "new\n")


def test_declared_claims_parse_and_name_existing_paths():
    entries = load_yaml(REPO / "workflow/claims.yaml")
    claims = parse_claims(entries, "quick")
    assert len(claims) == len(entries) >= 2
    for c in claims:
        assert c.source.startswith("results/") and c.figure.startswith("figures/")
        assert c.section, f"claim {c.claim_id} names no section of its paper (or 'ours')"


def render_caption(text):
    """A caption as Snakemake's report renders it: Jinja, then reStructuredText to HTML."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return publish_parts(env.from_string(text).render(), writer="html")["body"]


def test_caption_states_each_claim_of_its_figure_with_verdict_and_numbers(tree):
    claims = [
        claim(id="a", statement="|x| - sqrt(2/pi) *trains*", expected=0.4, tolerance=0.1),
        claim(id="b", statement="R_1 ends", expected=0.1, compare="at_least", justification="j."),
        claim(id="c", source="results/none.csv"),
        claim(id="d", figure="figures/other.png"),
    ]
    table = evaluate(claims, tree, "quick")
    text = caption_verdicts(table, "figures/x.png")
    assert text == (
        "\n{% raw %}\n\n"
        "**Claims this figure tests, checked at the quick scale** "
        "(all claims: ``results/claims.csv``):\n\n"
        "- **pass** ``a``: \\|x\\| - sqrt(2/pi) \\*trains\\* "
        "Expected 0.4, measured 0.425 (tolerance 0.1).\n"
        "- **pass** ``b``: R\\_1 ends Expected ≥ 0.1, measured 0.425 (tolerance 0: j).\n"
        "- **not_run** ``c``: s not measured: results/none.csv was not produced (stage disabled"
        " or its data missing)"
        "\n\n{% endraw %}\n"
    )
    html = render_caption(text)
    assert "system-message" not in html  # no markup error: |x| is text, not a substitution
    assert (
        '<strong>pass</strong> <tt class="docutils literal">a</tt>: |x| - sqrt(2/pi) *trains*'
        in html
    )
    assert "No claim of" in caption_verdicts(table, "figures/none.png")


def test_every_declared_statement_renders_in_a_caption(tree):
    entries = load_yaml(REPO / "workflow/claims.yaml")
    # Every statement and justification as written, on a table where each claim passes.
    claims = [
        claim(id=e["id"], statement=e["statement"], justification=e.get("justification", ""))
        for e in entries
    ]
    html = render_caption(
        "{{ 1 + 1 }} ok" + caption_verdicts(evaluate(claims, tree, "quick"), "figures/x.png")
    )
    assert "system-message" not in html and html.startswith("<p>2 ok</p>")
    assert html.count("<li>") == len(entries)


def test_caption_path_mirrors_the_figure_path():
    assert caption_path("figures/scm/k3m2.png") == "results/captions/scm/k3m2.rst"
