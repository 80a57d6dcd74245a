"""Contradictory settings, found before any job runs.

:func:`consistency_problems` finds settings the JSON schema accepts one by one but that
contradict each other or the machine: a mirror that is a file or an unknown kind of URL, a
substitute whose file does not belong to its dataset, a ``<name>_min`` above its
``<name>_max``, GPU requests together with ``device: cpu``, and each stage's own checks
(``checks`` of its declaration, ``galu/<paper>/checks.py``: e.g. soft-committee starts no
student can have, a grid in which no point qualifies). The workflow calls
:func:`check_consistency` (:func:`galu.workflow.running.run_hooks.check_at_parse`) in Snakemake's
main process only, for every stage's settings at once, so a contradiction stops the run
before its first job rather than hours into it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from galu.workflow.stages import stages


def _mirror_problem(where: str, mirror: str) -> str | None:
    """Why one mirror entry is neither a folder nor an https (or file://) URL, else None."""
    scheme = urlsplit(mirror).scheme if "://" in mirror else ""
    fix = "name a folder that holds the dataset files (or their sub-folders) or an https:// URL"
    if scheme == "http":
        return f"{where}: {mirror!r} uses plain http, which is refused; use its https:// URL"
    if scheme and scheme not in ("https", "file"):
        return f"{where}: {mirror!r} is neither a folder nor an https URL ({scheme}://); {fix}"
    if scheme == "https":
        return None
    from galu.workflow.data.mirrors import local_folder

    folder = local_folder(mirror)
    if folder.exists() and not folder.is_dir():
        return f"{where}: {mirror!r} is a file, not a folder; {fix}"
    return None  # a folder that does not exist (yet) is reported by the download step


def _mirror_problems(config: Mapping[str, Any], environ: Mapping[str, str]) -> Iterator[str]:
    from galu.workflow.data.mirrors import ENV_VAR, split_mirror_list

    for i, mirror in enumerate((config.get("data") or {}).get("mirrors") or []):
        problem = _mirror_problem(f"data.mirrors[{i}]", str(mirror))
        if problem:
            yield problem
    for mirror in split_mirror_list(environ.get(ENV_VAR, "")):
        problem = _mirror_problem(f"environment variable {ENV_VAR}", mirror)
        if problem:
            yield problem


def _data_problems(config: Mapping[str, Any]) -> Iterator[str]:
    """What the data stage itself would refuse later (e.g. a substitute's file/dataset pair)."""
    from galu.workflow.data.settings import DataSettings

    try:
        DataSettings.from_config(config.get("data"))
    except (ValueError, RuntimeError) as error:  # galu.workflow.data's errors are RuntimeErrors
        yield str(error)


def _range_problems(node: Any, path: str = "") -> Iterator[str]:
    """Every ``<name>_min`` larger than the ``<name>_max`` beside it (any stage, any depth)."""
    if not isinstance(node, Mapping):
        return
    for key, lo in node.items():
        here = f"{path}.{key}".lstrip(".")
        if isinstance(lo, Mapping):
            yield from _range_problems(lo, here)
        elif isinstance(key, str) and key.endswith("_min"):
            name = key.removesuffix("_min")
            hi = node.get(f"{name}_max")
            numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lo, hi))
            if numbers and lo > hi:
                where = f"{path}: " if path else ""
                yield (
                    f"{where}{key} = {lo} is larger than {name}_max = {hi}; swap them "
                    f"({name} runs from {key} up to {name}_max)"
                )


def _gpu_requests(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``gpu`` / ``gpus`` setting of the config (any stage, any depth) and its value."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}".lstrip(".")
            if key in ("gpu", "gpus") and not isinstance(value, Mapping):
                yield here, value
            else:
                yield from _gpu_requests(value, here)


def _gpu_problems(config: Mapping[str, Any]) -> Iterator[str]:
    if config.get("device") != "cpu":
        return
    for key, value in _gpu_requests(config):
        if value:
            off = "0" if key.endswith("gpus") else "false"
            yield (
                f"{key}: {value!r} asks the scheduler for a GPU, but device: 'cpu' never uses "
                f"one; set {key}: {off}, or device: auto"
            )


_BASE_FILES = {"quick": "config/config.yaml", "paper": "config/paper.yaml"}


def overlay_problems(config: Mapping[str, Any]) -> list[str]:
    """An overlay given without the base it changes (``config/paper-cpu.yaml`` alone runs the
    quick settings under the paper-cpu name, into its folders)."""
    wanted = config.get("overlay_on", "none")
    if wanted == "none" or config.get("base", "quick") == wanted:
        return []
    scale = config.get("scale", "?")
    return [
        f"the {scale} configuration is an overlay on {_BASE_FILES[wanted]}, which was not given"
        f" before it: pass both, --configfile {_BASE_FILES[wanted]} config/{scale}.yaml"
    ]


def consistency_problems(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every contradiction in a schema-valid ``config``, one line each naming key and fix."""
    environ = os.environ if environ is None else environ
    found = [
        *overlay_problems(config),
        *_mirror_problems(config, environ),
        *_data_problems(config),
        *(problem for stage in stages() for problem in stage.checks(config)),
        *_range_problems(config),
        *_gpu_problems(config),
    ]
    return list(dict.fromkeys(found))


def check_consistency(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`galu.workflow.settings.config.ConfigError` listing every contradiction in
    ``config``."""
    from galu.workflow.settings.config import SCHEMA_PATH, ConfigError

    problems = consistency_problems(config, environ)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(
            f"contradictory configuration ({len(problems)} problem(s)):\n{lines}\n"
            "Fix the key(s) in config/config.yaml, config/local.yaml or your "
            f"--configfile/--config overrides; {SCHEMA_PATH} documents every key."
        )
