"""End to end: the default workflow in a fresh copy of the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import zipfile
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
import yaml

from galu.checkpoints import FOLDER as CHECKPOINTS
from galu.normalization.stage import TABLES as NORMALIZATION_TABLES
from galu.workflow.claims_text import caption_path, summary_line
from galu.workflow.planning.costfit import read_benchmarks
from galu.workflow.planning.dag import planned_jobs
from galu.workflow.tables import CONTRACTS_DIR, contracts, table_problems
from galu.workflow.verdict_lines import paper_lines

from conftest import REPO, copy_of_run, run, tool

pytestmark = pytest.mark.slow

FIGURES = ["figures/normalization/activations.png", "figures/normalization/activations.pdf"]


def test_dry_run_plans_jobs_and_writes_nothing(repo_copy):
    dry = run([tool("snakemake"), "-n", "--cores", "2"], repo_copy)
    assert "normalization_coefficients" in dry.stdout
    assert not (repo_copy / "results").exists()


def test_the_shared_run_ran_every_job_it_plans_and_every_rule_of_the_quick_scale(finished_run):
    jobs = [p.job for p in planned_jobs(finished_run)]
    ran = read_benchmarks(finished_run)
    assert [j.label for j in jobs if j.benchmark not in ran] == []
    assert {j.rule for j in jobs} == {p.job.rule for p in planned_jobs(REPO)}


def test_outputs_follow_the_contracts_with_sidecars(finished_run):
    # Written through Run.write_csv, which checks them; read back, they still hold.
    made = {path for p in planned_jobs(finished_run) for path in p.outputs}
    unmade = set()
    for contract in contracts(REPO / CONTRACTS_DIR):
        path = f"results/{contract.path}"
        if path not in made:
            unmade.add(path)
            continue
        # A CSV carries no types: string columns are read as strings ("2" is a depth list).
        text = [c for c, spec in contract.columns.items() if spec["type"] == "string"]
        table = pd.read_csv(finished_run / path, dtype=dict.fromkeys(text, str))
        assert table_problems(table, contract) == [], path
        meta = json.loads((finished_run / f"{path}.meta.json").read_text())
        assert meta["git"]["dirty"] is False and len(meta["git"]["commit"]) == 40
    # the quick scale trains no second width (normalization.wide): only its tables go unmade
    assert unmade == {NORMALIZATION_TABLES[t].path for t in ("widths", "wide_correlations")}
    assert not any((finished_run / path).exists() for path in unmade)
    for path in FIGURES:
        assert (finished_run / path).stat().st_size > 1000
        assert (finished_run / f"{path}.meta.json").is_file()
    # the simulations saved their state as they went and cleared it once their tables were
    # written: a finished run leaves no checkpoint behind (galu.checkpoints)
    checkpoints = finished_run / CHECKPOINTS
    assert not checkpoints.exists() or not any(p.is_file() for p in checkpoints.rglob("*"))
    coefficients = pd.read_csv(finished_run / "results/normalization/coefficients.csv")
    relu = coefficients.set_index("activation").loc["relu"]
    assert relu["alpha"] == pytest.approx(0.5, abs=1e-10)
    claims = pd.read_csv(finished_run / "results/claims.csv")
    # quick: indicative only where its reductions (5 epochs) decide the verdict
    reduced = {c for r in yaml.safe_load((finished_run / "config/config.yaml").read_text())[
        "reductions"] for c in r["claims"]}  # fmt: skip
    verdicts = claims.set_index("claim_id")["verdict"]
    assert set(verdicts[verdicts == "indicative"].index) <= reduced
    assert {verdicts[c] for c in reduced} <= {"indicative", "not_run"} and len(reduced) == 4
    assert "indicative" in set(verdicts)  # (one whose table lacks its model is not run)
    assert not claims.loc[claims["verdict"] == "not_run", "reason"].isna().any()


def test_compare_puts_the_run_beside_the_paper_cpu_publication(finished_run):
    """`galu compare results published/paper-cpu/results` in a fresh clone after the run:
    every claim of either table once, each side's verdict, a flag where they differ."""
    done = run(
        [tool("galu"), "compare", "results", "published/paper-cpu/results"],
        finished_run,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "A: results (quick scale)",
        "B: published/paper-cpu/results (paper-cpu scale)",
        "",
    ]
    header, rows, summary = lines[3], lines[4:-2], lines[-1]
    start = [header.index(h) for h in ("A verdict", "B measured", "B verdict")]
    a, b = (
        pd.read_csv(finished_run / f"{folder}/claims.csv").set_index("claim_id")["verdict"]
        for folder in ("results", "published/paper-cpu/results")
    )
    ids = [*a.index, *(c for c in b.index if c not in a.index)]
    assert [row.split()[0] for row in rows] == ids
    # a claim each run misses beyond its tolerance on another side of the expected value
    sides = [
        pd.read_csv(finished_run / f"{folder}/claims.csv").set_index("claim_id")
        for folder in ("results", "published/paper-cpu/results")
    ]
    beyond = [(t["measured"] - t["expected"]).where(
        (t["measured"] - t["expected"]).abs() > t["tolerance"].abs(), 0.0
    ).fillna(0.0) for t in sides]  # fmt: skip
    flags = []
    for claim, row in zip(ids, rows, strict=True):
        verdicts = (a.get(claim, ""), b.get(claim, ""))
        opposite = beyond[0].get(claim, 0.0) * beyond[1].get(claim, 0.0) < 0
        flag = "OPPOSITE SIDES" if opposite and verdicts[0] == verdicts[1] else ""
        flag = "DIFFERS" if verdicts[0] != verdicts[1] and all(verdicts) else flag
        flag = "only in B" if not verdicts[0] else "only in A" if not verdicts[1] else flag
        shown = (row[start[0] : start[1]].strip(), row[start[2] :].removesuffix(flag).strip())
        assert shown == verdicts and row.endswith(flag), row
        flags.append(flag)
    both = a.index.intersection(b.index)
    differ = int((a[both] != b[both]).sum())
    assert summary.startswith(f"galu compare: {len(ids)} claims, {differ} verdict")
    assert done.returncode == (1 if any(flags) else 0)


