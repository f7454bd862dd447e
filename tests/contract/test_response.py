"""The answer's bytes: the canonical JSON of the whole, whether its children come as objects
or as canonical JSON kept from before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hooks.canonical import CanonicalArray, dumps
from hooks.contract.response import encode_response

from tests.golden import load

BODIES = [json.loads(c["body"]) for group in ("examples", "corpus") for c in load(group) if c["code"] == 200]


@pytest.mark.parametrize("extra", [{}, {"finalized": True}, {"finalized": False}, {"resyncAfterSeconds": 12.5},
                                   {"finalized": False, "resyncAfterSeconds": 0.25}])
def test_every_recorded_answer_is_written_the_same_either_way(extra: dict[str, Any]) -> None:
    """The recorded answers hold children and status; the keys a finalize call and a rollout
    add are put in beside them."""
    assert len(BODIES) > 500
    for body in BODIES:
        whole = {**body, **extra}
        children, status = whole["children"], whole["status"]
        args = (whole.get("finalized"), whole.get("resyncAfterSeconds"))
        expected = dumps(whole)
        assert encode_response(tuple(children), status, *args) == expected
        assert encode_response(CanonicalArray(dumps(children), len(children)), status, *args) == expected


def test_no_children_and_a_bare_status() -> None:
    assert encode_response((), {}) == b'{"children":[],"status":{}}'
    assert encode_response(CanonicalArray(b"[]", 0), {"phase": "Ready"}, True, 1.23456) == (
        b'{"children":[],"finalized":true,"resyncAfterSeconds":1.235,"status":{"phase":"Ready"}}')
