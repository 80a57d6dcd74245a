"""The ``data:`` section of the config, as one typed value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from galu.workflow.data.download import RetryPolicy, check_url
from galu.workflow.data.errors import InsecureURLError
from galu.workflow.data.mirrors import DEFAULT_MIRRORS, is_remote
from galu.workflow.data.registry import DATASETS, Dataset
from galu.workflow.data.substitutes import Substitute, parse_substitutes

_KEYS = ("mirrors", "substitutes", "download", "link", "timeout_s", "retries", "backoff_s")


@dataclass(frozen=True)
class DataSettings:
    """Where to look for dataset files and how hard to try.

    ``mirrors`` are searched after ``GALU_DATA_MIRRORS`` (see ``mirrors.py``);
    ``download=False`` skips the official URLs (offline clusters get the
    offline message at once); ``link`` clones files from local mirrors
    (copy-on-write reflinks: no second copy of the bytes on disk) where the file system
    allows it, else copies them; never a hard link, through which a write under
    ``data/raw/`` would change the mirror (``mirrors.py``).
    """

    mirrors: tuple[str, ...] = DEFAULT_MIRRORS
    substitutes: tuple[Substitute, ...] = ()
    download: bool = True
    link: bool = True
    policy: RetryPolicy = RetryPolicy()
    progress: bool | None = None

    @classmethod
    def from_config(
        cls, section: Mapping[str, Any] | None, datasets: Mapping[str, Dataset] = DATASETS
    ) -> DataSettings:
        """Build from the config's ``data:`` mapping; missing keys take the defaults."""
        section = dict(section or {})
        unknown = sorted(set(section) - set(_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) under data: {unknown}; valid keys: {list(_KEYS)}")
        default = RetryPolicy()
        mirrors = tuple(str(m) for m in section.get("mirrors", DEFAULT_MIRRORS))
        check_mirrors(mirrors, "data.mirrors")
        return cls(
            mirrors=mirrors,
            substitutes=parse_substitutes(section.get("substitutes"), datasets),
            download=bool(section.get("download", True)),
            link=bool(section.get("link", True)),
            policy=RetryPolicy(
                timeout=float(section.get("timeout_s", default.timeout)),
                retries=int(section.get("retries", default.retries)),
                backoff=float(section.get("backoff_s", default.backoff)),
            ),
        )


def check_mirrors(mirrors: Sequence[str], where: str) -> None:
    """Fail early, naming the setting, on a mirror URL that is not https."""
    for mirror in mirrors:
        if is_remote(mirror):
            try:
                check_url(mirror)
            except InsecureURLError as exc:
                raise InsecureURLError(f"{where}: {exc}") from None
