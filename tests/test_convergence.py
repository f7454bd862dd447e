"""Sync after sync through Metacontroller's three-way merge: the hook converges, and never
fights the HPA."""

from __future__ import annotations

from typing import Any

from hooks.rendering.templateset import TemplateSet

from tests import metacontroller as mc
from tests.syncing import run_sync

SCALED: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "autoscaling": {"minReplicas": 1, "maxReplicas": 6},
                          "canary": {"weight": 25, "match": [{"headers": {"x-canary": {"exact": "1"}}}]}}


def reconcile(cluster: mc.Cluster, spec: dict[str, Any], templates: TemplateSet,
              generation: int = 1) -> dict[str, Any]:
    """One sync: ask the hook, apply its answer, return the status it reported."""
    result = run_sync(mc.request(mc.parent(spec, generation=generation), cluster.observed()), templates)
    cluster.apply(result.children)
    return result.status.as_json()


def hpa_scales_to(cluster: mc.Cluster, replicas: int) -> None:
    live = cluster.objects["Deployment", "llama3-stable"]
    live["spec"]["replicas"] = replicas
    live["metadata"]["generation"] += 1


def test_third_sync_changes_nothing(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    reconcile(cluster, SCALED, templates)
    cluster.roll_out()
    reconcile(cluster, SCALED, templates)  # the canary is up: routes change once
    cluster.roll_out()
    writes = cluster.writes
    status = reconcile(cluster, SCALED, templates)
    assert cluster.writes == writes
    assert status["phase"] == "Ready" and status["traffic"] == {"router": "istio", "stable": 75, "canary": 25}


def test_hpa_replicas_are_never_reverted(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    for _ in range(2):
        reconcile(cluster, SCALED, templates)
        cluster.roll_out()
    hpa_scales_to(cluster, 5)
    cluster.roll_out()
    writes = cluster.writes
    for _ in range(3):
        status = reconcile(cluster, SCALED, templates)
        assert cluster.objects["Deployment", "llama3-stable"]["spec"]["replicas"] == 5
    assert cluster.writes == writes
    assert status["stable"]["replicas"] == 5 and status["phase"] == "Ready"


def test_a_spec_change_is_applied_once_then_settles(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    for _ in range(2):
        reconcile(cluster, SCALED, templates)
        cluster.roll_out()
    changed = {**SCALED, "model": {"uri": "hf://org/model", "revision": "v2"}}
    generation = cluster.objects["Deployment", "llama3-stable"]["metadata"]["generation"]
    status = reconcile(cluster, changed, templates, generation=2)
    assert status["phase"] == "Progressing"
    live = cluster.objects["Deployment", "llama3-stable"]
    assert live["metadata"]["generation"] == generation + 1
    assert "--revision=v2" in live["spec"]["template"]["spec"]["containers"][0]["args"]
    cluster.roll_out()
    writes = cluster.writes
    assert reconcile(cluster, changed, templates, generation=2)["phase"] == "Ready"
    assert cluster.writes == writes


def test_invalid_edit_then_fix_never_loses_a_child(templates: TemplateSet) -> None:
    cluster = mc.Cluster()
    for _ in range(2):
        reconcile(cluster, SCALED, templates)
        cluster.roll_out()
    before = set(cluster.objects)
    status = reconcile(cluster, {**SCALED, "canary": {"weight": 250}}, templates, generation=2)
    assert status["phase"] == "Invalid" and set(cluster.objects) == before
    assert reconcile(cluster, SCALED, templates, generation=3)["phase"] == "Ready"
    assert set(cluster.objects) == before
