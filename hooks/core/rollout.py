"""The Canary strategy's state machine: one move per sync, remembered only in the request.

Idle -> Progressing (step by step) -> Promoting -> Succeeded, or -> RolledBack, or -> Paused.
Its memory is `status.rollout` (last written by the hook) and the observed Deployments: the
revision the stable was last applied with and the revision the canary's pods run. A hook
restart or a second replica therefore decides the same, given the same facts.

`measurement_due` tells the edge which queries a sync needs (only when one is due); `decide`
takes the facts gathered and returns what to render, the new `status.rollout` and when to be
called again. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hooks.api.status import AnalysisStatus, CheckStatus, RolloutPhase, RolloutStatus, Verdict
from hooks.contract import lastapplied
from hooks.contract.observed import Observed, ObservedDeployment, parse_time
from hooks.contract.request import SyncRequest
from hooks.core.analysis import judge, track_queries
from hooks.core.conditions import format_time
from hooks.core.desired import Desired
from hooks.core.facts import Facts
from hooks.core.naming import Names
from hooks.core.registry import Pin, pin_of
from hooks.core.revision import pod_template, revision_of
from hooks.core.strategy import JSON, RolloutPolicy, RolloutRender
from hooks.errors import UnsafeToAnswer

PROMOTE_ANNOTATION = "serving.llmdeploy.io/promote"
ABORT_ANNOTATION = "serving.llmdeploy.io/abort"
CONTROL_ANNOTATIONS = (PROMOTE_ANNOTATION, ABORT_ANNOTATION)
# How long a canary whose weight went to 0 keeps its pods, so that the mesh's proxies have
# stopped sending it requests before they go.
DRAIN_SECONDS = 30
MIN_RESYNC_SECONDS = 1.0


@dataclass(frozen=True)
class MeasurementPlan:
    """The queries of one due measurement, for the edge to run at `at`."""

    key: str  # revision, step and due time: the same measurement however often it is asked for
    provider: str
    at: datetime
    canary: dict[str, str]  # check name -> PromQL
    stable: dict[str, str]  # the checks relative to the stable track

    @property
    def queries(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.canary.values(), *self.stable.values()]))


@dataclass(frozen=True)
class RolloutDecision:
    render: RolloutRender | None  # None: no canary Deployment; the stable renders from the spec
    status: RolloutStatus | None  # None: strategy RollingUpdate (status has no rollout block)
    resync_after: float | None = None  # seconds to the next measurement, step end or drain end


NO_ROLLOUT = RolloutDecision(None, None)


def previous_rollout(request: SyncRequest) -> RolloutStatus | None:
    """status.rollout as last written, or None when absent or not what the hook writes (a
    rollout without memory starts again from its first step; the stable keeps serving)."""
    raw = request.previous.rollout
    if raw is None:
        return None
    try:
        return RolloutStatus.model_validate(raw)
    except ValidationError:
        return None


def measurement_due(request: SyncRequest, direct: Desired, now: datetime) -> MeasurementPlan | None:
    """The measurement this sync must take, if one is due: a step with analysis whose weight
    is in force, `intervalSeconds` after the step started or was last measured."""
    if direct.policy is None or direct.revision is None:
        return None
    previous = previous_rollout(request)
    if previous is None or previous.revision != direct.revision:
        return None
    return _due(direct.policy, previous, Names(request.parent.name, request.parent.namespace),
                _canary_model(direct), request.previous.models.get("stable"), now)


def _due(policy: RolloutPolicy, previous: RolloutStatus, names: Names, canary_model: str | None,
         stable_model: str | None, now: datetime) -> MeasurementPlan | None:
    analysis = policy.analysis
    started = parse_time(previous.step_started_at)
    if analysis is None or started is None or previous.phase not in ("Progressing", "Paused"):
        return None
    measured = parse_time(previous.analysis.last_measured_at) if previous.analysis else None
    due = (measured if measured is not None and measured >= started else started) \
        + timedelta(seconds=analysis.interval_seconds)
    if now < due:
        return None
    return MeasurementPlan(f"{previous.revision}/{previous.step}/{format_time(due)}", analysis.provider, now,
                           track_queries(analysis, names, "canary", canary_model or ""),
                           track_queries(analysis, names, "stable", stable_model or ""))


def _canary_model(direct: Desired) -> str | None:
    return direct.plan.tracks[0].model if direct.plan is not None else None


@dataclass(frozen=True)
class _Situation:
    """Everything one decision reads."""

    names: Names
    policy: RolloutPolicy
    revision: str  # what the spec renders now
    canary_model: str | None
    stable: ObservedDeployment
    stable_template: JSON | None  # as last applied
    stable_revision: str
    stable_model: str | None
    stable_pin: Pin | None
    canary: ObservedDeployment | None
    routed_to_canary: int  # the weight the observed routes give the canary
    active: frozenset[str]  # control annotations set to "true"
    previous: RolloutStatus | None
    now: datetime


def decide(request: SyncRequest, direct: Desired, facts: Facts) -> RolloutDecision:
    """The Canary strategy's move this sync, given the desired state rendered straight from
    the spec (`direct`: its revision and policy) and the facts gathered for it."""
    policy, revision = direct.policy, direct.revision
    if direct.outcome != "ok" or policy is None or revision is None:
        return NO_ROLLOUT
    names = Names(request.parent.name, request.parent.namespace)
    observed = request.observed
    stable = observed.deployments.get(names.deployment("stable"))
    if stable is None:
        canary = observed.deployments.get(names.deployment("canary"))
        if canary is not None:  # the stable was deleted by hand: the canary serves until it is back
            return _summarised(_stable_missing(request, names, revision, canary), len(policy.steps))
        return _summarised(RolloutDecision(None, _new_status("Idle", revision, revision, "deployed directly: a new "
                                                             "resource has nothing to protect yet")), 0)
    template: JSON | None = None
    if stable.revision == revision:  # the label we applied says so: no need to read the template
        stable_revision: str | None = revision
    else:
        applied = lastapplied.parse(stable.last_applied)
        template = pod_template(applied) if applied is not None else None
        stable_revision = revision_of(template) if template is not None else stable.revision
    if stable_revision is None:
        raise UnsafeToAnswer(f"Deployment {stable.name} has neither a last-applied configuration nor a revision "
                             "label, so the revision it serves is unknown; refusing so that Metacontroller changes "
                             "nothing")
    annotations = request.parent.annotations
    s = _Situation(
        names=names, policy=policy, revision=revision, canary_model=_canary_model(direct),
        stable=stable, stable_template=template, stable_revision=stable_revision,
        stable_model=request.previous.models.get("stable"),
        stable_pin=_stable_pin(stable),
        canary=observed.deployments.get(names.deployment("canary")),
        routed_to_canary=_routed_to_canary(observed, names),
        active=frozenset(a for a in CONTROL_ANNOTATIONS if annotations.get(a) == "true"),
        previous=previous_rollout(request),
        now=facts.now,
    )
    if stable_revision == revision:
        return _summarised(_settled(s), len(policy.steps))
    if template is None:
        raise UnsafeToAnswer(f"Deployment {stable.name} has no last-applied configuration, so its pod template "
                             "cannot be kept while a new revision is tried; refusing so that Metacontroller changes "
                             "nothing")
    return _summarised(_rolling(s, facts), len(policy.steps))


def _stable_pin(observed: ObservedDeployment) -> Pin | None:
    """The registry version the stable's kept template runs, as the stable carries it."""
    return pin_of(observed.resolved)


