"""The pure sync function, on requests shaped exactly as Metacontroller sends them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION
from hooks.core.sync import SyncResult
from hooks.errors import UnsafeToAnswer
from hooks.rendering.templateset import TemplateSet

from tests import metacontroller as mc
from tests.conftest import load_sample
from tests.syncing import encoded, run_sync

SPEC = {"model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct"}, "canary": {"weight": 20}}


def answer(raw: dict[str, Any], templates: TemplateSet) -> SyncResult:
    return run_sync(raw, templates)


def running(templates: TemplateSet, spec: dict[str, Any] = SPEC) -> mc.Cluster:
    """A cluster where the hook's children for `spec` have been applied twice."""
    cluster = mc.Cluster()
    for _ in range(2):
        result = answer(mc.request(mc.parent(spec), cluster.observed()), templates)
        cluster.apply(result.children)
    return cluster


def test_new_sample_gets_every_child(templates: TemplateSet) -> None:
    result = answer(load_sample("sync-new.json"), templates)
    assert [c["kind"] for c in result.children] == [
        "Deployment", "Service", "PodDisruptionBudget", "DestinationRule", "VirtualService"]
    assert result.status.phase == "Pending"


def without_hardening(child: dict[str, Any]) -> dict[str, Any]:
    """A Deployment as the hook rendered it before its pods were hardened (the sample's time)."""
    if child["kind"] != "Deployment":
        return child
    child = copy.deepcopy(child)
    pod = child["spec"]["template"]["spec"]
    del pod["securityContext"], pod["automountServiceAccountToken"]
    pod["volumes"] = [v for v in pod["volumes"] if v["name"] not in ("tmp", "home")]
    for container in pod["containers"] + pod.get("initContainers", []):
        del container["securityContext"]
        container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] not in ("tmp", "home")]
        container["env"] = [e for e in container.get("env", []) if e["name"] != "HOME"]
        if container["name"] == "model-download":
            del container["resources"], container["env"]
    return child


