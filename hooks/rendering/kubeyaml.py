"""YAML read the way Kubernetes reads it (sigs.k8s.io/yaml, as kubectl does): into JSON values
only. A date stays the string it was written as, map keys become strings, and what JSON
cannot hold (binary, sets, infinities) is an error. Used for rendered templates and for the
files the CLI reads."""

from __future__ import annotations

from typing import Any

import yaml

from hooks.rendering.blockyaml import read
from hooks.rendering.yamlloader import INT64, MAX_DEPTH, MAX_NODES, KubernetesLoader


class NotJSON(yaml.YAMLError):
    """The document has no JSON form Kubernetes could take."""


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
# Anchors, aliases and merge keys (where they may be: the text is only searched for them).
_SHARING = ("&", "*", "<<")


def load_all(text: str) -> list[Any]:
    """Every non-empty document of `text`; yaml.YAMLError for what is not YAML or has no JSON form.

    Three readers, from the fastest, each for less YAML than the next: block collections of
    one-line values (what the shipped templates render) without PyYAML (`blockyaml`); any
    other text without anchors, aliases or merge keys in one walk over the nodes PyYAML
    composes; the rest the way PyYAML constructs it, then walked. Tests hold the three to the
    same result on every text the faster ones read."""
    simple = read(text)
    if simple is not None:
        return simple
    if any(mark in text for mark in _SHARING):
        return _load_constructed(text)
    loader = KubernetesLoader(text)
    try:
        documents = []
        while loader.check_node():
            document = _walked(loader, loader.get_node())
            loader.constructed_objects, loader.recursive_objects = {}, {}
            if document is not None:
                documents.append(document)
        return documents
    finally:
        loader.dispose()


def _load_constructed(text: str) -> list[Any]:
    return [_json(document) for document in yaml.load_all(text, Loader=KubernetesLoader) if document is not None]


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
        _check_bounds(nodes, depth)
        if isinstance(value, dict):
            copy: Any = {_key(k): None for k in value}  # in the document's order
            pending.extend((v, copy, _key(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            copy = [None] * len(value)
            pending.extend((v, copy, i, depth + 1) for i, v in enumerate(value))
        else:
            _check_integer(value)
            copy = value
        parent[key] = copy
    return root[0]


def _walked(loader: KubernetesLoader, node: yaml.Node) -> Any:
    """What `_json` gives for the objects PyYAML would construct from `node`, a tree without
    shared nodes, built from the nodes in one walk (no objects first). Duplicate keys keep
    their first place and their last value; of keys that read the same as strings (1 and
    "1") the first one's value stays (the walk takes the last first)."""
    root: list[Any] = [None]
    pending: list[tuple[yaml.Node, Any, Any, int]] = [(node, root, 0, 1)]  # node, parent, key, depth
    nodes = 0
    while pending:
        node, parent, key, depth = pending.pop()
        nodes += 1
        _check_bounds(nodes, depth)
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            loader.flatten_mapping(node)  # an explicit !!merge key, as the constructor does
            pairs = []
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                            "found unhashable key", key_node.start_mark)
                pairs.append((_scalar(loader, key_node), value_node))
            kept = dict(pairs)  # a key written twice: its first place, its last value
            for raw, value_node in pairs:
                if kept[raw] is not value_node:  # overwritten, yet built: what is wrong in it is still wrong
                    loader.construct_document(value_node)  # without recursion, however deep
            value: Any = {_key(raw): None for raw in kept}  # in the document's order
            pending.extend((value_node, value, _key(raw), depth + 1) for raw, value_node in kept.items())
        elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            value = [None] * len(node.value)
            pending.extend((item, value, i, depth + 1) for i, item in enumerate(node.value))
        else:
            value = _scalar(loader, node)
            _check_integer(value)
        parent[key] = value
    return root[0]


def _scalar(loader: KubernetesLoader, node: yaml.Node) -> Any:
    """A plain string as it is; any other node by the constructor (which refuses the tags JSON
    lacks, and any collection here: only scalars are left to it)."""
    if node.tag == _STR and isinstance(node, yaml.ScalarNode):
        return node.value
    return loader.construct_object(node, deep=True)


def _check_bounds(nodes: int, depth: int) -> None:
    if nodes > MAX_NODES:
        raise NotJSON(f"more than {MAX_NODES} values (after expanding aliases)")
    if depth > MAX_DEPTH:
        raise NotJSON(f"nested more than {MAX_DEPTH} levels deep")


def _check_integer(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
        raise NotJSON(f"the integer {value} does not fit in 64 bits")


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)