def _routed_to_canary(observed: Observed, names: Names) -> int:
    route = observed.routes.get(names.routing)
    return route.weight("canary") if route is not None else 0


def _stable_missing(request: SyncRequest, names: Names, revision: str, canary: ObservedDeployment) -> RolloutDecision:
    """The stable Deployment is gone (deleted by hand): it is created again from the spec,
    and the canary keeps its pods and its share of traffic until the stable is back."""
    weight = _routed_to_canary(request.observed, names)
    render = RolloutRender(canary.spec_replicas, weight, canary.revision or revision, None, None)
    message = (f"{names.deployment('stable')} is missing: it is created again from the spec, and "
               f"{names.deployment('canary')} keeps serving until it is back")
    previous = previous_rollout(request)
    status = _update(previous, message=message) if previous is not None else _new_status(
        "Idle", revision, revision, message)
    return RolloutDecision(render, _update(status, weight=weight))


# --- the stable serves the spec's revision ---------------------------------------------------

def _settled(s: _Situation) -> RolloutDecision:
    """No rollout to run: a promotion finishing, its canary draining, or nothing at all."""
    previous = s.previous
    ours = previous is not None and previous.revision == s.revision
    # Only a promotion gives the stable the revision being rolled out: a status that still
    # says Progressing or Paused is one write behind (Metacontroller may hand an old one).
    if ours and previous is not None and previous.phase in ("Progressing", "Paused", "Promoting"):
        if not _rolled_out(s.stable):
            return _promoting(s, previous)
        done = _update(previous, phase="Succeeded", weight=0, step_started_at=format_time(s.now),
                       message=f"promoted: {s.names.deployment('stable')} serves revision {s.revision}")
        return _retire_canary(s, done, since=s.now)
    if ours and previous is not None and previous.phase == "Succeeded":
        done = _update(previous, message=f"promoted: {s.names.deployment('stable')} serves revision {s.revision}")
        return _retire_canary(s, done, since=parse_time(previous.step_started_at) or s.now)
    if s.canary is not None and not _rolled_out(s.stable):
        # The stable is not all there (created again after a deletion by hand, or rolling):
        # the canary keeps its pods and its share until it is.
        keep = RolloutRender(s.canary.spec_replicas, s.routed_to_canary, s.canary.revision or s.revision, None, None)
        return RolloutDecision(keep, _new_status(
            "Idle", s.revision, s.stable_revision, f"{s.names.deployment('stable')} serves revision {s.revision}; "
            f"{s.names.deployment('canary')} keeps serving until {s.names.deployment('stable')} is rolled out"))
    # Idle; after a revert the canary (if any) drains from now on.
    since = parse_time(previous.step_started_at) if previous is not None and previous.phase == "Idle" else None
    if s.canary is not None and (since is None or s.routed_to_canary > 0):
        since = s.now
    idle = _new_status("Idle", s.revision, s.stable_revision, f"{s.names.deployment('stable')} serves revision "
                       f"{s.revision}", step_started_at=format_time(since) if since and s.canary else None)
    return _retire_canary(s, idle, since=since or s.now)


