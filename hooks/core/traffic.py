"""Traffic policy: which split is in force, given what the observed Deployments can serve.

A canary gets traffic only once it has an available replica. With a router (Istio, or an
HTTPRoute) the split is the requested weight from then on; without one the Service spreads
requests over ready pods, so the split is their ratio. Used by the view (routes) and by the status; pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from hooks.api.spec import LLMDeploymentSpec
from hooks.api.status import Router


@dataclass(frozen=True)
class Availability:
    """Available replicas of each track's observed Deployment: all the routes depend on."""

    stable: int = 0
    canary: int = 0


@dataclass(frozen=True)
class TrafficSplit:
    router: Router
    stable: int  # percent
    canary: int


def canary_serving(spec: LLMDeploymentSpec, availability: Availability) -> bool:
    """Whether the canary's weight, A/B routes and mirroring apply yet."""
    return spec.canary is not None and availability.canary > 0


def split_in_force(spec: LLMDeploymentSpec, availability: Availability) -> TrafficSplit:
    router = spec.traffic.router_in_use
    if spec.canary is None:
        return TrafficSplit(router, 100, 0)
    if router != "none":
        weight = spec.canary.weight if canary_serving(spec, availability) else 0
        return TrafficSplit(router, 100 - weight, weight)
    return replica_split(availability.stable, availability.canary)


def replica_split(stable_available: int, canary_available: int) -> TrafficSplit:
    """Without a router the Service spreads requests over ready pods: the split is their ratio."""
    total = stable_available + canary_available
    canary = round(100 * canary_available / total) if total else 0
    return TrafficSplit("none", 100 - canary, canary)
