"""Publishing a finished run (galu/workflow/publishing/publish.py): the copy, its audit, the README
section."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from readme_support import write_readme

from galu.workflow.cli import main
from galu.workflow.output import Run
from galu.workflow.pages.publication_readme import PAPER_MARKERS, commits_text, paper_section
from galu.workflow.pages.readme_pages import PAPER_PAGE, PAPER_SUMMARY_MARKERS, QUICK_PAGE
from galu.workflow.pages.readme_sections import readme_section
from galu.workflow.planning.jobs import stage_of
from galu.workflow.provenance import sealed_sidecar, sha256_file, sidecar_path
from galu.workflow.publication_folders import (
    PublishError,
    described_path,
    publication_folder,
    publication_of,
)
from galu.workflow.publishing.publication_manifest import counted, run_times, unfinished_stages
from galu.workflow.publishing.publish import publish
from galu.workflow.trust.audit import audit_tree, count_outputs
from galu.workflow.verdict_table import figure_link

from conftest import NOT_COPIED, REPO


def test_the_repository_publications_pass_the_audit_in_place():
    """What the repository publishes (``published/``: the paper-level run, and a run kept in
    progress when there is one) is consistent with its sidecars, read where it lies: the test
    copies of the repository leave the run in progress out (``conftest.NOT_COPIED``), so the
    audits of their own folders no longer see it."""
    assert count_outputs(REPO, ["published"]) > 100
    in_progress = sorted((REPO / NOT_COPIED).glob("*/"))
    assert all(count_outputs(REPO, [str(p.relative_to(REPO))]) > 0 for p in in_progress)
    assert audit_tree(REPO, ["published"]) == []


def _fake_run(scale: str = "paper-cpu", eta: float = 0.5) -> None:
    """A finished run of ``scale`` in the current folder: one source table made from a
    dataset array, the claims table made from it (with reductions in its params)."""
    Path("data/processed").mkdir(parents=True, exist_ok=True)
    Path("data/processed/a.npz").write_bytes(b"array")
    source = f"results/{scale}/scm/stability.csv"
    Run("scm_stability", inputs=["data/processed/a.npz"]).write_csv(
        pd.DataFrame({"eta": [eta, 2.0]}), source
    )
    reductions = [{"text": "N = 1,000", "claims": ["c2"]}]
    params = {"reductions": reductions, "stages": ["scm", "normalization"]}
    claims = Run("claims", inputs=[source], params=params)
    table = pd.DataFrame(
        {"claim_id": ["c1", "c2"], "verdict": ["pass", "not_run"], "measured": [0.25, 0.5]}
    ).assign(precision=0.01, scale=scale)
    claims.write_csv(table, f"results/{scale}/claims.csv")
    for name, text in (("claims.md", "Claims checked at the **paper-cpu** scale: 1 pass.\n"),):
        Path(f"results/{scale}/{name}").write_text(text)
        claims.stamp(f"results/{scale}/{name}")


def test_a_published_copy_passes_the_audit_and_tampering_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    manifest = publish(
        "paper-cpu",
        configfiles=["config/paper.yaml", "config/paper-cpu.yaml"],
        machine="test machine",
    )
    # Every result of the run, the verdict first; the sidecars unchanged (they describe
    # the run's paths).
    assert manifest["files"] == [
        "results/claims.csv",
        "results/claims.md",
        "results/scm/stability.csv",
    ]
    assert manifest["reductions"] == ["N = 1,000"]
    published = Path("published/paper-cpu/results/scm/stability.csv")
    assert published.read_bytes() == Path("results/paper-cpu/scm/stability.csv").read_bytes()
    assert audit_tree(".", ["published"]) == []
    # Made on another commit than the checkout's (none here), yet no problem with --strict:
    # a publication records its commit.
    assert main(["audit", "--strict", "--folders", "published"]) == 0
    # Removing the run (its data included) leaves the publication verifiable on its own.
    shutil.rmtree("results")
    shutil.rmtree("data")
    assert audit_tree(".", ["published"]) == []
    # An edited published table is named, and so is every published file made from it.
    published.write_text(published.read_text().replace("0.5", "0.6"))
    found = {f.path: f.problem for f in audit_tree(".", ["published"])}
    changed = "input published/paper-cpu/results/scm/stability.csv changed since this output"
    assert found.keys() == {
        "published/paper-cpu/publication.json",
        "published/paper-cpu/run-state.json",
        "published/paper-cpu/results/claims.csv",
        "published/paper-cpu/results/claims.md",
        published.as_posix(),
    }
    assert found["published/paper-cpu/results/claims.csv"].startswith(changed)
    assert found["published/paper-cpu/publication.json"].startswith(changed)
    assert found[published.as_posix()].startswith("changed after it was written")


def test_a_published_table_under_another_name_is_not_its_copy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=[], machine="m")
    folder = Path("published/paper-cpu/results")
    shutil.copy(folder / "scm/stability.csv", folder / "scm/trajectories.csv")
    shutil.copy(folder / "scm/stability.csv.meta.json", folder / "scm/trajectories.csv.meta.json")
    problems = [str(f) for f in audit_tree(".", ["published"])]
    assert problems == [
        "published/paper-cpu/results/scm/trajectories.csv: its sidecar describes"
        " results/paper-cpu/scm/stability.csv, not this file (copied with its sidecar?):"
        " its provenance is not this file's"
    ]


def test_publish_refuses_the_quick_scale_and_a_missing_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("config").mkdir()
    Path("config/config.yaml").write_text("scale: quick\n")
    Path("config/paper.yaml").write_text("scale: paper\n")
    Path("config/paper-cpu.yaml").write_text("scale: paper-cpu\n")
    Path("workflow").mkdir()
    Path("workflow/claims.yaml").write_text("[]\n")
    assert main(["publish", "--scale", "quick"]) == 2
    assert "the quick scale is not published" in capsys.readouterr().err
    assert main(["publish", "--scale", "paper-cpu"]) == 2
    err = capsys.readouterr().err
    assert "no finished run of the paper-cpu scale" in err and "Traceback" not in err
    assert main(["publish", "--scale", "paper-cpu", "--configfile", "config/nope.yaml"]) == 2
    assert "no configuration file config/nope.yaml" in capsys.readouterr().err
    # An unset $SCALE, ".", a path or a name the configuration does not know: refused, and
    # nothing under published/ is touched.
    Path("published/paper-cpu").mkdir(parents=True)
    Path("published/paper-cpu/keep.txt").write_text("kept")
    for bad in ("", ".", "..", "paper-cpu/..", "in-progress"):
        assert main(["publish", "--scale", bad]) == 2
        assert "nothing was published" in capsys.readouterr().err or bad == "in-progress"
    Path("workflow/schemas").mkdir(parents=True)
    Path("workflow/schemas/config.schema.yaml").write_text(
        "properties:\n  scale:\n    enum: [quick, paper, paper-cpu]\n"
    )
    assert main(["publish", "--scale", "paper-gpu"]) == 2
    assert "unknown scale 'paper-gpu'" in capsys.readouterr().err
    assert Path("published/paper-cpu/keep.txt").read_text() == "kept"


@pytest.mark.parametrize(
    ("path", "described"),
    [
        ("published/paper-cpu/results/claims.csv", "results/paper-cpu/claims.csv"),
        ("published/paper-cpu/publication.json", "published/paper-cpu/publication.json"),
        ("results/paper-cpu/claims.csv", "results/paper-cpu/claims.csv"),
        ("published/x", "published/x"),
    ],
)
def test_described_path(path, described):
    assert described_path(path) == described


def test_run_times_count_each_job_once_and_span_first_to_last():
    records = [
        # one job, two outputs (same start): counted once, until its later end
        {"rule": "a", "wildcards": {}, "started": "2026-01-01T00:00:00+00:00",
         "finished": "2026-01-01T00:30:00+00:00"},
        {"rule": "a", "wildcards": {}, "started": "2026-01-01T00:00:00+00:00",
         "finished": "2026-01-01T01:00:00+00:00"},
        {"rule": "b", "wildcards": {"x": 1}, "started": "2026-01-01T01:00:00+00:00",
         "finished": "2026-01-01T01:30:00+00:00"},
        {"rule": "c", "started": "not a time", "finished": None},
    ]  # fmt: skip
    times = run_times(records)
    assert (times["wall_hours"], times["running_hours"], times["job_hours"]) == (1.5, 1.5, 1.5)
    assert times["stage_hours"] == {"report": 1.5}  # a, b and c are no stage's rules
    assert run_times([]) == {
        "wall_hours": 0.0, "running_hours": 0.0, "job_hours": 0.0, "stage_hours": {}
    }  # fmt: skip


def test_run_times_leave_out_the_pause_between_sittings_and_time_each_stage():
    def job(rule, start, end, **wildcards):
        return {"rule": rule, "wildcards": wildcards, "started": f"2026-01-01T{start}:00+00:00",
                "finished": f"2026-01-01T{end}:00+00:00"}  # fmt: skip

    records = [
        # first sitting: two SCM jobs at once, 01:00-02:00 covered once
        job("scm_ode", "01:00", "02:00", scm_setting="perceptron"),
        job("scm_ode", "01:30", "02:00", scm_setting="relu_k2m2"),
        # a pause of 8 hours, then the second sitting: a data job and a memorization job
        job("prepare", "10:00", "10:15", dataset="mnist"),
        job("memorization_search", "10:15", "12:15", criterion="mse", part="0"),
        job("memorization_search", "11:00", "11:30", criterion="mse", part="1"),
        job("claims", "12:15", "12:30"),
    ]
    times = run_times(records)
    assert times["wall_hours"] == 11.5
    assert times["running_hours"] == 3.5
    assert times["job_hours"] == 1 + 0.5 + 0.25 + 2 + 0.5 + 0.25
    assert times["stage_hours"] == {"data": 0.25, "memorization": 2.0, "scm": 1.0, "report": 0.25}
    assert list(times["stage_hours"]) == ["data", "memorization", "scm", "report"]


@pytest.mark.parametrize(
    "rule, stage",
    [("scm_ode", "scm"), ("memorization_search", "memorization"), ("download", "data"),
     ("prepare", "data"), ("claims", "report"), ("normalization_plot_isometry", "normalization"),
     ("generalization_images", "generalization")],
)  # fmt: skip
def test_stage_of_a_rule(rule, stage):
    assert stage_of(rule) == stage


def test_paper_section_says_what_ran_and_the_readme_check_follows_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Not a git checkout, whatever lies above the temporary folder (a CI run beside other
    # test sessions once found a repository there and recorded its commit).
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert paper_section(".").startswith("No run at the paper level is published yet")
    _fake_run()
    # a finished job of a stage the claims do not cover yet
    Run("generalization_synthetic").write_csv(
        pd.DataFrame({"err": [0.1]}), "results/paper-cpu/generalization/runs/parity.csv"
    )
    publish("paper-cpu", configfiles=["c.yaml"], machine="m1")
    manifest = json.loads(Path("published/paper-cpu/publication.json").read_text())
    section = paper_section(".")
    # Not a git checkout here: every file's commit is unknown, and the section says so.
    assert manifest["commits"] == {"unknown": 4} and manifest["dirty_files"] == []
    assert (
        "Its 4 outputs were made on 1 commit; no commit's code is the one they were checked"
        " against, 4 file(s) whose sidecar does not say whether they were made from"
        " uncommitted changes (e.g. `results/claims.csv`); published from outside a git"
        " checkout (its state is not known)." in section
    )
    assert "machine m1" in section
    assert "configuration `c.yaml`" in section and "- N = 1,000" in section
    assert "Stages run: scm, normalization (configuration key `stages`" in section
    assert manifest["unfinished_stages"] == {"generalization": 1}
    assert "stages still running (1 of generalization); no claim reads them yet" in section
    assert "Claims checked at the **paper-cpu** scale: 1 pass." in section
    assert section.rstrip().endswith("after a quick run, `make reproduce`.)")  # none here
    # The README and its pages: stale until `galu readme --update`, then current; the
    # published claims beside the quick run's of `--claims` (its claims.csv), their links
    # from the page's folder
    Path("claims.md").write_text("Claims checked at the **quick** scale: 1 pass.\n")
    published = pd.read_csv("published/paper-cpu/results/claims.csv")
    published.assign(scale="quick", verdict="fail").to_csv("claims.csv", index=False)
    section = paper_section(".", Path("claims.csv"))
    claim = published["claim_id"].iloc[0]
    assert f"| `{claim}` |" in section and "| fail | " in section and "| pass | differ |" in section
    assert f"- `{claim}`: no sentence yet on which scale to believe" in section
    write_readme(Path("."), "Claims checked at the **quick** scale: 1 pass.\n", "old\n")
    assert main(["readme", "--claims", "claims.md"]) == 1
    assert main(["readme", "--claims", "claims.md", "--update"]) == 0
    assert main(["readme", "--claims", "claims.md"]) == 0
    page = Path(PAPER_PAGE).read_text()
    assert readme_section(page, PAPER_MARKERS) == paper_section(".", Path("claims.csv"), "docs")
    assert page.endswith("end\n")
    # README's block counts the published claims by verdict, linking the page
    counts = readme_section(Path("README.md").read_text(), PAPER_SUMMARY_MARKERS)
    assert "At the **paper-cpu** scale (published: `published/paper-cpu/`), 2 claims" in counts
    line = "- **?**: 1 of its 2 claims reproduce and 1 is not run."
    assert f"{line} ([every claim](docs/verdicts-paper.md))" in counts


@pytest.mark.slow
def test_a_tiny_run_published_passes_the_audit_and_fills_the_readme(tmp_path):
    from test_reliability_support import TINY, smk, tiny_repo

    from conftest import run, tool

    reduction = {"text": "SCM simulations at N = 40", "claims": ["scm_schedule_floor_no_gain_sim"]}
    overlay = {**TINY, "scale": "paper-cpu", "stages": ["scm"], "reductions": [reduction]}
    root = tiny_repo(tmp_path / "repo", overlay)
    smk(root, "--cores", "2")
    claims = pd.read_csv(root / "results/paper-cpu/claims.csv").set_index("claim_id")
    reduced = claims.loc["scm_schedule_floor_no_gain_sim"]
    # indicative, the reduction its reason (that the value is kept: test_claims.py)
    assert reduced.verdict == "indicative" and reduced.scale == "paper-cpu"
    assert reduced.reason == "SCM simulations at N = 40"
    # Judged as the paper scale: a claim stated for the paper scale only is checked.
    assert claims.loc["scm_perceptron_eta_c"].verdict in ("pass", "fail")
    caption = (root / "results/paper-cpu/captions/scm/schedules.rst").read_text()
    assert "Reduced from the paper's settings at the paper-cpu scale" in caption
    assert "SCM simulations at N = 40" in caption

    galu = tool("galu")
    out = run([galu, "publish", "--scale", "paper-cpu", "--configfile", "reliability.yaml"], root)
    assert "published/paper-cpu/" in out.stdout
    published = root / "published/paper-cpu/results/claims.csv"
    assert published.read_bytes() == (root / "results/paper-cpu/claims.csv").read_bytes()
    # Every figure is published with its sidecar; the publication's verdict page links
    # each figure it names to the published PNG.
    made = sorted(p.relative_to(root / "figures/paper-cpu") for p in _figure_files(root))
    assert made and any(f.suffix == ".png" for f in made) and any(f.suffix == ".pdf" for f in made)
    copies = root / "published/paper-cpu/figures"
    for rel in made:
        source = root / "figures/paper-cpu" / rel
        assert (copies / rel).read_bytes() == source.read_bytes(), rel
        assert sidecar_path(copies / rel).read_bytes() == sidecar_path(source).read_bytes()
    # (the run's own page links the run's figures, which lie elsewhere: it is no page of the
    # publication, but kept in its run state for `galu resume`)
    run_page = root / "results/paper-cpu/claims.html"
    hrefs = re.findall(r'href="([^"]+\.png)"', run_page.read_text())
    assert hrefs and all(run_page.parent.joinpath(h).is_file() for h in hrefs), hrefs
    assert not (root / "published/paper-cpu/results/claims.html").exists()
    # Each figure has its caption page, linked from the verdict page; no page of the
    # publication has a broken link.
    pages = sorted((root / "published/paper-cpu").rglob("*.html"))
    captioned = {p.relative_to(copies).with_suffix(".png") for p in pages if copies in p.parents}
    assert captioned == {f for f in made if f.suffix == ".png"}
    verdict = (root / "published/paper-cpu/claims.html").read_text()
    assert all(f'href="figures/{f.with_suffix(".html")}"' in verdict for f in captioned)
    for page in pages:
        links = re.findall(r'(?:href|src)="([^"#:]+)"', page.read_text())
        assert links and all(page.parent.joinpath(h).is_file() for h in links), (page, links)
    audit = run([galu, "audit"], root)
    assert "consistent with their provenance sidecars" in audit.stdout
    # The pages: the quick section as it is (this copy made no quick run: the repository's
    # quick claims table is its stand-in), the paper section stale until updated from
    # published/; README's counts of both follow.
    quick = root / "quick.md"
    quick.write_text(readme_section((root / QUICK_PAGE).read_text()))
    shutil.copy(root / "published/paper-cpu/results/claims.csv", root / "quick.csv")
    assert run([galu, "readme", "--claims", "quick.md"], root, check=False).returncode == 1
    run([galu, "readme", "--claims", "quick.md", "--update"], root)
    run([galu, "readme", "--claims", "quick.md"], root)
    section = readme_section((root / PAPER_PAGE).read_text(), PAPER_MARKERS)
    assert "The **paper-cpu** run: machine" in section and "`reliability.yaml`" in section
    # one commit, the one it was published from: its outputs' code is that commit's
    head = run(["git", "rev-parse", "HEAD"], root).stdout.strip()
    assert (
        "outputs were made on 1 commit; every output's code is equivalent to"
        f" `{head[:12]}`'s, the commit it was published from" in section
    )
    assert "Claims checked at the **paper-cpu** scale" in section
    linked = re.findall(r"\]\(\.\./(published/paper-cpu/[^)]+)\)", section)
    assert "published/paper-cpu/claims.html" in linked
    pages_linked = {f"published/paper-cpu/figures/{f.with_suffix('.html')}" for f in captioned}
    assert pages_linked <= set(linked)
    assert all((root / link).is_file() for link in linked)
    counts = readme_section((root / "README.md").read_text(), PAPER_SUMMARY_MARKERS)
    assert "At the **paper-cpu** scale (published: `published/paper-cpu/`)" in counts


def _figure_files(root: Path) -> list[Path]:
    return [
        p
        for p in (root / "figures/paper-cpu").rglob("*")
        if p.is_file() and not p.name.endswith(".meta.json")
    ]


def test_tables_and_figures_are_counted_apart_and_figures_never_as_unfinished_work():
    files = [
        "results/claims.csv",
        "results/scm/stability.csv",
        "results/generalization/runs/parity.csv",
        "figures/scm/stability.png",
        "figures/scm/stability.pdf",
        "figures/generalization/parity.png",
        "figures/generalization/parity.pdf",
    ]
    assert counted(files) == "3 table(s) and 2 figure(s)"  # a PNG and a PDF: one figure
    assert unfinished_stages(files, ["scm"]) == {"generalization": 1}


def test_a_figure_is_published_and_linked_from_the_page_and_the_readme(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    figure = "figures/paper-cpu/scm/stability.png"
    Path(figure).parent.mkdir(parents=True)
    Path(figure).write_bytes(b"\x89PNG fake")
    Run("scm_plot", inputs=["results/paper-cpu/scm/stability.csv"]).stamp(figure)
    landing = "results/paper-cpu/captions/index.rst"
    Path(landing).parent.mkdir(parents=True)
    links = " ".join(
        figure_link(f"figures/scm/{name}.png", f"javascript:open('{name}')")
        for name in ("stability", "other")
    )  # as the landing page links a figure in the report (galu.workflow.verdict_table)
    Path(landing).write_text(f"Verdict\n=======\n\n.. raw:: html\n\n   {links}\n")
    Run("claims").stamp(landing)
    manifest = publish("paper-cpu", configfiles=[], machine="m")
    assert "figures/scm/stability.png" in manifest["files"]
    folder = Path("published/paper-cpu")
    assert (folder / "figures/scm/stability.png").read_bytes() == Path(figure).read_bytes()
    page = (folder / "claims.html").read_text()
    # the published figure linked from the publication's root; one it lacks stays text
    assert 'href="figures/scm/stability.png"' in page and "other.png" in page
    assert page.count("href=") == 1 + page.count('href="#')
    assert audit_tree(".", ["published"]) == []
    section = paper_section(".")
    assert "[stability](published/paper-cpu/figures/scm/stability.png)" in section
    assert "[`published/paper-cpu/claims.html`](published/paper-cpu/claims.html)" in section
    # the page is the publication's: edited, the audit names it
    (folder / "claims.html").write_text(page.replace("stability", "tampered"))
    assert [f.path for f in audit_tree(".", ["published"])] == [f"{folder}/claims.html"]


def test_the_chain_of_a_published_table_runs_through_published_copies(tmp_path, monkeypatch):
    from galu.workflow.trust.lineage import explain

    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=[], machine="m")
    shutil.rmtree("results")
    node = explain("published/paper-cpu/results/claims.csv", ".")
    # its input is the published stability table, whose own input (data) was not published
    assert [c.path for c in node.inputs] == ["published/paper-cpu/results/scm/stability.csv"]
    assert node.inputs[0].inputs == [] and node.findings() == []


def test_a_run_with_uncommitted_changes_is_refused_unless_allowed_and_then_said(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    # One table made on another commit from a modified tree, as its sidecar records.
    table = "results/paper-cpu/scm/stability.csv"
    dirty = {"git": {"commit": "a" * 40, "dirty": True}}
    Run("scm_stability", inputs=["data/processed/a.npz"], extra=dirty).write_csv(
        pd.read_csv(table), table
    )
    args = {"configfiles": ["config/paper.yaml", "config/paper-cpu.yaml"], "machine": "m"}
    with pytest.raises(
        PublishError, match=r"1 file\(s\) were made from uncommitted.*--allow-dirty"
    ):
        publish("paper-cpu", **args)
    assert not Path("published").exists()  # nothing written before the refusal
    manifest = publish("paper-cpu", **args, allow_dirty=True)
    assert manifest["dirty"] is True and manifest["dirty_files"] == ["results/scm/stability.csv"]
    assert manifest["commits"]["a" * 40] == 1 and sum(manifest["commits"].values()) == 3
    section = paper_section(".")
    assert "Its 3 outputs were made on 2 commits;" in section
    assert "**1 file(s) from uncommitted changes** (e.g. `results/scm/stability.csv`)" in section


def test_a_run_kept_in_progress_is_audited_resumable_and_not_in_the_readme(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    manifest = publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    assert manifest["in_progress"] is True
    kept = Path("published/in-progress/paper-cpu/results/scm/stability.csv")
    assert kept.read_bytes() == Path("results/paper-cpu/scm/stability.csv").read_bytes()
    assert not Path("published/paper-cpu").exists()  # the scale's publication untouched
    assert paper_section(".").startswith("No run at the paper level is published yet")
    assert audit_tree(".", ["published"]) == []
    # Its copies are checked against each other there, as a publication's are.
    kept.write_text(kept.read_text().replace("0.5", "0.6"))
    found = {f.path for f in audit_tree(".", ["published"])}
    assert "published/in-progress/paper-cpu/results/claims.csv" in found
    with pytest.raises(PublishError, match="names the folder of runs in progress"):
        publish("in-progress", configfiles=[], machine="m")
    # A run in progress has no claims table yet: kept all the same.
    for name in ("claims.csv", "claims.csv.meta.json", "claims.md", "claims.md.meta.json"):
        Path(f"results/paper-cpu/{name}").unlink()
    manifest = publish("paper-cpu", configfiles=[], machine="m", in_progress=True)
    assert manifest["files"] == ["results/scm/stability.csv"] and manifest["stages"] is None


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("published/paper-cpu/results/a.csv",
         ("published/paper-cpu", "paper-cpu", "results/a.csv")),
        ("published/in-progress/paper-cpu/results/a.csv",
         ("published/in-progress/paper-cpu", "paper-cpu", "results/a.csv")),
        ("published/in-progress/paper-cpu", None),
        ("results/paper-cpu/a.csv", None),
    ],
)  # fmt: skip
def test_publication_of_a_path(path, found):
    assert publication_of(path) == found


def test_a_damaged_or_partly_deleted_run_never_replaces_the_last_publication(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=[], machine="m")
    kept = {p: p.read_bytes() for p in Path("published").rglob("*") if p.is_file()}
    source = Path("results/paper-cpu/scm/stability.csv")
    good = source.read_bytes()
    source.write_bytes(good[:-3])  # truncated after its sidecar was written
    with pytest.raises(PublishError, match=r"scm/stability.csv does not match its provenance"):
        publish("paper-cpu", configfiles=[], machine="m")
    source.unlink()  # the claims table's evidence gone
    Path(f"{source}.meta.json").unlink()
    with pytest.raises(PublishError, match=r"incomplete: results/paper-cpu/scm/stability.csv"):
        publish("paper-cpu", configfiles=[], machine="m")
    assert {p: p.read_bytes() for p in Path("published").rglob("*") if p.is_file()} == kept


def test_a_claims_table_made_from_an_older_version_of_a_table_is_not_published(
    tmp_path, monkeypatch
):
    """The table rerun with other numbers after the claims table read it: the pair is not
    one run's, and publishing it would show verdicts of numbers it does not contain."""
    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=[], machine="m")
    kept = _checksums()
    source = "results/paper-cpu/scm/stability.csv"
    old = sha256_file(source)
    Run("scm_stability", inputs=["data/processed/a.npz"]).write_csv(
        pd.DataFrame({"eta": [0.7, 2.0]}), source
    )  # sound by itself: its sidecar vouches for it
    with pytest.raises(PublishError) as error:
        publish("paper-cpu", configfiles=[], machine="m")
    message = str(error.value)
    assert message.startswith(
        f"results/paper-cpu/claims.csv was made from another version of {source} (sha256"
        f" {old[:12]}…, now {sha256_file(source)[:12]}…)"
    )
    assert "Nothing was published" in message and "Traceback" not in message
    assert _checksums() == kept


