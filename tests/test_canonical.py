"""Canonical JSON, and arrays kept as their canonical bytes."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hooks.canonical import CanonicalArray, dumps, encoded_array

ITEMS: tuple[dict[str, Any], ...] = ({"kind": "Service", "metadata": {"name": "a"}},
                                     {"kind": "Deployment", "spec": {"replicas": 2}})


def kept(items: tuple[dict[str, Any], ...] = ITEMS) -> CanonicalArray:
    return CanonicalArray(dumps(list(items)), len(items))


def test_its_length_is_told_and_nothing_is_decoded_until_an_item_is_read() -> None:
    broken = CanonicalArray(b"[not json", 2)
    assert len(broken) == 2 and encoded_array(broken) == b"[not json"
    with pytest.raises(ValueError):
        list(broken)


def test_it_reads_as_the_items_it_was_made_of() -> None:
    array = kept()
    assert tuple(array) == ITEMS and array[1] == ITEMS[1] and array[-1:] == ITEMS[-1:]
    assert array[0] is array[0]  # decoded once
    assert [item["kind"] for item in array] == ["Service", "Deployment"]


def test_it_equals_any_sequence_of_the_same_items() -> None:
    array = kept()
    assert array == ITEMS and ITEMS == array and array == list(ITEMS) and array == kept()
    assert array != ITEMS[:1] and array != kept(ITEMS[::-1]) and array != "[]" and kept(()) != b"[]"
    with pytest.raises(TypeError):
        hash(array)


def test_a_wrong_length_is_found_when_it_is_decoded() -> None:
    with pytest.raises(ValueError, match="said to hold 3 items holds 2"):
        CanonicalArray(dumps(list(ITEMS)), 3)[0]


def test_encoded_array_writes_what_is_kept_and_encodes_the_rest() -> None:
    array = kept()
    assert encoded_array(array) is array.encoded
    assert encoded_array(ITEMS) == encoded_array(list(ITEMS)) == array.encoded == dumps(list(ITEMS))
    assert encoded_array(()) == b"[]"


def test_it_survives_pickling() -> None:
    array = pickle.loads(pickle.dumps(kept(), pickle.HIGHEST_PROTOCOL))
    assert array == ITEMS and len(array) == 2
