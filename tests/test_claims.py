"""Claims: measurement, verdicts, not_run reasons, the markdown table and its generated section."""

import math
import re

import jinja2
import pandas as pd
import pytest
from docutils.core import publish_parts

from galu.workflow.claim_spec import parse_claims
from galu.workflow.claims import evaluate, lacking, source_stage
from galu.workflow.claims_text import caption_path, caption_verdicts, markdown_table
from galu.workflow.pages.readme_sections import README_END, README_START, readme_with_section
from galu.workflow.settings.config import load_yaml

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


def test_alternative_is_measured_beside_but_never_decides(tree):
    frame = pd.DataFrame(
        {
            "w": [8, 8, 16, 16],
            "model": ["relu", "galu", "relu", "galu"],
            "err": [0.10, 0.20, 0.05, 0.09],
            "err_test": [0.10, 0.12, 0.05, 0.06],
        }
    )
    frame.to_csv(tree / "results/t.csv", index=False)
    fields = dict(
        pivot={"index": "w", "columns": "model", "values": "err"},
        expression="galu - relu",
        compare="at_most",
        expected=0.05,
        alternative={
            "label": "test-selected",
            "pivot": {"index": "w", "columns": "model", "values": "err_test"},
        },
    )
    row = run_one(tree, **fields)
    assert row.measured == pytest.approx(0.07) and row.verdict == "fail"
    assert row.alternative == "test-selected"
    assert row.measured_alternative == pytest.approx(0.015)  # would pass; still a fail
    table = evaluate([claim(**fields)], tree, "quick")
    assert "| 0.070 (test-selected: 0.015) |" in markdown_table(table)
    assert "measured 0.070 (test-selected: 0.015)" in caption_verdicts(table, "figures/x.png")
    # Without an alternative the cell is the measurement alone.
    plain = evaluate([claim(expression="err")], tree, "quick")
    assert plain.iloc[0].alternative == "" and math.isnan(plain.iloc[0].measured_alternative)
    assert "| 0.11 |" in markdown_table(plain)
    # Read back from claims.csv, "no alternative" is NaN: still the measurement alone.
    plain.to_csv(tree / "claims.csv", index=False)
    assert "| 0.11 |" in markdown_table(pd.read_csv(tree / "claims.csv"))
    with pytest.raises(ValueError, match="alternative needs a label"):
        claim(alternative={"pivot": None})
    with pytest.raises(ValueError, match="may override only"):
        claim(alternative={"label": "x", "expected": 1.0})


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
    table = evaluate(
        [claim(statement="|x| is fine", expected=0.4, tolerance=0.1, quantity="mean |y|")],
        tree,
        "quick",
    )
    text = markdown_table(table)
    assert "1 pass, 0 fail, 0 not_run" in text
    assert "\\|x\\| is fine" in text
    assert "| measured quantity | paper says | expected | measured | tolerance | verdict |" in text
    assert "| mean \\|y\\| | – | 0.4 |" in text
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
    assert "Expected 5, measured 0.4. *What we believe explains it:* why." in caption


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
        "Expected 0.4 ± 0.1, measured 0.42.\n"
        "- **pass** ``b``: R\\_1 ends Expected ≥ 0.1, measured 0.42 (j).\n"
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


def test_measured_values_are_shown_at_the_claims_precision_and_findings_quote_the_run(tree):
    # Expected 5: step 0.1, so 0.425 shows as 0.4; a finding's {name} is measured on the run.
    failing = claim(
        id="bad",
        expected=5,
        finding="the last y is {last} and the a-rows' mean {mean_a}.",
        finding_values={
            "last": {"source": "results/t.csv", "expression": "y", "reduce": "last_x",
                     "x": "x", "precision": 0.01},
            "mean_a": {"source": "results/t.csv", "where": "m == 'a'", "expression": "y",
                       "reduce": "mean", "precision": 0.1},
        },
    )  # fmt: skip
    table = evaluate([failing, claim(id="own", precision=0.001)], tree, "quick")
    assert list(table["precision"]) == [0.1, 0.001]
    text = markdown_table(table)
    assert "| 5 | 0.4 | 0 | **fail** |" in text
    assert "| 0 | 0.425 | 0 | **fail** |" in text  # its own precision
    assert "- `bad`: the last y is 0.10 and the a-rows' mean 0.7.\n" in text
    with pytest.raises(ValueError, match=r"placeholders \['x'\] and its finding_values \[\]"):
        claim(finding="{x}")