def test_rerun_plans_nothing_and_the_readme_check_names_a_stale_section(finished_run):
    snakemake = tool("snakemake")
    again = run([snakemake, "-n", "--cores", "2"], finished_run)
    assert "Nothing to be done" in again.stdout + again.stderr
    # docs/verdicts-quick.md is the quick run's verdict, README's first block its counts
    # (`make reproduce` checks them): this run's tiny numbers differ, which the check names
    # with its fix; once the page and README take this run's, the check passes. They are put
    # back afterwards, and so is the report: each readme_check run rebuilds it
    # (report.on_success) from a tree whose README differs from the commit, so its sidecar
    # says dirty, which the other readers of this shared run (tests/test_dvc.py's strict
    # audit) must not see.
    touched = ["README.md", "docs/verdicts-quick.md", "docs/verdicts-paper.md",
               "results/report.zip", "results/report.zip.meta.json"]  # fmt: skip
    kept = {name: (finished_run / name).read_bytes() for name in touched}
    try:
        stale = run([snakemake, "--cores", "1", "readme_check"], finished_run, check=False)
        said = stale.stdout + stale.stderr
        assert stale.returncode != 0, said[-3000:]
        assert "docs/verdicts-quick.md's quick-scale verdicts differ from results/claims.md" in said
        assert "README.md's per-paper counts at the quick scale differ" in said
        assert "Update them with:  galu readme --update" in said
        run([tool("galu"), "readme", "--update"], finished_run)
        run([snakemake, "--cores", "1", "readme_check"], finished_run)
    finally:
        for name, data in kept.items():
            (finished_run / name).write_bytes(data)


def test_inputs_rewritten_with_their_bytes_rerun_nothing(finished_run, tmp_path):
    """A repaired manifest and a re-prepared array (same bytes, new times) used to replan
    every job below them; the sidecars' checksums answer the mtime trigger (mtimes.py)."""
    root = copy_of_run(finished_run, tmp_path / "repo")
    later = time.time() + 60
    for rel in ("data/raw/mnist/sources.json", "data/processed/fashion_mnist.npz"):
        path = root / rel
        path.write_bytes(path.read_bytes())
        os.utime(path, (later, later))
    dry = run([tool("snakemake"), "-n", "--cores", "2"], root)
    said = dry.stdout + dry.stderr
    assert "Nothing to be done" in said, said[-3000:]
    assert re.search(r"galu: \d+ output\(s\) whose inputs were rewritten with the same bytes", said)
    # one changed byte is no such case: the array's own consumers rerun
    path = root / "data/processed/fashion_mnist.npz"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, (later + 30, later + 30))  # newer than the refreshed, within the slack
    dry = run([tool("snakemake"), "-n", "--cores", "2"], root)
    assert "generalization_images" in dry.stdout


