"""Rollouts under what a cluster does to them: stale statuses, resized canaries, Deployments
deleted by hand, crash loops, capacity that comes late."""

from __future__ import annotations

import copy
import math
from datetime import timedelta
from typing import Any

import pytest
from hooks.core.naming import REVISION_LABEL
from hooks.core.rollout import PROMOTE_ANNOTATION
from hooks.rendering.templateset import TemplateSet

from tests import metacontroller as mc
from tests.rollouts import CANARY, STABLE, Rollout, canary_spec, values
from tests.syncing import run_sync


@pytest.fixture
def rollout(templates: TemplateSet) -> Rollout:
    return Rollout(templates, canary_spec())


def raw_sync(r: Rollout, status: Any) -> Any:
    """One sync with a given parent status (e.g. stale), applied to the cluster; no invariants."""
    parent = mc.parent(r.spec, generation=r.generation, status=status)
    parent["metadata"]["annotations"] = dict(r.annotations)
    result = run_sync(mc.request(parent, r.cluster.observed()), r.templates, r.settings, r.now, r.measure)
    assert result.outcome == "ok", result.status
    r.cluster.apply(result.children)
    r.status = result.status.as_json()
    return result


def canary_weight(result: Any) -> int:
    vs = next((c for c in result.children if c["kind"] == "VirtualService"), None)
    if vs is None:
        return 0
    return int({d["destination"]["subset"]: d["weight"] for d in vs["spec"]["http"][-1]["route"]}.get("canary", 0))


def rollout_status(r: Rollout) -> dict[str, Any]:
    assert r.status is not None
    return dict(r.status["rollout"])


def test_stale_status_during_promotion_keeps_the_canary_share(rollout: Rollout) -> None:
    """Metacontroller's informer may hand the hook the parent's status from before the last
    write (contract 11.5, #1072). A sync right after the Promoting answer, seeing the children
    fresh but the status one write behind, must not drop the promotion."""
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("step") == 1 and s.rollout.get("weight") == 50, every=60)
    rollout.kubernetes = False  # the stable's new pods take their time
    # Run until the Promoting answer, remembering the status before it.
    for _ in range(40):
        before = copy.deepcopy(rollout.status)
        rollout.now += timedelta(seconds=60)
        step = rollout.sync()
        if step.phase == "Promoting":
            break
    else:
        raise AssertionError("never promoted")
    assert step.revision(STABLE) == step.rollout["revision"]
    # The next sync sees the status of before the Promoting write.
    rollout.now += timedelta(seconds=1)
    stale = raw_sync(rollout, before)
    assert stale.status.rollout is not None
    assert stale.status.rollout.phase == "Promoting", stale.status.rollout.message
    assert canary_weight(stale) == 50


