"""Last-applied: Go's spelling, parsing, and the comparison the status relies on."""

from __future__ import annotations

import json

from hooks.contract.lastapplied import Fingerprint, go_json, parse, was_applied

from tests.metacontroller import go_marshal

OBJ = {"kind": "Deployment", "metadata": {"name": "a", "annotations": {"n": "a<b & c>d \u2028 é"}}, "spec": {"x": 1}}


def test_go_json_is_what_go_marshal_writes() -> None:
    from hooks.canonical import dumps

    assert go_json(dumps(OBJ)).decode() == go_marshal(OBJ)


def test_an_object_counts_as_applied_in_any_spelling() -> None:
    fingerprint = Fingerprint.of(OBJ)
    assert was_applied(go_marshal(OBJ), fingerprint)
    assert was_applied(json.dumps(OBJ, indent=2), fingerprint)
    assert not was_applied(json.dumps({**OBJ, "spec": {"x": 2}}), fingerprint)
    assert not was_applied(None, fingerprint) and not was_applied("not json", fingerprint)


def test_parse_gives_an_object_or_none() -> None:
    assert parse(json.dumps(OBJ)) == OBJ
    assert parse(None) is None and parse("[1]") is None and parse("{") is None
