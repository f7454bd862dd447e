"""Status from the request alone: phases, rollout progress, stable transition times."""

from __future__ import annotations

from typing import Any

from hooks.conditions import request_time
from hooks.hookapi import parse_request
from hooks.rendering import Renderer
from hooks.settings import Settings
from hooks.status import LLMDeploymentStatus
from hooks.sync import sync
from tests import metacontroller as mc

SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "replicas": 2, "canary": {"weight": 10}}
LATER = "2026-09-01T10:00:00Z"


def deploy(renderer: Renderer, settings: Settings, spec: dict[str, Any] = SPEC) -> mc.Cluster:
    cluster = mc.Cluster()
    raw = mc.request(mc.parent(spec))
    cluster.apply(sync(parse_request(raw), renderer, settings).children)
    return cluster


def set_status(cluster: mc.Cluster, name: str, ready: int, *, caught_up: bool = True,
               conditions: list[dict[str, Any]] | None = None, replicas: int | None = None) -> None:
    live = cluster.objects["Deployment", name]
    generation = live["metadata"]["generation"]
    live["status"] = {"observedGeneration": generation if caught_up else generation - 1,
                      "replicas": ready if replicas is None else replicas, "readyReplicas": ready,
                      "availableReplicas": ready, "updatedReplicas": ready,
                      "conditions": conditions or [{"type": "Available", "status": "True",
                                                    "lastTransitionTime": LATER, "lastUpdateTime": LATER}]}


def status_of(renderer: Renderer, settings: Settings, cluster: mc.Cluster, spec: dict[str, Any] = SPEC,
              previous: dict[str, Any] | None = None, generation: int = 1) -> LLMDeploymentStatus:
    raw = mc.request(mc.parent(spec, generation=generation, status=previous), cluster.observed())
    return sync(parse_request(raw), renderer, settings).status


def condition(status: LLMDeploymentStatus, kind: str) -> Any:
    return next(c for c in status.conditions if c.type == kind)


def test_new_resource_is_pending(renderer: Renderer, settings: Settings) -> None:
    status = status_of(renderer, settings, mc.Cluster())
    assert status.phase == "Pending"
    assert [c.type for c in status.conditions] == ["Ready", "StableAvailable", "CanaryAvailable", "SpecValid"]
    assert condition(status, "StableAvailable").reason == "DeploymentPending"
    assert status.url == "http://llama3.ml.svc.cluster.local:8000"
    assert status.traffic is not None and (status.traffic.stable, status.traffic.canary) == (100, 0)


def test_ready_once_every_track_is_rolled_out(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    status = status_of(renderer, settings, cluster)
    assert status.phase == "Ready"
    assert condition(status, "Ready").message == "stable 2/2 and canary 1/1 replicas ready"
    assert status.stable is not None and status.stable.available_replicas == 2
    assert status.traffic is not None and (status.traffic.stable, status.traffic.canary) == (90, 10)


def test_not_rolled_out_until_observed_generation_catches_up(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2, caught_up=False)
    set_status(cluster, "llama3-canary", 1)
    status = status_of(renderer, settings, cluster)
    assert status.phase == "Progressing"
    assert condition(status, "Ready").reason == "RolloutInProgress"


def test_old_pods_still_running_means_progressing(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2, replicas=3)
    set_status(cluster, "llama3-canary", 1)
    assert status_of(renderer, settings, cluster).phase == "Progressing"


def test_a_pending_change_is_not_ready(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    changed = {**SPEC, "model": {"uri": "hf://org/model", "revision": "v2"}}
    assert status_of(renderer, settings, cluster, changed, generation=2).phase == "Progressing"


def test_progress_deadline_exceeded_is_degraded(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 0, conditions=[
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "lastTransitionTime": LATER}])
    status = status_of(renderer, settings, cluster)
    assert status.phase == "Degraded"
    assert condition(status, "Ready").reason == "ProgressDeadlineExceeded"
    assert condition(status, "CanaryAvailable").reason == "ProgressDeadlineExceeded"


def test_hpa_set_replicas_are_the_desired_count(renderer: Renderer, settings: Settings) -> None:
    spec = {"model": {"uri": "hf://org/model"}, "autoscaling": {"maxReplicas": 8}}
    cluster = deploy(renderer, settings, spec)
    cluster.objects["Deployment", "llama3-stable"]["spec"]["replicas"] = 5
    set_status(cluster, "llama3-stable", 3)
    status = status_of(renderer, settings, cluster, spec)
    assert status.phase == "Progressing" and condition(status, "Ready").message == "stable 3/5 replicas ready"
    set_status(cluster, "llama3-stable", 5)
    assert status_of(renderer, settings, cluster, spec).phase == "Ready"


def test_transition_time_is_kept_while_status_holds(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    first = status_of(renderer, settings, cluster)
    assert condition(first, "Ready").last_transition_time == LATER  # the newest time in the request
    previous = first.as_json()
    previous["conditions"][0]["lastTransitionTime"] = "2026-08-30T00:00:00Z"
    again = status_of(renderer, settings, cluster, previous=previous)
    assert condition(again, "Ready").last_transition_time == "2026-08-30T00:00:00Z"
    set_status(cluster, "llama3-canary", 0)
    flipped = status_of(renderer, settings, cluster, previous=previous)
    assert condition(flipped, "Ready").status == "False"
    assert condition(flipped, "Ready").last_transition_time == LATER


def test_request_time_is_the_newest_timestamp(renderer: Renderer, settings: Settings) -> None:
    raw = mc.request(mc.parent(SPEC))
    raw["parent"]["metadata"]["managedFields"] = [{"time": "2026-10-01T00:00:00Z"}, {"time": "garbage"}]
    assert request_time(parse_request(raw)) == "2026-10-01T00:00:00Z"
    del raw["parent"]["metadata"]["creationTimestamp"]
    raw["parent"]["metadata"]["managedFields"] = []
    assert request_time(parse_request(raw)) == "1970-01-01T00:00:00Z"


def test_frozen_status_reads_the_observed_children(renderer: Renderer, settings: Settings) -> None:
    cluster = deploy(renderer, settings)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    cluster.apply(sync(parse_request(mc.request(mc.parent(SPEC), cluster.observed())), renderer, settings).children)
    good = status_of(renderer, settings, cluster)
    frozen = status_of(renderer, settings, cluster, {"model": {"uri": "nope"}}, previous=good.as_json())
    assert frozen.phase == "Invalid"
    assert frozen.url == good.url and frozen.traffic == good.traffic
    assert frozen.stable == good.stable and frozen.canary == good.canary
    assert condition(frozen, "Ready").status == "True"


def test_last_applied_in_any_spelling_counts_as_applied(renderer: Renderer, settings: Settings) -> None:
    import json

    from hooks.naming import LAST_APPLIED_ANNOTATION

    spec = {**SPEC, "pod": {"annotations": {"note": "a<b & c>d \u2028 é"}}}
    cluster = deploy(renderer, settings, spec)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    assert status_of(renderer, settings, cluster, spec).phase == "Ready"  # Go's spelling: the fast path
    for obj in cluster.objects.values():
        annotations = obj["metadata"]["annotations"]
        annotations[LAST_APPLIED_ANNOTATION] = json.dumps(json.loads(annotations[LAST_APPLIED_ANNOTATION]), indent=2)
    assert status_of(renderer, settings, cluster, spec).phase == "Ready"  # any other spelling: decoded
