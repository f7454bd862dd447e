"""What the world says, gathered at the edge before a sync and handed to the pure core.

The core never reads a clock or calls a service; `hooks.edge` fills this in (tests build it
by hand).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from hooks.core.registry import Resolution


@dataclass(frozen=True)
class QueryResult:
    """What Prometheus answered one query with: the sample values (one per series; a scalar
    is one), or why there is no answer (unreachable, a timeout, an error status)."""

    values: tuple[float, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Measurement:
    """The answers to one due measurement, by PromQL text."""

    key: str  # which measurement this is (see hooks.core.rollout.MeasurementPlan)
    taken_at: datetime
    results: dict[str, QueryResult] = field(default_factory=dict)


@dataclass(frozen=True)
class Facts:
    now: datetime  # timezone-aware
    measurement: Measurement | None = None  # taken only when one is due
    resolutions: dict[str, Resolution] = field(default_factory=dict)  # registry references the spec names