def _checksums(folder: str = "published") -> dict[str, str]:
    """sha256 of every file under ``folder`` (what a failed publish must leave as it was)."""
    return {p.as_posix(): sha256_file(p) for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def _rerun_table(value: float) -> None:
    """The run made again with other numbers (so a new publication differs)."""
    _fake_run(eta=value)


def _site(root: Path = Path(".")) -> None:
    """The parts of a checkout `galu publish` reads besides the run."""
    (root / "config").mkdir(exist_ok=True)
    for name in ("config", "paper", "paper-cpu"):
        (root / f"config/{name}.yaml").write_text(f"scale: {name.replace('config', 'quick')}\n")


@pytest.mark.parametrize("in_progress", [False, True], ids=["publication", "in-progress"])
@pytest.mark.parametrize("after", [0, 3, 5])
def test_a_crash_mid_copy_keeps_the_last_publication_byte_for_byte(
    tmp_path, monkeypatch, capsys, in_progress, after
):
    """The disk fills after ``after`` files of the new publication were copied: every byte of
    the previous publication is kept (sha256 of each file before and after), nothing else is
    left under published/, the command says which file and what to do (exit 2, no
    traceback); once the disk has room the same command replaces it whole."""
    import errno

    from galu.workflow.publishing import publish as publish_module

    monkeypatch.chdir(tmp_path)
    _fake_run()
    _site()
    flag = ["--in-progress"] if in_progress else []
    assert main(["publish", "--scale", "paper-cpu", *flag]) == 0
    before = _checksums()
    _rerun_table(0.75)
    copies = []
    real = publish_module.copy_file

    def full_disk(source, dest):
        if len(copies) == after:
            raise OSError(errno.ENOSPC, "No space left on device", str(dest))
        copies.append(dest)
        real(source, dest)

    monkeypatch.setattr(publish_module, "copy_file", full_disk)
    capsys.readouterr()
    assert main(["publish", "--scale", "paper-cpu", *flag]) == 2
    err = capsys.readouterr().err
    assert "No space left on device; free some space and run it again" in err
    assert ".paper-cpu.publishing/results/" in err and "Traceback" not in err
    assert _checksums() == before
    monkeypatch.setattr(publish_module, "copy_file", real)
    assert main(["publish", "--scale", "paper-cpu", *flag]) == 0
    folder = Path(publication_folder("paper-cpu", in_progress))
    table = folder / "results/scm/stability.csv"
    assert table.read_bytes() == Path("results/paper-cpu/scm/stability.csv").read_bytes()
    assert b"0.75" in table.read_bytes() and audit_tree(".", ["published"]) == []
    assert sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(".")) == []


