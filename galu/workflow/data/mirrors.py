"""Local and institutional copies searched before the internet.

A mirror is a local folder (a path, ``~/...`` or a ``file://`` URL) or an
http(s) URL. It may hold a dataset's files directly or in a sub-folder named
after the dataset (``mnist``,
``fashion-mnist``, ``FashionMNIST/raw``, ... see ``Dataset.folder_aliases``).
The list comes from the config (``data.mirrors``) and from the environment
variable ``GALU_DATA_MIRRORS`` (``:``-separated, searched first): that is how
cluster users point compute nodes without internet at a shared copy.

A file found in a folder is cloned (a copy-on-write reflink through Linux's
``FICLONE``, where the file system has them: btrfs, XFS with reflink, OpenZFS
with block cloning; elsewhere, macOS's APFS included, a plain copy) or copied to a
temporary name beside its destination, verified there, and only then renamed
to its final name. It is never hard-linked: a hard link *is* the mirror's file,
so any in-place write under ``data/raw/`` (an editor, a tool, a bug) would
change the shared copy for every user and every clone; a clone or a copy has
its own bytes, and a write to it leaves the mirror as it was.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from galu.workflow.data.registry import Dataset
from galu.workflow.data.verify import Verified

ENV_VAR = "GALU_DATA_MIRRORS"
# Where Debian's dataset packages (e.g. dataset-fashion-mnist) install.
DEFAULT_MIRRORS: tuple[str, ...] = ("/usr/share/datasets",)

_SCHEMES = ("http", "https", "file")
_PORT = re.compile(r"^\d+(/|$)")


def split_mirror_list(value: str) -> list[str]:
    """Split a ``:``-separated mirror list without cutting URLs at their colons.

    ``"/a:https://h:8443/x:/b"`` gives ``["/a", "https://h:8443/x", "/b"]``.
    """
    tokens = value.split(":")
    entries: list[str] = []
    i = 0
    while i < len(tokens):
        entry = tokens[i]
        if entry in _SCHEMES and i + 1 < len(tokens) and tokens[i + 1].startswith("//"):
            entry = f"{entry}:{tokens[i + 1]}"
            i += 1
            host_only = "/" not in entry.split("//", 1)[1]
            if host_only and i + 1 < len(tokens) and _PORT.match(tokens[i + 1]):
                entry = f"{entry}:{tokens[i + 1]}"
                i += 1
        if entry:
            entries.append(entry)
        i += 1
    return entries


@dataclass(frozen=True)
class Mirror:
    """One mirror entry and where it was configured (for error messages)."""

    location: str
    origin: str


def mirror_list(
    config_mirrors: Sequence[str], environ: Mapping[str, str] | None = None
) -> list[Mirror]:
    """Mirrors in search order: ``GALU_DATA_MIRRORS`` first, then the config; no repeats."""
    environ = os.environ if environ is None else environ
    ordered = [Mirror(m, ENV_VAR) for m in split_mirror_list(environ.get(ENV_VAR, ""))]
    ordered += [Mirror(str(m), "data.mirrors") for m in config_mirrors if m]
    seen: set[str] = set()
    unique = []
    for mirror in ordered:
        if mirror.location not in seen:
            seen.add(mirror.location)
            unique.append(mirror)
    return unique


def is_remote(mirror: str) -> bool:
    """Whether a mirror entry is fetched over HTTP(S) rather than read from disk."""
    return urlsplit(mirror).scheme in ("http", "https")


def local_folder(mirror: str) -> Path:
    """The folder a local mirror entry names (a path, ``~/...`` or a ``file://`` URL)."""
    if mirror.startswith("file://"):
        return Path(unquote(urlsplit(mirror).path))
    return Path(mirror).expanduser()


def sub_folders(dataset: Dataset) -> list[str]:
    """Relative folders a mirror may use for ``dataset``: itself first, then aliases."""
    return list(dict.fromkeys(["", dataset.name, *dataset.folder_aliases]))


def local_candidates(folder: Path, dataset: Dataset, filename: str) -> list[Path]:
    """Existing files in ``folder`` that may be ``filename`` of ``dataset``."""
    paths = [folder / sub / filename for sub in sub_folders(dataset)]
    return [p for p in paths if p.is_file()]


def remote_candidates(base_url: str, dataset: Dataset, filename: str) -> list[str]:
    """URLs under ``base_url`` that may serve ``filename`` of ``dataset``."""
    base = base_url.rstrip("/")
    return [
        f"{base}/{sub}/{filename}" if sub else f"{base}/{filename}" for sub in sub_folders(dataset)
    ]


# linux/fs.h: FICLONE = _IOW(0x94, 9, int), share the source's blocks copy-on-write.
_FICLONE = 0x40049409


def _clone(src: Path, tmp: Path) -> bool:
    """Make ``tmp`` a copy-on-write clone of ``src``; False where the file system (or the
    pair of file systems) cannot, with ``tmp`` removed."""
    if not sys.platform.startswith("linux"):
        return False
    import fcntl

    try:
        with open(src, "rb") as source, open(tmp, "wb") as target:
            fcntl.ioctl(target.fileno(), _FICLONE, source.fileno())
        return True
    except OSError:  # EOPNOTSUPP, EXDEV, EINVAL: no reflinks here
        tmp.unlink(missing_ok=True)
        return False


def _clone_or_copy(src: Path, tmp: Path, clone: bool) -> None:
    """Own bytes at ``tmp`` either way: a write there never reaches ``src``."""
    if not (clone and _clone(src, tmp)):
        shutil.copyfile(src, tmp)


def install_local(
    src: Path, dest: Path, verify: Callable[[Path, str], Verified], link: bool = True
) -> Verified:
    """Bring ``src`` in as ``dest``: clone (``link``, where the file system can) or copy to
    a temporary name, verify, rename.

    ``verify(path, source)`` raises on a mismatch; the temporary file is then
    removed and ``dest`` is left as it was.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        _clone_or_copy(src, tmp, link)
        verified = verify(tmp, str(src))
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return Verified(verified.name, dest, verified.sha256, verified.method, verified.substitute)
