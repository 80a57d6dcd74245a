"""dvc.yaml's plots and metrics (`galu plots`, `dvc metrics`): each plot shows what a claim
reads, grouped by the series the claim compares; a plot without data is left out and named;
a fresh clone has committed metrics to show and compare."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from galu.workflow.pages.dvcplots import has_rows, left_out, plots, show
from galu.workflow.tables import contract_for
from galu.yaml_files import load_yaml

from conftest import REPO, run, tool

PUBLISHED = REPO / "published/paper-cpu"
DVC_FIELDS = {"field", "rev", "dvc_inferred_y_value"}  # the fields DVC adds to each row
# The series each plot's claims compare: the field its colours encode.
GROUPED_BY = {
    "coefficients": "field",  # alpha, beta, gamma (DVC's field of a multi-field y)
    "max_depth": "activation",
    "underparam": "model",
    "min_width": "model",
    "test_error_by_width": "model",
}


def definitions() -> dict[str, dict]:
    return {
        plot_id: props
        for entry in load_yaml(REPO / "dvc.yaml")["plots"]
        for plot_id, props in entry.items()
    }


def template(props: dict) -> dict:
    return json.loads((REPO / ".dvc/plots" / f"{props['template']}.json").read_text())


def walk(spec):
    """Every mapping inside a Vega-Lite spec."""
    if isinstance(spec, dict):
        yield spec
        for value in spec.values():
            yield from walk(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from walk(value)


def colour_fields(spec: dict) -> set[str]:
    return {
        node["color"]["field"]
        for node in walk(spec)
        if isinstance(node.get("color"), dict) and "field" in node["color"]
    }


def named_fields(spec: dict) -> set[str]:
    """The table columns a template names itself: encoded fields, groupby fields and the
    ``datum.X`` of its expressions, less the anchors and what its transforms compute."""
    computed = {node["as"] for node in walk(spec) if isinstance(node.get("as"), str)}
    computed |= {
        name for node in walk(spec) if isinstance(node.get("as"), list) for name in node["as"]
    }
    named = {node["field"] for node in walk(spec) if isinstance(node.get("field"), str)}
    named |= {f for node in walk(spec) for f in node.get("groupby", [])}
    text = json.dumps(spec)
    named |= set(re.findall(r"datum\.(\w+)", text))
    return {f for f in named if not f.startswith("<DVC_METRIC")} - computed - DVC_FIELDS


def test_every_plot_reads_columns_of_its_tables_contract_and_groups_by_the_compared_series():
    found = definitions()
    assert list(found) == list(GROUPED_BY)
    for plot_id, props in found.items():
        spec = template(props)
        assert colour_fields(spec) == {GROUPED_BY[plot_id]}, plot_id
        ((path, y),) = props["y"].items()
        contract = contract_for(path)
        assert contract is not None, path
        columns = set(contract.columns) | set(contract.key)
        ys = y if isinstance(y, list) else [y]
        assert {props["x"], *ys} <= columns, plot_id
        assert named_fields(spec) - {"field"} <= columns, plot_id
        assert GROUPED_BY[plot_id] in columns | DVC_FIELDS


def test_every_plot_title_names_claims_that_read_its_table():
    claims = load_yaml(REPO / "workflow/claims.yaml")
    for plot_id, props in definitions().items():
        (path,) = props["y"]
        claim_list = props["title"].split(" (")[0]  # a note in parentheses may follow
        named = re.findall(r"[a-z0-9_*]+_[a-z0-9_*]+", claim_list)
        assert named, plot_id
        for pattern in named:
            rx = re.compile(pattern.replace("*", r"\w+") + "$")
            sources = {c["source"] for c in claims if rx.match(c["id"])}
            assert sources == {path}, (plot_id, pattern, sources)


def test_has_rows_and_left_out(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n")
    assert not has_rows(tmp_path / "t.csv")
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    assert has_rows(tmp_path / "t.csv")
    (tmp_path / "e.json").write_text("[]")
    assert not has_rows(tmp_path / "e.json")
    (plot,) = [p for p in plots(REPO) if p.id == "underparam"]
    assert plot.files == ("results/memorization/underparam.csv",)
    assert left_out(tmp_path, plot) == "results/memorization/underparam.csv is absent"


def test_a_checkout_without_results_gets_a_page_naming_every_plot_left_out(tmp_path):
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    page, missing = show(tmp_path)
    assert set(missing) == set(GROUPED_BY)
    html = page.read_text()
    assert "vegaEmbed('#" not in html and "No plot has data" in html
    assert all(f"<code>{plot_id}</code>" in html for plot_id in GROUPED_BY)


def specs(html: str) -> dict[str, dict]:
    """The Vega-Lite specs in a `dvc plots show` page, by the title's first claim."""
    found = re.findall(r"var spec = (\{.*?\});\s*vegaEmbed", html, flags=re.DOTALL)
    return {json.loads(s)["title"]["text"].split(",")[0]: json.loads(s) for s in found}


