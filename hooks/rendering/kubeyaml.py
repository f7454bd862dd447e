"""YAML read the way Kubernetes reads it (sigs.k8s.io/yaml, as kubectl does): into JSON values
only. A date stays the string it was written as, map keys become strings, and what JSON
cannot hold (binary, sets, infinities) is an error. Used for rendered templates and for the
files the CLI reads."""

from __future__ import annotations

import math
from typing import Any

import yaml

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class KubernetesLoader(_BASE):  # type: ignore[misc, valid-type]
    """A safe loader without timestamps and without the types JSON lacks."""


KubernetesLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()
}


def _refuse(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(None, None, f"{node.tag} values have no JSON form", node.start_mark)


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    value = loader.construct_yaml_float(node)
    if not math.isfinite(value):
        raise yaml.constructor.ConstructorError(None, None, "infinite and NaN numbers have no JSON form",
                                                node.start_mark)
    return value


for _tag in ("binary", "set", "omap", "pairs", "timestamp"):
    KubernetesLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse)
KubernetesLoader.add_constructor("tag:yaml.org,2002:float", _float)
KubernetesLoader.add_constructor("tag:yaml.org,2002:timestamp", _refuse)


def _json(value: Any) -> Any:
    """Map keys as strings, as sigs.k8s.io/yaml writes them (true, 1, null)."""
    if isinstance(value, dict):
        return {_key(k): _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def load_all(text: str) -> list[Any]:
    """Every non-empty document of `text`; yaml.YAMLError for what is not YAML or has no JSON form."""
    return [_json(document) for document in yaml.load_all(text, Loader=KubernetesLoader) if document is not None]
