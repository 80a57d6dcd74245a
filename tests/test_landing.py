"""The report's landing page: the verdict first, failures first, links to figures, provenance."""

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


def test_landing_page_opens_on_the_verdict_with_failures_first(table):
    rst = landing_page(table, ["figures/a/ok.png"], PROVENANCE)
    assert summary_line(table) == "1 pass, 1 fail, 1 not_run"
    html = render(rst, ["figures/a/ok.png"])
    assert "system-message" not in html and "Unknown" not in html
    title = html.index("Reproduction verdict: 1 pass, 1 fail, 1 not_run")
    assert title < html.index("<table")  # the summary comes first
    order = [html.index(f'<span class="{c}">') for c in ("failed", "notrun", "passed")]
    assert order == sorted(order)  # fail, then not_run, then pass
    assert "|x| trains" in html and "why." in html
    # The figure in the report is a link; the one not in it is plain text.
    assert "javascript:show('figures/a/ok.png')" in html
    assert "figures/b/bad.png</tt>" in html.replace('<span class="pre">', "").replace("</span>", "")
    assert "abc123" in html and "uncommitted changes" in html and "torch 2.13.0" in html


def test_substitute_claims_are_flagged_on_the_landing_page(table):
    flagged = table.assign(data_substitute=table["claim_id"] == "ok")
    html = render(landing_page(flagged, [], PROVENANCE))
    assert "1 claim(s) are measured on substitute data" in html
    assert "pass</span> (substitute data)" in html
    assert "1 claim(s)" not in render(landing_page(table, [], PROVENANCE))


def test_landing_html_is_a_standalone_page_without_report_links(table):
    html = landing_html(landing_page(table, ["figures/a/ok.png"], PROVENANCE))
    assert html.startswith("<?xml") or html.lstrip().startswith("<!DOCTYPE")
    assert "Reproduction verdict: 1 pass, 1 fail, 1 not_run" in html
    assert 'class="system-message"' not in html and "{% raw %}" not in html
    assert "ok.png" in html and "javascript:" not in html
    assert "<a " not in html.split("<table")[1]  # no figure file given: nothing to link


def test_claims_html_links_each_figure_to_its_file(table):
    rst = landing_page(table, ["figures/a/ok.png"], PROVENANCE)
    html = landing_html(rst, {"figures/a/ok.png": "../figures/a/ok.png"})
    # both rows showing ok.png link it (anonymous links: no duplicate-target warnings)
    assert html.count('href="../figures/a/ok.png">ok.png</a>') == 2
    assert 'class="system-message"' not in html
    assert "figures/b/bad.png" in html  # not in the report: a path, not a link


def test_a_failed_row_says_what_explains_it(table):
    html = render(landing_page(table, [], PROVENANCE))
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    (bad,) = [r for r in rows if ">bad</tt>" in r]
    assert "<em>Why it fails:</em> why." in bad
    assert not any("Why it fails" in r for r in rows if r is not bad)
    assert "What we believe explains each failure" not in html  # no second list below


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
    html = render(landing_page(sourced, [], PROVENANCE))
    assert '<tt class="docutils literal">ok</tt> (Fiat et al., sec. 5)' in html
    assert '<tt class="docutils literal">bad</tt> (galu)' in html


def test_the_landing_page_names_every_commit_its_tables_were_made_on(table):
    one = {**PROVENANCE, "made_on": ({"abc123": 5}, [])}
    assert "Tables made on" not in render(landing_page(table, [], one))
    spanned = {**PROVENANCE, "made_on": ({"a" * 40: 3, "b" * 40: 2}, ["results/scm/x.csv"])}
    html = render(landing_page(table, [], spanned))
    assert "system-message" not in html
    assert "2 commit(s)" in html and "aaaaaaaaaaaa" in html and "bbbbbbbbbbbb" in html
    assert "1 table(s) made from them" in html and "results/scm/x.csv" in html


def test_every_row_names_its_quantity_and_tolerance(tmp_path):
    (tmp_path / "results").mkdir()
    pd.DataFrame({"y": [0.9, 0.5]}).to_csv(tmp_path / "results/t.csv", index=False)
    entry = {**BASE, "id": "ok", "figure": "figures/a/ok.png", "expression": "y",
             "expected": 0.7, "tolerance": 0.125,
             "quantity": "mean of y over the rows"}  # fmt: skip
    table = evaluate(parse_claims([entry], "quick"), tmp_path, "quick")
    assert table["quantity"].tolist() == ["mean of y over the rows"]
    html = render(landing_page(table, [], PROVENANCE))
    cells = [c.strip() for c in re.findall(r"<td>(.*?)</td>", html.replace("\n", " "))]
    header = [c.strip() for c in re.findall(r"<th class=\"head\">(.*?)</th>", html, flags=re.S)]
    assert header[3:8] == ["measured quantity", "paper says", "expected", "measured", "tolerance"]
    assert "mean of y over the rows" in cells[3] and "0.125" in cells[7]
    assert cells[4] == "–"  # the paper gives no number for it
    said = evaluate(parse_claims([{**entry, "paper_says": "0.7 (sec. 2)"}], "quick"), tmp_path,
                    "quick")  # fmt: skip
    cells = re.findall(r"<td>(.*?)</td>", render(landing_page(said, [], PROVENANCE)), re.S)
    assert cells[4].strip() == "0.7 (sec. 2)"