def test_page_of_a_run_plots_each_table_grouped_and_leaves_out_an_empty_one(tmp_path):
    """The published paper-cpu tables in a DVC checkout; max_depth emptied (as a scale that
    measures nothing would leave it): four plots with the tables' rows, one left out."""
    run([tool("dvc"), "init", "--no-scm", "-q"], tmp_path)
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    shutil.copytree(REPO / ".dvc/plots", tmp_path / ".dvc/plots")
    tables = {path for plot in plots(REPO) for path in plot.files}
    for path in tables:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PUBLISHED / path, tmp_path / path)
    depth = tmp_path / "results/normalization/max_depth.csv"
    depth.write_text(depth.read_text().splitlines()[0] + "\n")
    page, missing = show(tmp_path)
    assert missing == {
        "max_depth": "results/normalization/max_depth.csv has no rows at this run's scale"
    }
    html = page.read_text()
    assert "<script src=" not in html and "cdn.jsdelivr" not in html
    shown = specs(html)
    assert set(shown) == {
        "norm_relu_moments",
        "mem_galu_exact_follows_one_minus_kd_over_m",
        "mem_min_width_galu_about_relu",
        "gen_galu0_close_to_relu_*",
    }
    rows = {path: len((PUBLISHED / path).read_text().splitlines()) - 1 for path in tables}
    coefficients = shown["norm_relu_moments"]
    assert colour_fields(coefficients) == {"field"}
    values = coefficients["data"]["values"]
    assert len(values) == 3 * rows["results/normalization/coefficients.csv"]
    tanh_beta = [v for v in values if v["activation"] == "tanh" and v["field"] == "beta"]
    assert [float(v["dvc_inferred_y_value"]) for v in tanh_beta] == [0.0]
    errors = shown["gen_galu0_close_to_relu_*"]
    assert colour_fields(errors) == {"model"} and errors["facet"]["column"]["field"] == "dataset"
    assert len(errors["data"]["values"]) == rows["results/generalization/accuracy.csv"]
    assert {v["model"] for v in errors["data"]["values"]} >= {"relu", "galu", "galu0"}
    underparam = shown["mem_galu_exact_follows_one_minus_kd_over_m"]
    assert colour_fields(underparam) == {"model"}
    assert len(underparam["data"]["values"]) == rows["results/memorization/underparam.csv"]


@pytest.mark.parametrize("changed", [False, True])
def test_metrics_of_a_fresh_clone_show_and_diff_the_published_counts(tmp_path, changed):
    """A clone has no results/ (git-ignored): the committed publication's counts are what
    `dvc metrics show` and `dvc metrics diff` have to compare."""
    dvc, counts = tool("dvc"), "published/paper-cpu/results/claims_counts.json"
    assert counts in load_yaml(REPO / "dvc.yaml")["metrics"]
    (tmp_path / counts).parent.mkdir(parents=True)
    shutil.copy(REPO / counts, tmp_path / counts)
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    git = {f"GIT_{w}_{x}": "t" for w in ("AUTHOR", "COMMITTER") for x in ("NAME", "EMAIL")}
    for cmd in (["git", "init", "-q"], [dvc, "init", "-q"], ["git", "add", "-A"]):
        run(cmd, tmp_path)
    run(["git", "commit", "-qm", "clone"], tmp_path, env=git)
    published = json.loads((REPO / counts).read_text())
    shown = json.loads(run([dvc, "metrics", "show", "--json"], tmp_path).stdout)
    assert shown[""]["data"][counts]["data"] == published
    if changed:
        (tmp_path / counts).write_text(json.dumps({**published, "fail": published["fail"] + 1}))
    diff = run([dvc, "metrics", "diff", "--all"], tmp_path).stdout
    rows = {row[1]: row[2:] for row in (line.split() for line in diff.splitlines()[1:])}
    fail = str(published["fail"])
    assert rows["fail"] == (
        [fail, str(published["fail"] + 1), "1"] if changed else [fail, fail, "0"]
    )
