"""Publish a run's result tables with the code: ``published/<scale>/``.

A run of a scale other than quick (e.g. ``config/paper-cpu.yaml``) takes hours; its outcome
is worth keeping in the repository, where ``galu audit`` verifies it and the README's second
generated section, "What reproduces at the paper level", quotes it. :func:`publish` copies
every result file of the run (``results/<scale>/``: the verdict, the contract tables and the
per-job tables they are stacked from, all small) and every figure (``figures/<scale>/``: PNG,
0.1 to 0.3 MB, and PDF; files over :data:`MAX_BYTES` are left out and listed) with its
provenance sidecar unchanged, to the same contract paths under ``published/<scale>/``, and
writes ``publication.json`` (:mod:`galu.workflow.publishing.publication_manifest`: the scale, the
commits its files were made on and whether any of them or the checkout had uncommitted
changes, the machine, its configuration, its wall time and job time, and the files) and
``run-state.json``, what continuing the run elsewhere needs
(:mod:`galu.workflow.publishing.resume`). ``claims.html`` is the run's verdict page with its figure
links pointing into the publication, made from the published landing page (:func:`view_page`);
each figure it names links the figure's caption page, ``figures/<stage>/<name>.html``: the figure
beside its caption rendered (:mod:`galu.workflow.publishing.caption_pages`), or the PNG where no
caption is published. A run whose files their sidecars do not vouch for, or that is partly
deleted, is refused before anything is touched (:func:`_check_run`).

The run's own verdict page, ``results/claims.html``, is not a page of the publication: it links
the figures of the run's checkout (``../../figures/<scale>/...``), which lie elsewhere in a
publication, so a copy would be a second verdict page with every figure link broken. It is
not rewritten either: a relinked copy under the run's path would be put back by ``galu resume``
with bytes the claims job never wrote (the audit would find it changed, or Snakemake its job
due), and the publication has the same page at its root already. So it is left out of the
publication's files (:data:`~galu.workflow.publishing.publication_manifest.RUN_PAGES`) and kept,
byte for byte with its sidecar, in ``run-state.json`` (``run_pages``), which holds what
continuing the run needs and is no page: ``galu resume`` checks it against its sidecar and puts
it back with Snakemake's record of it, so a resumed run plans no claims job for it, and the
audit of the resumed checkout finds the claims job's own bytes and sidecar.

A publication is replaced whole: the new one is built and verified in a sibling folder and
renamed into place, so that an interrupted ``galu publish`` leaves the previous publication
or the new one, never a mix (:mod:`galu.workflow.publication_folders`). README's section
on the publications is :mod:`galu.workflow.pages.publication_readme`'s.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes

# Re-exported for scripts/report_readme_check.py, which imports them from here (a script's
# text is part of its rule's code closure: moving its import would rerun that rule).
from galu.workflow.pages.publication_readme import PAPER_MARKERS as PAPER_MARKERS
from galu.workflow.pages.publication_readme import paper_section as paper_section
from galu.workflow.provenance import (
    Run,
    git_state,
    sealed_sidecar,
    sidecar_mismatch,
    sidecar_path,
)
from galu.workflow.publication_folders import (
    MANIFEST,
    STAGING,
    STATE,
    VIEW,
    PublishError,
    _fsync_tree,
    _sibling,
    _swap,
    check_scale_name,
    json_record,
    left_out_before,
    png_figures,
    publication_folder,
    recover_interrupted,
)
from galu.workflow.publishing.caption_pages import (
    caption_page,
    captioned,
    page_of,
    published_config,
)
from galu.workflow.publishing.publication_manifest import (
    RUN_FOLDERS,
    RUN_PAGES,
    _made_on,
    _manifest,
    run_files,
    run_state,
)
from galu.workflow.scales import OutputRoot, scaled, unscaled
from galu.workflow.settings.config import ConfigError
from galu.workflow.settings.runconfig import run_config
from galu.workflow.sidecar_shape import shape_problem

# A published table lives in git: keep the repository small.
MAX_BYTES = 5_000_000


def _dirty_refusal(checkout_dirty: bool, dirty: list[str]) -> str:
    what = []
    if checkout_dirty:
        what.append("the checkout has uncommitted changes")
    if dirty:
        what.append(f"{len(dirty)} file(s) were made from uncommitted changes (e.g. {dirty[0]})")
    return (
        f"{' and '.join(what)}: a publication names the commits its files were made on."
        " Commit, rerun those jobs and publish again, or pass --allow-dirty to publish anyway"
        " (the publication then says so wherever it is shown)"
    )


def _sidecar_problem(side: Path) -> str | None:
    """Why a run file's sidecar cannot vouch for it: not JSON, or malformed."""
    try:
        record = json.loads(side.read_text())
    except (OSError, ValueError) as error:
        return f"is not readable JSON ({error})"
    return shape_problem(record)


