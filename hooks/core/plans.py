"""What the hook decided for a resource, as far as its status needs to know: per track the
Deployment, the model and the replicas asked for, the fingerprint of the Deployment answered
and how long its pods may take to start; the URL and the traffic in force. Made by
`desired`, read by `status`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hooks.contract.lastapplied import Fingerprint
from hooks.core.naming import Track
from hooks.core.registry import Pin
from hooks.core.traffic import TrafficSplit


@dataclass(frozen=True)
class TrackPlan:
    track: Track
    deployment: str
    model: str | None  # uri[@revision]; None when unknown (a frozen child)
    replicas: int | None  # None: the live value stands (the HPA's, or a frozen child's)
    fingerprint: Fingerprint | None  # of the Deployment answered; None: answered as last applied
    startup_seconds: int | None = None  # how long a pod may take to start; None: unknown
    pin: Pin | None = None  # the registry version the track runs, when its model is a reference


@dataclass(frozen=True)
class Plan:
    tracks: tuple[TrackPlan, ...]
    url: str | None
    traffic: TrafficSplit
