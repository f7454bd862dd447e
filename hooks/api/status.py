"""The LLMDeployment API: pydantic models of `status`, what the hook reports.

The CRD's status schema is generated from these, so every field the hook writes is declared
(a field the API server pruned would make Metacontroller rewrite status on every sync).
`hooks.core.status` computes them.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal["Pending", "Progressing", "Ready", "Degraded", "Invalid", "Paused", "Terminating"]
Router = Literal["istio", "gateway-api", "linkerd", "none"]


class _StatusModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)


Model = TypeVar("Model", bound=_StatusModel)


@functools.cache
def _field_names(cls: type[_StatusModel]) -> frozenset[str]:
    return frozenset(cls.model_fields)  # pydantic computes model_fields on each access


def built(cls: type[Model], **values: Any) -> Model:
    """A status model from values the hook computed itself, of the right types, with every
    field given: what pydantic's `model_construct` makes, at a third of its cost (the status is
    built on every sync). A test holds the two to the same objects."""
    if values.keys() != _field_names(cls) or cls.__private_attributes__:
        missing, unknown = cls.model_fields.keys() - values.keys(), values.keys() - cls.model_fields.keys()
        raise TypeError(f"{cls.__name__}: give every field by its name (missing {sorted(missing)}, unknown "
                        f"{sorted(unknown)}), to a model without private attributes")
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


class Condition(_StatusModel):
    """One metav1.Condition."""

    type: str = Field(description="Condition type: Ready, StableAvailable, CanaryAvailable, SpecValid, "
                      "RolloutHealthy or ModelResolved.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="One CamelCase word for machines.")
    message: str = Field(description="What a person needs to know.")
    last_transition_time: str = Field(
        alias="lastTransitionTime", description="When status last changed.",
        json_schema_extra={"format": "date-time"},
    )
    observed_generation: int = Field(alias="observedGeneration", description="The generation this was computed for.")


class ResolvedModel(_StatusModel):
    version: str = Field(description="The registry version the track runs.")
    artifact_uri: str = Field("", alias="artifactUri", description="Where the registry keeps that version's files.")
    run_id: str = Field("", alias="runId", description="The run that produced it, when the registry says.")
    resolved_at: str = Field(alias="resolvedAt", description="When the hook first resolved the reference to it.",
                             json_schema_extra={"format": "date-time"})


class TrackStatus(_StatusModel):
    deployment: str = Field(description="The track's Deployment.")
    model: str | None = Field(None, description="The model the track serves, uri[@revision], as written.")
    resolved: ResolvedModel | None = Field(None, description="The version a registry reference (models:/name@alias, "
                                           "latest or a stage) is pinned to.")
    replicas: int = Field(description="Pods of the Deployment.")
    ready_replicas: int = Field(alias="readyReplicas", description="Pods ready.")
    available_replicas: int = Field(alias="availableReplicas", description="Pods available.")
    updated_replicas: int = Field(alias="updatedReplicas", description="Pods on the current template.")


class TrafficStatus(_StatusModel):
    router: Router = Field(description="The router in force: istio, gateway-api or linkerd (weighted routes), or none "
                        "(the Service: the ratio of ready replicas).")
    stable: int = Field(description="Percent of traffic the stable track gets now.")
    canary: int = Field(description="Percent of traffic the canary gets now.")


RolloutPhase = Literal["Idle", "Progressing", "Paused", "Promoting", "Succeeded", "RolledBack"]
Verdict = Literal["Passed", "Failed", "Inconclusive"]


class CheckStatus(_StatusModel):
    name: str = Field(description="The check: its metric, or its name.")
    value: float | None = Field(None, description="The canary's value; absent without data.")
    stable_value: float | None = Field(None, alias="stableValue",
                                       description="The stable track's value, for bounds relative to it.")
    bound: str = Field(description="The bound as written, e.g. max 0.01 or maxRatioToStable 1.5.")
    result: Verdict = Field(description="Passed, Failed or Inconclusive.")
    message: str | None = Field(None, description="Why the check is inconclusive.")


class AnalysisStatus(_StatusModel):
    last_measured_at: str | None = Field(None, alias="lastMeasuredAt", description="When the last measurement was "
                                         "taken.", json_schema_extra={"format": "date-time"})
    result: Verdict | None = Field(None, description="The last measurement's result.")
    failures: int = Field(0, description="Failed measurements in this rollout.")
    inconclusive: int = Field(0, description="Inconclusive measurements in a row.")
    passed: int = Field(0, description="Passed measurements in this step.")
    checks: list[CheckStatus] = Field(default_factory=list, description="The last measurement, check by check.")


class RolloutStatus(_StatusModel):
    phase: RolloutPhase = Field(description="Idle, Progressing, Paused, Promoting, Succeeded or RolledBack.")
    revision: str | None = Field(None, description="Short hash of the pod template being rolled out (also the pod "
                                 "label serving.llmdeploy.io/revision).")
    stable_revision: str | None = Field(None, alias="stableRevision", description="The revision the stable serves.")
    step: int | None = Field(None, description="0-based index into spec.rollout.steps.")
    weight: int = Field(0, description="Canary weight in force, percent.")
    step_started_at: str | None = Field(None, alias="stepStartedAt", description="When the step's weight came into "
                                        "force (for Succeeded: when the stable finished).",
                                        json_schema_extra={"format": "date-time"})
    analysis: AnalysisStatus | None = Field(None, description="Measurements of this rollout.")
    ignored_annotations: list[str] = Field(
        default_factory=list, alias="ignoredAnnotations", description="promote and abort annotations that were "
        "already set when this rollout started: they act only once removed and set again.")
    message: str = Field("", description="What the rollout is doing, and why.")
    summary: str = Field("", description="What kubectl's Rollout column shows: step/steps and weight, or the phase.")


class LLMDeploymentStatus(_StatusModel):
    observed_generation: int = Field(alias="observedGeneration", description="The generation last synced.")
    phase: Phase = Field(description="Pending, Progressing, Ready, Degraded, Invalid, Paused or Terminating.")
    url: str | None = Field(None, description="Where in-cluster callers reach the model.")
    ready: str | None = Field(None, description="Ready stable replicas out of desired, e.g. 2/2 (kubectl's Ready).")
    stable: TrackStatus | None = Field(None, description="The stable Deployment.")
    canary: TrackStatus | None = Field(None, description="The canary Deployment, when there is one.")
    traffic: TrafficStatus | None = Field(None, description="The traffic split in force.")
    rollout: RolloutStatus | None = Field(None, description="The progressive rollout (strategy Canary).")
    conditions: list[Condition] = Field(default_factory=list, description="Ready, StableAvailable, "
                                        "CanaryAvailable, SpecValid, RolloutHealthy and ModelResolved.")

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
