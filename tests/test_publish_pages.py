"""A publication readable on its own (#59 item 3): each figure's caption rendered on a page
beside it and linked from the verdict page, no second verdict page with broken links (the
run's own ``results/claims.html`` kept for ``galu resume`` in the run state), one sentence on
the code of its outputs, and claims that cite only what it holds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_publish import _fake_run

from galu.workflow import landing
from galu.workflow.equivalence import Equivalence, Ledger
from galu.workflow.output import Run
from galu.workflow.pages.publication_readme import code_statement, commits_details
from galu.workflow.provenance import sidecar_path
from galu.workflow.publication_folders import PublishError
from galu.workflow.publishing import publish as publish_module
from galu.workflow.publishing.caption_pages import CaptionError, caption_page, page_of
from galu.workflow.publishing.citations import unpublished_citations
from galu.workflow.publishing.publish import publish
from galu.workflow.publishing.resume import ResumeError, resume
from galu.workflow.trust.audit import audit_tree, is_caption_page
from galu.yaml_files import load_yaml

from conftest import REPO

FIGURE = "figures/scm/stability.png"
CAPTION = (
    "{% raw %}\n\n**pass** ``c1``: a row's text {\\% if x %} stays text.\n\n{% endraw %}\n"
    'Simulations at N = {{ snakemake.config["scm"]["n"] }} for'
    " **{{ snakemake.params.figure }}**.\n\n"
    ".. raw:: html\n\n   <script>alert(1)</script>\n\n"
    ".. include:: secret.txt\n"
)


def _page_folder(folder: Path, config: dict) -> None:
    """A publication's files for one figure: its PNG (with the sidecar its plot job wrote),
    PDF and caption, and the manifest with the run's configuration."""
    (folder / "figures/scm").mkdir(parents=True)
    (folder / "results/captions/scm").mkdir(parents=True)
    (folder / FIGURE).write_bytes(b"\x89PNG fake")
    (folder / "figures/scm/stability.pdf").write_bytes(b"%PDF fake")
    drawn = {"params": {"figure": "stability"}, "wildcards": {}}
    sidecar_path(folder / FIGURE).write_text(json.dumps(drawn))
    (folder / "results/captions/scm/stability.rst").write_text(CAPTION)
    (folder / "publication.json").write_text(json.dumps({"config": config}))
    (folder / "secret.txt").write_text("SECRET")


