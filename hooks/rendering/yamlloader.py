"""The PyYAML loader that reads YAML as Kubernetes does (sigs.k8s.io/yaml): a safe loader
without timestamps (a date stays the string it was written as) and without the types JSON
lacks (binary, sets, infinities), and the limits on what it may build."""

from __future__ import annotations

import math
from collections.abc import Callable
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


Construct = Callable[[yaml.SafeLoader, yaml.ScalarNode], Any]


def _strict(kind: str, construct: Construct) -> Construct:
    """`construct`, failing with a YAML error (which reports the template) where PyYAML's own
    fails with a Python one: `0x_` (an integer to the resolver, without digits), `!!int ""`,
    `!!float x`, `!!bool x`."""
    def constructed(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, IndexError, KeyError):
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            raise yaml.constructor.ConstructorError(None, None, f"{shown!r} is not a valid {kind}",
                                                    node.start_mark) from None

    return constructed


for _tag in ("binary", "set", "omap", "pairs", "timestamp"):
    KubernetesLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse)
KubernetesLoader.add_constructor("tag:yaml.org,2002:float", _strict("number", _float))
KubernetesLoader.add_constructor("tag:yaml.org,2002:int", _strict("integer", yaml.SafeLoader.construct_yaml_int))
KubernetesLoader.add_constructor("tag:yaml.org,2002:bool", _strict("boolean", yaml.SafeLoader.construct_yaml_bool))
KubernetesLoader.add_constructor("tag:yaml.org,2002:timestamp", _refuse)


MAX_DEPTH = 64  # no Kubernetes object nests this deep
MAX_NODES = 1_000_000  # after expanding aliases: a few repeated anchors can mean billions
INT64 = (-(2**63), 2**63 - 1)