# One publication at a time per checkout: a second would delete the first's staging folder.
LOCK = Path(".snakemake/galu/publish.lock")


@contextlib.contextmanager
def publication_lock(root: str | os.PathLike[str] = ".") -> Iterator[None]:
    """Hold the checkout's publication lock (released when the process ends, however), or
    raise PublishError at once when another ``galu publish`` holds it."""
    path = Path(root) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PublishError(
                f"another galu publish is running in this checkout (it holds {LOCK});"
                " wait for it to finish, then publish again"
            ) from None
        yield


def _check_run(run: OutputRoot, files: list[str], scale: str, left_out: list[str]) -> None:
    """Refuse, before the last publication is touched, a run whose files their sidecars do
    not vouch for (truncated, edited) or whose tables were made from run files that are gone
    (a run partly deleted: its verdicts would outlive their evidence; not a file an earlier
    publication left out as too large, ``left_out``, which a resumed run lacks by design)."""
    malformed = [
        f"{sidecar_path(run / c).as_posix()} {why}"
        for c in files
        if (why := _sidecar_problem(sidecar_path(run / c)))
    ]
    if malformed:
        raise PublishError(
            "; ".join(malformed) + ". Nothing was published: rerun their jobs (Snakemake"
            " reruns an output whose sidecar is malformed)"
        )
    bad = [f"{(run / c).as_posix()} {why}" for c in files if (why := sidecar_mismatch(run / c))]
    if bad:
        raise PublishError(
            "; ".join(bad) + ". Nothing was published: rerun their jobs (Snakemake reruns an"
            " output its sidecar does not vouch for)"
        )
    records = {(run / c).as_posix(): json_record(sidecar_path(run / c)) for c in files}
    root = scaled("results", scale) + "/"
    excused = {scaled(c, scale) for c in left_out}
    gone = sorted(
        {
            item["path"]
            for record in records.values()
            for item in record.get("inputs", [])
            if item["path"].startswith(root)
            and not Path(item["path"]).is_file()
            and item["path"] not in excused
        }
    )
    if gone:
        raise PublishError(
            f"the run is incomplete: {', '.join(gone[:3])}{' …' if len(gone) > 3 else ''}"
            f" ({len(gone)} file(s)) made other tables of it and are gone. Nothing was"
            " published: rerun the run (`snakemake` remakes them) and publish again"
        )
    stale = _made_from_other_bytes(records)
    if stale:
        raise PublishError(
            "; ".join(stale[:3]) + f"{' …' if len(stale) > 3 else ''}. Nothing was published:"
            " a table and the one it was made from must be of the same run; rerun the run"
            " (its pre-flight sets such a table aside and `snakemake` remakes it) and publish"
            " again"
        )


