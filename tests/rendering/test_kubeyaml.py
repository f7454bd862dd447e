"""Rendered YAML read as Kubernetes reads it: the one-walk reader (`kubeyaml.load_all`, for
text without anchors, aliases or merge keys) gives exactly what PyYAML's safe constructor and
a walk over its objects give (the reader it replaced, still used for any other text), for
generated documents and for every edge of YAML that reaches a JSON form differently."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hooks.rendering.kubeyaml import _load_constructed, load_all
from hooks.rendering.yamlloader import MAX_DEPTH
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def reference(text: str) -> Any:
    """PyYAML's objects, then walked into JSON values: the reader the walk over nodes replaced,
    still used for text with anchors, aliases or merge keys."""
    return _load_constructed(text)


def outcome(read: Any, text: str) -> Any:
    """The documents with their keys in order (JSON text), that there is none (a YAMLError:
    the template is reported), or a RecursionError (which would be a bug in the hook)."""
    try:
        return json.dumps(read(text))
    except yaml.YAMLError:
        return "no JSON form"
    except RecursionError:
        return "RecursionError"


EDGES = [
    "a: 1\nb: [1, 2.5, true, null, ~, 'x', \"y\"]\n",
    "---\n---\na: 1\n---\n~\n---\nb: 2\n",
    "a: 1\na: 2\nb: 3\n",  # a key twice: first place, last value
    "1: one\n'1': two\n",  # keys that read the same as strings
    "'1': two\n1: one\n",
    "true: a\n1: b\n1.0: c\n",  # equal in Python: one key
    "null: a\n~: b\n'null': c\n",
    "? [a, b]\n: c\n",  # a key with no JSON form
    "? {a: 1}\n: c\n",
    "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n",  # merge keys
    "a: &a [1, 2]\nb: *a\nc: *a\n",
    "- &x [*x]\n",  # a recursive alias
    "a: !!binary aGVsbG8=\n",
    "a: 2026-09-01\nb: 2026-09-01T12:00:00Z\n",  # dates stay strings
    "a: !!timestamp 2026-09-01\n",
    "a: !!set {x, y}\n",
    "a: !!omap [{x: 1}]\n",
    "a: !!pairs [{x: 1}]\n",
    "a: .inf\n", "a: .nan\n", "a: -.inf\n",
    "a: 9223372036854775807\nb: -9223372036854775808\n",
    "a: 9223372036854775808\n",
    "a: 0x1F\nb: 0o17\nc: 1_000\nd: 1:20\ne: 0b101\n",
    "a: yes\nb: no\nc: on\nd: off\ne: Y\n",
    "a: !!str 1\nb: !!int '2'\nc: !!float 3\nd: !!bool true\ne: !!null ''\n",
    "a: !!map {x: 1}\nb: !!seq [1]\nc: !!str [1]\nd: !!map x\n",
    "a: !custom 1\n",
    "a: {=: 1}\n", "a: !!str {=: 1}\n",
    "a: 1\na: !!binary aGVsbG8=\n",  # the overwritten value still has no JSON form
    "a: !!binary aGVsbG8=\na: 1\n",
    "1: [9223372036854775808]\n'1': ok\n",  # a shadowed value is still read
    "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n",
    "a: &a [*a, *a]\n",
    "a: &l0 [x, x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]\n" for i in range(1, 24)),  # billions
    "{a: 1, b: {c: [1, {d: e}]}}\n",
    "a: |\n  text\n  more\nb: >\n  folded\n  text\n",
    "a: 'it''s'\nb: \"\\u00e9\\n\"\n",
    "- a\n- b: c\n  d: e\n",
    "key with spaces: value\n\"quoted key\": 1\n",
    "a: 1\n  b: 2\n", "a: [1\n", "a: {b\n",  # not YAML
    "", "\n", "# only a comment\n",
    "a: " + "[" * 400 + "]" * 400 + "\na: 1\n",  # deep, but overwritten: still read, without recursion
    "a: 1\n" * 5000 + "b: 2\n",
    "? !!merge\n: {x: 1, y: 2}\ny: 3\n",  # a merge key spelled as a tag
    "? !!str {a: 1}\n: b\n",
    "a: {=: 1}\nb: [\"=\"]\n",
    "a: 0x_\n", "a: !!int ''\n", "a: !!int _\n", "a: !!float x\n", "a: !!float ''\n", "a: !!bool x\n",
    "a: " + "1" * 5000 + "\n",  # what PyYAML's constructors fail on with Python errors
    # With anchors and aliases: read as constructed (the walk would visit shared nodes again).
    "d: &d {" + ", ".join(["k: 1"] * 2000) + "}\nl: [" + ", ".join(["*d"] * 500) + "]\n",
    "a: {&k =: 1}\nb: [*k]\n",
    "".join(f"a{i}: &a{i} {{<<: *a{i - 1}}}\n" if i else "a0: &a0 {x: 1}\n" for i in range(300)),
]


@pytest.mark.parametrize("text", EDGES)
def test_edges_read_as_the_reference_reads_them(text: str) -> None:
    assert outcome(load_all, text) == outcome(reference, text)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["yes", "1", "~", "1:20"]))
keys = st.one_of(st.text(max_size=4), st.integers(0, 3), st.booleans(), st.none(), st.sampled_from(["1", "true"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(values, min_size=1, max_size=3), st.sampled_from([None, True, False]), st.booleans())
def test_generated_documents_read_as_the_reference_reads_them(documents: list[Any], flow: bool | None,
                                                              duplicate: bool) -> None:
    text = yaml.safe_dump_all(documents, default_flow_style=flow, sort_keys=False)
    if duplicate:  # every top-level key of the first document written twice, the second time last
        text += "".join(line + "\n" for line in text.splitlines()[:2])
    assert outcome(load_all, text) == outcome(reference, text)


@pytest.mark.parametrize("text", ["a: 0x_\n", "a: !!int ''\n", "a: !!float x\n", "a: !!bool x\n",
                                  "a: " + "1" * 5000 + "\n", "a:\n  b: !!float ''\n"])
def test_a_scalar_its_tag_cannot_construct_is_a_yaml_error(text: str) -> None:
    """A YAML error reports the template; any other would make the hook answer 500."""
    with pytest.raises(yaml.YAMLError, match="is not a valid"):
        load_all(text)
