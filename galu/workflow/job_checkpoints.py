"""The checkpoint of a workflow job (:mod:`galu.checkpoints`), keyed to its provenance."""

from __future__ import annotations

import os
from pathlib import Path

from galu.checkpoints import FOLDER, Checkpoint
from galu.workflow.provenance import Run, sha256_file, sha256_json

# In the closure of the jobs that import it (galu.workflow.closure): it writes their bytes.
RESULT_CODE = "how a job resumes from its checkpoint (the state its numbers continue from)"


def job_checkpoint(run: Run, output: str | os.PathLike[str], every_s: float = 300.0) -> Checkpoint:
    """The checkpoint of the job ``run`` that makes ``output``: under :data:`FOLDER` at the
    output's path, its key the hash of what decides the job's numbers (rule, wildcards,
    parameters, code closure, inputs' bytes, device). Code recorded as number-neutral to an
    earlier closure keeps that closure's key (the ledger's canonical hash)."""
    code = run.code or {}
    key = sha256_json(
        {
            "rule": run.rule,
            "wildcards": run.wildcards,
            "params": run.params,
            "code": code.get("canonical", code.get("sha256")),
            "inputs": {p: sha256_file(p) for p in run.inputs},
            "device": run.device,
        }
    )
    relative = Path(output).as_posix().lstrip("/")
    return Checkpoint(FOLDER / f"{relative}.pt", key, every_s)
