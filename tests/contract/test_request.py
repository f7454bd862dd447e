"""The request, parsed once: typed parent, previous status and observed children; a
malformed request is a RequestError naming the place."""

from __future__ import annotations

from typing import Any

import pytest
from hooks.contract.request import parse_request
from hooks.errors import RequestError

from tests import metacontroller as mc


def test_parent_and_controller_are_read() -> None:
    raw = mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, generation=4))
    raw["parent"]["metadata"] |= {"labels": {"team": "a"}, "annotations": {"note": "b"}}
    request = parse_request(raw)
    parent = request.parent
    assert (parent.name, parent.namespace, parent.uid, parent.generation) == ("llama3", "ml", mc.PARENT_UID, 4)
    assert parent.labels == {"team": "a"} and parent.annotations == {"note": "b"}
    assert parent.spec == {"model": {"uri": "hf://o/m"}}
    assert request.generate_selector and not request.finalizing


def test_a_status_that_is_not_an_object_is_ignored() -> None:
    raw = mc.request(mc.parent({}))
    raw["parent"]["status"] = ["written", "by", "someone", "else"]
    assert parse_request(raw).previous.conditions == {}


def test_previous_status_keeps_what_is_reused_and_skips_the_malformed() -> None:
    status = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-08-01T00:00:00Z"},
                             "junk", {"status": "True"}, {"type": "X", "status": "False", "lastTransitionTime": 5}],
              "stable": {"model": "hf://o/m"}, "canary": {"model": 3}}
    previous = parse_request(mc.request(mc.parent({}, status=status))).previous
    assert set(previous.conditions) == {"Ready", "X"}
    assert previous.conditions["Ready"].last_transition_time == "2026-08-01T00:00:00Z"
    assert previous.conditions["X"].last_transition_time == ""
    assert previous.models == {"stable": "hf://o/m"}


@pytest.mark.parametrize(("change", "where"), [
    (lambda r: r.update(parent=None), "parent: must be an object"),
    (lambda r: r["parent"].update(apiVersion=""), "parent.apiVersion"),
    (lambda r: r["parent"]["metadata"].update(name=7), "parent.metadata.name"),
    (lambda r: r["parent"]["metadata"].update(generation=-1), "parent.metadata.generation"),
    (lambda r: r["parent"]["metadata"].update(generation=True), "parent.metadata.generation"),
    (lambda r: r["parent"]["metadata"].update(labels={"a": 1}), "parent.metadata.labels"),
    (lambda r: r.update(children=[]), "children"),
    (lambda r: r.pop("children"), "children: must be an object"),
    (lambda r: r.update(children=None), "children: must be an object"),
    (lambda r: r["children"].update({"Deployment.apps/v1": None}), "children.Deployment.apps/v1: must be an object"),
    (lambda r: r["controller"]["spec"].update(generateSelector="true"), "controller.spec.generateSelector"),
    (lambda r: r.update(children={"Deployment.apps/v1": {"x": {"kind": "Deployment"}}}),
     "children.Deployment.apps/v1.x.metadata"),
    (lambda r: r.update(finalizing="yes"), "finalizing"),
])
def test_malformed_requests_name_the_place(change: Any, where: str) -> None:
    raw = mc.request(mc.parent({}))
    change(raw)
    with pytest.raises(RequestError, match=f"not a Metacontroller sync request: {where}"):
        parse_request(raw)
