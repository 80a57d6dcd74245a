"""Keep the last good outputs through a failed rerun.

Snakemake deletes a job's outputs before the job starts, and deletes whatever it wrote when
it fails: a rerun that fails (a bad value, missing data, a crash) would lose the previous
good result and its provenance sidecar. So when a run starts, every file under ``results/``,
``figures/`` and ``data/`` gets a hard link under ``.snakemake/galu/last-good/`` (no bytes
are copied; every galu write replaces a file by renaming a new one over it, so the link
keeps the old bytes). When the run fails, each file that is missing now and was there at
the start is put back, atomically and with its sidecar, and the jobs that should have made
it are marked incomplete, so the next run still redoes them (``rerun-incomplete`` in
``profiles/default``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from galu.workflow.audit import is_output
from galu.workflow.provenance import SIDECAR_SUFFIX

SNAPSHOT = Path(".snakemake/galu/last-good")
FOLDERS = ("results", "figures", "data")


def _kept(path: Path) -> bool:
    """Outputs and their sidecars: the audit's notion of an output, sidecars included (not
    the temporaries of an atomic write, not files set aside, not partial downloads, which a
    restore must never bring back)."""
    return is_output(path) or path.name.endswith(SIDECAR_SUFFIX)


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not supported: copy instead
        shutil.copy2(source, target)


def snapshot(root: str | Path = ".", folders: Iterable[str] = FOLDERS) -> int:
    """Link every output under ``folders`` into the snapshot (replacing the previous one);
    return how many files it holds."""
    root = Path(root)
    final = root / SNAPSHOT
    fresh = final.with_name(final.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    count = 0
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.is_symlink() and _kept(path):
                _link(path, fresh / path.relative_to(root))
                count += 1
    fresh.mkdir(parents=True, exist_ok=True)
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    fresh.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return count


def restore_missing(root: str | Path = ".") -> list[str]:
    """Put back every file of the snapshot that is missing under its name now; return their
    paths (relative to ``root``). Each appears whole or not at all (atomic rename)."""
    root = Path(root)
    base = root / SNAPSHOT
    restored = []
    if not base.is_dir():
        return restored
    for kept in sorted(base.rglob("*")):
        if not kept.is_file():
            continue
        rel = kept.relative_to(base)
        target = root / rel
        if target.exists():
            continue
        # A hidden temporary (what the audit and pre-flight know as a killed write), then a
        # rename: the file never appears half-made under its name.
        tmp = target.with_name(f".{target.name}.restore.tmp")
        tmp.unlink(missing_ok=True)
        _link(kept, tmp)
        os.replace(tmp, target)
        restored.append(rel.as_posix())
    return restored
