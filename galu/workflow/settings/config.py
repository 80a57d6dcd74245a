"""Validate a workflow configuration against the JSON schema, with readable errors.

Snakemake's own ``validate`` prints jsonschema's raw message and a traceback.
Here every problem is reported on one line that names the key (as a dotted
path), what is wrong, what is allowed and what the key means, and all problems
are reported at once, before any job runs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from galu.yaml_files import load_yaml

SCHEMA_PATH = Path("workflow/schemas/config.schema.yaml")


class ConfigError(ValueError):
    """The configuration does not satisfy the schema; the message lists every problem."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping (YAML would keep the last
    silently: an overlay whose first setting never takes effect)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_config_file(path: str | Path, fix: str) -> dict[str, Any]:
    """A configuration file as a mapping, ``{}`` when every line is a comment. A YAML mistake,
    a key given twice included, is a ConfigError naming the file, line and column, then
    ``fix``."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = yaml.load(handle, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(f"{path} is not valid YAML{where}: {problem}; {fix}") from None
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}; {fix}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; {fix}") from None
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise ConfigError(
            f"{path} must be a mapping of keys (e.g. data: {{mirrors: [...]}}), not a"
            f" {type(content).__name__}"
        )
    return content


def read_site_file(path: str | Path) -> dict[str, Any]:
    """The site settings file (``config/local.yaml``), checked like any configuration file."""
    return read_config_file(path, fix="fix it (or move it away to use the defaults)")


def _is_integer(checker: Any, instance: Any) -> bool:
    """A true integer: ``2.0`` or ``1e3`` (floats, whatever their fraction) are not, because
    the code uses these values as counts, sizes and seeds (``range``, tensor shapes)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker: Any, instance: Any) -> bool:
    """A finite number: NaN passes every bound (comparisons with it are false) and infinity
    every lower bound, so both are refused here, by type."""
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return math.isfinite(instance)


# Draft 2020-12 with the two stricter types above.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


def _type_hint(instance: Any, sub: Mapping[str, Any]) -> str:
    """What to write instead, for the two cases JSON Schema alone would not explain."""
    if isinstance(instance, float) and not math.isfinite(instance):
        return "; non-finite numbers (nan, inf) are never valid"
    kinds = sub.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or ())
    if isinstance(instance, float) and instance.is_integer() and "integer" in kinds:
        return f"; write it as an integer ({int(instance)}), not as a float"
    return ""


def _all_required(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of ``schema`` in which every declared property of every object is required."""
    out = copy.deepcopy(dict(schema))
    stack = [out]
    while stack:
        node = stack.pop()
        props = node.get("properties")
        if isinstance(props, dict):
            node.setdefault("required", sorted(props))
            stack.extend(v for v in props.values() if isinstance(v, dict))
        if isinstance(node.get("items"), dict):
            stack.append(node["items"])
    return out


def _key(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "".join(parts).lstrip(".") or "(top level)"


def _allowed(schema: Mapping[str, Any]) -> str:
    """A human statement of what a sub-schema accepts."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kind = schema.get("type", "value")
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    lo_b = "(" if "exclusiveMinimum" in schema else "["
    hi_b = ")" if "exclusiveMaximum" in schema else "]"
    if lo is not None or hi is not None:
        return (
            f"{kind} in {lo_b}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{hi_b}"
        )
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"a list of {_allowed(schema['items'])}"
    if kind == "object" and "properties" in schema:
        return "a mapping with keys " + ", ".join(sorted(schema["properties"]))
    return str(kind)


def _messages(config: Any, schema: Mapping[str, Any]) -> Iterator[str]:
    validator = _Validator(_all_required(schema))
    for err in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.path))):
        sub = err.schema if isinstance(err.schema, dict) else {}
        key = _key(err.path)
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(sub.get("properties", {})))
            for name in extra:
                allowed = ", ".join(sorted(sub["properties"]))
                yield f"{_key([*err.path, name])}: unknown key; allowed keys here: {allowed}"
            continue
        if err.validator == "required":
            missing = err.message.split("'")[1]
            meaning = sub.get("properties", {}).get(missing, {}).get("description", "")
            yield f"{_key([*err.path, missing])}: required key is missing ({meaning.strip()})"
            continue
        if err.validator in (
            "enum",
            "type",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minItems",
            "uniqueItems",
            "pattern",
        ):
            meaning = sub.get("description", "").strip()
            suffix = f" ({meaning})" if meaning else ""
            hint = _type_hint(err.instance, sub) if err.validator == "type" else ""
            yield (
                f"{key}: {err.instance!r} is not allowed; expected {_allowed(sub)}{hint}{suffix}"
            )
            continue
        yield f"{key}: {err.message}"


def validate(config: Any, schema: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` listing every way ``config`` breaks ``schema``."""
    problems = list(dict.fromkeys(_messages(config, schema)))
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(
            f"invalid configuration ({len(problems)} problem(s)):\n{lines}\n"
            f"Fix the key(s) in config/config.yaml or your --configfile/--config overrides; "
            f"{SCHEMA_PATH} documents every key."
        )


def check_device(config: Mapping[str, Any]) -> None:
    """``device: cuda`` without a visible CUDA device is a contradiction: say so early."""
    if config.get("device") != "cuda":
        return
    import torch  # only imported when CUDA was asked for: keeps parsing the workflow fast

    if not torch.cuda.is_available():
        raise ConfigError(
            "device: 'cuda' was requested but no CUDA device is visible "
            "(torch.cuda.is_available() is False); use device: auto or device: cpu, "
            "or run on a GPU node"
        )


def load_schema(schema_path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """The configuration schema: the file, with the stages ``stages`` may name (its enum and
    default) read from the stages' declarations (:mod:`galu.workflow.stages`)."""
    from galu.workflow.stages import STAGE_NAMES

    schema = load_yaml(schema_path)
    names = list(STAGE_NAMES)
    entry = schema["properties"]["stages"]
    entry["items"]["enum"] = names
    entry["default"] = names
    return schema


def fill_declared(config: Any) -> Any:
    """``config`` (changed in place) with the keys that config/config.yaml leaves to the stages'
    declarations set where no file or override gives them: ``stages``, every declared stage
    in order (the schema's default, :func:`load_schema`), so that a new stage runs by default
    without an edit to the configuration. The Snakefile calls it once its config files are
    read; :func:`validate_files` (``galu plan``, ``galu data``) before validating."""
    if isinstance(config, dict) and "stages" not in config:
        from galu.workflow.stages import STAGE_NAMES

        config["stages"] = list(STAGE_NAMES)
    return config


def validate_files(
    config: Any, schema_path: str | Path = SCHEMA_PATH, check_cuda: bool = True
) -> None:
    """Validate a loaded config (its declared defaults filled in, :func:`fill_declared`)
    against the schema file, then its device request.

    ``check_cuda=False`` for cluster runs: the main process runs on a login node, which
    need not have the GPUs the jobs get.
    """
    validate(fill_declared(config), load_schema(schema_path))
    if check_cuda:
        check_device(config)
