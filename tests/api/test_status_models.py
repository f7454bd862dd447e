"""`built`, the status models' cheap constructor: the very objects `model_construct` makes."""

from __future__ import annotations

from typing import Any

import pytest
from hooks.api.status import (
    Condition,
    LLMDeploymentStatus,
    ResolvedModel,
    TrackStatus,
    TrafficStatus,
    built,
)

TRACK: dict[str, Any] = {"deployment": "llama3-stable", "model": "hf://o/m", "resolved": None, "replicas": 2,
                         "ready_replicas": 1, "available_replicas": 1, "updated_replicas": 2}
CONDITION: dict[str, Any] = {"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "ok",
                             "last_transition_time": "2026-12-01T00:00:00Z", "observed_generation": 3}


def status(make: Any) -> LLMDeploymentStatus:
    resolved = make(ResolvedModel, version="4", artifact_uri="s3://m/4", run_id="", resolved_at="2026-12-01T00:00:00Z")
    made: LLMDeploymentStatus = make(
        LLMDeploymentStatus, observed_generation=3, phase="Ready", url=None, ready="1/2",
        stable=make(TrackStatus, **{**TRACK, "resolved": resolved}), canary=None,
        traffic=make(TrafficStatus, router="istio", stable=100, canary=0), rollout=None,
        conditions=[make(Condition, **CONDITION)])
    return made


def test_built_makes_what_model_construct_makes() -> None:
    fast, slow = status(built), status(lambda cls, **v: cls.model_construct(**v))
    assert fast == slow
    assert fast.as_json() == slow.as_json()
    assert fast.as_json()["stable"] == {"deployment": "llama3-stable", "model": "hf://o/m", "replicas": 2,
                                        "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 2,
                                        "resolved": {"version": "4", "artifactUri": "s3://m/4", "runId": "",
                                                     "resolvedAt": "2026-12-01T00:00:00Z"}}
    assert fast.model_fields_set == slow.model_fields_set
    with pytest.raises(Exception, match="frozen"):
        fast.phase = "Pending"  # type: ignore[misc]


def test_built_wants_every_field_by_its_name() -> None:
    with pytest.raises(TypeError, match=r"TrackStatus: give every field by its name \(missing \['model', "
                                        r"'resolved'\], unknown \[\]\)"):
        built(TrackStatus, **{k: v for k, v in TRACK.items() if k not in ("model", "resolved")})
    renamed = {**{k: v for k, v in TRACK.items() if k != "ready_replicas"}, "readyReplicas": 1}
    with pytest.raises(TypeError, match=r"missing \['ready_replicas'\], unknown \['readyReplicas'\]"):
        built(TrackStatus, **renamed)