def test_claims_on_substitute_data_say_so(tree):
    (tree / "results/t.csv.meta.json").write_text('{"data_substitute": true}')
    (tree / "results/u.csv").write_bytes((tree / "results/t.csv").read_bytes())
    table = evaluate([claim(id="sub"), claim(id="own", source="results/u.csv")], tree, "quick")
    assert list(table["data_substitute"]) == [True, False]
    text = markdown_table(table)
    assert "1 of them are measured on substitute data" in text
    assert "| **fail** (substitute data) |" in text and text.count("substitute data") == 2
    caption = caption_verdicts(table, "figures/x.png")
    assert "- **fail** ``sub`` (measured on substitute data): s" in caption
    assert "``own`` (measured" not in caption


def test_caption_folds_the_tolerance_into_a_one_sided_bound(tree):
    # mean of y is 0.425: "expected ≤ 0, tolerance 0.5" passes; the caption states the bound
    # the measurement met (≤ 0.5), not a bound of 0 that 0.425 seems to break.
    claims = [
        claim(id="lo", compare="at_most", expected=0.0, tolerance=0.5),
        claim(id="hi", compare="at_least", expected=1.0, tolerance=0.6),
        claim(id="no", compare="at_most", expected=0.0, tolerance=0.4),
    ]
    table = evaluate(claims, tree, "quick")
    assert list(table["verdict"]) == ["pass", "pass", "fail"]
    text = caption_verdicts(table, "figures/x.png")
    # (0.425 at each claim's precision: a tenth of the leading digit of its decision scale.)
    assert "**pass** ``lo``: s Expected ≤ 0.5 (0 plus tolerance 0.5), measured 0.42." in text
    assert "**pass** ``hi``: s Expected ≥ 0.4 (1 minus tolerance 0.6), measured 0.4." in text
    assert "**fail** ``no``: s Expected ≤ 0.4 (0 plus tolerance 0.4), measured 0.42." in text
    assert "tolerance 0.5)," in text and "Expected ≤ 0," not in text


def test_zero_error_claim_judges_every_search_not_their_mean(tmp_path):
    (entry,) = [
        e
        for e in load_yaml(REPO / "workflow/claims.yaml")
        if e["id"] == "mem_random_signs_need_about_m_over_d_neurons"
    ]
    (tmp_path / "results/memorization").mkdir(parents=True)
    values = [1.0] * 11 + [2.13]  # mean 1.09, within 0.25 of 1: the old claim passed
    rows = pd.DataFrame(
        dict(criterion="zero_error", model=["relu", "galu"] * 6, found=True, kd_over_m=values)
    ).assign(m=[256, 512, 1024] * 4, d=16)
    rows.to_csv(tmp_path / "results/memorization/min_width.csv", index=False)
    (row,) = evaluate(parse_claims([entry], "quick"), tmp_path, "quick").itertuples()
    assert row.measured == pytest.approx(11 / 12) and row.verdict == "fail"
    rows.assign(kd_over_m=1.1).to_csv(tmp_path / "results/memorization/min_width.csv")
    assert evaluate(parse_claims([entry], "quick"), tmp_path, "quick")["verdict"][0] == "pass"
    rows.assign(found=[True] * 11 + [False], kd_over_m=1.0).to_csv(
        tmp_path / "results/memorization/min_width.csv"
    )
    assert evaluate(parse_claims([entry], "quick"), tmp_path, "quick")["measured"][0] < 1


def test_a_claim_on_a_model_this_run_did_not_train_is_not_run_not_a_crash(tree):
    # The pivot has columns a and b only: an expression on a model "c" cannot be measured.
    row = run_one(tree, pivot={"index": "x", "columns": "m", "values": "y"}, expression="c - a")
    assert row.verdict == "not_run" and row.reason == (
        "results/t.csv of this configuration lacks what the claim reads (it has no column or"
        " value 'c')"
    )  # in words, not Python's "name 'c' is not defined"
    assert run_one(tree, expression="no_such_column").verdict == "not_run"
    assert lacking(KeyError("width")) == "it has no column 'width'"