def test_what_a_killed_publish_leaves_is_named_then_cleaned_or_put_back(
    tmp_path, monkeypatch, capsys
):
    """A publish killed (kill -9: no clean-up runs) while it copies leaves its unfinished
    folder, killed between its two renames leaves the previous publication set aside, and
    after the renames leaves it not yet deleted. The audit names each leftover once (and the
    whole publication beside it stays clean, README's section unchanged); the next publish
    cleans up, putting the previous publication back byte for byte when nothing replaced it;
    a resume meanwhile says where it is."""
    from galu.workflow.publication_folders import leftover_problem, recover_interrupted
    from galu.workflow.publishing.resume import ResumeError, resume

    monkeypatch.chdir(tmp_path)
    _fake_run()
    _site()
    assert main(["publish", "--scale", "paper-cpu"]) == 0
    before, section = _checksums(), paper_section(".")
    target = Path("published/paper-cpu")
    staging, aside = Path("published/.paper-cpu.publishing"), Path("published/.paper-cpu.replaced")
    # killed while copying: a partial new publication beside the intact old one
    shutil.copytree(target, staging)
    (staging / "publication.json").unlink()
    found = [str(f) for f in audit_tree(".", ["published"])]
    assert found == [f"{staging.as_posix()}: {leftover_problem(staging.as_posix())}"]
    assert "an unfinished publication left by an interrupted `galu publish`" in found[0]
    assert main(["audit", "--folders", "published"]) == 1
    assert "--forcerun" not in capsys.readouterr().out  # nothing of the run to rebuild
    assert paper_section(".") == section
    # killed between the renames: the previous publication is only there set aside
    target.rename(aside)
    with pytest.raises(ResumeError, match=r"set the last one aside in published/\.paper-cpu\.re"):
        resume("paper-cpu", ".")
    assert [f.path for f in audit_tree(".", ["published"])] == [
        staging.as_posix(),
        aside.as_posix(),
    ]
    assert recover_interrupted(target) == [
        "put back published/paper-cpu, set aside by an interrupted publication that never"
        " replaced it",
        "deleted published/.paper-cpu.publishing, left unfinished by an interrupted publication",
    ]
    assert _checksums() == before
    # killed after the renames: the old one not yet deleted; the CLI says what it cleaned
    shutil.copytree(target, aside)
    _rerun_table(0.25)
    capsys.readouterr()
    assert main(["publish", "--scale", "paper-cpu"]) == 0
    assert capsys.readouterr().out.startswith(
        "NOTE deleted published/.paper-cpu.replaced, the publication an interrupted one replaced"
    )
    assert sorted(p.name for p in Path("published").iterdir()) == ["paper-cpu"]
    assert audit_tree(".", ["published"]) == []