def _made_from_other_bytes(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Run files (path -> sidecar record) made from another version of a run file than the
    one to be published (e.g. a claims table older than a table rerun since): its numbers
    are not these."""
    current = {path: record["output"]["sha256"] for path, record in records.items()}
    return [
        f"{path} was made from another version of {item['path']} (sha256"
        f" {item['sha256'][:12]}…, now {current[item['path']][:12]}…)"
        for path, record in records.items()
        for item in record.get("inputs", [])
        if item["path"] in current and current[item["path"]] != item["sha256"]
    ]


def publish(
    scale: str,
    *,
    configfiles: list[str],
    machine: str,
    allow_dirty: bool = False,
    in_progress: bool = False,
) -> dict[str, Any]:
    """Copy the run of ``scale`` in the current checkout to ``published/<scale>/`` (or, for a
    run kept between sittings, ``published/in-progress/<scale>/``) and return its manifest.
    Raises PublishError for the quick scale (the README's first section is its verdict),
    when the run has no claims table, when a result has no sidecar, and (unless
    ``allow_dirty``) when the checkout or any result's job had uncommitted changes."""
    check_scale_name(scale)
    run = OutputRoot(Path("."), scale)
    claims = run / "results/claims.csv"
    if not claims.is_file() and not in_progress:  # a run in progress may not have it yet
        raise PublishError(
            f"no finished run of the {scale} scale: {claims} is missing; run"
            f" `snakemake --cores 2 --configfile {' '.join(configfiles)}` first"
        )
    files = run_files(scale)
    unsealed = [run / c for c in files if not sidecar_path(run / c).is_file()]
    if unsealed:
        names = ", ".join(p.as_posix() for p in unsealed)
        raise PublishError(f"{names}: no provenance sidecar; rerun their jobs")
    # A run kept between sittings carries what is current: an output of code that changed
    # since (a figure whose drawing was edited) is remade by the run, never published stale.
    stale = stale_outputs(scale, files) if in_progress else []
    files = [c for c in files if c not in stale]
    earlier = left_out_before(scale)  # read once: the check and the manifest use it
    _check_run(run, files, scale, earlier)
    checkout = git_state()
    made = _made_on(run, files, checkout, allow_dirty)
    checkout_dirty = bool(checkout.get("dirty"))
    if (checkout_dirty or made["dirty_files"]) and not allow_dirty:
        raise PublishError(_dirty_refusal(checkout_dirty, made["dirty_files"]))
    target = Path(publication_folder(scale, in_progress))
    recover_interrupted(target)
    staging = _sibling(target, STAGING)
    record = json_record(sidecar_path(claims)) if claims.is_file() else {}
    pages = [c for c in files if c in RUN_PAGES]  # kept in the run state, not as pages
    published = [c for c in files if c not in RUN_PAGES]
    config = _caption_config(scale, configfiles, record) if captioned(published) else None
    try:
        copied, left_out = _copy_run(run, published, staging)
        # still left out: what an earlier publication left out and this resumed run lacks
        left_out += [c for c in earlier if not (run / c).is_file()]
        manifest = {
            "scale": scale,
            "in_progress": in_progress,
            **made,
            "machine": machine,
            "configfiles": configfiles,
            **_manifest(scale, record, files=copied, left_out=left_out),
            **({"config": config} if config is not None else {}),
            **({"stale_left_out": stale} if stale else {}),
        }
        _write_records(staging, target, manifest, run_state(scale, copied, pages))
        _verify(run, copied, staging)
        _fsync_tree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(staging, target)
    return manifest


def stale_outputs(scale: str, files: list[str]) -> list[str]:
    """The run's outputs among ``files`` (contract paths) that ``galu audit`` finds stale
    against this checkout's code, or made from one that is (their jobs rerun)."""
    from galu.workflow.trust.audit import STALE, audit_tree

    folders = [scaled(folder, scale) for folder in RUN_FOLDERS]
    found = {
        unscaled(f.path, scale) for f in audit_tree(".", folders) if f.problem.startswith(STALE)
    }
    return [c for c in files if c in found]


def _caption_config(
    scale: str, configfiles: list[str], record: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The run's configuration, as its captions read it (:mod:`~galu.workflow.publishing.
    caption_pages`): its configuration files merged as Snakemake merges them, with the stages
    the claims table records (a run may have named them with ``--config``), the site's keys
    left out; None when no file is named (the captions must then need none). Raises
    PublishError when the files cannot be read or are another scale's."""
    if not configfiles:
        return None
    try:
        config = run_config(".", configfiles)
    except ConfigError as error:
        raise PublishError(
            f"the configuration {' '.join(configfiles)} cannot be read ({error}); the captions"
            " are rendered with it. Nothing was published"
        ) from None
    if config.get("scale") != scale:
        raise PublishError(
            f"the configuration {' '.join(configfiles)} is of the {config.get('scale')} scale,"
            f" not {scale}: name the run's with --configfile. Nothing was published"
        )
    stages = (record.get("params") or {}).get("stages")
    if isinstance(stages, list):
        config["stages"] = stages
    return published_config(config)


def copy_file(source: Path, dest: Path) -> None:
    """Copy one file of a publication (bytes and times); tests inject faults here. A full
    disk names the destination, where the space is missing."""
    try:
        shutil.copy2(source, dest)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(error.errno, error.strerror, str(dest)) from error
        raise


def _copy_run(run: OutputRoot, files: list[str], staging: Path) -> tuple[list[str], list[str]]:
    """Copy the run's files with their sidecars into ``staging``: (copied, left out as too
    large)."""
    copied, left_out = [], []
    for contract in files:
        source = run / contract
        if source.stat().st_size > MAX_BYTES:
            left_out.append(contract)
            continue
        dest = staging / contract
        dest.parent.mkdir(parents=True, exist_ok=True)
        copy_file(source, dest)
        copy_file(sidecar_path(source), sidecar_path(dest))
        copied.append(contract)
    return copied, left_out


def _write_records(
    staging: Path, target: Path, manifest: Mapping[str, Any], state: Mapping[str, Any]
) -> None:
    """``run-state.json``, ``publication.json``, each captioned figure's page
    (:func:`~galu.workflow.publishing.caption_pages.caption_page`) and the verdict page
    (:func:`view_page`) in ``staging``, each with a sidecar that records the published files it
    was made from as its inputs (the audit checks the set), under the paths they take once the
    publication is in place."""
    files = manifest["files"]
    for name, content in ((STATE, state), (MANIFEST, manifest)):
        data = (json.dumps(content, indent=1) + "\n").encode()
        _write_with_sidecar(staging, target, name, data, files)
    from galu.workflow.landing import LANDING_PAGE

    for figure in captioned(files):
        page, inputs = caption_page(staging, figure, view=LANDING_PAGE in files)
        _write_with_sidecar(staging, target, page_of(figure), page, inputs)
    view = view_page(staging, files)
    if view is not None:
        _write_with_sidecar(staging, target, VIEW, view[0], view[1])


def _write_with_sidecar(
    staging: Path, target: Path, name: str, data: bytes, inputs: list[str]
) -> None:
    """``name`` in ``staging`` with a sidecar made by ``galu publish`` from the published
    files ``inputs`` (contract paths), every path as it will be once in place."""
    path = staging / name
    atomic_write_bytes(path, data)
    record = Run("publish", inputs=[staging / c for c in inputs]).sidecar(path)
    record["output"]["path"] = (target / name).as_posix()
    for item, contract in zip(record["inputs"], inputs, strict=True):
        item["path"] = (target / contract).as_posix()
    atomic_write_bytes(sidecar_path(path), sealed_sidecar(record))


def view_page(staging: Path, files: list[str]) -> tuple[bytes, list[str]] | None:
    """The publication's verdict page (``claims.html`` at its root) and what it is made from:
    the run's landing page (:data:`~galu.workflow.landing.LANDING_PAGE`) as HTML, each figure
    it names linked to its caption page (:func:`~galu.workflow.publishing.caption_pages.page_of`,
    written first), or to the published PNG where it has none; None for a run without a landing
    page yet (a run in progress). The run's own ``results/claims.html`` links the figures of the
    run's checkout (``figures/<scale>/``), which are elsewhere in a publication."""
    from galu.workflow.landing import LANDING_PAGE, landing_html

    if LANDING_PAGE not in files:
        return None
    links = {f: page_of(f) if (staging / page_of(f)).is_file() else f for f in png_figures(files)}
    page = landing_html((staging / LANDING_PAGE).read_text(), links)
    return page.encode(), [LANDING_PAGE, *links.values()]


def _verify(run: OutputRoot, copied: list[str], staging: Path) -> None:
    """Every copy has the bytes its run file's sidecar records (a copy that went wrong
    never replaces the last publication)."""
    bad = [
        c
        for c in copied
        if not sidecar_path(staging / c).is_file() or sidecar_mismatch(staging / c)
    ]
    if bad:
        raise PublishError(
            f"the copies of {', '.join(bad)} differ from their sidecars; nothing was published"
            f" (the last publication is kept). Check the disk and publish again"
        )