def test_a_claim_of_a_stage_the_run_left_out_is_not_run_though_its_table_exists(tree):
    (tree / "results/scm").mkdir()
    (tree / "results/t.csv").rename(tree / "results/scm/t.csv")
    mine = claim(source="results/scm/t.csv", expression="y", reduce="max", expected=0.9)
    assert source_stage("results/scm/t.csv") == "scm"
    assert evaluate([mine], tree, "quick", stages=["scm"]).iloc[0].verdict == "pass"
    row = evaluate([mine], tree, "quick", stages=["memorization", "normalization"]).iloc[0]
    assert row.verdict == "not_run" and math.isnan(row.measured)
    assert row.reason == (
        "the scm stage is not among this run's stages (memorization, normalization;"
        " config key `stages`)"
    )


def test_robustness_names_the_settings_that_keep_the_verdict(tmp_path):
    (tmp_path / "results").mkdir()
    # the run's own table (judged at f = 0.5) and the same runs judged at every f
    pd.DataFrame({"a": ["relu"], "depth": [10], "f": [0.5]}).to_csv(
        tmp_path / "results/t.csv", index=False
    )
    by_f = pd.DataFrame({"a": "relu", "f": [0.1, 0.3, 0.5, 0.7, 0.9], "depth": [0, 10, 10, 10, 30]})
    by_f.to_csv(tmp_path / "results/by_f.csv", index=False)
    robust = {"source": "results/by_f.csv", "over": "f"}
    fields = dict(expression="depth", reduce="max", robustness=robust, where="a == 'relu'")

    row = run_one(tmp_path, expected=30, compare="at_least", **fields)
    assert row.verdict == "fail" and row.robustness == "for f 0.1 to 0.7 (tried 0.1 to 0.9)"
    row = run_one(tmp_path, expected=10, **fields)
    assert row.verdict == "pass" and row.robustness == "for f 0.3 to 0.7 (tried 0.1 to 0.9)"
    row = run_one(tmp_path, expected=40, compare="at_most", **fields)
    assert row.robustness == "for every f from 0.1 to 0.9 tried"
    # shown beside the verdict, in the table and the caption
    table = evaluate([claim(expected=10, **fields)], tmp_path, "quick")
    assert "**pass** for f 0.3 to 0.7 (tried 0.1 to 0.9)" in markdown_table(table)
    assert "The same verdict for f 0.3 to 0.7" in caption_verdicts(table, "figures/x.png")
    # a robustness table that disagrees with the claim's own at its setting is flagged
    by_f.assign(depth=[0, 10, 30, 10, 30]).to_csv(tmp_path / "results/by_f.csv", index=False)
    assert run_one(tmp_path, expected=10, **fields).robustness.startswith(
        "? (results/by_f.csv gives fail at f = 0.5"
    )
    # a run whose own setting is not among those tried is named, not a crash
    pd.DataFrame({"a": ["relu"], "depth": [10], "f": [0.33]}).to_csv(
        tmp_path / "results/t.csv", index=False
    )
    assert run_one(tmp_path, expected=10, **fields).robustness == (
        "? (results/by_f.csv has no rows at f = 0.33)"
    )
    with pytest.raises(ValueError, match="robustness needs exactly source and over"):
        claim(robustness={"source": "results/by_f.csv"})


def test_a_claim_a_reduction_touches_is_indicative_with_its_value_and_the_reduction_once(tree):
    entries = [
        {**BASE, "id": "c", "expression": "y", "reduce": "mean", "expected": 0.4, "tolerance": 0.1},
        {**BASE, "id": "d", "expression": "y", "reduce": "mean", "expected": 0.0},
        {**BASE, "id": "e", "expression": "y", "reduce": "max", "expected": 0.0},
    ]
    reduced = {"d": "N = 1,000 (paper: 10,000)", "e": "N = 1,000 (paper: 10,000)"}
    table = evaluate(parse_claims(entries, "quick"), tree, "quick", reduced=reduced)
    table = table.set_index("claim_id")
    assert table.loc["c", "verdict"] == "pass"  # untouched by the reduction: judged
    assert list(table.loc[["d", "e"], "verdict"]) == ["indicative"] * 2
    assert table.loc["d", "measured"] == pytest.approx(0.425)  # measured, not judged
    assert table.loc["e", "measured"] == pytest.approx(0.9)
    assert table.loc["d", "reason"] == "N = 1,000 (paper: 10,000)"
    text = markdown_table(table.reset_index())
    assert "1 pass, 0 fail, 2 indicative, 0 not_run" in text
    # the reduction is named once, with every claim it touches
    assert text.count("N = 1,000 (paper: 10,000)") == 1
    assert "- N = 1,000 (paper: 10,000): `d`, `e`." in text
    caption = caption_verdicts(table.reset_index(), "figures/x.png")
    assert "**indicative** ``d``" in caption and "so not judged" in caption
    # a reduced claim whose table lacks what it reads (a model the run does not train) is
    # not_run, and its reason is the reduction, not only the missing name
    gone = {**BASE, "id": "g", "expression": "absent", "reduce": "mean", "expected": 0.0}
    row = evaluate(parse_claims([gone], "quick"), tree, "quick", reduced={"g": "no z"}).iloc[0]
    assert row.verdict == "not_run"
    assert (
        row.reason
        == "this run does not make what the claim reads (it has no column or value 'absent'): no z"
    )