def test_publication_json_says_which_commits_and_whether_anything_was_uncommitted(
    tmp_path, monkeypatch
):
    """The manifest names every commit the files were made on, ``commit`` only when that
    is one, ``dirty`` when the checkout or any file had uncommitted changes (null when it is
    not known), and the checkout it was published from: no longer the claims table's commit
    called clean whatever the checkout or the other tables."""
    from galu.workflow import provenance
    from galu.workflow.publishing import publish as publish_module

    monkeypatch.chdir(tmp_path)
    a, b = "a" * 40, "b" * 40
    monkeypatch.setattr(provenance, "git_state", lambda: {"commit": a, "dirty": False})
    _fake_run()
    checkout = {"commit": a, "dirty": False}
    monkeypatch.setattr(publish_module, "git_state", lambda: dict(checkout))
    manifest = publish("paper-cpu", configfiles=[], machine="m")
    assert {k: manifest[k] for k in ("commit", "dirty", "commits", "dirty_files")} == {
        "commit": a, "dirty": False, "commits": {a: 3}, "dirty_files": []
    }  # fmt: skip
    assert manifest["published_from"] == {"commit": a, "dirty": False, "allow_dirty": False}
    # the checkout has uncommitted changes (the tables were made on a): refused, then said
    checkout.update(commit=b, dirty=True)
    with pytest.raises(PublishError, match="the checkout has uncommitted changes"):
        publish("paper-cpu", configfiles=[], machine="m")
    manifest = publish("paper-cpu", configfiles=[], machine="m", allow_dirty=True)
    assert (manifest["commit"], manifest["dirty"], manifest["dirty_files"]) == (a, True, [])
    assert manifest["published_from"] == {"commit": b, "dirty": True, "allow_dirty": True}
    assert commits_text(manifest) == (
        f"commit `{a}`; published from a checkout of `{b}` with uncommitted changes"
    )
    # one file made again on another commit: no single commit
    monkeypatch.setattr(provenance, "git_state", lambda: {"commit": b, "dirty": False})
    Run("claims", inputs=["results/paper-cpu/scm/stability.csv"]).stamp(
        "results/paper-cpu/claims.md"
    )
    checkout.update(dirty=False)
    manifest = publish("paper-cpu", configfiles=[], machine="m")
    assert (manifest["commit"], manifest["commits"], manifest["dirty"]) == (
        None, {a: 2, b: 1}, False
    )  # fmt: skip
    assert commits_text(manifest) == (
        f"made on 2 commits, `{a[:12]}` (2 files), `{b[:12]}` (1 files); published from a"
        f" clean checkout of `{b[:12]}`"
    )
    # outside git: neither the files' state nor the checkout's is known, and it says so
    monkeypatch.setattr(provenance, "git_state", lambda: {"commit": None, "dirty": None})
    monkeypatch.setattr(publish_module, "git_state", lambda: {"commit": None, "dirty": None})
    for table in ("scm/stability.csv", "claims.csv"):
        record = json.loads(Path(f"results/paper-cpu/{table}.meta.json").read_text())
        record["git"] = {"commit": None, "dirty": None}
        Path(f"results/paper-cpu/{table}.meta.json").write_bytes(sealed_sidecar(record))
    manifest = publish("paper-cpu", configfiles=[], machine="m")
    assert (manifest["commit"], manifest["dirty"]) == (None, None)
    assert manifest["unrecorded_files"] == ["results/claims.csv", "results/scm/stability.csv"]
    assert commits_text(manifest).endswith(
        "2 file(s) whose sidecar does not say whether they were made from uncommitted changes"
        " (e.g. `results/claims.csv`); published from outside a git checkout (its state is"
        " not known)"
    )