def test_step_change_weight_does_not_flap_to_zero(rollout: Rollout) -> None:
    """At a step change the canary is scaled (1 -> 2 replicas): its generation goes up. The
    very next sync, before the Deployment controller has observed it, must not take the
    canary's weight back to 0."""
    rollout.canary_at(10)
    weights = []
    for _ in range(40):
        rollout.now += timedelta(seconds=60)
        rollout.kubernetes = True
        step = rollout.sync()
        if step.rollout.get("weight") == 50:
            break
    assert step.rollout["weight"] == 50 and step.replicas(CANARY) == 2
    # simulate the deployment controller not having observed the scale-up yet
    live = rollout.cluster.objects["Deployment", CANARY]
    live["metadata"]["generation"] += 1
    live["status"] = {**live["status"], "observedGeneration": live["metadata"]["generation"] - 1,
                      "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1, "readyReplicas": 1}
    rollout.now += timedelta(seconds=1)
    result = raw_sync(rollout, rollout.status)
    weights.append(canary_weight(result))
    assert weights == [50], f"weight flapped: {weights}; {result.status.rollout}"


def test_hpa_scale_does_not_flap_canary_weight(templates: TemplateSet) -> None:
    """The HPA scales the stable; the canary follows (auto), its generation goes up: its weight
    must stay."""
    spec = canary_spec(steps=[{"weight": 50, "pauseSeconds": 600}])
    spec.pop("replicas")
    spec["autoscaling"] = {"minReplicas": 2, "maxReplicas": 10}
    r = Rollout(templates, spec, hpa_replicas=6)
    r.canary_at(50)
    r.hpa_replicas = 8
    r.kubernetes = False
    r.now += timedelta(seconds=5)
    r.sync()  # HPA scales the stable after this
    r.now += timedelta(seconds=5)
    step = r.sync()  # canary to 4 replicas; its generation goes up
    assert step.replicas(CANARY) == 4
    r.now += timedelta(seconds=5)
    after = r.sync()  # the Deployment controller has not observed yet
    assert after.rollout["weight"] == 50, after.rollout


def test_step_weight_waits_for_the_steps_capacity(rollout: Rollout) -> None:
    """canaryReplicas auto: 'a 50% step really has half the capacity'. The 50% weight must not
    be in force while the canary has 1 of its 2 replicas available."""
    rollout.canary_at(10)
    for _ in range(40):
        rollout.now += timedelta(seconds=60)
        rollout.kubernetes = False
        step = rollout.sync()
        if step.rollout.get("step") == 1:
            break
    canary = rollout.cluster.objects["Deployment", CANARY]
    available = canary.get("status", {}).get("availableReplicas", 0)
    assert step.replicas(CANARY) == 2
    assert not (step.rollout["weight"] == 50 and available < 2), \
        f"50% of traffic on {available} available canary replica(s) of 2"


def test_promote_at_first_step_does_not_jump_weight_beyond_capacity(rollout: Rollout) -> None:
    rollout.canary_at(10)
    rollout.kubernetes = False
    rollout.annotations[PROMOTE_ANNOTATION] = "true"
    rollout.now += timedelta(seconds=10)
    step = rollout.sync()
    canary = rollout.cluster.objects["Deployment", CANARY]
    available = canary.get("status", {}).get("availableReplicas", 0)
    assert step.phase == "Promoting"
    assert not (step.rollout["weight"] == 50 and available < 2), \
        f"promote at 10% put 50% on {available} available canary replica(s)"


def test_switching_strategy_to_canary_only_labels_the_stable(templates: TemplateSet) -> None:
    """A RollingUpdate resource switched to Canary: the stable takes the revision label (its
    pods restart once, as the README says) and nothing else; no canary is made."""
    spec = canary_spec()
    spec["rollout"] = {"strategy": "RollingUpdate"}
    r = Rollout(templates, spec, measure=None)
    old = r.deployed()
    r.edit(rollout={"strategy": "Canary"})
    step = r.sync()
    template = copy.deepcopy(step.deployments[STABLE]["spec"]["template"])
    assert template["metadata"]["labels"].pop(REVISION_LABEL) == step.rollout["revision"]
    assert template == old.deployments[STABLE]["spec"]["template"]
    assert step.phase == "Idle" and CANARY not in step.deployments


def test_infinite_canary_and_stable_latency_is_not_passed(rollout: Rollout) -> None:
    """Both tracks' p95 beyond the last bucket (+Inf): the ratio is NaN; it must not pass."""
    from hooks.api.validation import validate_resource
    from hooks.core.analysis import judge, track_queries
    from hooks.core.facts import QueryResult
    from hooks.core.naming import Names
    from hooks.core.strategy import RolloutPolicy

    spec = validate_resource("llama3", canary_spec())
    plan = RolloutPolicy.of(spec).analysis  # type: ignore[union-attr]
    assert plan is not None
    names = Names("llama3", "ml")
    canary = track_queries(plan, names, "canary", "m")
    stable = track_queries(plan, names, "stable", "m")
    results = {q: QueryResult((0.0,)) for q in canary.values()}
    results[canary["ttft-p95"]] = QueryResult((math.inf,))
    results[stable["ttft-p95"]] = QueryResult((math.inf,))
    verdict, checks = judge(plan, canary, stable, results)
    ttft = next(c for c in checks if c.name == "ttft-p95")
    assert ttft.result != "Passed", (verdict, ttft)


def test_canary_losing_its_pods_does_not_advance_steps_without_traffic(templates: TemplateSet) -> None:
    """No analysis: steps advance on time. If the canary stops serving (crash loop: 0
    available), its weight is 0; the step's pause must not go on counting to a promotion."""
    spec = canary_spec(steps=[{"weight": 10, "pauseSeconds": 120}])
    del spec["rollout"]["analysis"]
    r = Rollout(templates, spec, measure=None)
    r.canary_at(10)
    r.kubernetes = False
    live = r.cluster.objects["Deployment", CANARY]
    live["status"] = {**live["status"], "availableReplicas": 0, "readyReplicas": 0}
    phases = []
    for _ in range(10):
        r.now += timedelta(seconds=60)
        step = r.sync()
        phases.append((step.phase, step.rollout["weight"]))
    assert all(p != "Promoting" for p, _ in phases), phases


def test_stable_deleted_by_hand_comes_back_from_the_spec_while_the_canary_serves(rollout: Rollout) -> None:
    """The stable deleted by hand at step 1 (10%): its old pod template went with it, so it is
    created again from the spec (the README says so); the canary keeps its pods and traffic
    until the new stable is rolled out, and only then drains."""
    rollout.canary_at(10)
    del rollout.cluster.objects["Deployment", STABLE]
    rollout.kubernetes = False
    raw_sync(rollout, rollout.status)
    recreated = rollout.cluster.objects["Deployment", STABLE]
    assert recreated["spec"]["template"]["metadata"]["labels"][REVISION_LABEL] == rollout_status(rollout)["revision"]
    for _ in range(4):
        rollout.now += timedelta(seconds=30)
        result = raw_sync(rollout, rollout.status)
        assert ("Deployment", CANARY) in rollout.cluster.objects and canary_weight(result) > 0
    rollout.kubernetes = True
    rollout.cluster.roll_out()
    finished = rollout.run(lambda s: CANARY not in s.deployments, every=10)
    assert finished.weights() == {"stable": 100}


def test_a_stale_status_after_a_rollback_does_not_undo_it(rollout: Rollout) -> None:
    """After RolledBack (canary at 0 replicas), one sync that sees the status of before the
    rollback (informer lag) and a passing measurement (a second hook replica measures anew)
    must not bring the canary's traffic back."""
    rollout.deployed()
    rollout.new_revision("2")
    rollout.measure = values({"error-rate": 0.5})
    for _ in range(40):
        before = copy.deepcopy(rollout.status)
        rollout.now += timedelta(seconds=60)
        step = rollout.sync()
        if step.phase == "RolledBack":
            break
    assert step.replicas(CANARY) == 0
    rollout.kubernetes = False
    rollout.measure = values({"error-rate": 0.001, "ttft-p95": 0.5}, {"ttft-p95": 0.5})
    stale = raw_sync(rollout, before)
    assert stale.status.rollout is not None
    assert stale.status.rollout.phase == "RolledBack" or canary_weight(stale) == 0, stale.status.rollout
    assert rollout.cluster.objects["Deployment", CANARY]["spec"]["replicas"] == 0, stale.status.rollout
