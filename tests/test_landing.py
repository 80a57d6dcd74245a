"""The report's landing page: the verdict first, failures first, links to figures, provenance."""

import html as html_module
import json
import math
import re

import jinja2
import pandas as pd
import pytest
from docutils.core import publish_parts

from galu.workflow.claim_spec import parse_claims
from galu.workflow.claims import evaluate
from galu.workflow.claims_text import summary_line
from galu.workflow.landing import landing_html, landing_page

BASE = {"paper": "galu", "statement": "s", "source": "results/t.csv", "reduce": "mean"}
PROVENANCE = {
    "git": {"commit": "abc123", "dirty": True},
    "versions": {"torch": "2.13.0", "numpy": "2.1", "galu": None},
    "scale": "quick",
    "data": "official or generated data only",
}


@pytest.fixture
def table(tmp_path):
    (tmp_path / "results").mkdir()
    pd.DataFrame({"y": [0.9, 0.5]}).to_csv(tmp_path / "results/t.csv", index=False)
    entries = [
        {**BASE, "id": "ok", "figure": "figures/a/ok.png", "expression": "y", "expected": 0.7,
         "tolerance": 0.1},
        {**BASE, "id": "bad", "figure": "figures/b/bad.png", "expression": "y", "expected": 5,
         "statement": "|x| trains", "finding": "why."},
        {**BASE, "id": "skip", "figure": "figures/a/ok.png", "expression": "y", "expected": 0,
         "source": "results/none.csv"},
    ]  # fmt: skip
    return evaluate(parse_claims(entries, "quick"), tmp_path, "quick")


def render(rst, linked=()):
    """As Snakemake renders the workflow description: Jinja, then docutils, with one link
    target per result in the report (named by its file name)."""
    targets = "".join(f"\n.. _{f.rsplit('/', 1)[-1]}: javascript:show('{f}')\n" for f in linked)
    text = jinja2.Environment().from_string(rst + targets).render()
    return publish_parts(text, writer="html")["html_body"]


def rows_of(html):
    """The verdict table's rows: claim id -> the row's cells' HTML."""
    rows = re.findall(r'<tr id="([^"]+)">(.*?)</tr>', html, flags=re.S)
    return {claim: re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S) for claim, row in rows}


def test_landing_page_opens_on_each_papers_line_then_failures_first(table):
    rst = landing_page(table, ["figures/a/ok.png"], PROVENANCE)
    assert summary_line(table) == "1 pass, 1 fail, 1 not_run"
    html = render(rst, ["figures/a/ok.png"])
    assert "system-message" not in html and "Unknown" not in html
    title = html.index("Do the papers hold? The quick scale")
    line = html.index("<strong>GaLU</strong>: 1 of its 3 claims reproduce, 1 is not run and 1")
    assert title < line < html.index("All 3 checks") < html.index('<table class="verdicts">')
    assert list(rows_of(html)) == ["bad", "skip", "ok"]  # fail, then not_run, then pass
    assert "|x| trains" in html and "why." in html
    # The figure in the report is a link that opens its page there; the other is plain text.
    assert "javascript:app.showResultInfo(&#x27;figures/a/ok.png&#x27;)" in html
    assert rows_of(html)["bad"][5] == "bad.png"
    assert "abc123" in html and "uncommitted changes" in html and "torch 2.13.0" in html


def test_report_links_name_the_runs_own_path_of_a_figure(table):
    paper = table.assign(scale="paper-cpu")
    html = render(landing_page(paper, ["figures/a/ok.png"], PROVENANCE))
    assert "showResultInfo(&#x27;figures/paper-cpu/a/ok.png&#x27;)" in html


def test_substitute_claims_are_flagged_on_the_landing_page(table):
    flagged = table.assign(data_substitute=table["claim_id"] == "ok")
    html = render(landing_page(flagged, [], PROVENANCE))
    assert "1 claim(s) are measured on substitute data" in html
    assert 'v-pass">pass</span><span class="note">substitute data</span>' in rows_of(html)["ok"][0]
    assert "substitute data" not in rows_of(html)["bad"][0]
    assert "1 claim(s)" not in render(landing_page(table, [], PROVENANCE))


def test_landing_html_is_a_standalone_page_for_a_phone_without_report_links(table):
    html = landing_html(landing_page(table, ["figures/a/ok.png"], PROVENANCE))
    assert html.startswith("<?xml") or html.lstrip().startswith("<!DOCTYPE")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert "@media (max-width:700px)" in html  # cards on a narrow screen
    assert "Do the papers hold? The quick scale" in html
    assert 'class="system-message"' not in html and "{% raw %}" not in html
    assert "ok.png" in html and "javascript:" not in html
    assert "<a " not in html.split('<table class="verdicts">')[1]  # no file given: no link


def test_claims_html_links_each_figure_to_its_file(table):
    rst = landing_page(table, ["figures/a/ok.png"], PROVENANCE)
    html = landing_html(rst, {"figures/a/ok.png": "../figures/a/ok.png"})
    link = '<a class="figure" data-figure="figures/a/ok.png" href="../figures/a/ok.png">ok.png</a>'
    assert html.count(link) == 2  # both rows showing ok.png
    assert 'class="system-message"' not in html
    assert rows_of(html)["bad"][5] == "bad.png"  # no file given for it: plain text