@pytest.mark.parametrize(
    ("record", "named"),
    [
        ('{"output": 1}', "has no output.sha256"),
        ("[]", "is a list, not a mapping"),
        ("{", "is not readable JSON"),
        ("INPUTS", "has malformed inputs"),
        ("OUTSIDE", "has an input whose path '../../etc/passwd' lies outside the repository"),
    ],
)
def test_a_run_file_with_a_malformed_sidecar_is_refused_before_anything_changes(
    tmp_path, monkeypatch, record, named
):
    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=[], machine="m")
    before = _checksums()
    side = Path("results/paper-cpu/scm/stability.csv.meta.json")
    good = json.loads(side.read_text())
    if record == "INPUTS":
        record = sealed_sidecar({**good, "inputs": "data/processed/a.npz"}).decode()
    if record == "OUTSIDE":
        inputs = [{"path": "../../etc/passwd", "sha256": "0" * 64}]
        record = sealed_sidecar({**good, "inputs": inputs}).decode()
    side.write_text(record)
    with pytest.raises(PublishError, match="Nothing was published") as refused:
        publish("paper-cpu", configfiles=[], machine="m")
    assert f"{side.as_posix()} {named}" in str(refused.value)
    assert _checksums() == before


def _published_bytes() -> dict[str, str]:
    return {str(p): sha256_file(p) for p in Path("published").rglob("*") if p.is_file()}