def test_a_findings_part_in_double_brackets_is_written_only_where_its_tables_were_made(tree):
    """A comparison only some scales run (normalization.wide) is quoted where it ran and left
    out elsewhere; a part quoting a table that was made stays, as does a part without values."""
    values = {
        "mean": {"source": "results/t.csv", "expression": "y", "reduce": "mean", "precision": 0.01},
        "top": {"source": "results/t.csv", "expression": "y", "reduce": "max", "precision": 0.1},
        "wide": {"source": "results/w.csv", "expression": "y", "reduce": "max", "precision": 1},
    }
    finding = "mean {mean}.[[ At the other width {wide},\n max {top}.]][[ Always.]] End."
    row = run_one(tree, expected=1.0, finding=finding, finding_values=values)
    assert row.finding == "mean 0.42. Always. End."
    (tree / "results/w.csv").write_text("y\n3\n")
    row = run_one(tree, expected=1.0, finding=finding, finding_values=values)
    assert row.finding == "mean 0.42. At the other width 3, max 0.9. Always. End."


def test_a_finding_value_whose_column_is_missing_is_named_not_a_crash(tree):
    row = run_one(
        tree,
        expected=1.0,
        finding="{gone}",
        finding_values={
            "gone": {"source": "results/t.csv", "expression": "z", "reduce": "max", "precision": 1}
        },
    )
    assert row.verdict == "fail" and row.finding.startswith("? (results/t.csv lacks")


# What a finding may write without a placeholder: a path (results/..., figures/...), a name
# with digits in it (CIFAR-10, relu_k2m2, log2) and a formula in backticks (`2^-k`).
_NOT_A_QUANTITY = re.compile(r"`[^`]*`|\{\w+\}|\S+/\S+|\b[A-Za-z][\w-]*\d[\w-]*")


def quantities(finding: str) -> list[str]:
    """The numbers a finding writes outside its placeholders, paths, names and formulas."""
    return re.findall(r"\d+(?:[.,]\d+)*", _NOT_A_QUANTITY.sub(" ", finding))


def test_quantities_are_the_numbers_outside_placeholders_paths_names_and_formulas():
    text = "at {x} on CIFAR-10 (results/a_1.csv), `2^-k` below 1, 20,000 steps and 0.9"
    assert quantities(text) == ["1", "20,000", "0.9"]


def test_every_claim_names_its_measured_quantity_in_words():
    entries = load_yaml(REPO / "workflow/claims.yaml")
    assert [e["id"] for e in entries if len(str(e.get("quantity", "")).split()) < 3] == []


def test_every_number_in_a_finding_is_measured_by_its_finding_values():
    # A finding quotes only what its run measured: every number is a {placeholder}, computed
    # from the run's tables by its finding_values (workflow/claims.yaml).
    written = {
        entry["id"]: quantities(entry["finding"])
        for entry in load_yaml(REPO / "workflow/claims.yaml")
        if entry.get("finding")
    }
    assert len(written) >= 7
    assert {claim: found for claim, found in written.items() if found} == {}


def test_an_infinite_measured_value_is_explained_in_its_row():
    """The quick verdict table (docs/verdicts-quick.md): a row measuring inf or -inf says in its
    quantity what that value means (e.g. "-inf: the greedy schedule never leaves it")."""
    readme = (REPO / "docs/verdicts-quick.md").read_text()
    quick = readme[readme.index(README_START) : readme.index(README_END)]
    rows = [line.split(" | ") for line in quick.splitlines() if line.startswith("| `")]
    infinite = [r for r in rows if len(r) > 6 and r[6].strip() in ("inf", "-inf")]
    assert infinite  # the quick run has one: scm_schedule_greedy_stalls_on_plateau
    for row in infinite:
        assert f"{row[6].strip()}:" in row[3], row[0]
