"""The pure sync function, on requests shaped exactly as Metacontroller sends them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hooks.encoding import dumps
from hooks.errors import UnsafeToAnswer
from hooks.hookapi import parse_request
from hooks.naming import LAST_APPLIED_ANNOTATION
from hooks.rendering import Renderer
from hooks.settings import Settings
from hooks.sync import SyncResponse, sync
from tests import metacontroller as mc
from tests.conftest import load_sample

SPEC = {"model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct"}, "canary": {"weight": 20}}


def answer(raw: dict[str, Any], renderer: Renderer, settings: Settings) -> SyncResponse:
    return sync(parse_request(raw), renderer, settings)


def running(renderer: Renderer, settings: Settings, spec: dict[str, Any] = SPEC) -> mc.Cluster:
    """A cluster where the hook's children for `spec` have been applied twice."""
    cluster = mc.Cluster()
    for _ in range(2):
        result = answer(mc.request(mc.parent(spec), cluster.observed()), renderer, settings)
        cluster.apply(result.children)
    return cluster


def test_new_sample_gets_every_child(renderer: Renderer, settings: Settings) -> None:
    result = answer(load_sample("sync-new.json"), renderer, settings)
    assert [c["kind"] for c in result.children] == [
        "Deployment", "Service", "PodDisruptionBudget", "DestinationRule", "VirtualService"]
    assert result.status.phase == "Pending"