def _retire_canary(s: _Situation, status: RolloutStatus, since: datetime) -> RolloutDecision:
    """The canary, if any, at weight 0 until DRAIN_SECONDS after `since`, then gone."""
    if s.canary is None or not s.policy.routed:
        return RolloutDecision(None, status)
    left = (since + timedelta(seconds=DRAIN_SECONDS) - s.now).total_seconds()
    if left <= 0:
        return RolloutDecision(None, status)
    render = RolloutRender(s.canary.spec_replicas, 0, s.canary.revision or s.revision, None, None)
    draining = _update(status, message=f"{status.message}; {s.names.deployment('canary')} drains for "
                       f"{DRAIN_SECONDS}s, then goes")
    return RolloutDecision(render, draining, max(left, MIN_RESYNC_SECONDS))


def _promoting(s: _Situation, previous: RolloutStatus, note: str = "") -> RolloutDecision:
    """The stable rolls to the new template; the canary keeps the last step's share until
    the stable is done, so that capacity never dips."""
    last = s.policy.steps[-1]
    replicas = s.policy.canary_replicas_for(last.weight, s.stable.spec_replicas)
    weight = _in_force(s, previous, last.weight, replicas)
    render = RolloutRender(replicas, weight, s.revision, None, None)
    status = _update(previous, phase="Promoting", step=len(s.policy.steps) - 1, weight=weight,
                     message=f"{note}{': ' if note else ''}promoting: {s.names.deployment('stable')} rolls to "
                     f"revision {s.revision}; the canary keeps {weight}% until it is done")
    return RolloutDecision(render, status)


def _rolled_out(live: ObservedDeployment) -> bool:
    return (live.observed_generation >= live.generation and live.updated >= live.spec_replicas
            and live.available >= live.spec_replicas and live.replicas == live.updated)


def _in_force(s: _Situation, previous: RolloutStatus, weight: int, replicas: int) -> int:
    """The canary weight this answer routes, aiming at `weight`: 0 while no canary pod of the
    revision is available; a higher weight than the one already in force only once every
    canary pod runs the revision and `replicas` of them are available (a 50% step gets half
    the capacity before half the traffic). A weight in force stays while the canary is
    resized: a scale changes the Deployment's generation, not what its pods run."""
    canary = s.canary
    if canary is None or canary.revision != s.revision or canary.available < 1:
        return 0
    held = (previous.weight or 0) if previous.revision == s.revision and previous.phase in (
        "Progressing", "Paused", "Promoting") else 0
    if weight <= held:
        return weight
    rolled = canary.observed_generation >= canary.generation and canary.replicas == canary.updated
    return weight if rolled and canary.available >= replicas else held


# --- a rollout to run ------------------------------------------------------------------------

