"""The LLMDeployment's status, from what is observed, what was decided and what it said before.

`status` reports a resource the hook renders (from its `Plan`); `frozen_status` one whose
children are kept as last applied (invalid spec, or paused). Both read rollout progress from
the observed Deployments: a Deployment is rolled out only once its status has caught up with
its generation and the hook is not about to change it. Pure; `now` comes from the edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from hooks.api.status import (
    LLMDeploymentStatus,
    Phase,
    ResolvedModel,
    RolloutStatus,
    TrackStatus,
    TrafficStatus,
    built,
)
from hooks.contract.lastapplied import was_applied
from hooks.contract.observed import Observed, ObservedDeployment
from hooks.contract.request import PreviousStatus
from hooks.core.conditions import settle
from hooks.core.naming import TRACKS, Names, Track
from hooks.core.plans import Plan, TrackPlan
from hooks.core.registry import Pin, pin_of
from hooks.core.traffic import TrafficSplit, replica_split

Frozen = Literal["Invalid", "Paused", "Terminating"]
Registry = tuple[bool, str, str] | None  # ModelResolved: status, reason, message; None without a reference


@dataclass(frozen=True)
class DeploymentProgress:
    """How far one track's Deployment has come."""

    track: Track
    name: str
    exists: bool
    desired: int
    replicas: int = 0
    ready: int = 0
    available: int = 0
    updated: int = 0
    caught_up: bool = False
    changing: bool = False  # the hook is about to change it
    deadline_exceeded: bool = False
    not_starting_for: timedelta | None = None  # too few replicas available for longer than pods may take to start

    @property
    def rolled_out(self) -> bool:
        return (self.exists and self.caught_up and not self.changing and self.updated >= self.desired
                and self.available >= self.desired and self.replicas == self.updated)


def status(observed: Observed, plan: Plan, previous: PreviousStatus, now: datetime, generation: int,
           rollout: RolloutStatus | None = None, registry: Registry = None) -> LLMDeploymentStatus:
    """The status of a resource the hook answers for (with the Canary strategy's `rollout`,
    and `registry`, the ModelResolved condition, when the spec names a registry reference)."""
    progress = [_progress(t, observed.deployments.get(t.deployment), now) for t in plan.tracks]
    models = {t.track: t.model for t in plan.tracks}
    resolved = {t.track: _resolved(t.pin) for t in plan.tracks if t.pin is not None}
    return _status(progress, models, resolved, plan.url, plan.traffic, previous, now, generation, [], None, rollout,
                   registry)


def frozen_status(observed: Observed, names: Names, previous: PreviousStatus, now: datetime, generation: int,
                  why: Frozen | None, spec_errors: Sequence[str], rollout: RolloutStatus | None = None,
                  registry: Registry = None) -> LLMDeploymentStatus:
    """The status of a resource whose children stay as last applied: what they enforce (`why`
    None: kept while a registry reference has no version yet, the phase is what they show)."""
    progress = [_progress(TrackPlan(t, names.deployment(t), None, None, None),
                          observed.deployments.get(names.deployment(t)), now)
                for t in TRACKS if t == "stable" or names.deployment(t) in observed.deployments]
    port = observed.service_ports.get(names.service)
    url = f"http://{names.host}:{port}" if port is not None else None
    # The route by its name, or the only one there is (an override may rename it).
    routes = list(observed.routes.values())
    route = observed.routes.get(names.routing, routes[0] if len(routes) == 1 else None)
    traffic = (TrafficSplit(route.router, route.weight("stable"), route.weight("canary"))
               if route is not None
               else replica_split(*(next((p.available for p in progress if p.track == t), 0) for t in TRACKS)))
    models = {t: previous.models.get(t) for t in TRACKS}
    resolved = {p.track: _resolved(pin) for p in progress
                if (pin := pin_of(observed.deployments[p.name].resolved if p.exists else None)) is not None}
    return _status(progress, models, resolved, url, traffic, previous, now, generation, spec_errors, why, rollout,
                   registry)


def _resolved(pin: Pin) -> ResolvedModel:
    return built(ResolvedModel, version=pin.version, artifact_uri=pin.artifact_uri, run_id=pin.run_id,
                 resolved_at=pin.resolved_at)





ROLLOUT_UNDER_WAY = ("Progressing", "Paused", "Promoting")


