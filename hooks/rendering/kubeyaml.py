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


MAX_DEPTH = 64  # no Kubernetes object nests this deep
MAX_NODES = 1_000_000  # after expanding aliases: a few repeated anchors can mean billions
INT64 = (-(2**63), 2**63 - 1)


class NotJSON(yaml.YAMLError):
    """The document has no JSON form Kubernetes could take."""


def _json(document: Any) -> Any:
    """`document` as JSON values: map keys as strings, as sigs.k8s.io/yaml writes them (true,
    1, null); NotJSON past MAX_DEPTH, MAX_NODES, or for an integer beyond 64 bits. Walked
    without recursion, as aliases may make the tree far bigger than the text."""
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any, int]] = [(document, root, 0, 1)]  # value, parent, key, depth
    nodes = 0
    while pending:
        value, parent, key, depth = pending.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise NotJSON(f"more than {MAX_NODES} values (after expanding aliases)")
        if depth > MAX_DEPTH:
            raise NotJSON(f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            copy: Any = {_key(k): None for k in value}  # in the document's order
            pending.extend((v, copy, _key(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            copy = [None] * len(value)
            pending.extend((v, copy, i, depth + 1) for i, v in enumerate(value))
        else:
            if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
                raise NotJSON(f"the integer {value} does not fit in 64 bits")
            copy = value
        parent[key] = copy
    return root[0]


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def load_all(text: str) -> list[Any]:
    """Every non-empty document of `text`; yaml.YAMLError for what is not YAML or has no JSON form."""
    return [_json(document) for document in yaml.load_all(text, Loader=KubernetesLoader) if document is not None]