def test_existing_sample_is_answered_with_what_was_applied(templates: TemplateSet) -> None:
    """The sample was recorded before the pods were hardened: only that differs."""
    raw = load_sample("sync-existing.json")
    result = answer(raw, templates)
    applied = {(c["kind"], c["metadata"]["name"]): json.loads(c["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
               for group in raw["children"].values() for c in group.values()}
    assert {(c["kind"], c["metadata"]["name"]): without_hardening(c) for c in result.children} == applied
    status = result.status.as_json()
    before = {c["type"]: c for c in raw["parent"]["status"]["conditions"]}
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert status["phase"] == "Progressing" and ready["reason"] == "RolloutInProgress", "the Deployments roll once"
    assert [c for c in status["conditions"] if c["type"] != "Ready"] == \
        [before[c["type"]] for c in status["conditions"] if c["type"] != "Ready"]
    assert result.status.conditions, "the sample's transition times are kept, whatever the clock says"


def test_hook_versions_v1_and_v2_give_the_same_answer(templates: TemplateSet) -> None:
    cluster = running(templates)
    v1 = answer(mc.request(mc.parent(SPEC), cluster.observed(), "v1"), templates)
    v2 = answer(mc.request(mc.parent(SPEC), cluster.observed(), "v2"), templates)
    assert encoded(v1) == encoded(v2)


def test_map_keys_are_never_trusted(templates: TemplateSet) -> None:
    cluster = running(templates)
    raw = mc.request(mc.parent(SPEC), cluster.observed())
    scrambled = {f"group-{i}": {f"key-{j}": c for j, c in enumerate(g.values())}
                 for i, g in enumerate(raw["children"].values())}
    assert encoded(answer({**raw, "children": scrambled}, templates)) == encoded(answer(raw, templates))


def test_same_request_same_bytes(templates: TemplateSet) -> None:
    raw = mc.request(mc.parent(SPEC), running(templates).observed())
    assert len({encoded(answer(copy.deepcopy(raw), templates)) for _ in range(5)}) == 1


def test_output_has_no_nulls(templates: TemplateSet) -> None:
    body = encoded(answer(mc.request(mc.parent(SPEC)), templates))
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
def test_invalid_spec_keeps_every_child_as_last_applied(templates: TemplateSet,
                                                        bad_spec: Any) -> None:
    cluster = running(templates)
    observed = cluster.observed()
    result = answer(mc.request(mc.parent(bad_spec, generation=2), observed), templates)
    assert list(result.children) == [json.loads(o["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
                               for o in sorted(observed, key=lambda o: (o["kind"], o["apiVersion"],
                                                                        o["metadata"]["name"]))]
    assert result.status.phase == "Invalid"
    spec_valid = next(c for c in result.status.conditions if c.type == "SpecValid")
    assert spec_valid.status == "False" and spec_valid.reason == "InvalidSpec" and spec_valid.message
    writes = cluster.writes
    cluster.apply(result.children)
    assert cluster.writes == writes, "applying the frozen answer must change nothing"


def test_invalid_new_resource_gets_no_children(templates: TemplateSet) -> None:
    result = answer(mc.request(mc.parent({"model": {"uri": "bad"}})), templates)
    assert result.children == () and result.status.phase == "Invalid"


def test_invalid_spec_reports_every_error(templates: TemplateSet) -> None:
    result = answer(mc.request(mc.parent({"model": {"uri": "bad"}, "replicas": -1, "extra": 1})), templates)
    message = next(c for c in result.status.conditions if c.type == "SpecValid").message
    assert "spec.model.uri" in message and "spec.replicas" in message and "spec.extra: unknown field" in message


def test_child_without_last_applied_means_refusal(templates: TemplateSet) -> None:
    observed = running(templates).observed()
    del observed[0]["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    with pytest.raises(UnsafeToAnswer, match="cannot be kept"):
        answer(mc.request(mc.parent({"model": {"uri": "bad"}}), observed), templates)


def test_child_with_a_foreign_last_applied_means_refusal(templates: TemplateSet) -> None:
    observed = running(templates).observed()
    observed[0]["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = '{"kind": "Other"}'
    with pytest.raises(UnsafeToAnswer):
        answer(mc.request(mc.parent({"model": {"uri": "bad"}}), observed), templates)


def test_paused_freezes_children(templates: TemplateSet) -> None:
    cluster = running(templates)
    changed = {**SPEC, "paused": True, "model": {"uri": "hf://other/model"}}
    result = answer(mc.request(mc.parent(changed, generation=2), cluster.observed()), templates)
    assert result.status.phase == "Paused" and result.outcome == "paused"
    writes = cluster.writes
    cluster.apply(result.children)
    assert cluster.writes == writes
    assert next(c for c in result.status.conditions if c.type == "SpecValid").status == "True"


def test_paused_new_resource_creates_nothing(templates: TemplateSet) -> None:
    result = answer(mc.request(mc.parent({**SPEC, "paused": True})), templates)
    assert result.children == () and result.status.phase == "Paused"


def test_removing_the_canary_is_the_only_way_to_lose_it(templates: TemplateSet) -> None:
    cluster = running(templates)
    result = answer(mc.request(mc.parent({"model": SPEC["model"]}, generation=2), cluster.observed()),
                    templates)
    assert "llama3-canary" not in {c["metadata"]["name"] for c in result.children}
    assert result.status.canary is None


def test_children_carry_controller_uid_only_with_generate_selector(templates: TemplateSet) -> None:
    raw = mc.request(mc.parent(SPEC))
    assert all(c["metadata"]["labels"]["controller-uid"] == mc.PARENT_UID
               for c in answer(raw, templates).children)
    raw["controller"]["spec"]["generateSelector"] = False
    assert all("controller-uid" not in c["metadata"]["labels"] for c in answer(raw, templates).children)


def test_every_child_is_in_the_parent_namespace(templates: TemplateSet) -> None:
    result = answer(mc.request(mc.parent(SPEC, namespace="team-a")), templates)
    assert {c["metadata"]["namespace"] for c in result.children} == {"team-a"}


def test_a_finalize_call_releases_every_child_and_says_when_none_is_left(templates: TemplateSet) -> None:
    cluster = running(templates)
    raw = mc.request(mc.parent(SPEC), cluster.observed())
    raw["finalizing"] = True
    result = answer(raw, templates)
    assert result.children == () and result.finalized is False and result.status.phase == "Terminating"
    body = json.loads(encoded(result))
    assert body["finalized"] is False and body["children"] == []
    cluster.apply(result.children)
    assert cluster.objects == {}
    last = mc.request(mc.parent(SPEC), cluster.observed())
    last["finalizing"] = True
    assert answer(last, templates).finalized is True


def test_a_sync_never_says_finalized(templates: TemplateSet) -> None:
    result = answer(mc.request(mc.parent(SPEC)), templates)
    assert result.finalized is None and "finalized" not in json.loads(encoded(result))


def test_server_side_applied_children_are_refused_with_the_reason(templates: TemplateSet) -> None:
    observed = running(templates).observed()
    for child in observed:
        del child["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        child["metadata"]["managedFields"] = [{"manager": "metacontroller", "operation": "Apply",
                                               "apiVersion": child["apiVersion"], "fieldsType": "FieldsV1"}]
    with pytest.raises(UnsafeToAnswer, match="server-side applied: run Metacontroller with its default"):
        answer(mc.request(mc.parent({"model": {"uri": "bad"}}), observed), templates)