def test_each_sidecar_records_every_input_of_its_job(finished_run):
    """What mtimes.py relies on: an output's sidecar lists every file input Snakemake gives
    its job, so no input can change unseen."""
    from galu.workflow.planning.dag import planned_jobs

    jobs = planned_jobs(finished_run)
    assert len(jobs) > 50
    for planned in jobs:
        for output in planned.outputs:
            if output.endswith(".meta.json"):
                continue
            record = json.loads((finished_run / f"{output}.meta.json").read_text())
            assert {i["path"] for i in record["inputs"]} == set(planned.inputs), output


def test_report_is_built_by_the_run_with_figures_and_captions(finished_run):
    report = finished_run / "results/report.zip"
    assert report.is_file()  # made by the run itself (report.on_success), not by this test
    with zipfile.ZipFile(report) as archive:
        names = archive.namelist()
        assert any(n.endswith("activations.png") for n in names)
        html = "".join(
            archive.read(n).decode(errors="ignore") for n in names if n.endswith((".html", ".js"))
        )
    assert "half-range Gauss-Hermite" in html  # the caption made it into the report
    # ... followed by the verdict of each claim the figure shows (here: the activations).
    claims = pd.read_csv(finished_run / "results/claims.csv").set_index("claim_id")
    verdict = claims.loc["norm_relu_moments", "verdict"]
    assert re.search(
        rf'<strong>{verdict}</strong> <tt class=\\?"docutils literal\\?">norm_relu_moments', html
    )


def chromium() -> str:
    """The headless browser for the report test; CI installs it (.ci/run)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def test_report_opens_on_the_verdict_in_a_real_browser(finished_run, tmp_path):
    """The report's JavaScript app renders, and its landing page starts with the verdict
    summary of this run's claims, failures first, before any figure."""
    with zipfile.ZipFile(finished_run / "results/report.zip") as archive:
        archive.extractall(tmp_path)
    (page,) = tmp_path.rglob("report.html")
    browser = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--virtual-time-budget=20000"]  # fmt: skip
    dom = subprocess.run(
        [*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180
    ).stdout
    claims = pd.read_csv(finished_run / "results/claims.csv")
    scale = claims["scale"].iloc[0]
    summary = f"Do the papers hold? The {scale} scale"
    assert summary in dom, dom[-3000:]
    assert "Loading Snakemake Report" not in dom or dom.index(summary) > 0
    # each paper's line, then the counts of every check, before the table
    (name, sentence), *_ = paper_lines(claims)
    first = dom.index(f"<strong>{name}</strong>")
    assert dom.index(summary) < first < dom.index(f"{summary_line(claims)}.")
    assert dom.index(sentence.split(":")[0]) < dom.index('class="verdicts"')
    failed = claims.loc[claims["verdict"] == "fail", "claim_id"]
    passed = claims.loc[claims["verdict"] == "pass", "claim_id"]
    if len(failed) and len(passed):
        assert dom.index(failed.iloc[0]) < dom.index(passed.iloc[0])  # failures first
    assert "Provenance of this run" in dom
    shot = tmp_path / "landing.png"
    subprocess.run(
        [*browser, "--window-size=1400,1000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=180,
    )  # fmt: skip
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
    if os.environ.get("GALU_SCREENSHOTS"):  # for a person to look at
        shutil.copy(shot, os.environ["GALU_SCREENSHOTS"])


PROBE = Path(__file__).with_name("landing_probe.js")


def probe_layout(page: Path, width: int = 1280, height: int = 800) -> dict:
    """Open ``page`` in headless Chromium at ``width`` x ``height`` with tests/landing_probe.js
    injected, and return what it measured (the verdict table's geometry and links)."""
    probed = page.with_name(f"probed-{page.name}")
    text = page.read_text()
    end = text.rindex("</body>")
    probed.write_text(f"{text[:end]}<script>{PROBE.read_text()}</script>{text[end:]}")
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--virtual-time-budget=60000", f"--window-size={width},{height}", "--dump-dom",
         probed.as_uri()],
        capture_output=True, text=True, timeout=180,
    ).stdout  # fmt: skip
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-2000:]
    return json.loads(unescape(found.group(1)))


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def assert_table_reads_at_laptop_width(probe: dict) -> None:
    """The verdict table at 1280 x 800: every column inside the window (no sideways
    scrolling), none squeezed below a word's width, the first claim on the first screen with
    no graph above it, and at least five claims to a screen (the median row's height)."""
    assert probe["found"]
    headers = {h["text"]: h for h in probe["headers"]}
    assert list(headers) == ["verdict", "claim", "paper says", "ours", "bound", "figure"]
    assert probe["table_right"] <= probe["width"], probe
    assert all(h["right"] <= probe["width"] and h["width"] >= 60 for h in headers.values()), probe
    assert probe["first_row_top"] < probe["height"] and probe["graphics_above"] == 0, probe
    assert probe["height"] / median(probe["row_heights"]) >= 5, probe["row_heights"]


