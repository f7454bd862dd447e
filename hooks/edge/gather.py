"""Gathering the facts of one sync. Today that is the clock. Facts from other services
(Prometheus measurements, registry resolutions) join here, each bounded in time, so that a
slow service never delays an answer past Metacontroller's timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from hooks.contract.request import SyncRequest
from hooks.core.facts import Facts

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class FactGatherer:
    def __init__(self, clock: Clock = utc_now) -> None:
        self.clock = clock

    async def gather(self, request: SyncRequest) -> Facts:
        """The facts `request`'s sync needs."""
        return Facts(now=self.clock())
