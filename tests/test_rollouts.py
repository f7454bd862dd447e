"""Whole progressive rollouts (spec.rollout.strategy: Canary) through Metacontroller's apply,
on an injected clock, with the invariants of tests/rollouts.py checked after every sync. The
measurements here are made up per check; tests/test_rollout_prometheus.py takes them from a
real Prometheus."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hooks.core.rollout import ABORT_ANNOTATION, DRAIN_SECONDS, PROMOTE_ANNOTATION
from hooks.rendering.templateset import TemplateSet

from tests.rollouts import CANARY, HEALTHY, STABLE, Rollout, canary_spec, unreachable, values


@pytest.fixture
def rollout(templates: TemplateSet) -> Rollout:
    return Rollout(templates, canary_spec())


def phase(name: str) -> Any:
    return lambda step: step.phase == name


def test_a_new_resource_deploys_directly(rollout: Rollout) -> None:
    step = rollout.sync()
    assert step.phase == "Idle" and CANARY not in step.deployments
    assert "nothing to protect" in step.rollout["message"]
    assert step.revision(STABLE) == step.rollout["revision"] == step.rollout["stableRevision"]


def test_a_healthy_canary_is_promoted_through_every_step(rollout: Rollout) -> None:
    old = rollout.deployed()
    old_template = old.deployments[STABLE]["spec"]["template"]
    rollout.new_revision("2")
    first = rollout.sync()
    assert first.phase == "Progressing" and first.rollout["step"] == 0
    assert first.weights() == {"stable": 100, "canary": 0}, "no traffic before the canary serves"
    assert first.deployments[STABLE]["spec"]["template"] == old_template
    new_revision = first.rollout["revision"]
    assert first.revision(CANARY) == new_revision != first.revision(STABLE)

    seen: list[tuple[int, int, int | None]] = []  # (step, weight, canary replicas) while stepping
    done = rollout.run(phase("Promoting"), every=60)
    for step in rollout.history:
        if step.phase == "Progressing" and step.rollout["weight"]:
            seen.append((step.rollout["step"], step.rollout["weight"], step.replicas(CANARY)))
    # 4 stable replicas: 10% -> 1 canary replica, 50% -> 2; step 2 holds 10% until both are available.
    assert sorted(set(seen)) == [(0, 10, 1), (1, 10, 2), (1, 50, 2)]
    steps = [s for s in rollout.history if s.phase == "Progressing" and s.rollout["weight"]]
    at_10 = [s.at for s in steps if s.rollout["weight"] == 10]
    assert at_10[-1] - at_10[0] >= timedelta(seconds=600 - 60), "each step lasts its pauseSeconds"
    assert done.weights() == {"stable": 50, "canary": 50}, "the canary keeps its share while the stable rolls"
    assert done.revision(STABLE) == new_revision and done.replicas(CANARY) == 2
    assert done.rollout["summary"] == "Promoting"

    finished = rollout.run(lambda s: CANARY not in s.deployments, every=10)
    assert finished.phase == "Succeeded" and finished.weights() == {"stable": 100}
    drain = [s for s in rollout.history if s.phase == "Succeeded" and CANARY in s.deployments]
    assert drain and drain[0].weights() == {"stable": 100, "canary": 0}
    assert finished.at - drain[0].at >= timedelta(seconds=DRAIN_SECONDS)
    assert finished.status["phase"] == "Ready"
    healthy = next(c for c in finished.status["conditions"] if c["type"] == "RolloutHealthy")
    assert healthy["status"] == "True" and healthy["reason"] == "Succeeded"


def test_steps_end_only_after_their_pause_and_a_passed_measurement(templates: TemplateSet) -> None:
    rollout = Rollout(templates, canary_spec(steps=[{"weight": 20, "pauseSeconds": 120}, {"weight": 60}]))
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 20)
    started = rollout.history[-1].at
    moved = rollout.run(lambda s: s.rollout.get("step") == 1, every=10)
    assert moved.at - started >= timedelta(seconds=120)
    measured = [s.rollout["analysis"]["lastMeasuredAt"] for s in rollout.history if s.rollout.get("analysis", {}).get(
        "lastMeasuredAt")]
    assert measured, "the step needed a passed measurement"
    # The last step has no pauseSeconds: it holds for a person.
    paused = rollout.run(phase("Paused"), every=30, limit=20)
    assert "waiting for the serving.llmdeploy.io/promote annotation" in paused.rollout["message"]
    assert paused.rollout["summary"] == "2/2 60% Paused"
    rollout.now += timedelta(hours=5)
    assert rollout.sync().phase == "Paused"
    rollout.annotations[PROMOTE_ANNOTATION] = "true"
    assert rollout.sync().phase == "Promoting"


@pytest.mark.parametrize(("check", "canary", "stable", "failing_step"), [
    ("error-rate", {"error-rate": 0.05}, {}, 0),
    ("ttft-p95", {"ttft-p95": 2.0}, {"ttft-p95": 0.5}, 0),
])
def test_a_regression_rolls_back_at_once_and_the_stable_never_changes(
        rollout: Rollout, check: str, canary: dict[str, float], stable: dict[str, float], failing_step: int) -> None:
    old = rollout.deployed()
    rollout.new_revision("2")
    rollout.measure = values(canary, stable)
    done = rollout.run(phase("RolledBack"), every=60, limit=60)
    assert done.rollout["step"] == failing_step
    assert f"check {check} failed" in done.rollout["message"]
    assert done.rollout["analysis"]["failures"] == 2, "failureLimit 1: the second failure rolls back"
    failed = next(c for c in done.rollout["analysis"]["checks"] if c["name"] == check)
    assert failed["result"] == "Failed" and failed["value"] == canary[check]
    assert done.weights() == {"stable": 100, "canary": 0} and done.replicas(CANARY) == 0
    assert done.deployments[STABLE]["spec"]["template"] == old.deployments[STABLE]["spec"]["template"]
    assert done.status["phase"] == "Degraded"
    unhealthy = next(c for c in done.status["conditions"] if c["type"] == "RolloutHealthy")
    assert unhealthy["status"] == "False" and unhealthy["reason"] == "RolledBack"
    # Nothing happens until the pod template changes again: the canary stays, at 0, for inspection.
    rollout.measure = HEALTHY
    rollout.now += timedelta(hours=2)
    later = rollout.sync()
    assert later.phase == "RolledBack" and later.replicas(CANARY) == 0 and CANARY in later.deployments


def test_a_regression_at_the_second_step(rollout: Rollout) -> None:
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("step") == 1 and s.rollout.get("weight") == 50, every=60)
    rollout.measure = values({"error-rate": 0.2})
    done = rollout.run(phase("RolledBack"), every=60, limit=10)
    assert done.rollout["step"] == 1 and done.weights() == {"stable": 100, "canary": 0}


@pytest.mark.parametrize("measure", [unreachable, values({"error-rate": None}), values({"error-rate": math.nan})],
                         ids=["prometheus-down", "no-data", "nan"])
def test_no_data_holds_the_step_pauses_for_a_person_and_never_rolls_back(rollout: Rollout, measure: Any) -> None:
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    rollout.measure = measure
    paused = rollout.run(phase("Paused"), every=60, limit=20)
    analysis = paused.rollout["analysis"]
    assert analysis["inconclusive"] == 5 and analysis["failures"] == 0 and analysis["result"] == "Inconclusive"
    assert paused.rollout["step"] == 0 and paused.weights() == {"stable": 90, "canary": 10}
    assert "inconclusive 5 times in a row" in paused.rollout["message"]
    # Hours of silence change nothing but the count; it never rolls back, never advances.
    for _ in range(30):
        rollout.now += timedelta(minutes=5)
        step = rollout.sync()
        assert step.phase == "Paused" and step.rollout["step"] == 0
    # Data comes back: it resumes, and finishes.
    rollout.measure = HEALTHY
    rollout.run(phase("Progressing"), every=60, limit=5)
    assert rollout.run(phase("Succeeded"), every=60).rollout["analysis"]["failures"] == 0
    assert all(s.phase != "RolledBack" for s in rollout.history)


def test_promote_acts_once_and_never_on_a_later_rollout(rollout: Rollout) -> None:
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    rollout.annotations[PROMOTE_ANNOTATION] = "true"
    promoted = rollout.sync()
    assert promoted.phase == "Promoting" and "promoted by the serving.llmdeploy.io/promote" in promoted.rollout[
        "message"]
    rollout.run(lambda s: s.phase == "Succeeded" and CANARY not in s.deployments, every=10)
    # The annotation is still there when the next rollout starts: it does not act on it.
    rollout.new_revision("3")
    second = rollout.sync()
    assert second.phase == "Progressing" and second.rollout["ignoredAnnotations"] == [PROMOTE_ANNOTATION]
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    for _ in range(3):
        rollout.now += timedelta(seconds=60)
        assert rollout.sync().phase == "Progressing"
    # Removed, then set again: now it acts.
    del rollout.annotations[PROMOTE_ANNOTATION]
    assert rollout.sync().rollout["ignoredAnnotations"] == []
    rollout.annotations[PROMOTE_ANNOTATION] = "true"
    assert rollout.sync().phase == "Promoting"


def test_abort_rolls_back_and_stays_until_a_new_revision(rollout: Rollout) -> None:
    old = rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    rollout.annotations[ABORT_ANNOTATION] = "true"
    aborted = rollout.sync()
    assert aborted.phase == "RolledBack" and "aborted by the serving.llmdeploy.io/abort annotation" in \
        aborted.rollout["message"]
    assert aborted.weights() == {"stable": 100, "canary": 0} and aborted.replicas(CANARY) == 0
    assert aborted.deployments[STABLE]["spec"]["template"] == old.deployments[STABLE]["spec"]["template"]
    # A new revision starts a new rollout; the abort annotation still set does not act on it.
    rollout.new_revision("3")
    again = rollout.sync()
    assert again.phase == "Progressing" and again.rollout["ignoredAnnotations"] == [ABORT_ANNOTATION]
    assert rollout.run(phase("Promoting"), every=60).phase == "Promoting"


def test_a_new_revision_mid_rollout_restarts_from_the_first_step(rollout: Rollout) -> None:
    old = rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("step") == 1 and s.rollout.get("weight") == 50, every=60)
    second = rollout.history[-1].rollout["revision"]
    rollout.kubernetes = False  # the canary's new pods are not up yet
    rollout.new_revision("3")
    restarted = rollout.sync()
    assert restarted.rollout["revision"] != second and restarted.rollout["step"] == 0
    assert "replaces the one in progress" in restarted.rollout["message"]
    assert restarted.weights() == {"stable": 100, "canary": 0}, "old canary pods get no traffic"
    assert restarted.deployments[STABLE]["spec"]["template"] == old.deployments[STABLE]["spec"]["template"]
    rollout.kubernetes = True
    assert rollout.run(phase("Promoting"), every=60).revision(STABLE) == restarted.rollout["revision"]


def test_reverting_the_spec_removes_the_canary_after_a_drain(rollout: Rollout) -> None:
    old = rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    rollout.new_revision("1")
    reverted = rollout.sync()
    assert reverted.phase == "Idle" and reverted.weights() == {"stable": 100, "canary": 0}
    assert CANARY in reverted.deployments and reverted.result.resync_after == DRAIN_SECONDS
    gone = rollout.run(lambda s: CANARY not in s.deployments, every=10, limit=10)
    assert gone.phase == "Idle" and gone.deployments[STABLE] == old.deployments[STABLE]


def test_capacity_follows_the_hpa_and_the_canary_stays_until_the_stable_is_promoted(templates: TemplateSet) -> None:
    spec = canary_spec(steps=[{"weight": 50, "pauseSeconds": 60}])
    spec.pop("replicas")
    spec["autoscaling"] = {"minReplicas": 2, "maxReplicas": 10}
    rollout = Rollout(templates, spec, hpa_replicas=6)
    rollout.deployed()
    rollout.new_revision("2")
    stepping = rollout.run(lambda s: s.rollout.get("weight") == 50)
    assert stepping.replicas(CANARY) == 3, "half of the HPA's 6"
    rollout.hpa_replicas = 8
    rollout.sync()  # the HPA scales the stable after this sync; the canary follows on the next
    assert rollout.sync().replicas(CANARY) == 4
    rollout.kubernetes = False  # the stable's new pods take their time
    promoting = rollout.run(phase("Promoting"), every=60)
    for _ in range(5):
        rollout.now += timedelta(minutes=5)
        step = rollout.sync()
        assert step.phase == "Promoting" and step.weights() == {"stable": 50, "canary": 50}
        assert "replicas" not in step.result.children[0]["spec"], "the hook never fights the HPA"
    assert promoting.replicas(CANARY) == 4
    rollout.kubernetes = True
    rollout.run(lambda s: s.phase == "Succeeded" and CANARY not in s.deployments, every=10)


def test_a_fixed_canary_size_and_no_analysis(templates: TemplateSet) -> None:
    spec = canary_spec(steps=[{"weight": 30, "pauseSeconds": 300}], canaryReplicas=3)
    del spec["rollout"]["analysis"]
    rollout = Rollout(templates, spec, measure=None)
    rollout.deployed()
    rollout.new_revision("2")
    step = rollout.run(lambda s: s.rollout.get("weight") == 30)
    assert step.replicas(CANARY) == 3 and "analysis" not in step.rollout
    assert rollout.run(phase("Promoting"), every=60).at - step.at >= timedelta(seconds=300)


def test_without_istio_the_split_is_the_replica_ratio(templates: TemplateSet) -> None:
    spec = canary_spec(steps=[{"weight": 50, "pauseSeconds": 60}])
    spec["traffic"] = {"istio": False}
    rollout = Rollout(templates, spec)
    rollout.deployed()
    rollout.new_revision("2")
    step = rollout.run(lambda s: s.rollout.get("weight") == 50)
    assert step.status["traffic"] == {"router": "none", "stable": 67, "canary": 33}  # 4 and 2 replicas
    done = rollout.run(lambda s: s.phase == "Succeeded" and CANARY not in s.deployments, every=60)
    assert done.status["traffic"]["canary"] == 0


def test_a_change_outside_the_pod_template_applies_at_once(rollout: Rollout) -> None:
    rollout.deployed()
    rollout.edit(replicas=6)
    step = rollout.sync()
    assert step.phase == "Idle" and step.replicas(STABLE) == 6 and CANARY not in step.deployments


def test_the_same_request_gives_the_same_answer(rollout: Rollout) -> None:
    """The rollout's memory is the request: a restarted hook or a second replica decides the
    same at the same moment."""
    from tests import metacontroller as mc
    from tests.syncing import encoded, run_sync

    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("analysis", {}).get("passed", 0) >= 2, every=60)
    parent = mc.parent(rollout.spec, generation=rollout.generation, status=rollout.status)
    request = mc.request(parent, rollout.cluster.observed())
    answers = {encoded(run_sync(request, rollout.templates, rollout.settings, rollout.now, rollout.measure))
               for _ in range(3)}
    assert len(answers) == 1


def test_an_invalid_edit_mid_rollout_keeps_everything_and_the_rollouts_memory(rollout: Rollout) -> None:
    from tests import metacontroller as mc
    from tests.syncing import run_sync

    rollout.deployed()
    rollout.new_revision("2")
    before = rollout.run(lambda s: s.rollout.get("weight") == 10)
    bad = {**rollout.spec, "replicas": -1}
    parent = mc.parent(bad, generation=rollout.generation + 1, status=rollout.status)
    result = run_sync(mc.request(parent, rollout.cluster.observed()), rollout.templates, rollout.settings,
                      rollout.now, rollout.measure)
    assert result.outcome == "invalid"
    assert {c["metadata"]["name"] for c in result.children} == {c["metadata"]["name"] for c in
                                                                before.result.children}
    assert result.status.as_json()["rollout"] == before.rollout


def test_an_analysis_provider_the_hook_does_not_know_is_an_invalid_spec(templates: TemplateSet) -> None:
    from tests import metacontroller as mc
    from tests.syncing import run_sync

    spec = canary_spec()
    spec["rollout"]["analysis"]["provider"] = "eu-west"
    result = run_sync(mc.request(mc.parent(spec)), templates, Rollout(templates, spec).settings)
    assert result.outcome == "invalid" and result.children == ()
    spec_valid = next(c for c in result.status.conditions if c.type == "SpecValid")
    assert "spec.rollout.analysis.provider: 'eu-west' is not a Prometheus this hook is configured with " \
           "(configured: default)" in spec_valid.message


def test_a_stable_deleted_by_hand_is_recreated_and_the_canary_keeps_serving_meanwhile(rollout: Rollout) -> None:
    rollout.deployed()
    rollout.new_revision("2")
    rollout.run(lambda s: s.rollout.get("weight") == 10)
    del rollout.cluster.objects["Deployment", STABLE]
    rollout.kubernetes = False  # the new stable's pods take their time
    step = rollout.sync()
    assert CANARY in step.deployments and step.replicas(CANARY) == 1 and step.weights()["canary"] == 10
    assert STABLE in step.deployments and "is missing" in step.rollout["message"]
    rollout.kubernetes = True
    gone = rollout.run(lambda s: CANARY not in s.deployments, every=10, limit=10)
    assert gone.weights() == {"stable": 100}
