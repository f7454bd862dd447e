"""Status: phases, rollout progress and transition times, from the observed children, the
plan and the previous status; first directly, without templates, then through the sync."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hooks.api.status import LLMDeploymentStatus
from hooks.contract.lastapplied import Fingerprint
from hooks.contract.observed import DeploymentCondition, Observed, ObservedDeployment, ObservedRoute
from hooks.contract.request import PreviousCondition, PreviousStatus
from hooks.core.naming import Names
from hooks.core.plans import Plan, TrackPlan
from hooks.core.status import frozen_status, status
from hooks.core.traffic import TrafficSplit
from hooks.rendering.templateset import TemplateSet

from tests import metacontroller as mc
from tests.syncing import NOW, NOW_TEXT, run_sync

SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}, "replicas": 2, "canary": {"weight": 10}}
LATER = "2026-09-01T10:00:00Z"


WHEN = datetime(2026, 9, 2, 8, 30, tzinfo=timezone.utc)
DEPLOYED = {"kind": "Deployment", "metadata": {"name": "m-stable"}, "spec": {"replicas": 2}}


def live(available: int, *, applied: str | None = None, generation: int = 3, seen: int = 3,
         replicas: int = 2, conditions: tuple[DeploymentCondition, ...] = ()) -> ObservedDeployment:
    return ObservedDeployment("m-stable", generation, seen, replicas, replicas, available, available, replicas,
                              conditions, applied)


def plan(replicas: int | None = 2) -> Plan:
    return Plan((TrackPlan("stable", "m-stable", "hf://o/m", replicas, Fingerprint.of(DEPLOYED)),),
                "http://m.ns.svc.cluster.local:8000", TrafficSplit("istio", 100, 0))


def applied() -> str:
    import json

    return json.dumps(DEPLOYED)


def test_status_needs_no_templates() -> None:
    observed = Observed(deployments={"m-stable": live(2, applied=applied())})
    result = status(observed, plan(), PreviousStatus(), WHEN, generation=4)
    assert result.phase == "Ready" and result.ready == "2/2" and result.observed_generation == 4
    assert [(c.type, c.status) for c in result.conditions] == [
        ("Ready", "True"), ("StableAvailable", "True"), ("SpecValid", "True")]
    assert {c.last_transition_time for c in result.conditions} == {"2026-09-02T08:30:00Z"}


def test_a_deployment_the_hook_is_about_to_change_is_not_rolled_out() -> None:
    observed = Observed(deployments={"m-stable": live(2, applied='{"kind": "Deployment", "spec": {}}')})
    assert status(observed, plan(), PreviousStatus(), WHEN, 1).phase == "Progressing"


def test_under_an_hpa_the_live_replica_count_is_desired() -> None:
    observed = Observed(deployments={"m-stable": live(2, applied=applied(), replicas=5)})
    assert status(observed, plan(replicas=None), PreviousStatus(), WHEN, 1).ready == "2/5"


def test_transition_times_hold_until_the_status_flips() -> None:
    previous = PreviousStatus({"Ready": PreviousCondition("True", "2026-08-01T00:00:00Z"),
                               "StableAvailable": PreviousCondition("False", "2026-08-01T00:00:00Z"),
                               "SpecValid": PreviousCondition("True", "not a time")})
    result = status(Observed(deployments={"m-stable": live(2, applied=applied())}), plan(), previous, WHEN, 1)
    times = {c.type: c.last_transition_time for c in result.conditions}
    assert times == {"Ready": "2026-08-01T00:00:00Z", "StableAvailable": "2026-09-02T08:30:00Z",
                     "SpecValid": "2026-09-02T08:30:00Z"}


def test_frozen_status_reports_what_the_kept_children_enforce() -> None:
    observed = Observed(deployments={"m-stable": live(1)}, service_ports={"m": 9000},
                        routes={"m": ObservedRoute("istio", {"stable": 80, "canary": 20})})
    result = frozen_status(observed, Names("m", "ns"), PreviousStatus(models={"stable": "hf://o/m"}), WHEN, 2,
                           "Invalid", ["spec.replicas: must be greater than or equal to 0"])
    assert result.phase == "Invalid" and result.url == "http://m.ns.svc.cluster.local:9000"
    assert result.traffic is not None and (result.traffic.stable, result.traffic.canary) == (80, 20)
    assert result.stable is not None and result.stable.model == "hf://o/m" and result.canary is None
    spec_valid = result.conditions[-1]
    assert (spec_valid.type, spec_valid.status, spec_valid.reason) == ("SpecValid", "False", "InvalidSpec")


def deploy(templates: TemplateSet, spec: dict[str, Any] = SPEC) -> mc.Cluster:
    cluster = mc.Cluster()
    cluster.apply(run_sync(mc.request(mc.parent(spec)), templates, now=NOW).children)
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


def status_of(templates: TemplateSet, cluster: mc.Cluster, spec: dict[str, Any] = SPEC,
              previous: dict[str, Any] | None = None, generation: int = 1) -> LLMDeploymentStatus:
    raw = mc.request(mc.parent(spec, generation=generation, status=previous), cluster.observed())
    return run_sync(raw, templates).status


def condition(status: LLMDeploymentStatus, kind: str) -> Any:
    return next(c for c in status.conditions if c.type == kind)


def test_new_resource_is_pending(templates: TemplateSet) -> None:
    status = status_of(templates, mc.Cluster())
    assert status.phase == "Pending"
    assert [c.type for c in status.conditions] == ["Ready", "StableAvailable", "CanaryAvailable", "SpecValid"]
    assert condition(status, "StableAvailable").reason == "DeploymentPending"
    assert status.url == "http://llama3.ml.svc.cluster.local:8000"
    assert status.traffic is not None and (status.traffic.stable, status.traffic.canary) == (100, 0)


def test_ready_once_every_track_is_rolled_out(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    status = status_of(templates, cluster)
    assert status.phase == "Ready"
    assert condition(status, "Ready").message == "stable 2/2 and canary 1/1 replicas ready"
    assert status.stable is not None and status.stable.available_replicas == 2
    assert status.traffic is not None and (status.traffic.stable, status.traffic.canary) == (90, 10)


def test_not_rolled_out_until_observed_generation_catches_up(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2, caught_up=False)
    set_status(cluster, "llama3-canary", 1)
    status = status_of(templates, cluster)
    assert status.phase == "Progressing"
    assert condition(status, "Ready").reason == "RolloutInProgress"


def test_old_pods_still_running_means_progressing(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2, replicas=3)
    set_status(cluster, "llama3-canary", 1)
    assert status_of(templates, cluster).phase == "Progressing"


def test_a_pending_change_is_not_ready(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    changed = {**SPEC, "model": {"uri": "hf://org/model", "revision": "v2"}}
    assert status_of(templates, cluster, changed, generation=2).phase == "Progressing"


def test_progress_deadline_exceeded_is_degraded(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 0, conditions=[
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "lastTransitionTime": LATER}])
    status = status_of(templates, cluster)
    assert status.phase == "Degraded"
    assert condition(status, "Ready").reason == "ProgressDeadlineExceeded"
    assert condition(status, "CanaryAvailable").reason == "ProgressDeadlineExceeded"


def test_hpa_set_replicas_are_the_desired_count(templates: TemplateSet) -> None:
    spec = {"model": {"uri": "hf://org/model"}, "autoscaling": {"maxReplicas": 8}}
    cluster = deploy(templates, spec)
    cluster.objects["Deployment", "llama3-stable"]["spec"]["replicas"] = 5
    set_status(cluster, "llama3-stable", 3)
    status = status_of(templates, cluster, spec)
    assert status.phase == "Progressing" and condition(status, "Ready").message == "stable 3/5 replicas ready"
    set_status(cluster, "llama3-stable", 5)
    assert status_of(templates, cluster, spec).phase == "Ready"


def test_transition_time_is_kept_while_status_holds(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    first = status_of(templates, cluster)
    assert condition(first, "Ready").last_transition_time == NOW_TEXT  # the clock the edge read
    previous = first.as_json()
    previous["conditions"][0]["lastTransitionTime"] = "2026-08-30T00:00:00Z"
    again = status_of(templates, cluster, previous=previous)
    assert condition(again, "Ready").last_transition_time == "2026-08-30T00:00:00Z"
    set_status(cluster, "llama3-canary", 0)
    flipped = status_of(templates, cluster, previous=previous)
    assert condition(flipped, "Ready").status == "False"
    assert condition(flipped, "Ready").last_transition_time == NOW_TEXT


def test_frozen_status_reads_the_observed_children(templates: TemplateSet) -> None:
    cluster = deploy(templates)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    cluster.apply(run_sync(mc.request(mc.parent(SPEC), cluster.observed()), templates).children)
    good = status_of(templates, cluster)
    frozen = status_of(templates, cluster, {"model": {"uri": "nope"}}, previous=good.as_json())
    assert frozen.phase == "Invalid"
    assert frozen.url == good.url and frozen.traffic == good.traffic
    assert frozen.stable == good.stable and frozen.canary == good.canary
    assert condition(frozen, "Ready").status == "True"


def test_last_applied_in_any_spelling_counts_as_applied(templates: TemplateSet) -> None:
    import json

    from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION

    spec = {**SPEC, "pod": {"annotations": {"note": "a<b & c>d \u2028 é"}}}
    cluster = deploy(templates, spec)
    set_status(cluster, "llama3-stable", 2)
    set_status(cluster, "llama3-canary", 1)
    assert status_of(templates, cluster, spec).phase == "Ready"  # Go's spelling: the fast path
    for obj in cluster.objects.values():
        annotations = obj["metadata"]["annotations"]
        annotations[LAST_APPLIED_ANNOTATION] = json.dumps(json.loads(annotations[LAST_APPLIED_ANNOTATION]), indent=2)
    assert status_of(templates, cluster, spec).phase == "Ready"  # any other spelling: decoded


def crash_looping(since: datetime) -> ObservedDeployment:
    unavailable = DeploymentCondition("Available", "False", "MinimumReplicasUnavailable", since)
    return ObservedDeployment("m-canary", 2, 2, 1, 1, 0, 0, 1, (unavailable,), None)


def canary_plan(startup_seconds: int) -> Plan:
    return Plan((TrackPlan("stable", "m-stable", "hf://o/m", 2, Fingerprint.of(DEPLOYED), startup_seconds),
                 TrackPlan("canary", "m-canary", "hf://o/m@2", 1, None, startup_seconds)),
                "http://m.ns.svc.cluster.local:8000", TrafficSplit("istio", 100, 0))


@pytest.mark.parametrize(("minutes", "degraded"), [(5, False), (31, False), (33, True), (40 * 60, True)])
def test_a_canary_whose_pods_never_start_is_degraded_once_they_had_their_time(minutes: int, degraded: bool) -> None:
    from datetime import timedelta

    observed = Observed(deployments={"m-stable": live(2, applied=applied()),
                                     "m-canary": crash_looping(WHEN - timedelta(minutes=minutes))})
    result = status(observed, canary_plan(startup_seconds=1800), PreviousStatus(), WHEN, 3)
    canary = next(c for c in result.conditions if c.type == "CanaryAvailable")
    assert (result.phase == "Degraded") == degraded, result.phase
    assert (canary.reason == "PodsNotStarting") == degraded
    if degraded:
        assert "crashing" in canary.message and condition(result, "Ready").reason == "PodsNotStarting"
    else:
        assert result.phase == "Progressing"


def test_a_canary_with_some_replicas_crashing_is_degraded_but_still_available() -> None:
    from datetime import timedelta

    unavailable = DeploymentCondition("Available", "False", "MinimumReplicasUnavailable", WHEN - timedelta(hours=1))
    partly = ObservedDeployment("m-canary", 2, 2, 3, 3, 1, 1, 3, (unavailable,), None)
    observed = Observed(deployments={"m-stable": live(2, applied=applied()), "m-canary": partly})
    plan = Plan((canary_plan(1800).tracks[0], TrackPlan("canary", "m-canary", "hf://o/m@2", 3, None, 1800)),
                "http://m.ns.svc.cluster.local:8000", TrafficSplit("istio", 100, 0))
    result = status(observed, plan, PreviousStatus(), WHEN, 3)
    canary = next(c for c in result.conditions if c.type == "CanaryAvailable")
    assert result.phase == "Degraded"
    assert (canary.status, canary.reason) == ("True", "PartlyAvailable")
    assert "only 1/3 replicas available for 60 min" in canary.message
    assert condition(result, "Ready").reason == "PodsNotStarting"


def test_a_model_still_loading_within_its_startup_time_is_progressing() -> None:
    from datetime import timedelta

    observed = Observed(deployments={"m-stable": live(2, applied=applied()),
                                     "m-canary": crash_looping(WHEN - timedelta(minutes=50))})
    assert status(observed, canary_plan(startup_seconds=3600), PreviousStatus(), WHEN, 3).phase == "Progressing"