def test_the_why_is_one_click_away_and_says_what_explains_a_failure(table):
    rows = rows_of(render(landing_page(table, [], PROVENANCE)))
    assert "<details><summary>Why it fails</summary>why." in rows["bad"][1]
    assert "<details><summary>Why this bound</summary>" in rows["ok"][1]
    assert (
        "<details><summary>Why not run</summary>results/none.csv was not produced"
        in (rows["skip"][1])
    )
    assert rows["skip"][3] == '<span class="v v-not_run">not run</span>'


def test_a_judged_claim_without_a_number_is_told_apart_from_one_not_run(table):
    nan = table.assign(measured=[math.nan, math.nan, math.nan])
    rows = rows_of(render(landing_page(nan, [], PROVENANCE)))
    assert rows["bad"][3] == "no number (NaN)" and "not run" in rows["skip"][3]
    assert "The measurement is no number (NaN)" in rows["bad"][1]


def test_verdict_metrics_for_dvc_count_and_measure_at_the_shown_precision(table):
    from galu.workflow.landing import verdict_metrics

    metrics = verdict_metrics(table)
    assert {k: metrics[k] for k in ("scale", "pass", "fail", "not_run")} == {
        "scale": "quick", "pass": 1, "fail": 1, "not_run": 1,
    }  # fmt: skip
    # mean of y = 0.7: expected 0.7 (step 0.01) and 5 (step 0.1); not run is said in words
    assert metrics["measured"] == {"ok": 0.7, "bad": 0.7, "skip": "not_run"}
    assert metrics["substitute_data"] == 0
    # An infinite measurement stays its text: strict JSON parsers reject Infinity.
    endless = verdict_metrics(table.assign(measured=[math.inf, -math.inf, math.nan]))
    assert endless["measured"] == {"ok": "inf", "bad": "-inf", "skip": "not_run"}
    json.dumps(endless, allow_nan=False)


def test_each_row_names_the_papers_section_when_the_claim_gives_it(table):
    sourced = table.assign(section=["Fiat et al., sec. 5", "", ""])
    rows = rows_of(render(landing_page(sourced, [], PROVENANCE)))
    assert '<div class="id"><code>ok</code> · Fiat et al., sec. 5</div>' in rows["ok"][1]
    assert '<div class="id"><code>bad</code> · galu</div>' in rows["bad"][1]


def test_the_landing_page_names_every_commit_its_tables_were_made_on(table):
    one = {**PROVENANCE, "made_on": ({"abc123": 5}, [])}
    assert "Tables made on" not in render(landing_page(table, [], one))
    spanned = {**PROVENANCE, "made_on": ({"a" * 40: 3, "b" * 40: 2}, ["results/scm/x.csv"])}
    html = render(landing_page(table, [], spanned))
    assert "system-message" not in html
    assert "2 commit(s)" in html and "aaaaaaaaaaaa" in html and "bbbbbbbbbbbb" in html
    assert "1 table(s) made from them" in html and "results/scm/x.csv" in html


def test_every_row_gives_the_papers_number_ours_and_the_bound_with_the_tolerance_folded_in(
    tmp_path,
):
    (tmp_path / "results").mkdir()
    pd.DataFrame({"y": [0.9, 0.5]}).to_csv(tmp_path / "results/t.csv", index=False)
    entry = {**BASE, "id": "ok", "figure": "figures/a/ok.png", "expression": "y",
             "expected": 0.7, "tolerance": 0.125,
             "quantity": "mean of y over the rows"}  # fmt: skip
    bounded = {**entry, "id": "low", "compare": "at_most", "expected": 0.0, "tolerance": 0.75}
    table = evaluate(parse_claims([entry, bounded], "quick"), tmp_path, "quick")
    assert table["quantity"].tolist() == ["mean of y over the rows"] * 2
    html = render(landing_page(table, [], PROVENANCE))
    header = re.findall(r"<th>(.*?)</th>", html)
    assert header == ["verdict", "claim", "paper says", "ours", "bound", "figure"]
    rows = rows_of(html)
    assert "<i>Measured:</i> mean of y over the rows." in rows["ok"][1]
    assert rows["ok"][2:5] == ["–", "0.70", "0.7 ± 0.125"]  # the paper gives no number
    assert rows["low"][4] == "≤ 0.75"  # expected at most 0, tolerance 0.75
    said = evaluate(parse_claims([{**entry, "paper_says": "0.7 (sec. 2)"}], "quick"), tmp_path,
                    "quick")  # fmt: skip
    assert rows_of(render(landing_page(said, [], PROVENANCE)))["ok"][2] == "0.7 (sec. 2)"


HOSTILE = [
    "{% endraw %}{{ cycler.__init__.__globals__.os.popen('touch /tmp/pwned') }}{% raw %}",
    "{{ 7 * 7 }} and {{F F^T}}",
    "<script>alert(1)</script>",
    "tab\there\x1b[31m red .. raw:: html",
    "`code` and {% raw %} literally",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_in_a_claim_lands_verbatim_and_runs_nothing(table, text):
    hostile = table.assign(statement=text, finding=text, reason=text, paper_says=text)
    rst = landing_page(hostile, ["figures/a/ok.png"], {**PROVENANCE, "data": text})
    for page in (render(rst, ["figures/a/ok.png"]), landing_html(rst)):
        assert "<script>alert" not in page and 'class="system-message"' not in page
        page = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
        visible = html_module.unescape(re.sub(r"<[^>]+>", "", page))
        assert "49" not in visible  # {{ 7 * 7 }} was not evaluated
        shown = text.replace("`code`", "code")  # backquoted text is shown as code
        assert re.sub(r"\s+", " ", shown) in re.sub(r"\s+", " ", visible)
