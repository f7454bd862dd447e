"""Hostile input: no 5xx, no crash, health stays green, and a request whose observed children
come from a valid earlier state never gets an answer with fewer of them."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

import httpx
import schemathesis
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION
from hooks.core.facts import Facts
from hooks.edge.templates import load_templates
from hooks.settings import Settings
from hooks.web.answer import Answer
from hooks.web.hook import Hook
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests import metacontroller as mc
from tests.conftest import HookServer
from tests.syncing import NOW, local_hook, run_sync

BOUNDED = settings(max_examples=300, deadline=None, database=None,
                   suppress_health_check=list(HealthCheck))
SPEC = {"model": {"uri": "hf://org/model"}, "autoscaling": {}, "canary": {"weight": 20}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=25,
)


@lru_cache(maxsize=1)
def hook() -> Hook:
    return local_hook()


def answer(body: bytes) -> Answer:
    """What the hook answers `body` with, after it has been read."""
    return hook().respond(body, Facts(NOW))


@lru_cache(maxsize=1)
def running_children() -> tuple[str, ...]:
    """The children of SPEC as a cluster holds them after two syncs, JSON-encoded."""
    cluster = mc.Cluster()
    templates = load_templates(None, Settings().children)
    for _ in range(2):
        result = run_sync(mc.request(mc.parent(SPEC), cluster.observed()), templates)
        cluster.apply(result.children)
    return tuple(json.dumps(o) for o in cluster.observed())


def observed() -> list[dict[str, Any]]:
    return [json.loads(o) for o in running_children()]


def last_applied(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((json.loads(o["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]) for o in objects),
                  key=lambda c: (c["kind"], c["metadata"]["name"]))


def keeps_children(code: int, body: dict[str, Any], before: list[dict[str, Any]]) -> None:
    """The safety rule: a 200 for an invalid spec answers exactly the frozen children."""
    assert code < 500, body
    if code != 200:
        return
    if body["status"]["phase"] in ("Invalid", "Paused"):
        answered = sorted(body["children"], key=lambda c: (c["kind"], c["metadata"]["name"]))
        assert answered == last_applied(before)
    else:
        names = {(c["kind"], c["metadata"]["name"]) for c in body["children"]}
        assert ("Deployment", "llama3-stable") in names  # a valid spec always keeps the stable track


@BOUNDED
@given(json_values)
def test_any_json_body_gets_a_4xx_or_200(body: Any) -> None:
    result = answer(json.dumps(body).encode())
    assert result.status_code in (200, 400, 409, 422), result
    json.loads(result.body)


@BOUNDED
@given(st.binary(max_size=200))
def test_any_bytes_get_a_4xx(body: bytes) -> None:
    result = answer(body)
    assert 400 <= result.status_code < 500 or result.status_code == 200


@BOUNDED
@given(json_values, st.sampled_from(["spec", "spec.model", "spec.canary", "spec.autoscaling", "spec.traffic",
                                     "spec.resources", "spec.pod", "metadata.generation", "status"]))
def test_mutated_parent_never_loses_children(value: Any, where: str) -> None:
    before = observed()
    parent = mc.parent(copy.deepcopy(SPEC), generation=2)
    target: Any = parent
    *path, last = where.split(".")
    for key in path:
        target = target[key]
    target[last] = value
    result = answer(json.dumps(mc.request(parent, before)).encode())
    keeps_children(result.status_code, json.loads(result.body), before)


@BOUNDED
@given(st.integers(0, 6), json_values, st.sampled_from(["spec", "status", "metadata.labels", "metadata.annotations",
                                                          "apiVersion", "kind", "metadata.name"]))
def test_mutated_children_never_5xx(index: int, value: Any, where: str) -> None:
    before = observed()
    target: Any = before[index]
    *path, last = where.split(".")
    for key in path:
        target = target[key]
    target[last] = value
    raw = mc.request(mc.parent({"model": {"uri": "bad"}}))
    raw["children"] = {"Any.v1": {f"child-{i}": child for i, child in enumerate(before)}}
    result = answer(json.dumps(raw).encode())
    assert result.status_code in (200, 400, 409), result
    if result.status_code == 200:
        assert len(json.loads(result.body)["children"]) == len(before)


def test_schemathesis_against_the_openapi_schema(server: HookServer) -> None:
    schema = schemathesis.openapi.from_dict(httpx.get(server.url + "/openapi.json").json())
    operation = schema["/sync"]["POST"]
    sent = 0
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @settings(max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(operation.as_strategy(generation_mode=mode))
            def call(case: Any) -> None:
                nonlocal sent
                body = case.body if not isinstance(case.body, schemathesis.core.NotSet) else None
                content = json.dumps(body).encode() if not isinstance(body, bytes) else body
                response = client.post("/sync", content=content, headers={"content-type": "application/json"})
                sent += 1
                assert response.status_code < 500, response.text
                assert response.headers["content-type"] == "application/json"
                assert response.json()
            call()
        assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
    assert sent >= 400


def test_adversarial_requests_over_http(server: HookServer) -> None:
    before = observed()
    bodies: list[bytes] = [
        json.dumps(mc.request(mc.parent({"model": {"uri": "hf://x/y", "servedName": "a" * 100_000}}))).encode(),
        json.dumps(mc.request(mc.parent(SPEC), before)).encode().replace(b'"Deployment"', b'"Deployment\\u0000"'),
        b'{"parent": ' * 5000 + b"1" + b"}" * 5000,
        json.dumps({"parent": {"apiVersion": "v", "kind": "K", "metadata": {"name": "x"}, "spec": [1] * 100_000}}
                   ).encode(),
        json.dumps(mc.request(mc.parent({"model": {"uri": "hf://a/b"}, "engine": {"args": ["--x"] * 20_000}}))
                   ).encode(),
    ]
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for body in bodies:
            response = client.post("/sync", content=body)
            assert response.status_code < 500, response.text[:300]
        assert client.get("/healthz").status_code == 200
