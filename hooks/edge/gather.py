"""Gathering the facts of one sync: the clock, the registry's answers for the references the
spec names (before rendering: the pod templates pin them), and a canary measurement when one
is due.

Each fact from a service is bounded in time (see `hooks.edge.prometheus`), so that a slow
or dead service never delays an answer past Metacontroller's timeout; it only makes a
measurement Inconclusive.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from hooks.contract.request import SyncRequest
from hooks.core.desired import Desired
from hooks.core.facts import Facts
from hooks.core.registry import Resolution, references
from hooks.core.rollout import measurement_due
from hooks.edge.prometheus import Prometheus
from hooks.edge.registry import MLflowRegistry
from hooks.settings import AnalysisSettings, RegistrySettings

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class FactGatherer:
    def __init__(self, clock: Clock = utc_now, prometheus: Prometheus | None = None,
                 registry: MLflowRegistry | None = None) -> None:
        self.clock = clock
        self.prometheus = prometheus or Prometheus(AnalysisSettings())
        self.registry = registry or MLflowRegistry(RegistrySettings(), clock)

    async def resolve(self, request: SyncRequest, deadline: float | None = None) -> dict[str, Resolution]:
        """What the registry says of the references `request`'s spec names: the render needs it."""
        return await self.registry.resolve(references(request.parent.spec), deadline)

    async def gather(self, request: SyncRequest, direct: Desired | None = None, deadline: float | None = None,
                     resolutions: dict[str, Resolution] | None = None) -> Facts:
        """The facts `request`'s sync needs, given the desired state its spec renders to
        directly (which says whether a canary measurement is due) and the registry's answers."""
        now = self.clock()
        plan = measurement_due(request, direct, now) if direct is not None else None
        if plan is None:
            return Facts(now, None, resolutions or {})
        resource = f"{request.parent.namespace}/{request.parent.name}"
        return Facts(now, await self.prometheus.measure(resource, plan, deadline), resolutions or {})

    async def aclose(self) -> None:
        await self.prometheus.aclose()
        await self.registry.aclose()
