"""The LLMDeployment's status, computed from the request alone (never from hook state).

`status_for` reports a resource the hook renders; `frozen_status` one whose children are
frozen (invalid spec, or paused). Both read rollout progress from the observed Deployments:
a Deployment is rolled out only once its status.observedGeneration has caught up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hooks.conditions import Condition, previous_conditions, request_time, settle
from hooks.hookapi import KubeObject, SyncRequest
from hooks.naming import LAST_APPLIED_ANNOTATION, Names, Track
from hooks.desired import DesiredState, TrackPlan, digest
from hooks.encoding import dumps, loads
from hooks.view import TrafficSplit, replica_split

Phase = Literal["Pending", "Progressing", "Ready", "Degraded", "Invalid", "Paused"]


class _StatusModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)


class TrackStatus(_StatusModel):
    deployment: str = Field(description="The track's Deployment.")
    model: str | None = Field(None, description="The model the track serves, uri[@revision].")
    replicas: int = Field(description="Pods of the Deployment.")
    ready_replicas: int = Field(alias="readyReplicas", description="Pods ready.")
    available_replicas: int = Field(alias="availableReplicas", description="Pods available.")
    updated_replicas: int = Field(alias="updatedReplicas", description="Pods on the current template.")


class TrafficStatus(_StatusModel):
    router: Literal["istio", "service"] = Field(description="istio (weighted routes) or service (replica ratio).")
    stable: int = Field(description="Percent of traffic the stable track gets now.")
    canary: int = Field(description="Percent of traffic the canary gets now.")


class LLMDeploymentStatus(_StatusModel):
    observed_generation: int = Field(alias="observedGeneration", description="The generation last synced.")
    phase: Phase = Field(description="Pending, Progressing, Ready, Degraded, Invalid or Paused.")
    url: str | None = Field(None, description="Where in-cluster callers reach the model.")
    ready: str | None = Field(None, description="Ready stable replicas out of desired, e.g. 2/2 (kubectl's Ready).")
    stable: TrackStatus | None = Field(None, description="The stable Deployment.")
    canary: TrackStatus | None = Field(None, description="The canary Deployment, when there is one.")
    traffic: TrafficStatus | None = Field(None, description="The traffic split in force.")
    conditions: list[Condition] = Field(default_factory=list, description="Ready, StableAvailable, "
                                        "CanaryAvailable and SpecValid.")

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


@dataclass(frozen=True)
class Rollout:
    """What one observed Deployment says about its rollout."""

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

    @property
    def rolled_out(self) -> bool:
        return (self.exists and self.caught_up and not self.changing and self.updated >= self.desired
                and self.available >= self.desired and self.replicas == self.updated)


def status_for(request: SyncRequest, observed: Sequence[KubeObject], desired: DesiredState) -> LLMDeploymentStatus:
    rollouts = [_rollout(t.track, t.deployment, observed, t) for t in desired.tracks]
    models = {t.track: t.model for t in desired.tracks}
    return _status(request, rollouts, models, desired.url, desired.traffic, spec_errors=[], frozen=None)


def frozen_status(request: SyncRequest, observed: Sequence[KubeObject], names: Names,
                  why: Literal["Invalid", "Paused"], spec_errors: Sequence[str]) -> LLMDeploymentStatus:
    rollouts = [_rollout(t, names.deployment(t), observed, None)
                for t in ("stable", "canary") if t == "stable" or _find(observed, names.deployment(t))]
    previous = request.parent.status_map
    tracks: tuple[Track, ...] = ("stable", "canary")
    models: dict[Track, Any] = {t: previous[t].get("model") for t in tracks
                                if isinstance(previous.get(t), dict) and isinstance(previous[t].get("model"), str)}
    return _status(request, rollouts, models, _observed_url(observed, names), _observed_traffic(observed, rollouts),
                   spec_errors, frozen=why)


def _status(request: SyncRequest, rollouts: Sequence[Rollout], models: dict[Track, Any], url: str | None,
            traffic: TrafficSplit | None, spec_errors: Sequence[str],
            frozen: Literal["Invalid", "Paused"] | None) -> LLMDeploymentStatus:
    generation = request.parent.metadata.generation
    ready = all(r.rolled_out for r in rollouts)
    degraded = any(r.deadline_exceeded for r in rollouts)
    serving = any(r.available > 0 for r in rollouts)
    phase: Phase = frozen or (
        "Degraded" if degraded else "Ready" if ready else "Progressing" if serving else "Pending")
    fresh = [("Ready", ready, *_ready_reason(rollouts, ready, degraded, serving))]
    fresh += [(f"{r.track.title()}Available", r.available > 0, *_available_reason(r)) for r in rollouts]
    fresh.append(("SpecValid", not spec_errors, "InvalidSpec" if spec_errors else "Valid",
                  "; ".join(spec_errors) if spec_errors else "spec is valid"))
    # Built without re-validation: every value below is the hook's own, of the right type.
    tracks = {r.track: TrackStatus.model_construct(deployment=r.name, model=models.get(r.track), replicas=r.replicas,
                                                   ready_replicas=r.ready, available_replicas=r.available,
                                                   updated_replicas=r.updated) for r in rollouts}
    return LLMDeploymentStatus.model_construct(
        observed_generation=generation,
        phase=phase,
        url=url,
        ready=next((f"{r.ready}/{r.desired}" for r in rollouts if r.track == "stable"), None),
        stable=tracks.get("stable"),
        canary=tracks.get("canary"),
        traffic=TrafficStatus.model_construct(router=traffic.router, stable=traffic.stable, canary=traffic.canary)
        if traffic else None,
        conditions=settle(fresh, previous_conditions(request.parent), request_time(request), generation),
    )


def _ready_reason(rollouts: Sequence[Rollout], ready: bool, degraded: bool, serving: bool) -> tuple[str, str]:
    counts = " and ".join(f"{r.track} {r.ready}/{r.desired}" for r in rollouts)
    if ready:
        return "AllReplicasReady", f"{counts} replicas ready"
    if degraded:
        stuck = ", ".join(r.name for r in rollouts if r.deadline_exceeded)
        return "ProgressDeadlineExceeded", f"{stuck} did not become ready in time; {counts} replicas ready"
    return ("RolloutInProgress" if serving else "Pending"), f"{counts} replicas ready"


def _available_reason(r: Rollout) -> tuple[str, str]:
    if not r.exists:
        return "DeploymentPending", f"{r.name} has not been created yet"
    if r.deadline_exceeded:
        return "ProgressDeadlineExceeded", f"{r.name}: {r.available}/{r.desired} replicas available"
    reason = "DeploymentAvailable" if r.available > 0 else "NoReplicasAvailable"
    return reason, f"{r.name}: {r.available}/{r.desired} replicas available"


def _find(observed: Sequence[KubeObject], name: str, kind: str = "Deployment") -> KubeObject | None:
    return next((c for c in observed if c.kind == kind and c.metadata.name == name), None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rollout(track: Track, name: str, observed: Sequence[KubeObject], wanted: TrackPlan | None) -> Rollout:
    wanted_replicas = wanted.replicas if wanted else None
    live = _find(observed, name)
    if live is None:
        return Rollout(track, name, exists=False, desired=1 if wanted_replicas is None else wanted_replicas)
    spec, status = live.spec_map, live.status_map
    # Under an HPA the hook leaves replicas alone: the live value is the desired count.
    desired_count = _int(wanted_replicas) if wanted_replicas is not None else _int(spec.get("replicas", 1))
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    return Rollout(
        track, name, exists=True, desired=desired_count,
        replicas=_int(status.get("replicas")), ready=_int(status.get("readyReplicas")),
        available=_int(status.get("availableReplicas")), updated=_int(status.get("updatedReplicas")),
        caught_up=_int(status.get("observedGeneration")) >= live.metadata.generation,
        changing=wanted is not None and not _applied(live, wanted),
        deadline_exceeded=any(c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
                              or c.get("type") == "ReplicaFailure" and c.get("status") == "True"
                              for c in conditions),
    )


def _applied(child: KubeObject, wanted: TrackPlan) -> bool:
    """Whether `child` was last applied exactly as `wanted`: first as Metacontroller writes the
    annotation, then, for any other spelling, by decoding it."""
    annotation = child.metadata.annotations.get(LAST_APPLIED_ANNOTATION)
    if annotation is None:
        return False
    if digest(annotation.encode()) == wanted.applied_digest:
        return True
    try:
        return digest(dumps(loads(annotation))) == wanted.digest
    except (ValueError, TypeError):
        return False


def _observed_url(observed: Sequence[KubeObject], names: Names) -> str | None:
    service = _find(observed, names.service, kind="Service")
    ports = service.spec_map.get("ports") if service else None
    port = ports[0].get("port") if isinstance(ports, list) and ports and isinstance(ports[0], dict) else None
    return f"http://{names.host}:{port}" if isinstance(port, int) else None


def _observed_traffic(observed: Sequence[KubeObject], rollouts: Sequence[Rollout]) -> TrafficSplit:
    """The split the frozen children enforce: the VirtualService's default route, or else the
    ratio of available replicas."""
    virtual_service = next((c for c in observed if c.kind == "VirtualService"), None)
    routes = virtual_service.spec_map.get("http") if virtual_service else None
    if isinstance(routes, list) and routes and isinstance(routes[-1], dict):
        weights = {"stable": 0, "canary": 0}
        for destination in routes[-1].get("route") or []:
            subset = (destination.get("destination") or {}).get("subset") if isinstance(destination, dict) else None
            if subset in weights:
                weights[subset] += _int(destination.get("weight", 100))
        return TrafficSplit("istio", weights["stable"], weights["canary"])
    available = {r.track: r.available for r in rollouts}
    return replica_split(available.get("stable", 0), available.get("canary", 0))
