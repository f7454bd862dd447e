"""The effective settings of each track: the stable's straight from the spec, the canary's
with its partial overrides laid over them. Called by `desired`; pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from hooks.api.spec import Engine, LLMDeploymentSpec, ModelSource, Override, Resources
from hooks.core.naming import Track

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class TrackSpec:
    """What one Deployment serves, and how many replicas the hook asks for."""

    track: Track
    model: ModelSource
    engine: Engine
    resources: Resources
    replicas: int | None  # None under an HPA: Kubernetes keeps whatever the HPA set


def track_specs(spec: LLMDeploymentSpec) -> list[TrackSpec]:
    """The stable track, then the canary when there is one."""
    stable = TrackSpec("stable", spec.model, spec.engine, spec.resources,
                       None if spec.autoscaling else spec.replicas)
    if spec.canary is None:
        return [stable]
    canary = spec.canary
    engine = overlay(spec.engine, canary.engine)
    if canary.engine.env is not None:  # env merges by name; every other list replaces
        by_name = {e.name: e for e in spec.engine.env} | {e.name: e for e in canary.engine.env}
        engine = engine.model_copy(update={"env": list(by_name.values())})
    return [stable, TrackSpec("canary", overlay(spec.model, canary.model), engine,
                              overlay(spec.resources, canary.resources), canary.replicas)]


def overlay(base: M, override: Override) -> M:
    """`base` with every field `override` sets replaced; a nested override is laid over the
    nested value in turn."""
    update = {}
    for name in type(override).model_fields:
        value = getattr(override, name)
        if value is None:
            continue
        current = getattr(base, name)
        update[name] = overlay(current, value) if isinstance(value, Override) else value
    return base.model_copy(update=update)
