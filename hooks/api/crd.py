"""The LLMDeployment CustomResourceDefinition, generated from the pydantic models.

Pydantic's JSON Schema is turned into a Kubernetes structural schema: `$ref`s inlined,
Optional's `anyOf [X, null]` folded into X, OpenAPI 3.0 exclusive bounds, `const` as a
one-value `enum`, defaults taken
from the models (default factories included), and each model's CEL rules kept as
`x-kubernetes-validations`. `llmdeploy crd` prints it; crds/ holds the committed copy.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from hooks.api.spec import RESOURCE_RULES, LLMDeploymentSpec
from hooks.api.status import LLMDeploymentStatus

GROUP = "serving.llmdeploy.io"
VERSION = "v1alpha1"
KIND = "LLMDeployment"
PLURAL = "llmdeployments"
CATEGORIES = ["llm-serving"]
SHORT_NAMES = ["llmd"]
_DROP = {"title", "additionalProperties", "$defs"}

JSON = dict[str, Any]


def generate_crd() -> JSON:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}", "labels": {"app.kubernetes.io/name": "llmdeploy"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": KIND.lower(),
                      "shortNames": SHORT_NAMES, "categories": CATEGORIES},
            "versions": [{
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": PRINTER_COLUMNS,
                "schema": {"openAPIV3Schema": resource_schema()},
            }],
        },
    }


PRINTER_COLUMNS = [
    {"name": "Model", "type": "string", "jsonPath": ".spec.model.uri", "description": "The stable model."},
    {"name": "Engine", "type": "string", "jsonPath": ".spec.engine.type", "description": "Serving engine."},
    {"name": "Canary", "type": "integer", "jsonPath": ".status.traffic.canary",
     "description": "Percent of traffic the canary gets now."},
    {"name": "Ready", "type": "string", "jsonPath": ".status.ready", "description": "Ready stable replicas."},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Lifecycle phase."},
    {"name": "Rollout", "type": "string", "jsonPath": ".status.rollout.summary",
     "description": "A progressive rollout's step and weight, or its phase."},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def resource_schema() -> JSON:
    spec = structural(LLMDeploymentSpec)
    spec["description"] = "What to serve, how, and how traffic reaches it."
    status = structural(LLMDeploymentStatus)
    status["description"] = "What the llmdeploy hook observed, written by Metacontroller."
    return {
        "type": "object",
        "description": "LLMDeployment serves a large language model: GPU Deployments for a stable and a canary "
                       "version, a Service, autoscaling, a disruption budget and Istio routing.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this object."},
            "kind": {"type": "string", "description": "Kind of this object."},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "x-kubernetes-validations": [rule.as_validation() for rule in RESOURCE_RULES],
    }


def structural(model: type[BaseModel]) -> JSON:
    """The structural schema of `model`."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return _node(schema, schema.get("$defs", {}), model)


def _node(schema: JSON, defs: JSON, model: type[BaseModel] | None) -> JSON:
    schema = _resolve(schema, defs)
    out = {k: v for k, v in schema.items() if k not in _DROP and k not in ("properties", "items", "anyOf")}
    if "exclusiveMinimum" in out:
        out["minimum"], out["exclusiveMinimum"] = out.pop("exclusiveMinimum"), True
    if "const" in out:  # Kubernetes' schemas have no const
        out["enum"] = [out.pop("const")]
    if "properties" in schema and model is not None:
        out["properties"] = {}
        fields = {field.alias or name: field for name, field in model.model_fields.items()}
        for key, sub in schema["properties"].items():
            out["properties"][key] = _field(sub, defs, fields[key])
    if "items" in schema:
        out["items"] = _node(schema["items"], defs, None)
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _node(schema["additionalProperties"], defs, None)
    return out


def _field(schema: JSON, defs: JSON, field: FieldInfo) -> JSON:
    nullable = False
    options = schema.get("anyOf")
    if options and {"type": "null"} in options:  # Optional[X]
        rest = [o for o in options if o != {"type": "null"}]
        schema = {**{k: v for k, v in schema.items() if k != "anyOf"}, **rest[0]}
        nullable = not field.is_required() and field.get_default(call_default_factory=True) is not None
    inner_model = _model_in(field.annotation)
    node = _node(schema, defs, inner_model)
    if "items" in schema:
        node["items"] = _node(schema["items"], defs, inner_model)
    if isinstance(schema.get("additionalProperties"), dict):
        node["additionalProperties"] = _node(schema["additionalProperties"], defs, inner_model)
    node.pop("default", None)
    default = _default(field)
    if default is not None:
        node["default"] = default
    if nullable:
        node["nullable"] = True
    node.setdefault("description", field.description or "")
    return node


def _resolve(schema: JSON, defs: JSON) -> JSON:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    target = defs[ref.rsplit("/", 1)[-1]]
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside X, Optional[X], list[X] or dict[str, X], if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict, typing.Annotated):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _default(field: FieldInfo) -> Any:
    """The default the API server should fill in; None for none. Objects default to what
    differs from their own field defaults, which the API server then fills in below."""
    if field.is_required():
        return None
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True, mode="json")
    if isinstance(value, list):
        dumped = [v.model_dump(by_alias=True, exclude_none=True, mode="json") if isinstance(v, BaseModel) else v
                  for v in value]
        return dumped or None
    if isinstance(value, dict):
        return None  # an empty map adds nothing
    return value