def test_existing_sample_is_answered_with_what_was_applied(renderer: Renderer, settings: Settings) -> None:
    raw = load_sample("sync-existing.json")
    result = answer(raw, renderer, settings)
    applied = {(c["kind"], c["metadata"]["name"]): json.loads(c["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
               for group in raw["children"].values() for c in group.values()}
    assert {(c["kind"], c["metadata"]["name"]): c for c in result.children} == applied
    assert result.status.as_json() == {**raw["parent"]["status"], "ready": "2/2"}


def test_hook_versions_v1_and_v2_give_the_same_answer(renderer: Renderer, settings: Settings) -> None:
    cluster = running(renderer, settings)
    v1 = answer(mc.request(mc.parent(SPEC), cluster.observed(), "v1"), renderer, settings)
    v2 = answer(mc.request(mc.parent(SPEC), cluster.observed(), "v2"), renderer, settings)
    assert dumps(v1.body()) == dumps(v2.body())


def test_map_keys_are_never_trusted(renderer: Renderer, settings: Settings) -> None:
    cluster = running(renderer, settings)
    raw = mc.request(mc.parent(SPEC), cluster.observed())
    scrambled = {f"group-{i}": {f"key-{j}": c for j, c in enumerate(g.values())}
                 for i, g in enumerate(raw["children"].values())}
    assert dumps(answer({**raw, "children": scrambled}, renderer, settings).body()) == \
        dumps(answer(raw, renderer, settings).body())


def test_same_request_same_bytes(renderer: Renderer, settings: Settings) -> None:
    raw = mc.request(mc.parent(SPEC), running(renderer, settings).observed())
    assert len({dumps(answer(copy.deepcopy(raw), renderer, settings).body()) for _ in range(5)}) == 1


def test_output_has_no_nulls(renderer: Renderer, settings: Settings) -> None:
    body = dumps(answer(mc.request(mc.parent(SPEC)), renderer, settings).body())
    assert b"null" not in body


@pytest.mark.parametrize("bad_spec", [
    {"model": {"uri": "ftp://nope"}},
    {"model": {"uri": "hf://a/b"}, "canary": {"weight": 150}},
    {"model": {"uri": "hf://a/b"}, "replicas": "two"},
    {"model": {"uri": "hf://a/b"}, "engine": {"tensorParallelSize": 8}},
    {},
    None,
    "not an object",
])
def test_invalid_spec_keeps_every_child_as_last_applied(renderer: Renderer, settings: Settings,
                                                        bad_spec: Any) -> None:
    cluster = running(renderer, settings)
    observed = cluster.observed()
    result = answer(mc.request(mc.parent(bad_spec, generation=2), observed), renderer, settings)
    assert result.children == [json.loads(o["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
                               for o in sorted(observed, key=lambda o: (o["kind"], o["apiVersion"],
                                                                        o["metadata"]["name"]))]
    assert result.status.phase == "Invalid"
    spec_valid = next(c for c in result.status.conditions if c.type == "SpecValid")
    assert spec_valid.status == "False" and spec_valid.reason == "InvalidSpec" and spec_valid.message
    writes = cluster.writes
    cluster.apply(result.children)
    assert cluster.writes == writes, "applying the frozen answer must change nothing"


def test_invalid_new_resource_gets_no_children(renderer: Renderer, settings: Settings) -> None:
    result = answer(mc.request(mc.parent({"model": {"uri": "bad"}})), renderer, settings)
    assert result.children == [] and result.status.phase == "Invalid"


def test_invalid_spec_reports_every_error(renderer: Renderer, settings: Settings) -> None:
    result = answer(mc.request(mc.parent({"model": {"uri": "bad"}, "replicas": -1, "extra": 1})), renderer, settings)
    message = next(c for c in result.status.conditions if c.type == "SpecValid").message
    assert "spec.model.uri" in message and "spec.replicas" in message and "spec.extra: unknown field" in message


def test_child_without_last_applied_means_refusal(renderer: Renderer, settings: Settings) -> None:
    observed = running(renderer, settings).observed()
    del observed[0]["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    with pytest.raises(UnsafeToAnswer, match="cannot be kept"):
        answer(mc.request(mc.parent({"model": {"uri": "bad"}}), observed), renderer, settings)


def test_child_with_a_foreign_last_applied_means_refusal(renderer: Renderer, settings: Settings) -> None:
    observed = running(renderer, settings).observed()
    observed[0]["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = '{"kind": "Other"}'
    with pytest.raises(UnsafeToAnswer):
        answer(mc.request(mc.parent({"model": {"uri": "bad"}}), observed), renderer, settings)


def test_paused_freezes_children(renderer: Renderer, settings: Settings) -> None:
    cluster = running(renderer, settings)
    changed = {**SPEC, "paused": True, "model": {"uri": "hf://other/model"}}
    result = answer(mc.request(mc.parent(changed, generation=2), cluster.observed()), renderer, settings)
    assert result.status.phase == "Paused" and result.outcome == "paused"
    writes = cluster.writes
    cluster.apply(result.children)
    assert cluster.writes == writes
    assert next(c for c in result.status.conditions if c.type == "SpecValid").status == "True"


def test_paused_new_resource_creates_nothing(renderer: Renderer, settings: Settings) -> None:
    result = answer(mc.request(mc.parent({**SPEC, "paused": True})), renderer, settings)
    assert result.children == [] and result.status.phase == "Paused"


def test_removing_the_canary_is_the_only_way_to_lose_it(renderer: Renderer, settings: Settings) -> None:
    cluster = running(renderer, settings)
    result = answer(mc.request(mc.parent({"model": SPEC["model"]}, generation=2), cluster.observed()),
                    renderer, settings)
    assert "llama3-canary" not in {c["metadata"]["name"] for c in result.children}
    assert result.status.canary is None


def test_children_carry_controller_uid_only_with_generate_selector(renderer: Renderer, settings: Settings) -> None:
    raw = mc.request(mc.parent(SPEC))
    assert all(c["metadata"]["labels"]["controller-uid"] == mc.PARENT_UID
               for c in answer(raw, renderer, settings).children)
    raw["controller"]["spec"]["generateSelector"] = False
    assert all("controller-uid" not in c["metadata"]["labels"] for c in answer(raw, renderer, settings).children)


def test_every_child_is_in_the_parent_namespace(renderer: Renderer, settings: Settings) -> None:
    result = answer(mc.request(mc.parent(SPEC, namespace="team-a")), renderer, settings)
    assert {c["metadata"]["namespace"] for c in result.children} == {"team-a"}
