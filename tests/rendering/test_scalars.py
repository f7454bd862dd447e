from __future__ import annotations

from typing import Any

import pytest
import yaml
from hooks.canonical import dumps, loads
from hooks.rendering.scalars import without_nulls, yaml_scalar
from hypothesis import given
from hypothesis import strategies as st

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)

INJECTIONS = [
    'x"\nkind: Secret', "a: b", "- item", "{x: 1}", "[1, 2]", "&anchor *alias", "!!python/object:os.system",
    "---\napiVersion: v1", "...", "# comment", "'single'", "key: |\n  block", "\u2028line", "\x85next", "\ufeffbom",
    "tab\there", "null", "true", "0x10", "1e3", "~", "@at", "%TAG", "\x00nul", "\x7fdel", "😀 emoji", "\\", '"',
]


@given(json_values)
def test_any_json_value_reads_back_unchanged(value: Any) -> None:
    assert yaml.load(yaml_scalar(value), Loader=LOADER) == value


@pytest.mark.parametrize("text", INJECTIONS)
def test_strings_cannot_change_document_structure(text: str) -> None:
    document = f"metadata:\n  name: {yaml_scalar(text)}\n  namespace: ml\n"
    assert yaml.load(document, Loader=LOADER) == {"metadata": {"name": text, "namespace": "ml"}}


def test_output_is_printable_ascii() -> None:
    encoded = yaml_scalar({"k\u00e9y": ["\u2028", "😀", "\x85"]})
    assert encoded.isascii() and encoded.isprintable()


def test_unknown_types_are_refused() -> None:
    with pytest.raises(TypeError):
        yaml_scalar(object())
    with pytest.raises(TypeError):
        yaml_scalar(float("nan"))


def test_canonical_json_sorts_keys_and_drops_nulls() -> None:
    assert dumps(without_nulls({"b": 1, "a": {"d": None, "c": [None, 2]}})) == b'{"a":{"c":[2]},"b":1}'
    assert loads(b'{"a":1}') == {"a": 1}


def test_long_keys_still_read_back() -> None:
    value = {"k" * 5000: "v", "short": {"x" * 2000: 1}}
    assert yaml.load(yaml_scalar(value), Loader=LOADER) == value