def assert_cards_on_a_phone(probe: dict) -> None:
    """At 390 x 844: each claim a card (cells one under another, the header row hidden), and
    nothing wider than the screen."""
    assert probe["found"] and probe["headers"] == [], probe
    assert probe["first_cell_display"] == "block", probe
    assert probe["scroll_width"] <= probe["width"] and probe["table_right"] <= probe["width"]


def screenshot(page: Path, name: str, width: int, height: int) -> None:
    """A screenshot of ``page`` for a person to look at, where GALU_SCREENSHOTS names a folder."""
    folder = os.environ.get("GALU_SCREENSHOTS")
    if folder:
        subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--virtual-time-budget=20000", f"--window-size={width},{height}",
             f"--screenshot={Path(folder) / name}", page.as_uri()],
            capture_output=True, timeout=180,
        )  # fmt: skip


def test_landing_page_reads_at_laptop_width_and_links_every_figure(finished_run, tmp_path):
    with zipfile.ZipFile(finished_run / "results/report.zip") as archive:
        archive.extractall(tmp_path)
    (page,) = tmp_path.rglob("report.html")
    probe = probe_layout(page)
    assert_table_reads_at_laptop_width(probe)
    claims = pd.read_csv(finished_run / "results/claims.csv")
    in_report = {f for f in claims["figure"] if any(tmp_path.rglob(Path(f).name))}
    linked = {re.search(r"'(.+)'", link["href"]).group(1) for link in probe["links"]}
    assert linked == in_report and linked
    # Each link works: running it shows that figure's page in the report.
    assert len(probe["shown"]) == len(linked)
    assert all(any(f"PATH\n{f}" in shown for shown in probe["shown"]) for f in linked), probe
    # The standalone results/claims.html: the same layout, each figure a link to its file.
    page = finished_run / "results/claims.html"
    copy = tmp_path / "results/claims.html"
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(page.read_text())
    probe = probe_layout(copy)
    assert_table_reads_at_laptop_width(probe)
    hrefs = {link["text"]: link["href"] for link in probe["links"]}
    assert {Path(f).name for f in in_report} <= set(hrefs)
    for name, href in hrefs.items():
        assert (page.parent / href).resolve().is_file(), (name, href)
    assert_cards_on_a_phone(probe_layout(copy, 390, 844))
    screenshot(copy, "claims-1280.png", 1280, 800)
    screenshot(copy, "claims-390.png", 390, 844)


def test_the_report_landing_page_reads_on_a_phone(finished_run, tmp_path):
    with zipfile.ZipFile(finished_run / "results/report.zip") as archive:
        archive.extractall(tmp_path)
    (page,) = tmp_path.rglob("report.html")
    assert_cards_on_a_phone(probe_layout(page, 390, 844))
    screenshot(page, "report-1280.png", 1280, 800)
    screenshot(page, "report-390.png", 390, 844)


def test_every_claim_is_stated_in_its_figures_caption(finished_run):
    claims = pd.read_csv(finished_run / "results/claims.csv")
    for c in claims.itertuples():
        caption = (finished_run / caption_path(c.figure)).read_text()
        flag = " (measured on substitute data)" if c.data_substitute else ""
        assert f"- **{c.verdict}** ``{c.claim_id}``{flag}:" in caption, c.claim_id
        # The verdicts come first: before the template's text and the data's sentences.
        assert caption.index("**Claims this figure tests") < caption.index("{% endraw %}")
        assert (finished_run / f"{caption_path(c.figure)}.meta.json").is_file()


def test_audit_passes_then_names_a_tampered_input_and_a_missing_sidecar(finished_run, tmp_path):
    galu = tool("galu")
    assert run([galu, "audit"], finished_run).returncode == 0
    tree = tmp_path / "tree"
    for folder in ("results", "figures", "data"):
        if (finished_run / folder).is_dir():
            shutil.copytree(finished_run / folder, tree / folder)
    # One changed byte in a recorded input makes the audit fail and name the file.
    csv = tree / "results/normalization/coefficients.csv"
    data = bytearray(csv.read_bytes())
    data[-3] = ord("7") if data[-3] != ord("7") else ord("8")
    csv.write_bytes(bytes(data))
    (tree / "figures/normalization/activations.pdf.meta.json").unlink()
    audit = run([galu, "audit"], tree, check=False)
    assert audit.returncode == 1
    assert "results/normalization/coefficients.csv: changed after it was written" in audit.stdout
    assert "activations.png: input results/normalization/coefficients.csv changed" in audit.stdout
    assert "figures/normalization/activations.pdf: no provenance sidecar" in audit.stdout