def _status(progress: Sequence[DeploymentProgress], models: dict[Track, str | None],
            resolved: Mapping[Track, ResolvedModel], url: str | None, traffic: TrafficSplit, previous: PreviousStatus,
            now: datetime, generation: int, spec_errors: Sequence[str], frozen: Frozen | None,
            rollout: RolloutStatus | None, registry: Registry) -> LLMDeploymentStatus:
    ready = all(p.rolled_out for p in progress)
    degraded = any(p.deadline_exceeded or p.not_starting_for for p in progress)
    serving = any(p.available > 0 for p in progress)
    phase: Phase = frozen or (
        "Degraded" if degraded or (rollout is not None and rollout.phase == "RolledBack")
        else "Progressing" if rollout is not None and rollout.phase in ROLLOUT_UNDER_WAY and serving
        else "Ready" if ready else "Progressing" if serving else "Pending")
    fresh = [("Ready", ready, *_ready_reason(progress, ready, degraded, serving))]
    fresh += [(f"{p.track.title()}Available", p.available > 0, *_available_reason(p)) for p in progress]
    fresh.append(("SpecValid", not spec_errors, "InvalidSpec" if spec_errors else "Valid",
                  "; ".join(spec_errors) if spec_errors else "spec is valid"))
    if rollout is not None:
        healthy = rollout.phase not in ("RolledBack", "Paused")
        fresh.append(("RolloutHealthy", healthy, rollout.phase, rollout.message or rollout.phase))
    if registry is not None:
        fresh.append(("ModelResolved", *registry))
    # Built without re-validation: every value below is the hook's own, of the right type.
    tracks = {p.track: built(TrackStatus, deployment=p.name, model=models.get(p.track), resolved=resolved.get(p.track),
                             replicas=p.replicas, ready_replicas=p.ready, available_replicas=p.available,
                             updated_replicas=p.updated) for p in progress}
    return built(
        LLMDeploymentStatus,
        observed_generation=generation,
        phase=phase,
        url=url,
        ready=next((f"{p.ready}/{p.desired}" for p in progress if p.track == "stable"), None),
        stable=tracks.get("stable"),
        canary=tracks.get("canary"),
        traffic=built(TrafficStatus, router=traffic.router, stable=traffic.stable, canary=traffic.canary),
        rollout=rollout,
        conditions=settle(fresh, previous.conditions, now, generation),
    )


def _ready_reason(progress: Sequence[DeploymentProgress], ready: bool, degraded: bool,
                  serving: bool) -> tuple[str, str]:
    counts = " and ".join(f"{p.track} {p.ready}/{p.desired}" for p in progress)
    if ready:
        return "AllReplicasReady", f"{counts} replicas ready"
    if any(p.deadline_exceeded for p in progress):
        stuck = ", ".join(p.name for p in progress if p.deadline_exceeded)
        return "ProgressDeadlineExceeded", f"{stuck} did not become ready in time; {counts} replicas ready"
    if degraded:
        stuck = ", ".join(p.name for p in progress if p.not_starting_for)
        return "PodsNotStarting", f"{stuck}: replicas have not started in time; {counts} replicas ready"
    return ("RolloutInProgress" if serving else "Pending"), f"{counts} replicas ready"


def _available_reason(p: DeploymentProgress) -> tuple[str, str]:
    if not p.exists:
        return "DeploymentPending", f"{p.name} has not been created yet"
    if p.deadline_exceeded:
        return "ProgressDeadlineExceeded", f"{p.name}: {p.available}/{p.desired} replicas available"
    if p.not_starting_for:
        minutes = int(p.not_starting_for.total_seconds() // 60)
        why = ("longer than its pods may take to start: they are crashing, failing their startup probe "
               "or cannot be scheduled")
        if p.available > 0:  # serving, so the condition is True; its reason says what is wrong
            return "PartlyAvailable", (f"{p.name}: only {p.available}/{p.desired} replicas available "
                                       f"for {minutes} min, {why}")
        return "PodsNotStarting", f"{p.name}: no replica available for {minutes} min, {why}"
    reason = "DeploymentAvailable" if p.available > 0 else "NoReplicasAvailable"
    return reason, f"{p.name}: {p.available}/{p.desired} replicas available"


def _progress(plan: TrackPlan, live: ObservedDeployment | None, now: datetime) -> DeploymentProgress:
    if live is None:
        return DeploymentProgress(plan.track, plan.deployment, exists=False,
                                  desired=1 if plan.replicas is None else plan.replicas)
    # Under an HPA (or frozen) the hook leaves replicas alone: the live value is desired.
    desired = live.spec_replicas if plan.replicas is None else plan.replicas
    stalled = live.condition("Progressing")
    failure = live.condition("ReplicaFailure")
    return DeploymentProgress(
        plan.track, plan.deployment, exists=True, desired=desired,
        replicas=live.replicas, ready=live.ready, available=live.available, updated=live.updated,
        caught_up=live.observed_generation >= live.generation,
        changing=plan.fingerprint is not None and not was_applied(live.last_applied, plan.fingerprint),
        deadline_exceeded=(stalled is not None and stalled.reason == "ProgressDeadlineExceeded")
        or (failure is not None and failure.status == "True"),
        not_starting_for=_not_starting_for(plan, live, desired, now),
    )


STARTUP_GRACE = timedelta(minutes=2)  # the kubelet's restart back-off on top of the startup probe


def _not_starting_for(plan: TrackPlan, live: ObservedDeployment, desired: int, now: datetime) -> timedelta | None:
    """How long the Deployment has had fewer replicas available than it needs (its Available
    condition False), when that is longer than its pods may take to start: a crash loop, a
    failing startup probe, or nowhere to run, whether for every replica or only some."""
    available = live.condition("Available")
    if (plan.startup_seconds is None or available is None or available.status != "False"
            or available.last_transition_time is None or desired == 0):
        return None
    waited = now - available.last_transition_time
    return waited if waited > timedelta(seconds=plan.startup_seconds) + STARTUP_GRACE else None
