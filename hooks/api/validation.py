"""Checks an LLMDeployment the way the API server would: schema first, then the CEL rules.

Called by `sync` on every request. Returns the validated spec with defaults applied, or
raises SpecError with one 'spec.path: message' line per problem, all of them at once.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from hooks.api.rules import broken, violations, violations_where_valid
from hooks.api.spec import RESOURCE_RULES, LLMDeploymentSpec
from hooks.canonical import dumps
from hooks.errors import SpecError

MAX_SPEC_DEPTH = 32  # the deepest field of the API is about 12 levels down
# Metacontroller records every child it applies in an annotation, and Kubernetes keeps at most
# 256 KiB of annotations: a Deployment carries most of its spec, once.
MAX_SPEC_BYTES = 128 << 10


def too_deep(spec: Any) -> str | None:
    """A message when `spec` nests deeper than any LLMDeployment can (checked without
    recursion, before anything else walks it)."""
    pending = [(spec, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_SPEC_DEPTH:
            return f"spec: nested more than {MAX_SPEC_DEPTH} levels deep"
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def validate_resource(name: str, spec: Any) -> LLMDeploymentSpec:
    """The validated spec of the LLMDeployment `name`; SpecError lists every problem."""
    deep = too_deep(spec)
    if deep:
        raise SpecError([deep])
    try:
        size = len(dumps(spec)) if isinstance(spec, dict) else 0
    except TypeError:
        size = 0  # an integer beyond 64 bits: the schema says which
    if size > MAX_SPEC_BYTES:
        raise SpecError([f"spec: {size >> 10} KiB, more than {MAX_SPEC_BYTES >> 10} KiB: a Deployment made from it "
                         "would not fit in the 256 KiB of annotations where Metacontroller records what it applied"])
    named = {"metadata": {"name": name}}
    errors = [f"{r.field_path.lstrip('.')}: {r.message}" for r in broken(RESOURCE_RULES, named)]
    if not isinstance(spec, dict):
        raise SpecError([*errors, "spec: must be an object with at least model.uri"])
    try:
        validated = LLMDeploymentSpec.model_validate(spec)
    except ValidationError as e:
        broken_rules = violations_where_valid(LLMDeploymentSpec, spec, "spec")
        raise SpecError([*errors, *(_describe(err) for err in e.errors()), *broken_rules]) from e
    errors += violations(validated, "spec")
    if errors:
        raise SpecError(errors)
    return validated


_MESSAGES = {
    "extra_forbidden": "unknown field",
    "missing": "required",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be greater than or equal to {ge}",
    "less_than_equal": "must be less than or equal to {le}",
    "string_too_short": "must not be empty",
    "string_pattern_mismatch": "must match {pattern}",
    "too_short": "must have at least {min_length} item",
    "too_long": "must have at most {max_length} items",
    "string_too_long": "must be at most {max_length} characters",
    "literal_error": "must be one of {expected}",
    "int_type": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
}


def _describe(error: Any) -> str:
    path = "spec" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    template = _MESSAGES.get(error["type"])
    message = template.format(**error.get("ctx", {})) if template else str(error["msg"])
    return f"{path}: {message.removeprefix('Value error, ')}"