def _rolling(s: _Situation, facts: Facts) -> RolloutDecision:
    previous = s.previous
    started = ""
    if previous is None or previous.revision != s.revision or previous.phase in ("Idle", "Succeeded"):
        replacing = previous is not None and previous.phase in ("Progressing", "Paused", "Promoting")
        started = f"revision {s.revision} {'replaces the one in progress' if replacing else 'starts'}"
        previous = _new_status("Progressing", s.revision, s.stable_revision, started, step=0,
                               analysis=AnalysisStatus() if s.policy.analysis else None, ignored=sorted(s.active))
    # An annotation set when the rollout started acts only once removed and set again.
    ignored = sorted(set(previous.ignored_annotations) & s.active)
    previous = _update(previous, ignored_annotations=ignored, stable_revision=s.stable_revision)
    acting = s.active - set(ignored)
    if not started and previous.phase in ("Progressing", "Paused") and s.canary is not None \
            and s.canary.revision == s.revision and s.canary.spec_replicas == 0:
        # Only a rollback scales this revision's canary to 0: the status is one write behind.
        previous = _update(previous, phase="RolledBack", weight=0,
                           message=f"rolled back: {s.names.deployment('canary')} was scaled to 0 by a rollback")
    if previous.phase == "RolledBack":
        return RolloutDecision(_render(s, replicas=0, weight=0), previous)
    if previous.phase == "Promoting":
        return _promoting(s, previous)
    if ABORT_ANNOTATION in acting:
        return _rolled_back(s, previous, f"aborted by the {ABORT_ANNOTATION} annotation")
    if PROMOTE_ANNOTATION in acting:
        return _promoting(s, previous, f"promoted by the {PROMOTE_ANNOTATION} annotation")
    decision = _stepping(s, previous, facts)
    if started and decision.status is not None:
        status = _update(decision.status, message=f"{started}; {decision.status.message}")
        return RolloutDecision(decision.render, status, decision.resync_after)
    return decision


def _stepping(s: _Situation, previous: RolloutStatus, facts: Facts) -> RolloutDecision:
    policy, now = s.policy, s.now
    index = min(previous.step or 0, len(policy.steps) - 1)
    step = policy.steps[index]
    replicas = policy.canary_replicas_for(step.weight, s.stable.spec_replicas)
    weight = _in_force(s, previous, step.weight, replicas)
    # The step's pause counts while its weight is in force, from the answer that puts it there.
    started = (parse_time(previous.step_started_at) or now) if weight == step.weight else None
    phase: RolloutPhase = previous.phase
    analysis = previous.analysis
    due = _due(policy, previous, s.names, s.canary_model, s.stable_model, now)
    measurement = facts.measurement
    if policy.analysis is not None and started is not None and due is not None and measurement is not None \
            and measurement.key == due.key:
        verdict, checks = judge(policy.analysis, due.canary, due.stable, measurement.results)
        analysis = _counted(analysis or AnalysisStatus(), verdict, checks, measurement.taken_at)
        if verdict == "Failed" and analysis.failures > policy.analysis.failure_limit:
            failed = next(c for c in checks if c.result == "Failed")
            return _rolled_back(s, _update(previous, analysis=analysis),
                                f"check {failed.name} failed: {failed.message} (failed measurements: "
                                f"{analysis.failures}, {policy.analysis.failure_limit} tolerated)")
        if verdict == "Inconclusive" and analysis.inconclusive >= policy.analysis.inconclusive_limit:
            phase = "Paused"
        elif verdict == "Passed" and phase == "Paused" and step.pause_seconds is not None:
            phase = "Progressing"
    if phase == "Progressing" and started is not None and step.pause_seconds is not None:
        ended = now >= started + timedelta(seconds=step.pause_seconds) and (
            analysis is None or (analysis.result == "Passed" and _measured_since(analysis, started)))
        if ended and index + 1 == len(policy.steps):
            return _promoting(s, _update(previous, analysis=analysis, weight=weight), "all steps passed")
        if ended:
            index += 1
            step = policy.steps[index]
            replicas = policy.canary_replicas_for(step.weight, s.stable.spec_replicas)
            weight = _in_force(s, _update(previous, weight=weight), step.weight, replicas)
            started = now if weight == step.weight else None
            analysis = _update(analysis, passed=0) if analysis is not None else None
    if started is not None and step.pause_seconds is None:
        phase = "Paused"
    note = _pause_reason(analysis, step.pause_seconds) if phase == "Paused" else ""
    status = _update(previous, phase=phase, step=index, weight=weight, analysis=analysis,
                     step_started_at=format_time(started) if started else None,
                     message=_step_message(s, index, weight, replicas, analysis, note))
    return RolloutDecision(_render(s, replicas, weight), status, _resync(s, status, started, step.pause_seconds))


