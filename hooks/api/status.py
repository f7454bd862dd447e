"""The LLMDeployment API: pydantic models of `status`, what the hook reports.

The CRD's status schema is generated from these, so every field the hook writes is declared
(a field the API server pruned would make Metacontroller rewrite status on every sync).
`hooks.core.status` computes them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal["Pending", "Progressing", "Ready", "Degraded", "Invalid", "Paused", "Terminating"]
Router = Literal["istio", "service"]


class _StatusModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)


class Condition(_StatusModel):
    """One metav1.Condition."""

    type: str = Field(description="Condition type: Ready, StableAvailable, CanaryAvailable or SpecValid.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="One CamelCase word for machines.")
    message: str = Field(description="What a person needs to know.")
    last_transition_time: str = Field(
        alias="lastTransitionTime", description="When status last changed.",
        json_schema_extra={"format": "date-time"},
    )
    observed_generation: int = Field(alias="observedGeneration", description="The generation this was computed for.")


class TrackStatus(_StatusModel):
    deployment: str = Field(description="The track's Deployment.")
    model: str | None = Field(None, description="The model the track serves, uri[@revision].")
    replicas: int = Field(description="Pods of the Deployment.")
    ready_replicas: int = Field(alias="readyReplicas", description="Pods ready.")
    available_replicas: int = Field(alias="availableReplicas", description="Pods available.")
    updated_replicas: int = Field(alias="updatedReplicas", description="Pods on the current template.")


class TrafficStatus(_StatusModel):
    router: Router = Field(description="istio (weighted routes) or service (replica ratio).")
    stable: int = Field(description="Percent of traffic the stable track gets now.")
    canary: int = Field(description="Percent of traffic the canary gets now.")


class LLMDeploymentStatus(_StatusModel):
    observed_generation: int = Field(alias="observedGeneration", description="The generation last synced.")
    phase: Phase = Field(description="Pending, Progressing, Ready, Degraded, Invalid, Paused or Terminating.")
    url: str | None = Field(None, description="Where in-cluster callers reach the model.")
    ready: str | None = Field(None, description="Ready stable replicas out of desired, e.g. 2/2 (kubectl's Ready).")
    stable: TrackStatus | None = Field(None, description="The stable Deployment.")
    canary: TrackStatus | None = Field(None, description="The canary Deployment, when there is one.")
    traffic: TrafficStatus | None = Field(None, description="The traffic split in force.")
    conditions: list[Condition] = Field(default_factory=list, description="Ready, StableAvailable, "
                                        "CanaryAvailable and SpecValid.")

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
