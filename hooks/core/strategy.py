"""The Canary strategy's settings, and what it asks the templates to render.

`RolloutPolicy` is what the state machine (`hooks.core.rollout`) reads from a validated spec;
`RolloutRender` is what it decided for this sync and hands to `desire` (it is part of the
desired state's inputs, so its cache key). Pure data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hooks.api.spec import LLMDeploymentSpec
from hooks.core.analysis import AnalysisPlan, analysis_plan
from hooks.core.registry import Pin

JSON = dict[str, Any]


@dataclass(frozen=True)
class StepPolicy:
    weight: int
    pause_seconds: int | None  # None: until the promote annotation


@dataclass(frozen=True)
class RolloutPolicy:
    steps: tuple[StepPolicy, ...]
    canary_replicas: int | None  # None: auto
    analysis: AnalysisPlan | None
    routed: bool  # weights are routes; otherwise (router none) the replica ratio is the split

    @classmethod
    def of(cls, spec: LLMDeploymentSpec) -> RolloutPolicy | None:
        """The policy of a spec with the Canary strategy; None for RollingUpdate."""
        rollout = spec.rollout
        if rollout.strategy != "Canary":
            return None
        return cls(tuple(StepPolicy(s.weight, s.pause_seconds) for s in rollout.steps),
                   rollout.canary_replicas if isinstance(rollout.canary_replicas, int) else None,
                   analysis_plan(spec), spec.traffic.router_in_use != "none")

    def canary_replicas_for(self, weight: int, stable_replicas: int) -> int:
        """A fixed count, or auto: ceil(stable replicas x weight / 100), at least 1."""
        if self.canary_replicas is not None:
            return self.canary_replicas
        return max(1, math.ceil(stable_replicas * weight / 100))


@dataclass(frozen=True)
class RolloutRender:
    """What the Canary strategy renders this sync: the canary Deployment (from the spec's
    own settings, as the track `canary`) with its replicas and route weight, and the stable's
    pod template when the stable must keep the one it was last applied with."""

    canary_replicas: int
    canary_weight: int  # in force: 0 until the canary serves the revision
    revision: str  # the canary's revision label
    stable_template: JSON | None  # kept as last applied; None: the stable takes the spec's
    stable_model: str | None  # what the kept template serves, for status
    stable_pin: Pin | None = None  # the registry version the kept template runs, for status