def test_explain_a_claim_of_the_run_rows_verdict_and_chain_with_values(finished_run):
    claim = "mem_random_signs_need_about_m_over_d_neurons"
    out = run([tool("galu"), "explain", claim, "--chain"], finished_run).stdout
    verdicts = pd.read_csv(finished_run / "results/claims.csv").set_index("claim_id")
    table = pd.read_csv(finished_run / "results/memorization/min_width.csv")
    [search] = table[table["criterion"] == "zero_error"].itertuples()  # the tiny grid: one
    lines = out.splitlines()
    assert lines[0].startswith(f"{claim} (galu paper; Fiat, Malach & Shalev-Shwartz, sec. 3;")
    assert "  expression:  found & (abs(kd_over_m - 1) <= 0.25)" in lines
    # the one zero-error search of config/tiny.yaml (relu, m 32, d 4), of the table's three
    at = lines.index(f"rows:          1 of the table's {len(table)}:")
    assert lines[at + 1].split() == ["model", "m", "d", "out_dim", "seed", "criterion",
                                     "kd_over_m", "found", "value"]  # fmt: skip
    inside = bool(search.found and abs(search.kd_over_m - 1) <= 0.25)
    cells = lines[at + 2].split()
    assert cells[:6] == ["relu", "32", "4", "1", "0", "zero_error"]
    assert float(cells[6]) == pytest.approx(search.kd_over_m, nan_ok=True)
    assert cells[7:] == [str(search.found), str(inside)]
    assert f"measured:      {int(inside)} ({int(inside)} of 1 rows)" in lines
    assert "expected:      ≥ 1" in lines
    assert f"verdict:       {verdicts.loc[claim, 'verdict']}" in lines
    assert "figure:        figures/memorization/zero_error.png" in lines
    # the chain: every file once, with the values of config/tiny.yaml, no parameter hashes
    described = [line.split("  [")[0].lstrip("<- ") for line in lines if "  [" in line]
    assert described == [
        "results/memorization/min_width.csv",
        "results/memorization/runs/min_width_mse.csv",
        "results/memorization/runs/min_width_mse/part0.csv",
        "results/memorization/runs/min_width_zero_error.csv",
        "results/memorization/runs/min_width_zero_error/part0.csv",
        "figures/memorization/zero_error.png",
    ]
    assert "  <- results/memorization/runs/min_width_zero_error.csv  (see above)" in lines
    params = " ".join(line.strip() for line in lines).split("params: ")
    assert any(p.startswith("common.device=cpu") and "settings.ms=[32]," in p for p in params)
    assert 'settings.models=["relu"],' in out and "params sha256" not in out
    assert lines[-1] == f"galu explain: 0 problem(s) in the chain of {claim}."


def test_lint_passes():
    lint = run([tool("snakemake"), "--lint"], REPO)
    assert "Congratulations" in lint.stdout + lint.stderr


def test_hostile_text_in_a_claim_and_the_config_reaches_the_report_as_text(finished_run, tmp_path):
    """A claim statement and a configured reduction that close the caption's raw block and
    call Python, plus LaTeX braces and HTML: the run and its report build succeed, nothing
    runs, and the report shows the text (tests/test_report_text.py covers each context)."""
    root = copy_of_run(finished_run, tmp_path / "run")
    marker = tmp_path / "ran"
    call = f"cycler.__init__.__globals__.os.system('touch {marker}')"
    payload = f"{{% endraw %}}{{{{ {call} }}}}{{% raw %}} {{{{F F^T}}}} <script>x</script>"
    claims_file = root / "workflow/claims.yaml"
    entries = yaml.safe_load(claims_file.read_text())
    entries[0]["statement"] = payload
    claims_file.write_text(yaml.safe_dump(entries, sort_keys=False))
    overlay = root / "hostile.yaml"
    overlay.write_text(yaml.safe_dump({"reductions": [{"text": payload, "claims": []}]}))
    run([tool("snakemake"), "--cores", "2", "--configfile", "hostile.yaml"], root)
    assert not marker.exists()
    with zipfile.ZipFile(root / "results/report.zip") as archive:
        archive.extractall(tmp_path / "report")
    report = "".join(p.read_text(errors="replace") for p in (tmp_path / "report").rglob("*.*ml"))
    report += "".join(p.read_text(errors="replace") for p in (tmp_path / "report").rglob("*.js"))
    assert call in report.replace("\\'", "'").replace("&#x27;", "'").replace("&#39;", "'")
    assert "F F^T" in report
    page = (root / "results/claims.html").read_text()
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>x" not in page
