"""The sync hook's logic: a pure function from Metacontroller's request to the response.

No I/O, no clock, no global state: the same request always gives the same bytes. An optional
`DesiredCache` remembers validation and rendering per distinct input; it changes how fast the
answer comes, never what it is. The web layer (`app`) decodes the request and sends `encode()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hooks.desired import DesiredCache, DesiredState, cache_key, compute_desired
from hooks.encoding import dumps, loads
from hooks.freeze import frozen_children
from hooks.hookapi import SyncRequest
from hooks.naming import Names
from hooks.rendering import Renderer
from hooks.settings import Settings
from hooks.status import LLMDeploymentStatus, frozen_status, status_for
from hooks.view import observed_availability


@dataclass(frozen=True)
class SyncResponse:
    status: LLMDeploymentStatus
    children_json: bytes  # the children list, canonical JSON
    children_count: int
    outcome: str  # ok | invalid | paused: what happened, for logs and metrics

    @property
    def children(self) -> list[dict[str, Any]]:
        children: list[dict[str, Any]] = loads(self.children_json)
        return children

    def body(self) -> dict[str, Any]:
        return {"status": self.status.as_json(), "children": self.children}

    def encode(self) -> bytes:
        """The response body, canonical JSON (sorted keys: children, then status)."""
        return b'{"children":' + self.children_json + b',"status":' + dumps(self.status.as_json()) + b"}"


def names_for(request: SyncRequest) -> Names:
    parent = request.parent.metadata
    uid = parent.uid if request.controller.spec.generate_selector else ""
    return Names(parent=parent.name, namespace=parent.namespace, controller_uid=uid)


def sync(request: SyncRequest, renderer: Renderer, settings: Settings,
         cache: DesiredCache | None = None) -> SyncResponse:
    """The desired children and status of the LLMDeployment in `request`.

    Raises UnsafeToAnswer when children must be frozen but cannot be reproduced, and
    TemplateError when the templates fail; both mean "answer non-200, change nothing".
    """
    names = names_for(request)
    observed = request.observed_children()
    availability = observed_availability(observed, names)

    def compute() -> DesiredState:
        return compute_desired(request, names, availability, renderer, settings)

    if cache is None:
        desired = compute()
    else:
        desired = cache.get_or_compute(cache_key(request, names, availability, renderer), compute)
    if desired.outcome == "ok":
        return SyncResponse(status_for(request, observed, desired), desired.children_json, desired.children_count,
                            "ok")
    frozen = frozen_children(observed)
    why: Literal["Invalid", "Paused"] = "Invalid" if desired.outcome == "invalid" else "Paused"
    status = frozen_status(request, observed, names, why, desired.spec_errors)
    return SyncResponse(status, dumps(frozen), len(frozen), desired.outcome)