def test_a_second_publish_while_one_runs_is_refused_and_touches_nothing(tmp_path, monkeypatch):
    """Two `galu publish` at once used to delete each other's staging folder; the second now
    stops at the checkout's lock, before any cleanup or copy."""
    from galu.workflow.publishing.publish import publication_lock

    monkeypatch.chdir(tmp_path)
    _fake_run()
    publish("paper-cpu", configfiles=["config/paper.yaml"], machine="m")
    staging = Path("published/.paper-cpu.publishing")
    staging.mkdir()  # the first publication's work in progress
    before = _published_bytes()
    with publication_lock():  # held by the first
        with pytest.raises(PublishError, match="another galu publish is running"):
            with publication_lock():
                pass
        Path("config").mkdir(exist_ok=True)
        Path("config/config.yaml").write_text("")
        Path("config/paper.yaml").write_text("")
        assert main(["publish", "--scale", "paper-cpu", "--configfile", "config/paper.yaml"]) == 2
    assert staging.is_dir() and _published_bytes() == before


def test_a_republished_run_keeps_the_machine_its_publication_records(tmp_path, monkeypatch):
    from galu.workflow.publication_folders import previous_machine

    monkeypatch.chdir(tmp_path)
    assert previous_machine("paper-cpu") is None
    _fake_run()
    publish(
        "paper-cpu",
        configfiles=["config/paper.yaml"],
        machine="the run's machine",
        in_progress=True,
    )
    assert previous_machine("paper-cpu") == "the run's machine"  # from the in-progress copy
    publish("paper-cpu", configfiles=["config/paper.yaml"], machine="the run's machine")
    Path("config").mkdir(exist_ok=True)
    Path("config/config.yaml").write_text("")
    Path("config/paper.yaml").write_text("")
    assert main(["publish", "--scale", "paper-cpu", "--configfile", "config/paper.yaml"]) == 0
    record = json.loads(Path("published/paper-cpu/publication.json").read_text())
    assert record["machine"] == "the run's machine"
    main(["publish", "--scale", "paper-cpu", "--configfile", "config/paper.yaml", "--machine", "x"])
    assert json.loads(Path("published/paper-cpu/publication.json").read_text())["machine"] == "x"


