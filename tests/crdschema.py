"""The committed CRD as the API server would use it, without a cluster: defaulting, its
structural schema as JSON Schema, and its CEL rules evaluated by a CEL library."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import cel
import jsonschema
import yaml

from tests.conftest import ROOT

CRD_FILE = ROOT / "crds" / "llmdeployments.serving.llmdeploy.io.yaml"


@lru_cache(maxsize=1)
def committed_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return crd


def root_schema() -> dict[str, Any]:
    schema: dict[str, Any] = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """`value` after the API server's defaulting and pruning of non-nullable nulls."""
    value = copy.deepcopy(value)
    _default(schema, value)
    return value


def _default(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in props.items():
            if "default" in sub and (key not in value or (value[key] is None and not sub.get("nullable"))):
                value[key] = copy.deepcopy(sub["default"])
        for key in list(value):
            sub = props.get(key) or (schema.get("additionalProperties") if isinstance(
                schema.get("additionalProperties"), dict) else None)
            if sub is not None and value[key] is None and not sub.get("nullable"):
                del value[key]
            elif sub is not None:
                _default(sub, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(schema["items"], item)


def as_jsonschema(schema: dict[str, Any]) -> dict[str, Any]:
    """A structural schema as JSON Schema that rejects unknown fields instead of pruning them."""
    out = {k: v for k, v in schema.items() if k in (
        "type", "enum", "required", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems",
        "maxItems", "minProperties", "maxProperties", "format")}
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if schema.get("exclusiveMinimum") is True:
        out["exclusiveMinimum"] = out.pop("minimum")
    if schema.get("nullable"):
        out["type"] = [out["type"], "null"] if isinstance(out.get("type"), str) else out.get("type")
    if "properties" in schema:
        out["properties"] = {k: as_jsonschema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = as_jsonschema(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = as_jsonschema(schema["additionalProperties"])
    elif schema.get("type") == "object" and not schema.get("x-kubernetes-preserve-unknown-fields") \
            and "properties" in schema:
        out["additionalProperties"] = False
    return out


def schema_problems(schema: dict[str, Any], value: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(as_jsonschema(schema), format_checker=jsonschema.FormatChecker())
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value))


def cel_problems(schema: dict[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """'path: message' for every x-kubernetes-validations rule that fails on `value`, as the
    API server reports them (rules run where their node is present)."""
    for rule in schema.get("x-kubernetes-validations", []):
        try:
            ok = cel.compile(rule["rule"]).execute({"self": value})
        except Exception as e:  # noqa: BLE001
            yield f"{path}{rule.get('fieldPath', '')}: rule cannot be evaluated: {e}"
            continue
        if ok is not True:
            yield f"{path}{rule.get('fieldPath', '')}: {rule['message']}"
    if isinstance(value, dict):
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key) or (
                schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else None)
            if sub is not None:
                yield from cel_problems(sub, item, f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from cel_problems(schema["items"], item, f"{path}[{i}]")


def admission_problems(resource: dict[str, Any]) -> list[str]:
    """What `kubectl apply` of `resource` would be told by this CRD (schema, then CEL)."""
    schema = root_schema()
    defaulted = with_defaults(schema, resource)
    problems = schema_problems(schema, defaulted)
    if problems:
        return problems
    return [p.lstrip(".") for p in cel_problems(schema, defaulted)]
