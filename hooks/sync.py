"""The sync hook's logic: a pure function from Metacontroller's request to the response.

No I/O, no clock, no global state: the same request always gives the same bytes. The web
layer (`app`) decodes the request and encodes what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hooks.errors import SpecError
from hooks.freeze import frozen_children
from hooks.hookapi import SyncRequest
from hooks.naming import Names
from hooks.rendering import Renderer
from hooks.settings import Settings
from hooks.status import LLMDeploymentStatus, frozen_status, status_for
from hooks.validation import validate_resource
from hooks.view import build_view


@dataclass(frozen=True)
class SyncResponse:
    status: LLMDeploymentStatus
    children: list[dict[str, Any]]
    outcome: str  # ok | invalid | paused: what happened, for logs and metrics

    def body(self) -> dict[str, Any]:
        return {"status": self.status.as_json(), "children": self.children}


def names_for(request: SyncRequest) -> Names:
    parent = request.parent.metadata
    uid = parent.uid if request.controller.spec.generate_selector else ""
    return Names(parent=parent.name, namespace=parent.namespace, controller_uid=uid)


def sync(request: SyncRequest, renderer: Renderer, settings: Settings) -> SyncResponse:
    """The desired children and status of the LLMDeployment in `request`.

    Raises UnsafeToAnswer when children must be frozen but cannot be reproduced, and
    TemplateError when the templates fail; both mean "answer non-200, change nothing".
    """
    names = names_for(request)
    observed = request.observed_children()
    try:
        spec = validate_resource(request.parent.metadata.name, request.parent.spec)
    except SpecError as e:
        children = frozen_children(observed)
        return SyncResponse(frozen_status(request, names, "Invalid", e.errors), children, "invalid")
    if spec.paused:
        children = frozen_children(observed)
        return SyncResponse(frozen_status(request, names, "Paused", []), children, "paused")
    view = build_view(spec, request.parent, names, observed, settings)
    children = renderer.render_children(view)
    return SyncResponse(status_for(request, view, children), children, "ok")