def test_a_run_in_progress_publishes_no_output_its_code_has_changed_since(tmp_path, monkeypatch):
    from test_audit import _coded_tree

    from galu.workflow.closure import CodeScanner

    monkeypatch.chdir(tmp_path)
    _coded_tree(tmp_path)
    scanner = CodeScanner(tmp_path)
    table = "results/paper-cpu/s/x.csv"
    Run("make", code=scanner.closure("scripts/make.py").record()).write_csv(
        pd.DataFrame({"x": [1]}), table
    )
    plot = Run("plot", inputs=[table], code=scanner.closure("scripts/plot.py").record())
    plot.write_csv(pd.DataFrame({"y": [1]}), "figures/paper-cpu/s/y.csv")
    kept = publish("paper-cpu", configfiles=[], machine="m", in_progress=True, allow_dirty=True)
    assert kept["files"] == ["results/s/x.csv", "figures/s/y.csv"]
    assert "stale_left_out" not in kept
    (tmp_path / "galu/maths.py").write_text("def f():\n    return 2\n")  # the table's code
    kept = publish("paper-cpu", configfiles=[], machine="m", in_progress=True, allow_dirty=True)
    # the table and the figure drawn from it are remade by the run: neither is carried
    assert kept["files"] == [] and kept["stale_left_out"] == ["results/s/x.csv", "figures/s/y.csv"]
    assert not Path("published/in-progress/paper-cpu/results/s/x.csv").exists()
    assert audit_tree(".", ["published"]) == []
