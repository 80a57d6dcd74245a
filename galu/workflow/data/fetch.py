"""Get every raw file of a dataset into ``<raw_root>/<dataset>/``, verified.

For each file, in order: a copy already in the raw folder; each mirror
(``GALU_DATA_MIRRORS``, then ``data.mirrors``); the official URLs (unless
``data.download`` is false); last, an opted-in substitute. The first source
that passes verification wins. When some file has no source, one
MissingFilesError lists every file, every place tried and the fixes.

A ``sources.json`` manifest in the raw folder records, per file, its SHA-256,
the check that accepted it, where it came from and whether it is a substitute.
It is the download step's output for Snakemake, so files a user placed in the
raw folder are never deleted by a re-run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from galu.workflow.data.download import download, partial_path
from galu.workflow.data.errors import (
    ChecksumMismatchError,
    DataError,
    DownloadError,
    MissingFilesError,
)
from galu.workflow.data.mirrors import (
    Mirror,
    install_local,
    is_remote,
    local_candidates,
    local_folder,
    mirror_list,
    remote_candidates,
    sub_folders,
)
from galu.workflow.data.offline import Attempt, MissingFile, offline_message
from galu.workflow.data.registry import Dataset, RawFile, get_dataset
from galu.workflow.data.settings import DataSettings, check_mirrors
from galu.workflow.data.substitutes import accept_present, substitutes_for
from galu.workflow.data.verify import Verified, verify_official, verify_pinned
from galu.atomic import atomic_write_bytes

MANIFEST_NAME = "sources.json"
# What every manifest entry records (FetchedFile's fields that later steps read).
_ENTRY_KEYS = ("name", "sha256", "source")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FetchedFile:
    """A raw file now in place, and where its bytes came from."""

    name: str
    path: str
    sha256: str
    method: str
    substitute: bool
    source: str


@dataclass(frozen=True)
class FetchReport:
    """The outcome of fetching one dataset."""

    dataset: str
    files: tuple[FetchedFile, ...]
    manifest: Path

    @property
    def substitute(self) -> bool:
        """True when any file is a non-official (substitute) copy."""
        return any(f.substitute for f in self.files)


def raw_dir(raw_root: Path, dataset: str) -> Path:
    """The folder holding ``dataset``'s raw files."""
    return Path(raw_root) / dataset


def manifest_path(raw_root: Path, dataset: str) -> Path:
    """The ``sources.json`` manifest of ``dataset``'s raw folder."""
    return raw_dir(raw_root, dataset) / MANIFEST_NAME


def read_manifest(path: Path) -> list[dict[str, str]]:
    """The entries of a download manifest, each with at least a ``name``, ``sha256`` and
    ``source`` (strings); DataError, naming the file and the fix, for anything else."""
    try:
        files = json.loads(Path(path).read_text())["files"]
        if not isinstance(files, list) or not all(
            isinstance(f, dict) and all(isinstance(f.get(k), str) for k in _ENTRY_KEYS)
            for f in files
        ):
            raise TypeError(f"'files' must be a list of entries with {', '.join(_ENTRY_KEYS)}")
        return files
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as error:
        raise DataError(
            f"{path} is not a readable download manifest ({type(error).__name__}: {error});"
            f" move it aside and fetch again (`galu data fetch {Path(path).parent.name}`, or"
            " any workflow run, whose pre-flight does this itself): the archives already"
            " there are verified, not downloaded again"
        ) from None