def test_a_caption_page_renders_the_jinja_then_the_rst_and_no_text_becomes_markup(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # (where an include would read secret.txt from)
    _page_folder(tmp_path, {"scale": "paper-cpu", "scm": {"n": 40}})
    page, inputs = caption_page(tmp_path, FIGURE, view=True)
    text = page.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert '<a href="../../claims.html">Every claim</a> · <a href="stability.pdf">PDF</a>' in text
    assert '<img src="stability.png" alt="figures/scm/stability.png">' in text
    # the template's Jinja rendered with the run's configuration and the figure's parameters
    assert "Simulations at N = 40 for <strong>stability</strong>." in text
    # the raw blocks' text stays text ({\% is docutils' escape of {%), no tag left
    assert "a row's text {% if x %} stays text." in text and "raw %}" not in text
    # neither raw HTML nor a file's contents reach the page
    assert "<script>" not in text and "SECRET" not in text
    assert "&quot;raw&quot; directive disabled" in text
    assert "&quot;include&quot; directive disabled" in text
    assert inputs == [
        "results/captions/scm/stability.rst",
        FIGURE,
        f"{FIGURE}.meta.json",
        "figures/scm/stability.pdf",
        "publication.json",
    ]
    # without the verdict page: no link back to it
    assert "claims.html" not in caption_page(tmp_path, FIGURE, view=False)[0].decode()
    # a name the recorded configuration lacks stops the publication, never a hole
    (tmp_path / "publication.json").write_text(json.dumps({"config": {"scale": "paper-cpu"}}))
    with pytest.raises(CaptionError, match="results/captions/scm/stability.rst cannot be rendered"):
        caption_page(tmp_path, FIGURE, view=True)


def test_a_caption_page_is_where_the_audit_knows_one():
    assert page_of(FIGURE) == "figures/scm/stability.html"
    assert is_caption_page(page_of(FIGURE))
    assert not is_caption_page(FIGURE) and not is_caption_page("results/claims.html")
    assert not is_caption_page("claims.html") and not is_caption_page("figures/x.html")


def _run_with_pages() -> None:
    """:func:`_fake_run` with a figure, its PDF, its caption (no Jinja), the landing page and
    the run's own ``results/claims.html`` (linking the run's figure folder)."""
    _fake_run()
    for name, data in ((FIGURE, b"\x89PNG fake"), ("figures/scm/stability.pdf", b"%PDF fake")):
        path = Path(name.replace("figures/", "figures/paper-cpu/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        Run("scm_plot", inputs=["results/paper-cpu/scm/stability.csv"]).stamp(path)
    texts = {
        "captions/scm/stability.rst": "{% raw %}**pass** ``c1``.{% endraw %}\n",
        "captions/index.rst": "Verdict\n=======\n\n- c1: `stability.png`_\n",
        "claims.html": '<a href="../../figures/paper-cpu/scm/stability.png">x</a>\r\n',
    }
    for name, text in texts.items():
        path = Path(f"results/paper-cpu/{name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        Run("claims").stamp(path)


def _hrefs(page: Path) -> list[str]:
    return re.findall(r'(?:href|src)="([^"#:]+)"', page.read_text())


def test_publish_writes_caption_pages_linked_from_the_verdict_page_and_no_second_one(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _run_with_pages()
    given = {}

    def fake_landing_html(rst, links):  # the contract: contract path -> href from the page
        given.update(links)
        return "".join(f'<a href="{href}">{figure}</a>' for figure, href in links.items())

    monkeypatch.setattr(landing, "landing_html", fake_landing_html)
    manifest = publish("paper-cpu", configfiles=[], machine="m")
    folder = Path("published/paper-cpu")
    assert given == {FIGURE: "figures/scm/stability.html"}
    view = json.loads(sidecar_path(folder / "claims.html").read_text())
    assert [i["path"] for i in view["inputs"]] == [
        f"{folder}/results/captions/index.rst",
        f"{folder}/figures/scm/stability.html",
    ]
    page = folder / "figures/scm/stability.html"
    record = json.loads(sidecar_path(page).read_text())
    assert record["rule"] == "publish" and record["output"]["path"] == page.as_posix()
    assert [i["path"] for i in record["inputs"]] == [
        f"{folder}/{p}"
        for p in (
            "results/captions/scm/stability.rst",
            FIGURE,
            f"{FIGURE}.meta.json",
            "figures/scm/stability.pdf",
            "publication.json",
        )
    ]
    # made from the publication's own files: remade from them alone, byte for byte
    assert caption_page(folder, FIGURE, view=True)[0] == page.read_bytes()
    # no second verdict page: the run's own is in the run state, byte for byte with its sidecar
    assert "results/claims.html" not in manifest["files"]
    assert not (folder / "results/claims.html").exists()
    state = json.loads((folder / "run-state.json").read_text())
    run_page = Path("results/paper-cpu/claims.html")
    assert state["run_pages"] == {
        "results/claims.html": {
            "text": run_page.read_bytes().decode(),
            "sidecar": sidecar_path(run_page).read_bytes().decode(),
        }
    }
    # every link of every page of the publication leads to a file of it
    pages = sorted(folder.rglob("*.html"))
    assert [p.relative_to(folder).as_posix() for p in pages] == [
        "claims.html",
        "figures/scm/stability.html",
    ]
    for html_page in pages:
        hrefs = _hrefs(html_page)
        assert hrefs and all((html_page.parent / h).is_file() for h in hrefs), (html_page, hrefs)
    assert audit_tree(".", ["published"]) == []
    page.write_text(page.read_text().replace("pass", "fail"))
    found = {f.path: f.problem for f in audit_tree(".", ["published"])}
    assert found[page.as_posix()].startswith("changed after it was written")
    assert found[f"{folder}/claims.html"] == f"input {page} changed since this output was made"
    assert len(found) == 2


def test_the_run_page_goes_back_from_the_run_state_and_nowhere_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_with_pages()
    publish("paper-cpu", configfiles=[], machine="m")
    original = {
        p: Path(p).read_bytes()
        for p in ("results/paper-cpu/claims.html", "results/paper-cpu/claims.html.meta.json")
    }
    fresh = tmp_path / "fresh"
    for folder in ("published", "data"):
        shutil.copytree(folder, fresh / folder)
    monkeypatch.chdir(fresh)
    done = resume("paper-cpu")
    assert "results/paper-cpu/claims.html" in done.restored
    assert {p: Path(p).read_bytes() for p in original} == original  # \r\n kept too
    assert audit_tree(".", ["results"]) == []
    # the publication's own pages are not put back into the run
    assert not Path("figures/paper-cpu/scm/stability.html").exists()
    assert "results/paper-cpu/claims.html" in resume("paper-cpu").present
    # a different page of the checkout's own is never overwritten
    Path("results/paper-cpu/claims.html").write_text("mine")
    with pytest.raises(ResumeError, match="already has different file.*claims.html"):
        resume("paper-cpu")
    Path("results/paper-cpu/claims.html").unlink()
    # a page whose bytes its sidecar does not record is never put back
    state_file = Path("published/paper-cpu/run-state.json")
    state = json.loads(state_file.read_text())
    state["run_pages"]["results/claims.html"]["text"] += " "
    state_file.write_text(json.dumps(state))
    with pytest.raises(ResumeError, match="has other bytes than its sidecar records"):
        resume("paper-cpu")
    assert not Path("results/paper-cpu/claims.html").exists()
    state["run_pages"] = {"README.md": state["run_pages"]["results/claims.html"]}
    state_file.write_text(json.dumps(state))
    with pytest.raises(ResumeError, match="holds run pages other than results/claims.html"):
        resume("paper-cpu")


def test_the_captions_are_rendered_with_the_run_configuration_less_the_site_keys(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _run_with_pages()
    caption = Path("results/paper-cpu/captions/scm/stability.rst")
    caption.write_text('At N = {{ snakemake.config["scm"]["n"] }}.\n')
    Run("claims").stamp(caption)
    config = {"scale": "paper-cpu", "scm": {"n": 40}, "stages": ["all"], "data": {"m": "/x"}}
    monkeypatch.setattr(publish_module, "run_config", lambda root, files: dict(config))
    manifest = publish("paper-cpu", configfiles=["c.yaml"], machine="m")
    # the site's keys left out, the stages the claims table records
    assert manifest["config"] == {
        "scale": "paper-cpu",
        "scm": {"n": 40},
        "stages": ["scm", "normalization"],
    }
    page = Path("published/paper-cpu/figures/scm/stability.html").read_text()
    assert "<p>At N = 40.</p>" in page
    config["scale"] = "paper"
    with pytest.raises(PublishError, match="is of the paper scale, not paper-cpu"):
        publish("paper-cpu", configfiles=["c.yaml"], machine="m")
    # without configuration files a caption that reads one cannot be rendered
    with pytest.raises(CaptionError, match="cannot be rendered"):
        publish("paper-cpu", configfiles=[], machine="m")
    assert "At N = 40." in Path("published/paper-cpu/figures/scm/stability.html").read_text()


A, B, C = "a" * 40, "b" * 40, "c" * 40


def _record(script: str, closure: str, commit: str) -> dict:
    return {"code": {"script": script, "sha256": closure}, "git": {"commit": commit}}


def test_one_sentence_says_what_the_commits_count_and_whose_code_it_is():
    x, y, z = "1" * 64, "2" * 64, "3" * 64
    records = {
        "results/a.csv": _record("scripts/a.py", x, A),
        "results/b.csv": _record("scripts/b.py", y, B),
        "results/c.csv": _record("scripts/b.py", z, C),
    }
    ledger = Ledger([Equivalence("scripts/b.py", z, y, B, C, ("tiny",), 1, ())])
    closures = {"scripts/a.py": x, "scripts/b.py": z}
    assert code_statement(records, C, closures, ledger) == (
        "Its 3 outputs were made on 3 commits; every output's code is equivalent to"
        " `cccccccccccc`'s, the commit it was published from (the code-equivalence ledger,"
        " `workflow/code-equivalence.yaml`)."
    )
    # without the ledger's step, b.csv's code is not c's
    assert code_statement(records, C, closures, Ledger()) == (
        "Its 3 outputs were made on 3 commits; the code of 2 of them is equivalent to"
        " `cccccccccccc`'s, the commit it was published from (the code-equivalence ledger,"
        " `workflow/code-equivalence.yaml`), not that of the other 1 (e.g. `results/b.csv`,"
        " made on `bbbbbbbbbbbb`)."
    )
    one = {"results/a.csv": records["results/a.csv"]}
    assert code_statement(one, None, None, None, "not known here") == (
        "Its 1 outputs were made on 1 commit; not known here."
    )
    assert commits_details(one) == []
    assert commits_details(records) == [
        "<details><summary>The 3 commits, each with how many outputs were made on it</summary>",
        "",
        "`aaaaaaaaaaaa` (1), `bbbbbbbbbbbb` (1), `cccccccccccc` (1).",
        "",
        "</details>",
        "",
    ]


def test_a_citation_of_a_file_the_publication_lacks_must_say_how_to_remake_it():
    claims = [
        {"id": "held", "finding": "see results/scm/a.csv and figures/scm/a.png."},
        {"id": "lacking", "finding": "(results/scm/big.csv); more", "statement": 3},
        {
            "id": "said",
            "paper_says": "results/scm/big.csv, left out of a publication as too large"
            " (`snakemake` remakes it)",
        },
        {"id": "said elsewhere", "statement": "results/scm/big.csv; left out, remake it"},
        {"id": "no remake", "finding": "results/scm/big.csv (left out as too large)"},
    ]
    files = ["results/scm/a.csv", "figures/scm/a.png"]
    assert unpublished_citations(claims, files) == [
        "lacking, finding: results/scm/big.csv",
        "said elsewhere, statement: results/scm/big.csv",
        "no remake, finding: results/scm/big.csv",
    ]


def test_the_claims_cite_only_what_the_paper_level_publication_holds():
    claims = load_yaml(REPO / "workflow/claims.yaml")
    manifest = json.loads((REPO / "published/paper-cpu/publication.json").read_text())
    assert unpublished_citations(claims, manifest["files"]) == []
