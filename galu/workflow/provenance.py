"""Atomic outputs with provenance sidecars.

Every result file ``X`` the workflow writes gets a sidecar ``X.meta.json``
(docs/design.md, "Provenance") recording the output's own sha256, the rule and
wildcards that made it, the resolved parameters and their hash, the code
closure (script and every galu module it imports, each with its hash; see
``galu.workflow.closure``), every input with its sha256, the git commit and dirty flag,
library versions, the device, the seeds and the start and end time. ``galu audit``
re-checks these later.

Writes are atomic: the bytes go to a temporary file in the destination folder
and are renamed over the final name only once complete, so a killed job never
leaves a file that looks finished. The sidecar is written after the output;
an output without a sidecar is reported by the audit as unfinished.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from galu.atomic import atomic_write_bytes

# The sidecar's byte layer, re-exported: most of galu imports these names from here.
from galu.workflow.sidecar_seal import SEAL_KEY as SEAL_KEY
from galu.workflow.sidecar_seal import SIDECAR_SUFFIX as SIDECAR_SUFFIX
from galu.workflow.sidecar_seal import seal_problem as seal_problem
from galu.workflow.sidecar_seal import sealed_sidecar, sha256_file, sidecar_path
from galu.workflow.vouch import unvouched_inputs


def sha256_json(value: Any) -> str:
    """SHA-256 of a value's canonical JSON (sorted keys), for parameter hashes."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def recorded_sha256(path: str | os.PathLike[str]) -> str | None:
    """The sha256 that ``path``'s sidecar records for it; None without a readable one."""
    try:
        return json.loads(sidecar_path(path).read_text())["output"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def sidecar_mismatch(path: str | os.PathLike[str]) -> str | None:
    """Why ``path``'s bytes cannot be trusted (None when its sidecar vouches for them).

    A file without a readable sidecar is left to Snakemake, which reruns the job of an
    output whose sidecar is missing.
    """
    recorded = recorded_sha256(path)
    if recorded is None:
        return None
    actual = sha256_file(path)
    if actual == recorded:
        return None
    return (
        f"does not match its provenance sidecar (sha256 {actual[:12]}…, recorded {recorded[:12]}…)"
    )


def is_substitute(path: str | os.PathLike[str]) -> bool:
    """Whether a file's provenance sidecar marks it as made from a non-official dataset copy.

    Results made from a substitute (e.g. the CIFAR-10 reconstruction) must say so; a
    file without a sidecar counts as official.
    """
    side = sidecar_path(path)
    return (
        bool(json.loads(side.read_text()).get("data_substitute", False))
        if side.is_file()
        else False
    )


def log_to_file(path: str | os.PathLike[str]) -> None:
    """Route logging (INFO and up) and warnings to ``path``, replacing earlier handlers."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=os.fspath(path),
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


# Where `galu publish` puts finished runs (galu/workflow/publishing/publish.py): not code
# (git_state).
PUBLISHED = "published"


@functools.lru_cache(maxsize=1)
def git_state() -> dict[str, Any]:
    """The commit of the working directory's repository and whether it is dirty.

    Dirty means tracked files outside ``published/`` differ from the commit. Untracked files
    (outputs, logs) do not count, since the workflow itself creates them; nor does
    ``published/``, which holds copies of finished outputs (``galu publish``) that no job's
    code reads: publishing a run in progress into its own checkout between sittings must not
    mark every job after it as made from uncommitted changes.
    """
    commit = _git("rev-parse", "HEAD")
    outside_published = [":(top)", f":(top,exclude){PUBLISHED}"]
    status = _git("status", "--porcelain", "--untracked-files=no", "--", *outside_published)
    dirty = None if commit is None or status is None else bool(status)
    return {"commit": commit, "dirty": dirty}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str | None]:
    """Versions of the software that shapes the numbers (read from metadata, no imports)."""
    from galu import __version__

    found = {name: _version(name) for name in ("torch", "numpy", "scipy", "snakemake")}
    return {"python": platform.python_version(), "galu": __version__, **found}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    """Turn Snakemake's Namedlist/Params and numpy scalars into JSON-able values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _named_items(namedlist: Any) -> dict[str, Any]:
    """Keyword entries of a Snakemake Namedlist (its ``items()``), positional ones dropped."""
    return {key: _plain(val) for key, val in namedlist.items()}


def _job_code(planned: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The code closure of the job's script, with every file's hash, as the job starts.

    ``planned`` is the rule's ``code`` param (script and closure hash, computed when the
    workflow was parsed; the job's working directory is the repository root). Should the
    code have changed since, the sidecar records what the job actually ran, and a warning
    says so (Snakemake will rerun the job next time).
    """
    if not planned:
        return None
    from galu.workflow.closure import CodeScanner

    root = Path.cwd()
    if not (root / planned["script"]).is_file():
        return dict(planned)
    closure = CodeScanner(root, cache=root / ".snakemake/galu/code-cache.json").closure_of(planned)
    from galu.workflow.equivalence import Ledger, closure_record

    if planned.get("sha256") == closure.sha256:
        # the workflow vouched for no chain (none, or one whose entries failed its check)
        return closure.record()
    record = closure_record(closure, Ledger.load(root))
    if record.get("canonical", closure.sha256) != planned.get("sha256"):
        logging.getLogger("galu").warning(
            "the code of %s changed after the workflow was parsed; recording the new code",
            planned["script"],
        )
    return record


class Run:
    """One job's provenance: what ran, with which parameters, on which inputs.

    Create it at the start of a script (that fixes the start time), then write
    every output through it. ``extra`` is merged into each sidecar (for
    example ``{"data_substitute": True}`` when inputs descend from a
    non-official copy of a dataset; :meth:`from_snakemake` works that out itself).
    """

    def __init__(
        self,
        rule: str,
        *,
        wildcards: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        inputs: Iterable[str | os.PathLike[str]] = (),
        device: str = "cpu",
        extra: Mapping[str, Any] | None = None,
        code: Mapping[str, Any] | None = None,
    ) -> None:
        self.rule = rule
        self.wildcards = _plain(dict(wildcards or {}))
        self.params = _plain(dict(params or {}))
        # The rule's code closure (galu.workflow.closure): script, sha256, files -> hash.
        self.code = _plain(dict(code)) if code else None
        self.inputs = [os.fspath(p) for p in inputs]
        self.device = device
        self.extra = dict(extra or {})
        self.started = _now()
        self._input_hashes = {p: sha256_file(p) for p in self.inputs}

    @classmethod
    def from_snakemake(cls, smk: Any, **kwargs: Any) -> Run:
        """Build from the ``snakemake`` object a ``script:`` receives.

        Does what every job needs, so that no script can forget it: sends Python logging
        and warnings to the rule's ``log:`` file, so every job leaves a record of what it
        did (call :meth:`use_device` afterwards, so a device fallback is in it too); records
        ``data_substitute``, true when any input descends from a substitute dataset
        (:func:`is_substitute`), so every result made from one says so (a script that
        knows better passes its own in ``extra``); and starts the job's heartbeat: a line
        on stderr every minute while it runs
        (:func:`galu.workflow.feedback.start_heartbeat`). ``params.code``, the rule's code
        closure, is recorded as the sidecar's ``code``.
        """
        from galu.workflow.feedback import start_heartbeat

        if len(smk.log):
            log_to_file(smk.log[0])
        params = _named_items(smk.params)
        inputs = [p for p in smk.input if Path(p).is_file()]
        substitute = {"data_substitute": any(map(is_substitute, inputs))}
        run = cls(
            smk.rule,
            wildcards=_named_items(smk.wildcards),
            # The code closure the workflow adds to every script rule (run_hooks.track_code) is
            # recorded apart from the parameters, so params_sha256 stays the settings' hash.
            params={k: v for k, v in params.items() if k != "code"},
            code=_job_code(params.get("code")),
            inputs=inputs,
            extra={**substitute, **(kwargs.pop("extra", None) or {})},
            **kwargs,
        )
        unvouched = unvouched_inputs(run._input_hashes)
        if unvouched:  # a file damaged or swapped since the pre-flight: refuse it here
            message = (
                "this job's input is not what its sidecar says it is, so nothing is computed"
                f" from it: {'; '.join(unvouched)}. Run the workflow again: its pre-flight"
                " moves such a file aside and remakes it (`galu audit` names every such file)."
            )
            logging.getLogger("galu").error("%s", message)
            print(f"galu: {message}", file=sys.stderr)
            raise SystemExit(1)
        logging.getLogger("galu").info("rule %s %s started", run.rule, run.wildcards)
        start_heartbeat(run.rule, run.wildcards, smk.log[0] if len(smk.log) else "")
        return run

    def sidecar(self, path: str | os.PathLike[str], seeds: Iterable[int] = ()) -> dict[str, Any]:
        """The sidecar record for an output already on disk."""
        return {
            "output": {"path": os.fspath(path), "sha256": sha256_file(path)},
            "rule": self.rule,
            "wildcards": self.wildcards,
            "params": self.params,
            "params_sha256": sha256_json(self.params),
            **({"code": self.code} if self.code else {}),
            "inputs": [{"path": p, "sha256": h} for p, h in self._input_hashes.items()],
            "git": git_state(),
            "versions": versions(),
            "device": self.device,
            "seeds": [int(s) for s in seeds],
            "started": self.started,
            "finished": _now(),
            **self.extra,
        }

    def stamp(self, path: str | os.PathLike[str], seeds: Iterable[int] = ()) -> Path:
        """Write the sidecar of an existing output, atomically; return its path."""
        record = self.sidecar(path, seeds)
        side = sidecar_path(path)
        atomic_write_bytes(side, sealed_sidecar(record))
        logging.getLogger("galu").info("wrote %s (sha256 %s)", path, record["output"]["sha256"])
        return side


def stamp_manifest(manifest: str | os.PathLike[str], substitute: bool, **made_by: Any) -> Path:
    """The sidecar of a download manifest (``data/raw/<dataset>/sources.json``) made outside a
    download job (``galu data fetch``, the pre-flight adopting an older manifest): the
    pre-flight and the prepare job accept only a manifest one vouches for, and it says whether
    the archives it lists are a substitute. ``made_by``: :class:`Run`'s arguments (rule,
    params, code). The download job stamps its own with its job's record
    (scripts/data_download.py)."""
    return Run(extra={"data_substitute": bool(substitute)}, **made_by).stamp(manifest)