def _pause_reason(analysis: AnalysisStatus | None, pause_seconds: int | None) -> str:
    if analysis is not None and analysis.result == "Inconclusive" and analysis.inconclusive:
        why = next((c.message for c in analysis.checks if c.result == "Inconclusive"), "")
        return (f"analysis inconclusive {analysis.inconclusive} times in a row ({why}); measurements go on: it "
                "resumes when data comes back, or promote or abort")
    if pause_seconds is None:
        return f"waiting for the {PROMOTE_ANNOTATION} annotation to promote"
    return "paused"


def _counted(analysis: AnalysisStatus, verdict: Verdict, checks: tuple[CheckStatus, ...],
             taken_at: datetime) -> AnalysisStatus:
    return _update(analysis, last_measured_at=format_time(taken_at), result=verdict, checks=list(checks),
                   failures=analysis.failures + (verdict == "Failed"),
                   inconclusive=analysis.inconclusive + 1 if verdict == "Inconclusive" else 0,
                   passed=analysis.passed + (verdict == "Passed"))


def _measured_since(analysis: AnalysisStatus, started: datetime) -> bool:
    measured = parse_time(analysis.last_measured_at)
    return measured is not None and measured >= started


def _rolled_back(s: _Situation, previous: RolloutStatus, why: str) -> RolloutDecision:
    """Canary weight 0 and replicas 0 at once (kept for inspection); the stable never changed."""
    status = _update(previous, phase="RolledBack", weight=0, message=f"rolled back: {why}")
    return RolloutDecision(_render(s, replicas=0, weight=0), status)


def _render(s: _Situation, replicas: int, weight: int) -> RolloutRender:
    """The canary with the new revision, and the stable kept as last applied."""
    return RolloutRender(replicas, weight, s.revision, s.stable_template, s.stable_model, s.stable_pin)


def _resync(s: _Situation, status: RolloutStatus, started: datetime | None, pause: int | None) -> float | None:
    """Seconds until the step's end or its next measurement, whichever is first."""
    if started is None:
        return None  # the canary's Deployment changing status syncs again
    moments = []
    if pause is not None and started + timedelta(seconds=pause) > s.now:
        moments.append(started + timedelta(seconds=pause))
    if s.policy.analysis is not None:
        measured = parse_time(status.analysis.last_measured_at) if status.analysis else None
        since = measured if measured is not None and measured >= started else started
        moments.append(since + timedelta(seconds=s.policy.analysis.interval_seconds))
    if not moments:
        return None
    return max((min(moments) - s.now).total_seconds(), MIN_RESYNC_SECONDS)


def _step_message(s: _Situation, index: int, weight: int, replicas: int, analysis: AnalysisStatus | None,
                  note: str) -> str:
    where = f"step {index + 1}/{len(s.policy.steps)}"
    step_weight = s.policy.steps[index].weight
    canary = s.names.deployment("canary")
    if weight == 0:
        return f"{where}: waiting for {canary} to serve revision {s.revision}"
    if weight < step_weight:
        return (f"{where} at {weight}%: waiting for {replicas} available {canary} replicas of revision {s.revision} "
                f"before {step_weight}%")
    text = f"{where} at {weight}%"
    if analysis is not None and analysis.result == "Passed" and analysis.passed:
        text += f": analysis passed {analysis.passed} time{'s' if analysis.passed > 1 else ''}"
    elif analysis is not None and analysis.result is not None and analysis.result != "Passed" and not note:
        text += f": last analysis {analysis.result}"
    return f"{text}; {note}" if note else text


def _new_status(phase: RolloutPhase, revision: str, stable_revision: str, message: str, *, step: int | None = None,
                analysis: AnalysisStatus | None = None, ignored: list[str] | None = None,
                step_started_at: str | None = None) -> RolloutStatus:
    return RolloutStatus.model_construct(
        phase=phase, revision=revision, stable_revision=stable_revision, step=step, weight=0,
        step_started_at=step_started_at, analysis=analysis, ignored_annotations=ignored or [], message=message,
        summary="")


Model = TypeVar("Model", bound=BaseModel)


def _update(model: Model, **changes: Any) -> Model:
    return model.model_copy(update=changes)


def _summarised(decision: RolloutDecision, steps: int) -> RolloutDecision:
    """What kubectl's Rollout column shows: step/steps and weight while stepping, else the phase."""
    status = decision.status
    if status is None:
        return decision
    summary: str = status.phase
    if status.phase in ("Progressing", "Paused") and status.step is not None:
        summary = f"{status.step + 1}/{steps} {status.weight}%" + (" Paused" if status.phase == "Paused" else "")
    return RolloutDecision(decision.render, _update(status, summary=summary), decision.resync_after)