class _FileSearch:
    """Look for one file in every source in turn, recording each attempt."""

    def __init__(
        self, ds: Dataset, spec: RawFile, dest: Path, settings: DataSettings, mirrors: list[Mirror]
    ) -> None:
        self.ds, self.spec, self.dest = ds, spec, dest
        self.settings, self.mirrors = settings, mirrors
        self.attempts: list[Attempt] = []

    def run(self) -> FetchedFile | None:
        found = self._present()
        for mirror in self.mirrors:
            if found is None:
                found = self._remote(mirror) if is_remote(mirror.location) else self._local(mirror)
        if found is None:
            found = self._official()
        if found is None:
            found = self._substitute()
        for attempt in self.attempts:
            _log.info("%s: %s: %s", self.spec.name, attempt.place, attempt.outcome)
        if found is not None:
            _log.info("%s: accepted (%s) from %s", found.name, found.method, found.source)
            # A download interrupted earlier is moot once another source supplied the file.
            partial_path(self.dest).unlink(missing_ok=True)
        return found

    def _fetched(self, verified: Verified, source: str) -> FetchedFile:
        return FetchedFile(
            self.spec.name,
            str(self.dest),
            verified.sha256,
            verified.method,
            verified.substitute,
            source,
        )

    def _present(self) -> FetchedFile | None:
        if not self.dest.is_file():
            self.attempts.append(Attempt(str(self.dest), "not present"))
            return None
        subs = substitutes_for(self.settings.substitutes, self.ds.name, self.spec.name)
        try:
            return self._fetched(accept_present(self.dest, self.spec, subs), "already present")
        except ChecksumMismatchError as exc:
            # Never leave rejected bytes under the final name, but keep the user's file.
            rejected = self.dest.with_name(self.dest.name + ".rejected")
            os.replace(self.dest, rejected)
            outcome = f"rejected (expected {exc.expected}; got {exc.actual}); moved to {rejected}"
            self.attempts.append(Attempt(str(self.dest), outcome))
            return None

    def _local(self, mirror: Mirror) -> FetchedFile | None:
        folder = local_folder(mirror.location)
        place = f"{folder} ({mirror.origin})"
        if not folder.is_dir():
            self.attempts.append(Attempt(place, "folder does not exist"))
            return None
        candidates = local_candidates(folder, self.ds, self.spec.name)
        if not candidates:
            looked = ", ".join(s or "." for s in sub_folders(self.ds))
            self.attempts.append(Attempt(place, f"not found (looked in: {looked})"))
        for path in candidates:
            try:
                verified = install_local(
                    path,
                    self.dest,
                    lambda p, src: verify_official(p, self.spec, src),
                    self.settings.link,
                )
                return self._fetched(verified, str(path))
            except ChecksumMismatchError as exc:
                outcome = f"rejected (expected {exc.expected}; got {exc.actual})"
                self.attempts.append(Attempt(str(path), outcome))
        return None

    def _try_urls(self, urls: Sequence[str], place: str) -> FetchedFile | None:
        not_found = []
        for url in urls:
            try:
                verified = download(
                    url, self.dest, self.spec, self.settings.policy, self.settings.progress
                )
                return self._fetched(verified, url)
            except DownloadError as exc:
                if exc.not_found:
                    not_found.append(url)
                    continue
                self.attempts.append(Attempt(url, str(exc).removeprefix(f"{url}: ")))
                if exc.unreachable:
                    break  # the other URLs of an unreachable host would fail the same way
            except ChecksumMismatchError as exc:
                outcome = f"rejected (expected {exc.expected}; got {exc.actual})"
                self.attempts.append(Attempt(url, outcome))
        if not_found:
            self.attempts.append(Attempt(place, f"not found (HTTP 404 for {len(not_found)} URLs)"))
        return None

    def _remote(self, mirror: Mirror) -> FetchedFile | None:
        urls = remote_candidates(mirror.location, self.ds, self.spec.name)
        return self._try_urls(urls, f"{mirror.location} ({mirror.origin})")

    def _official(self) -> FetchedFile | None:
        if not self.settings.download:
            self.attempts.append(Attempt("official URLs", "not tried (data.download is false)"))
            return None
        found = None
        for url in self.spec.urls:
            if found is None:
                found = self._try_urls([url], url)
        return found

    def _substitute_candidates(self, path: Path) -> list[Path]:
        """Where an opted-in copy may lie: its path as given and, when that path is
        relative, the same path inside each local mirror (so a committed config overlay
        can name a copy without hard-coding the folder that holds it on one machine)."""
        if path.is_absolute():
            return [path]
        roots = [local_folder(m.location) for m in self.mirrors if not is_remote(m.location)]
        return [path, *(root / path for root in roots)]

    def _substitute(self) -> FetchedFile | None:
        for sub in substitutes_for(self.settings.substitutes, self.ds.name, self.spec.name):
            candidates = self._substitute_candidates(sub.path)
            found = next((c for c in candidates if c.is_file()), None)
            place = f"substitute {sub.path} (data.substitutes)"
            if found is None:
                tried = ", ".join(str(c) for c in candidates)
                self.attempts.append(Attempt(place, f"file does not exist (looked at {tried})"))
                continue
            place = f"substitute {found} (data.substitutes)"
            try:
                verified = install_local(
                    found,
                    self.dest,
                    lambda p, src, s=sub: verify_pinned(p, self.spec.name, s.sha256, src),
                    self.settings.link,
                )
                return self._fetched(verified, f"substitute {found}")
            except ChecksumMismatchError as exc:
                outcome = f"rejected (expected {exc.expected}; got {exc.actual})"
                self.attempts.append(Attempt(place, outcome))
        return None


def _write_manifest(path: Path, dataset: str, files: Sequence[FetchedFile]) -> None:
    record = {
        "dataset": dataset,
        "data_substitute": any(f.substitute for f in files),
        "files": [asdict(f) for f in files],
    }
    atomic_write_bytes(path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())


def fetch(
    dataset: str | Dataset,
    raw_root: Path = Path("data/raw"),
    settings: DataSettings | None = None,
    environ: Mapping[str, str] | None = None,
) -> FetchReport:
    """Bring every raw file of ``dataset`` into ``raw_root/<name>/``, verified.

    ``environ`` defaults to ``os.environ`` (read for ``GALU_DATA_MIRRORS``).
    Raises MissingFilesError, listing every place tried, when a file has no
    source; the files that were found stay in place for the next run.
    """
    ds = get_dataset(dataset) if isinstance(dataset, str) else dataset
    settings = settings or DataSettings()
    mirrors = mirror_list(settings.mirrors, environ)
    check_mirrors([m.location for m in mirrors], "mirror list")
    folder = raw_dir(raw_root, ds.name)
    found, missing = [], []
    for spec in ds.files:
        search = _FileSearch(ds, spec, folder / spec.name, settings, mirrors)
        result = search.run()
        if result is None:
            missing.append(MissingFile(ds.name, spec, folder, tuple(search.attempts)))
        else:
            found.append(result)
    if missing:
        raise MissingFilesError(offline_message(missing), missing)
    manifest = manifest_path(raw_root, ds.name)
    _write_manifest(manifest, ds.name, found)
    return FetchReport(ds.name, tuple(found), manifest)


def fetch_many(
    datasets: Sequence[str | Dataset],
    raw_root: Path = Path("data/raw"),
    settings: DataSettings | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[FetchReport]:
    """Fetch several datasets; if any file is missing, one error lists them all."""
    reports, missing = [], []
    for dataset in datasets:
        try:
            reports.append(fetch(dataset, raw_root, settings, environ))
        except MissingFilesError as exc:
            missing += exc.missing
    if missing:
        raise MissingFilesError(offline_message(missing), missing)
    return reports
